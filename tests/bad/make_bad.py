#!/usr/bin/env python3
"""Builds the golden error corpus (cases.txt) at test time.

    make_bad.py GEN_BIN_DIR OUT_DIR

For every case in cases.txt writes OUT_DIR/<case>/ holding the malformed
input (derived from a tiny good fixture of the project's generators or
from the tiny GGUF of tests/fuzz/make_corpus.py) and OUT_DIR/manifest.txt
with one line per case: case|path|name|word|bug. Symlinks that lead out of
a checkpoint are created here, never committed. Deterministic.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fuzz"))
import make_corpus  # noqa: E402  (tiny_gguf, gkv, gstr)

GEN = OUT = CACHE = None


def run(*a):
    subprocess.run(list(a), check=True, stdout=subprocess.DEVNULL)


def cached(kind, variant=None):
    """Path of a good fixture, generated once per run into CACHE."""
    d = os.path.join(CACHE, kind + ("-" + variant if variant else ""))
    if os.path.isdir(d):
        return d
    if kind == "hfd":
        run(GEN + "/qb-gen-hf-dense", "--out", d, "--layers", "1", "--hidden", "16", "--intermediate",
            "32", "--vocab", "32", "--heads", "2", "--kv-heads", "1", "--head-dim", "8", "--dtype",
            "f16", *(["--shards", "2"] if variant == "sharded" else []))
    elif kind == "quant":
        run(GEN + "/qb-gen-quant", d, variant)
    elif kind in ("ct", "fp8", "fp4"):
        allv = os.path.join(CACHE, kind + "-all")
        if not os.path.isdir(allv):
            run(GEN + "/qb-gen-" + kind, allv)
        shutil.copytree(os.path.join(allv, variant), d)
    elif kind == "mxfp4":
        run(GEN + "/qb-gen-mxfp4", d, *(["--bad", variant] if variant else []))
    elif kind == "gguf-split":
        os.makedirs(d)
        run(GEN + "/qb-gen-gguf", "llama", "q4_0", d + "/m", "2")
    return d


def fixture(case, kind, variant=None):
    dst = os.path.join(OUT, case, "m")
    shutil.copytree(cached(kind, variant), dst, symlinks=True)
    return dst


# ---- safetensors helpers (format: 8-byte LE header length, JSON header, data) ----
def st_read(p):
    b = open(p, "rb").read()
    n = struct.unpack_from("<Q", b)[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def st_write(p, hdr, data, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def st_edit(p, fn):
    hdr, data = st_read(p)
    r = fn(hdr, data)
    if r is not None:
        hdr, data = r
    st_write(p, hdr, data)


def first_tensor(hdr):
    return sorted((k for k in hdr if k != "__metadata__"), key=lambda k: hdr[k]["data_offsets"][0])


def json_edit(p, fn):
    c = json.load(open(p))
    fn(c)
    json.dump(c, open(p, "w"), indent=1)


def qc_edit(d, fn):
    json_edit(d + "/config.json", lambda c: fn(c["quantization_config"]))


def drop_tensor(p, name_pred):
    hdr, data = st_read(p)
    names = [k for k in first_tensor(hdr) if name_pred(k)]
    victim = names[0]
    del hdr[victim]
    # re-pack the remaining tensors gap-free
    out, new = b"", {}
    for k in first_tensor(hdr):
        a, b = hdr[k]["data_offsets"]
        new[k] = dict(hdr[k], data_offsets=[len(out), len(out) + b - a])
        out += data[a:b]
    if "__metadata__" in hdr:
        new["__metadata__"] = hdr["__metadata__"]
    st_write(p, new, out)
    return victim


# ---- GGUF helpers ----
def gguf_tiny():
    return bytearray(make_corpus.tiny_gguf(random.Random(8)))


def gguf_layout(b):
    """Offsets: end of header, each kv (start, value-type offset), tensor infos, data start."""
    o = 24
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    kvs = []
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(t, o):
        if t == 8:
            return o + 8 + struct.unpack_from("<Q", b, o)[0]
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, o)
            o += 12
            for _ in range(n):
                o = skip(at, o)
            return o
        return o + sizes[t]

    for _ in range(n_kv):
        s = o
        kl = struct.unpack_from("<Q", b, o)[0]
        key = bytes(b[o + 8:o + 8 + kl]).decode()
        o += 8 + kl
        t = struct.unpack_from("<I", b, o)[0]
        kvs.append((key, s, o, t))
        o = skip(t, o + 4)
    tinfo = []
    for _ in range(n_t):
        s = o
        nl = struct.unpack_from("<Q", b, o)[0]
        name = bytes(b[o + 8:o + 8 + nl]).decode()
        o += 8 + nl
        nd = struct.unpack_from("<I", b, o)[0]
        ne_off = o + 4
        o = ne_off + 8 * nd
        tinfo.append(dict(name=name, start=s, nd=nd, ne_off=ne_off, type_off=o, off_off=o + 4))
        o += 12
    data = o + (-o % 32)
    return kvs, tinfo, data


def tinfo_of(b, name):
    return [t for t in gguf_layout(b)[1] if t["name"] == name][0]


def kv_of(b, key):
    return [k for k in gguf_layout(b)[0] if k[0] == key][0]


def gguf_case(case, fn):
    d = os.path.join(OUT, case)
    os.makedirs(d)
    b = gguf_tiny()
    r = fn(b)
    with open(os.path.join(d, "m.gguf"), "wb") as f:
        f.write(r if r is not None else b)


def g_replace_kv_u32(b, key, val):
    _, s, to, t = kv_of(b, key)
    assert t == 4
    struct.pack_into("<I", b, to + 4, val)


# ---- the cases ----
def st_add(p, name, dtype, shape, raw):
    """Appends one tensor to a safetensors file."""
    def f(h, data):
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        return h, data + raw
    st_edit(p, f)


def st_reshape(p, suffix, old, new):
    """Gives the tensor ending in `suffix` (shape `old`) the same byte count under shape `new`."""
    def f(h, data):
        k = [n for n in h if n.endswith(suffix)][0]
        assert h[k]["shape"] == old, (k, h[k])
        h[k]["shape"] = new
    st_edit(p, f)


def st_poke(p, suffix, byte):
    """Sets the first data byte of the tensor ending in `suffix`."""
    def f(h, data):
        k = [n for n in h if n.endswith(suffix)][0]
        a = h[k]["data_offsets"][0]
        return h, data[:a] + bytes([byte]) + data[a + 1:]
    st_edit(p, f)


def fp4_case(case):
    """NVFP4 / MXFP4 cases (qb-gen-fp4 fixtures; docs/formats/nvfp4.md). q_proj is [64, 64]:
    packed [64, 32], NVFP4 scales [64, 4], MXFP4 scales [64, 2]."""
    variant = "ct-mxfp4" if case.startswith("ct-mxfp4-") else "ct-nvfp4" if case.startswith("ct-") else "mo-nvfp4"
    d = fixture(case, "fp4", variant)
    st = d + "/model.safetensors"
    q = "layers.0.self_attn.q_proj"
    packed = q + (".weight" if case.startswith("mo-") else ".weight_packed")
    if case.endswith("-scale-wrong-shape"):
        st_reshape(st, q + ".weight_scale", [64, 4], [128, 2])
    elif case.endswith("-k-not-group-multiple"):
        st_reshape(st, packed, [64, 32], [512, 4])  # K = 8: not a whole 16-element group
    elif case.endswith("-scale-nan-7f"):
        st_poke(st, q + ".weight_scale", 0x7F)
    elif case.endswith("-scale-nan-ff"):
        st_poke(st, q + ".weight_scale", 0xFF)
    elif case == "ct-nvfp4-global-scale-missing":
        drop_tensor(st, lambda k: k.endswith(q + ".weight_global_scale"))
    elif case == "ct-nvfp4-global-scale-0d":
        st_reshape(st, q + ".weight_global_scale", [1], [])
    elif case == "ct-nvfp4-weight-shape-odd-k":
        st_add(st, "model." + q + ".weight_shape", "I64", [2], struct.pack("<qq", 64, 63))
    elif case == "mo-scale2-missing":
        drop_tensor(st, lambda k: k.endswith(q + ".weight_scale_2"))
    elif case == "mo-scale2-zero":
        def f(h, data):
            k = [n for n in h if n.endswith(q + ".weight_scale_2")][0]
            a = h[k]["data_offsets"][0]
            return h, data[:a] + struct.pack("<f", 0.0) + data[a + 4:]
        st_edit(st, f)
    elif case == "mo-quant-algo-fp8":
        json_edit(d + "/hf_quant_config.json", lambda c: c["quantization"].update(quant_algo="FP8"))
    elif case == "mo-excluded-but-packed":
        json_edit(d + "/hf_quant_config.json",
                  lambda c: c["quantization"]["exclude_modules"].append("*.0.self_attn.q_proj"))
    else:
        raise SystemExit("make_bad.py: no recipe for case " + case)


# JSON the one strict parser refuses (sdk/kit/qbk_json.h), one case per
# reader and file it reads: case -> (fixture kind, variant, file, text put
# right after the file's opening brace). With config.json refused, no
# quantized reader can tell its format, so the hf-dense reader (probing
# "possible" for a config it cannot read) gives the diagnosis, unless a
# quantization side file names the reader.
JSON_SPOILS = {
    "hfd-config-duplicate-key": ("hfd", None, "config.json", '"model_type": "llama", '),
    "gptq-config-1e400": ("quant", "gptq-4-g128-sym-v1", "config.json", '"qb": 1e400, '),
    "gptq-side-duplicate-key": ("quant", "gptq-4-g128-sym-v1", "quantize_config.json", '"bits": 4, '),
    "awq-config-leading-zero": ("quant", "awq-gemm-g128-zp", "config.json", '"qb": 01, '),
    "ct-config-duplicate-key": ("ct", "ct-w4a16-g32-sym", "config.json", '"model_type": "llama", '),
    "fp8-config-nul": ("fp8", "fp8-block128", "config.json", '"qb": "a\\u0000b", '),
    "mo-side-duplicate-key": ("fp4", "mo-nvfp4", "hf_quant_config.json", '"quantization": {}, '),
    "mxfp4-config-trailing-comma": ("mxfp4", None, "config.json", None),
}


def json_spoil(case):
    kind, variant, name, text = JSON_SPOILS[case]
    p = fixture(case, kind, variant) + "/" + name
    t = open(p).read()
    if text is None:  # a trailing comma before the closing brace
        i = t.rindex("}")
        t = t[:i] + ", " + t[i:]
    else:
        i = t.index("{") + 1
        t = t[:i] + text + t[i:]
    open(p, "w").write(t)


def build(case):
    st = lambda: fixture(case, "hfd") + "/model.safetensors"  # noqa: E731
    Q = "model.layers.0.self_attn.q_proj.weight"

    if case in JSON_SPOILS:
        json_spoil(case)
    elif case == "st-empty-file":
        open(st(), "wb").close()
    elif case == "st-truncated-length":
        p = st()
        open(p, "wb").write(open(p, "rb").read()[:5])
    elif case == "st-header-len-huge":
        p = st()
        b = bytearray(open(p, "rb").read())
        struct.pack_into("<Q", b, 0, 1 << 63)
        open(p, "wb").write(b)
    elif case == "st-header-len-past-eof":
        p = st()
        b = bytearray(open(p, "rb").read())
        struct.pack_into("<Q", b, 0, len(b) + 1000)
        open(p, "wb").write(b)
    elif case == "st-truncated-header":
        p = st()
        b = open(p, "rb").read()
        n = struct.unpack_from("<Q", b)[0]
        open(p, "wb").write(b[:8 + n // 2])
    elif case == "st-truncated-data":
        p = st()
        b = open(p, "rb").read()
        open(p, "wb").write(b[:-7])
    elif case == "st-trailing-bytes":
        p = st()
        open(p, "ab").write(b"\0" * 64)
    elif case == "st-header-not-json":
        p = st()
        hdr, data = st_read(p)
        st_write(p, None, data, raw_header=b"{\"a\": [1, 2" + b" " * 40)
    elif case == "st-unknown-dtype":
        st_edit(st(), lambda h, d: h[Q].update(dtype="F7"))
    elif case == "st-shape-overflow":
        st_edit(st(), lambda h, d: h[Q].update(shape=[1 << 62, 1 << 62, 16]))
    elif case == "st-negative-dim":
        st_edit(st(), lambda h, d: h[Q].update(shape=[-16, -16]))
    elif case == "st-offsets-overlap":
        def f(h, d):
            names = first_tensor(h)
            a, b = h[names[1]]["data_offsets"]
            h[names[1]]["data_offsets"] = [a - 2, b - 2]
        st_edit(st(), f)
    elif case == "st-offsets-out-of-file":
        def f(h, d):
            last = first_tensor(h)[-1]
            a, b = h[last]["data_offsets"]
            h[last]["data_offsets"] = [a + (1 << 40), b + (1 << 40)]
        st_edit(st(), f)
    elif case == "st-offsets-vs-shape":
        st_edit(st(), lambda h, d: h[Q].update(shape=[16, 15]))
    elif case == "st-duplicate-tensor-key":
        p = st()
        hdr, data = st_read(p)
        raw = json.dumps(hdr)
        dup = json.dumps({Q: hdr[Q]})[1:-1]
        st_write(p, None, data, raw_header=("{" + dup + ", " + raw[1:]).encode())
    elif case.startswith("st-index-") or case.startswith("st-symlink-"):
        d = fixture(case, "hfd", "sharded")
        ip = d + "/model.safetensors.index.json"
        idx = json.load(open(ip))
        wm = idx["weight_map"]
        one = sorted(wm)[0]
        if case == "st-index-dotdot":
            shutil.copy(d + "/" + wm[one], os.path.join(OUT, case, "outside.safetensors"))
            wm[one] = "../outside.safetensors"
        elif case == "st-index-missing-shard":
            wm[one] = "model-00003-of-00002.safetensors"
        elif case == "st-index-duplicate-across":
            # copy one tensor of shard 1 into shard 2 under the same name
            s1, s2 = d + "/model-00001-of-00002.safetensors", d + "/model-00002-of-00002.safetensors"
            h1, d1 = st_read(s1)
            h2, d2 = st_read(s2)
            k = first_tensor(h1)[0]
            a, b = h1[k]["data_offsets"]
            h2[k] = dict(h1[k], data_offsets=[len(d2), len(d2) + b - a])
            st_write(s2, h2, d2 + d1[a:b])
        elif case == "st-index-unlisted-tensor":
            del wm[one]
        elif case == "st-index-absolute-path":
            wm[one] = "/tmp/outside.safetensors"
        elif case == "st-index-not-object":
            idx = [idx]
        elif case == "st-symlink-shard-outside":
            s1 = d + "/model-00001-of-00002.safetensors"
            outside = os.path.join(OUT, case, "outside.safetensors")
            shutil.move(s1, outside)
            os.symlink(os.path.relpath(outside, d), s1)
        elif case == "st-symlink-index-outside":
            outside = os.path.join(OUT, case, "outside-index.json")
            json.dump(idx, open(outside, "w"))
            os.unlink(ip)
            os.symlink(os.path.relpath(outside, d), ip)
            return
        json.dump(idx, open(ip, "w"))
    elif case == "empty-directory":
        os.makedirs(os.path.join(OUT, case, "m"))
    elif case == "hfd-config-missing":
        os.unlink(fixture(case, "hfd") + "/config.json")
    elif case == "hfd-config-not-json":
        open(fixture(case, "hfd") + "/config.json", "w").write('{"model_type": "llama", ')
    elif case == "hfd-config-not-object":
        open(fixture(case, "hfd") + "/config.json", "w").write('[{"model_type": "llama"}]')
    elif case == "hfd-config-absurd-hidden":
        json_edit(fixture(case, "hfd") + "/config.json", lambda c: c.update(hidden_size=1 << 40))
    elif case == "hfd-tensor-missing":
        drop_tensor(st(), lambda k: k == "model.layers.0.mlp.up_proj.weight")

    elif case == "gguf-empty-file":
        gguf_case(case, lambda b: b"")
    elif case == "gguf-truncated-magic":
        gguf_case(case, lambda b: b[:3])
    elif case == "gguf-bad-version":
        gguf_case(case, lambda b: struct.pack_into("<I", b, 4, 4))
    elif case == "gguf-truncated-kv":
        gguf_case(case, lambda b: b[:kv_of(b, "llama.feed_forward_length")[2] + 2])
    elif case == "gguf-truncated-tensor-info":
        gguf_case(case, lambda b: b[:tinfo_of(b, "blk.0.attn_q.weight")["ne_off"] + 3])
    elif case == "gguf-truncated-data":
        gguf_case(case, lambda b: b[:len(b) - 100])
    elif case == "gguf-huge-tensor-count":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, 8, 1 << 61))
    elif case == "gguf-huge-kv-count":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, 16, (1 << 64) - 1))
    elif case == "gguf-huge-key-length":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, kv_of(b, "llama.block_count")[1], 1 << 62))
    elif case == "gguf-unknown-value-type":
        gguf_case(case, lambda b: struct.pack_into("<I", b, kv_of(b, "general.name")[2], 13))
    elif case == "gguf-unknown-ggml-type":
        gguf_case(case, lambda b: struct.pack_into("<I", b, tinfo_of(b, "blk.0.attn_q.weight")["type_off"], 99))
    elif case == "gguf-removed-ggml-type":
        gguf_case(case, lambda b: struct.pack_into("<I", b, tinfo_of(b, "blk.0.attn_q.weight")["type_off"], 4))
    elif case == "gguf-dims-overflow":
        def f(b):
            t = tinfo_of(b, "blk.0.attn_q.weight")
            struct.pack_into("<QQ", b, t["ne_off"], 1 << 40, 1 << 40)
        gguf_case(case, f)
    elif case == "gguf-zero-dim":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, tinfo_of(b, "blk.0.attn_q.weight")["ne_off"] + 8, 0))
    elif case == "gguf-offset-out-of-file":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, tinfo_of(b, "blk.0.attn_q.weight")["off_off"], 1 << 40))
    elif case == "gguf-offset-misaligned":
        def f(b):
            t = tinfo_of(b, "blk.0.attn_q.weight")
            o = struct.unpack_from("<Q", b, t["off_off"])[0]
            struct.pack_into("<Q", b, t["off_off"], o + 1)
        gguf_case(case, f)
    elif case == "gguf-tensors-overlap":
        def f(b):
            k = tinfo_of(b, "blk.0.attn_k.weight")
            q = tinfo_of(b, "blk.0.attn_q.weight")
            struct.pack_into("<Q", b, k["off_off"], struct.unpack_from("<Q", b, q["off_off"])[0])
        gguf_case(case, f)
    elif case == "gguf-duplicate-tensor":
        def f(b):
            t = tinfo_of(b, "blk.0.attn_k.weight")
            nm = b"blk.0.attn_q.weight"
            old = struct.unpack_from("<Q", b, t["start"])[0]
            assert old == len(nm)
            b[t["start"] + 8:t["start"] + 8 + old] = nm
        gguf_case(case, f)
    elif case == "gguf-bad-alignment":
        def f(b):
            # "llama.block_count" (u32) becomes "general.alignment" = 3 (same key
            # length, so nothing moves); ggml requires a power of two
            _, s, to, t = kv_of(b, "llama.block_count")
            b[s + 8:to] = b"general.alignment"
            struct.pack_into("<I", b, to + 4, 3)
        gguf_case(case, f)
    elif case == "gguf-unknown-architecture":
        def f(b):
            _, s, to, t = kv_of(b, "general.architecture")
            b[to + 12:to + 17] = b"nonse"  # "llama" becomes "nonse", same length
        gguf_case(case, f)
    elif case == "gguf-absurd-block-count":
        gguf_case(case, lambda b: g_replace_kv_u32(b, "llama.block_count", 1000000000))
    elif case == "gguf-huge-array-count":
        gguf_case(case, lambda b: struct.pack_into("<Q", b, kv_of(b, "tokenizer.ggml.tokens")[2] + 8, 1 << 60))
    elif case == "gguf-split-count-mismatch":
        # shard 2 claims to be one of three: the set disagrees with itself
        d = os.path.join(OUT, case)
        os.makedirs(d)
        src = cached("gguf-split")
        shutil.copy(src + "/m-00001-of-00002.gguf", d)
        b = bytearray(open(src + "/m-00002-of-00002.gguf", "rb").read())
        _, s, to, t = kv_of(b, "split.count")
        struct.pack_into("<H" if t == 2 else "<I", b, to + 4, 3)
        open(d + "/m-00002-of-00002.gguf", "wb").write(b)
    elif case == "gguf-split-missing-shard":
        d = os.path.join(OUT, case)
        os.makedirs(d)
        src = cached("gguf-split")
        shutil.copy(src + "/m-00001-of-00002.gguf", d)

    elif case == "st-auto-lone-not-json":
        # a lone .safetensors without config.json probes weak; its header is broken
        d = os.path.join(OUT, case)
        os.makedirs(d)
        p = os.path.join(d, "m.safetensors")
        shutil.copy(cached("hfd") + "/model.safetensors", p)
        hdr, data = st_read(p)
        st_write(p, None, data, raw_header=b"{\"a\": [1, 2" + b" " * 40)
    elif case == "gguf-auto-bad-magic":
        gguf_case(case, lambda b: b.__setitem__(slice(0, 4), b"GGUX"))
    elif case in ("gguf-auto-dir-missing-shard", "gguf-auto-dir-no-first"):
        # a directory of split shards, one of them absent
        d = os.path.join(OUT, case, "m")
        os.makedirs(d)
        keep = "m-00001-of-00002.gguf" if case.endswith("missing-shard") else "m-00002-of-00002.gguf"
        shutil.copy(cached("gguf-split") + "/" + keep, d)

    elif case.startswith("gptq-"):
        base = {"gptq-qweight-wrong-bits": "gptq-broken-qweight-bits",
                "gptq-scale-missing": "gptq-broken-scale-missing-shard",
                "gptq-descact-without-gidx": "gptq-broken-descact-nogidx"}.get(case, "gptq-4-g128-sym-v1")
        d = fixture(case, "quant", base)
        side = d + "/quantize_config.json"
        if case in ("gptq-bits-5", "gptq-group-size-absurd", "gptq-format-marlin",
                    "gptq-group-size-float-huge"):
            if os.path.exists(side):
                os.unlink(side)  # the config.json copy alone decides
            if case == "gptq-bits-5":
                qc_edit(d, lambda q: q.update(bits=5))
            elif case == "gptq-group-size-absurd":
                qc_edit(d, lambda q: q.update(group_size=1 << 40))
            elif case == "gptq-format-marlin":
                qc_edit(d, lambda q: q.update(checkpoint_format="marlin"))
            else:
                t = open(d + "/config.json").read()
                assert '"group_size": 128' in t
                open(d + "/config.json", "w").write(t.replace('"group_size": 128', '"group_size": 1e300'))
        elif case == "gptq-dynamic-bad-regex":
            os.unlink(side)
            qc_edit(d, lambda q: q.update(dynamic={"-:model.layers.(0": {}}))
        elif case == "gptq-configs-disagree":
            json_edit(side, lambda q: q.update(group_size=32))
    elif case.startswith("awq-"):
        d = fixture(case, "quant", "awq-broken-exllama" if case == "awq-version-exllama" else "awq-gemm-g128-zp")
        if case == "awq-bits-8":
            qc_edit(d, lambda q: q.update(bits=8))
        elif case == "awq-version-gemv-fast":
            qc_edit(d, lambda q: q.update(version="gemv_fast"))
        elif case == "awq-skip-not-list":
            qc_edit(d, lambda q: q.update(modules_to_not_convert="lm_head"))
        elif case == "awq-group-size-float-huge":
            t = open(d + "/config.json").read()
            assert '"group_size": 128' in t
            open(d + "/config.json", "w").write(t.replace('"group_size": 128', '"group_size": 1e300'))
    elif case.startswith(("ct-nvfp4-", "ct-mxfp4-", "mo-")):
        fp4_case(case)
    elif case.startswith("ct-"):
        d = fixture(case, "ct", "ct-w4a16-g32-sym")
        w = lambda q: q["config_groups"]["group_0"]["weights"]  # noqa: E731
        if case == "ct-format-sparse":
            qc_edit(d, lambda q: (q.update(format="sparse-24-bitmask"),
                                  q["config_groups"]["group_0"].update(format="sparse-24-bitmask")))
        elif case == "ct-num-bits-absurd":
            qc_edit(d, lambda q: w(q).update(num_bits=99))
        elif case == "ct-group-size-zero":
            qc_edit(d, lambda q: w(q).update(group_size=0))
        elif case == "ct-group-size-float-huge":
            qc_edit(d, lambda q: w(q).update(group_size=1e300))
        elif case == "ct-ignore-bad-regex":
            qc_edit(d, lambda q: q.update(ignore=["re:model.layers.(0"]))
        elif case == "ct-ignore-regex-blowup":
            # found by fuzz_ct_config (corpus/ct_config/regress-ignore-regex-time-blowup)
            pat = ("re:/" + "?" * 13 + "n_id" + "?" * 21 + "num_" + "?" * 6 + "+" * 5 + "?" * 5 + "+" * 4 +
                   "?" * 14 + "scalsbo_token_id" + "?" * 17 + "num_bits" + "?" * 13 + "r")
            qc_edit(d, lambda q: q.update(ignore=[pat]))
        elif case == "ct-weight-scale-missing":
            drop_tensor(d + "/model.safetensors", lambda k: k.endswith("q_proj.weight_scale"))
    elif case.startswith("fp8-"):
        d = fixture(case, "fp8", "fp8-block128")
        if case == "fp8-block-size-zero":
            qc_edit(d, lambda q: q.update(weight_block_size=[0, 128]))
        elif case == "fp8-fmt-unknown":
            qc_edit(d, lambda q: q.update(fmt="e3m4"))
        elif case == "fp8-scale-missing":
            drop_tensor(d + "/model.safetensors", lambda k: k.endswith("q_proj.weight_scale_inv"))
        elif case == "fp8-scale-wrong-shape":
            def f(h, data):
                k = [n for n in h if n.endswith("q_proj.weight_scale_inv")][0]
                a, b = h[k]["data_offsets"]
                assert b - a == 4, h[k]  # one F32 block scale: [1, 1]
                h[k]["shape"] = [1, 1, 1]
            st_edit(d + "/model.safetensors", f)
    elif case.startswith("mxfp4-"):
        if case == "mxfp4-scales-missing":
            d = fixture(case, "mxfp4")
            drop_tensor(d + "/model.safetensors",
                        lambda k: k == "model.layers.0.mlp.experts.gate_up_proj_scales")
        else:
            fixture(case, "mxfp4", case[len("mxfp4-"):])
    else:
        raise SystemExit("make_bad.py: no recipe for case " + case)


def main():
    global GEN, OUT, CACHE
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    GEN, OUT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(OUT, ignore_errors=True)
    CACHE = os.path.join(OUT, ".cache")
    os.makedirs(CACHE)
    lines = []
    for raw in open(os.path.join(HERE, "cases.txt")):
        if not raw.strip() or raw.startswith("#"):
            continue
        f = [x.strip() for x in raw.rstrip("\n").split("|")]
        f += [""] * (5 - len(f))
        build(f[0])
        lines.append("|".join(f[:5]))
    shutil.rmtree(CACHE)
    open(os.path.join(OUT, "manifest.txt"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
