"""Quality of requantizing a lossy source to W4A16, at the model's output.

For one source (default: the real Gemma 3 270M Q4_K_M GGUF of the real tier),
every W4A16 conversion asked for (quant rule x group size, with or without
activation statistics) and llama.cpp's own requantization of the same file to
Q4_0 (llama-cpp-python's llama_model_quantize, allow_requantize) are run by
`quantbridge forward` on the same tokens as the source, and compared with the
source's logits: KL(source || variant) mean and p99 over positions, top-1
agreement, perplexity ratio (next-token, same tokens). Time and peak memory of
each conversion: wall time around the `convert` process and the peak memory its
--json summary reports.

The evaluation text is the real tier's tests/real/text.txt (620 tokens of
Gemma's tokenizer) unless QB_QUALITY_TEXT names another file; the built-in
calibration text (--calibration builtin) is a different text.

Environment: QB_BUILD_DIR (the build), QB_QUALITY_SOURCE (the source),
QB_QUALITY_WORK (scratch directory, default a temporary one),
QB_QUALITY_VARIANTS (semicolon-separated names of the VARIANTS below; default all).
Prints a markdown table on stdout; QB_QUALITY_JSON=FILE keeps the rows.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QB_BUILD_DIR", os.path.join(ROOT, "build"))
QB = os.path.join(BUILD, "bin", "quantbridge")
SOURCE = os.environ.get("QB_QUALITY_SOURCE",
                        os.path.join(os.environ.get("QB_REAL_CACHE", os.path.join(BUILD, "real-cache")),
                                     "gemma-3-270m-q4_k_m.gguf"))

# name -> ("qb", convert arguments) or ("llama", ftype name, options)
VARIANTS = {
    "absmax g128": ("qb", ["--group-size", "128", "--option", "quant_rule=absmax"]),
    "search g128": ("qb", ["--group-size", "128", "--option", "quant_rule=search"]),
    "absmax g32": ("qb", ["--group-size", "32", "--option", "quant_rule=absmax"]),
    "search g32": ("qb", ["--group-size", "32", "--option", "quant_rule=search"]),
    "keep g128": ("qb", ["--group-size", "128", "--option", "quant_rule=keep"]),
    "keep g32": ("qb", ["--group-size", "32", "--option", "quant_rule=keep"]),
    "default (auto)": ("qb", []),
    "default, --calibration builtin": ("qb", ["--calibration", "builtin", "--save-imatrix",
                                              "{work}/calib.dat"]),
    "weighted g128, --calibration builtin": ("qb", ["--group-size", "128", "--calibration",
                                                    "builtin"]),
    # GPTQ (quant_rule=gptq, plugins/sm86-w4a16/gptq.c) on the Hessians of the same text; the
    # group size auto chooses (32 for this source)
    "gptq, --calibration builtin": ("qb", ["--calibration", "builtin", "--option",
                                           "quant_rule=gptq"]),
    "gptq, weighted scales, --calibration builtin": ("qb", ["--calibration", "builtin", "--option",
                                                            "quant_rule=gptq", "--option",
                                                            "gptq_scale=weighted"]),
    "gptq, act order, --calibration builtin": ("qb", ["--calibration", "builtin", "--option",
                                                      "quant_rule=gptq", "--option",
                                                      "act_order=permute"]),
    "llama.cpp Q4_0": ("llama", "Q4_0", {}),
    "llama.cpp Q4_0, embeddings f16": ("llama", "Q4_0", {"embed_f16": True}),
    # the importance our --calibration builtin measured (saved by the variant above, which must
    # run first), given to llama.cpp's quantizer as its imatrix
    "llama.cpp Q4_0 + imatrix (builtin calibration)": ("llama", "Q4_0", {"imatrix": True}),
}


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("%s -> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout[-2000:], r.stderr[-4000:]))
    return r


def parse_dat(path):
    """llama-imatrix's legacy .dat: {name: mean x^2 per column} (values / ncall)."""
    import struct
    b = open(path, "rb").read()
    off, out = 4, {}
    for _ in range(struct.unpack_from("<i", b, 0)[0]):
        n = struct.unpack_from("<i", b, off)[0]
        name = b[off + 4:off + 4 + n].decode()
        off += 4 + n
        ncall, nval = struct.unpack_from("<ii", b, off)
        off += 8
        out[name] = np.frombuffer(b, "<f4", nval, off) / max(ncall, 1)
        off += 4 * nval
    return out


def llama_quantize(src, dst, ftype_name, embed_f16, imatrix=None):
    import ctypes
    import llama_cpp
    keep = []
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype_name)
    p.allow_requantize = True
    p.nthread = os.cpu_count() or 1
    if embed_f16:
        p.token_embedding_type = 1  # GGML_TYPE_F16 (ggml.h enum ggml_type)
        p.output_tensor_type = 1
    if imatrix:
        ents = parse_dat(imatrix)
        arr = (llama_cpp.llama_model_imatrix_data * (len(ents) + 1))()
        for i, (name, vals) in enumerate(ents.items()):
            v = np.ascontiguousarray(vals, np.float32)
            cname = name.encode()
            keep += [v, cname]
            arr[i].name = cname
            arr[i].data = v.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            arr[i].size = v.size
        arr[len(ents)].name = None
        keep.append(arr)
        p.imatrix = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    del keep
    if rc != 0:
        sys.exit("llama_model_quantize(%s) -> %d" % (ftype_name, rc))


