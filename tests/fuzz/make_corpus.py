#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (tests/fuzz/corpus/).

    make_corpus.py GEN_BIN_DIR   # e.g. build/tests/bin (qb-gen-* generators)

Seeds come from the project's generators (config.json texts, a small
safetensors file and index) plus a tiny llama GGUF written here (one
layer, width 32, Q4_0 and F32 tensors; the generator's smallest model is
200 KB). Keeps each target's corpus at a few KB. Deterministic.
"""
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(HERE, "corpus")


def put(target, data, name=None):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(p):
    with open(p, "rb") as f:
        return f.read()


# ---- GGUF (facts: docs/formats/gguf.md "Metadata values"; enum gguf_type) ----
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gkv(key, vt, val):
    out = gstr(key) + struct.pack("<I", vt)
    if vt == 8:
        return out + gstr(val)
    if vt == 4:
        return out + struct.pack("<I", val)
    if vt == 6:
        return out + struct.pack("<f", val)
    if vt == 9:  # array of strings
        return out + struct.pack("<IQ", 8, len(val)) + b"".join(gstr(v) for v in val)
    raise ValueError(vt)


def q4_0_rows(rows, cols, rng):
    out = b""
    for _ in range(rows * cols // 32):
        out += struct.pack("<e", 0.0625) + bytes(rng.randrange(256) for _ in range(16))
    return out


def tiny_gguf(rng, split=None):
    E, F, V, H, HKV = 32, 32, 8, 2, 1
    hd = E // H
    kvs = [gkv("general.architecture", 8, "llama"), gkv("general.name", 8, "qbfuzz"),
           gkv("llama.block_count", 4, 1), gkv("llama.context_length", 4, 64),
           gkv("llama.embedding_length", 4, E), gkv("llama.feed_forward_length", 4, F),
           gkv("llama.attention.head_count", 4, H), gkv("llama.attention.head_count_kv", 4, HKV),
           gkv("llama.attention.layer_norm_rms_epsilon", 6, 1e-5),
           gkv("llama.rope.freq_base", 6, 10000.0), gkv("llama.rope.dimension_count", 4, hd),
           gkv("tokenizer.ggml.model", 8, "gpt2"),
           gkv("tokenizer.ggml.tokens", 9, ["t%d" % i for i in range(V)]),
           gkv("tokenizer.ggml.bos_token_id", 4, 1), gkv("tokenizer.ggml.eos_token_id", 4, 2)]
    tens = [("token_embd.weight", (E, V), 2), ("blk.0.attn_norm.weight", (E,), 0),
            ("blk.0.attn_q.weight", (E, H * hd), 2), ("blk.0.attn_k.weight", (E, HKV * hd), 2),
            ("blk.0.attn_v.weight", (E, HKV * hd), 2), ("blk.0.attn_output.weight", (H * hd, E), 2),
            ("blk.0.ffn_norm.weight", (E,), 0), ("blk.0.ffn_gate.weight", (E, F), 2),
            ("blk.0.ffn_up.weight", (E, F), 2), ("blk.0.ffn_down.weight", (F, E), 2),
            ("output_norm.weight", (E,), 0), ("output.weight", (E, V), 2)]
    infos, blob = b"", b""
    for name, ne, ty in tens:
        if len(blob) % 32:
            blob += b"\0" * (32 - len(blob) % 32)
        off = len(blob)
        if ty == 0:
            n = 1
            for x in ne:
                n *= x
            blob += struct.pack("<%df" % n, *[1.0 + 0.01 * i for i in range(n)])
        else:
            blob += q4_0_rows(ne[1] if len(ne) > 1 else 1, ne[0], rng)
        infos += gstr(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        infos += struct.pack("<IQ", ty, off)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tens), len(kvs)) + b"".join(kvs) + infos
    if len(head) % 32:
        head += b"\0" * (32 - len(head) % 32)
    return head + blob


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gen = os.path.abspath(sys.argv[1])
    rng = random.Random(8)
    shutil.rmtree(OUT, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix="qbcorpus.")
    try:
        def run(*a):
            subprocess.run(list(a), check=True, stdout=subprocess.DEVNULL)

        # safetensors: one file (mode byte 0) and indexes (mode byte 1)
        run(os.path.join(gen, "qb-gen-hf-dense"), "--out", tmp + "/hfd", "--layers", "1", "--hidden",
            "8", "--intermediate", "8", "--vocab", "8", "--heads", "2", "--kv-heads", "1",
            "--head-dim", "4", "--dtype", "f16")
        put("safetensors", b"\0" + read(tmp + "/hfd/model.safetensors"))
        put("safetensors", b"\1" + b'{"metadata":{"total_size":12},"weight_map":{"x":"a.safetensors",'
            b'"y":"a.safetensors","z":"b.safetensors"}}')
        put("safetensors", b"\0" + struct.pack("<Q", 64) +
            b'{"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[2,1],"data_offsets":[0,4]}}'
            .ljust(64) + b"\1\2\3\4")

        # gguf: a tiny whole model; ggml: blocks of every type id
        put("gguf", tiny_gguf(rng), "tiny-llama-q4_0.gguf")
        for t in range(43):
            put("ggml", bytes([t]) + bytes(rng.randrange(256) for _ in range(300)), "type%02d" % t)

        # quantization configs from the generators' checkpoints
        run(os.path.join(gen, "qb-gen-ct"), tmp + "/ct")
        run(os.path.join(gen, "qb-gen-fp8"), tmp + "/fp8")
        for v in ("gptq-4-g128-sym-v1", "gptq-4-g128-sym-v1-dynamic", "gptq-8-chan-asym-v2",
                  "gptq-4-g128-asym-v1", "awq-gemm-g128-zp", "awq-gemv-g64-zp", "awq-broken-exllama"):
            run(os.path.join(gen, "qb-gen-quant"), tmp + "/" + v, v)
            d = tmp + "/" + v
            cfg = read(d + "/config.json")
            side = None
            for s in ("quantize_config.json", "quant_config.json"):
                if os.path.exists(d + "/" + s):
                    side = read(d + "/" + s)
            tgt = "gptq_config" if v.startswith("gptq") else "awq_config"
            put(tgt, cfg)
            if side is not None:
                put(tgt, cfg + b"\0" + side)
        for fam, tgt in (("ct", "ct_config"), ("fp8", "fp8_config")):
            for v in sorted(os.listdir(tmp + "/" + fam)):
                put(tgt, read("%s/%s/%s/config.json" % (tmp, fam, v)))

        # host config: the shipped files
        put("host_config", read(ROOT + "/conf/quantbridge.conf"), "quantbridge.conf")
        pd = ROOT + "/plugins"
        for name in sorted(os.listdir(pd)):
            f = "%s/%s/%s.conf" % (pd, name, name)
            if os.path.isfile(f):
                put("host_config", read(f), name + ".conf")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