def forward(model, text_args, out):
    run([QB, "forward", "--model", model, "--output", out] + text_args)
    return load_file(out)["logits"]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def compare(ref, got, ids):
    """Per position in blocks of 32 rows (a row is the whole vocabulary)."""
    kl, nll_p, nll_q = [], [], []
    nxt = np.array(ids[1:] + [0])
    for r0 in range(0, ref.shape[0], 32):
        lp, lq = log_softmax(ref[r0:r0 + 32]), log_softmax(got[r0:r0 + 32])
        kl.append((np.exp(lp) * (lp - lq)).sum(axis=1))
        rows = np.arange(lp.shape[0])
        nll_p.append(-lp[rows, nxt[r0:r0 + 32]])
        nll_q.append(-lq[rows, nxt[r0:r0 + 32]])
    kl = np.concatenate(kl)
    # the last position has no next token
    nll_p, nll_q = np.concatenate(nll_p)[:-1].mean(), np.concatenate(nll_q)[:-1].mean()
    return {
        "kl_mean": float(kl.mean()),
        "kl_p99": float(np.percentile(kl, 99)),
        "top1": float((ref.argmax(axis=1) == got.argmax(axis=1)).mean()),
        "ppl_ratio": float(np.exp(nll_q - nll_p)),
        "ppl_source": float(np.exp(nll_p)),
    }


def linear_bits(man):
    """Bits per linear weight of a W4A16 output: 4 + 16 / group size."""
    return 4.0 + 16.0 / man["group_size"]


def main():
    work = os.environ.get("QB_QUALITY_WORK") or tempfile.mkdtemp(prefix="qb-quality-")
    os.makedirs(work, exist_ok=True)
    names = os.environ.get("QB_QUALITY_VARIANTS")
    names = [n.strip() for n in names.split(";")] if names else list(VARIANTS)
    text = os.environ.get("QB_QUALITY_TEXT", os.path.join(ROOT, "tests", "real", "text.txt"))
    r = run([QB, "forward", "--model", SOURCE, "--text-file", text, "--print-tokens"])
    ids = [int(x) for x in r.stdout.strip().split(",")]
    text_args = ["--tokens", ",".join(str(i) for i in ids)]
    # the source's logits are kept in the work directory for a later run on the same tokens
    ref_path = os.path.join(work, "source-%d.safetensors" % (hash(tuple(ids)) & 0xffffffff))
    ref = load_file(ref_path)["logits"] if os.path.exists(ref_path) else \
        forward(SOURCE, text_args, ref_path)
    rows = []
    for name in names:
        kind = VARIANTS[name]
        out = os.path.join(work, "v-" + "".join(ch if ch.isalnum() else "_" for ch in name))
        shutil.rmtree(out, ignore_errors=True)
        if kind[0] == "qb":
            t0 = time.time()
            r = run([QB, "convert", "--source", SOURCE, "--output", out, "--progress", "none",
                     "--json"] + [a.replace("{work}", work) for a in kind[1]])
            wall = time.time() - t0
            summ = json.loads(r.stdout)
            rss = summ.get("peak_rss_bytes", summ.get("peak_rss", float("nan")))
            rss = rss / 1048576.0 if rss == rss else rss
            with open(os.path.join(out, "manifest.json")) as f:
                man = json.load(f)
            bits, model = linear_bits(man), out
        else:
            model = out + ".gguf"
            t0 = time.time()
            llama_quantize(SOURCE, model, kind[1], kind[2].get("embed_f16", False),
                           os.path.join(work, "calib.dat") if kind[2].get("imatrix") else None)
            wall, rss, bits = time.time() - t0, float("nan"), 4.5
        got = forward(model, text_args, os.path.join(work, "logits.safetensors"))
        m = compare(ref, got, ids)
        m.update(name=name, bits=bits, seconds=wall, rss_mib=rss)
        rows.append(m)
        print("%s: %s" % (name, m), file=sys.stderr, flush=True)
    print("| variant | bits / linear weight | KL mean | KL p99 | top-1 | perplexity ratio | "
          "convert s | convert max RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for m in rows:
        print("| %s | %.3f | %.4f | %.3f | %.3f | %.3f | %.1f | %s |" % (
            m["name"], m["bits"], m["kl_mean"], m["kl_p99"], m["top1"], m["ppl_ratio"],
            m["seconds"], "-" if m["rss_mib"] != m["rss_mib"] else "%.0f" % m["rss_mib"]))
    if os.environ.get("QB_QUALITY_JSON"):
        with open(os.environ["QB_QUALITY_JSON"], "w") as f:
            json.dump({"source": SOURCE, "tokens": len(ids), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
