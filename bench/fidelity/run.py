"""Fidelity table (issue 16): for each source format, convert a tiny llama with realistic weight
statistics (Student-t tails, outlier input columns) to W4A16 at g128 and g32 and report the model
check of `quantbridge verify` (KL, top-1, logits cosine) and the worst per-tensor rel RMSE.

Sources: the bf16 checkpoint, GPTQ- and AWQ-style quantizations of it (quant_gptq_awq.py), the
GGUF types llama.cpp makes from the same weights, and compressed-tensors' own compressions.

Run with the interop venv's python (it needs gguf-py, llama-cpp-python, torch, transformers and
compressed-tensors): bench/fidelity/run.sh. Prints a markdown table on stdout.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "interop"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
BUILD = pathlib.Path(os.environ.get("QB_BUILD_DIR", REPO / "build"))
QB = BUILD / "bin" / "quantbridge"

import _hf_util as U  # noqa: E402


def heavy(rng, rows, cols):
    """Student-t (3 degrees of freedom) weights scaled to unit variance over sqrt(cols), with
    2 % of input columns 8x larger: the outlier channels trained LLMs show."""
    w = rng.standard_t(3, size=(rows, cols)) / np.sqrt(3.0) / np.sqrt(cols)
    cols_out = rng.choice(cols, size=max(1, cols // 50), replace=False)
    w[:, cols_out] *= 8.0
    return w.astype(np.float32)


def heavy_gguf_weights(orig):
    def make(arch, seed=0):
        w = orig(arch, seed)
        rng = np.random.default_rng(seed + 1)
        for k, v in w.items():
            if v.ndim == 2 and k != "token_embd.weight":
                w[k] = heavy(rng, *v.shape)
        return w
    return make


def qb(*args):
    p = subprocess.run([str(QB), *map(str, args)], capture_output=True, text=True)
    return p


def measure(src, out, g, opts=()):
    c = qb("convert", "--source", src, "--output", out, "--group-size", g, "--overwrite", *opts)
    if c.returncode != 0:
        return {"error": c.stderr.strip().splitlines()[-1]}
    v = qb("verify", "--source", src, "--converted", out, "--json")
    if v.returncode not in (0, 3):
        return {"error": v.stderr.strip().splitlines()[-1]}
    j = json.loads(v.stdout)
    mc = j.get("model_check") or {}
    rr = [t.get("rel_rmse") for t in j.get("tensors", []) if t.get("rel_rmse") is not None]
    man = json.loads((pathlib.Path(out) / "manifest.json").read_text())
    exact = sum(1 for t in man.get("tensors", {}).values() if t.get("exact"))
    return {"kl_mean": mc.get("kl_mean"), "kl_max": mc.get("kl_max"),
            "top1": mc.get("top1_agreement"), "cos": mc.get("logits_cosine_min"),
            "rel_rmse_max": max(rr) if rr else None, "verify": "pass" if v.returncode == 0 else "FAIL",
            "exact": exact}


def sources(tmp):
    import gguf
    U.make_weights = heavy_gguf_weights(U.make_weights)
    f32 = tmp / "heavy-f32.gguf"
    U.write_gguf(f32, "llama", gguf.GGMLQuantizationType.F32, seed=11)
    bf16 = _bf16_from(f32, tmp)
    yield "hf-dense bf16", bf16
    yield from _gptq_awq_sources(tmp, bf16)
    yield "gguf F32", f32
    for name, ftype in (("Q4_0", 2), ("Q4_K_M", 15), ("Q5_K_M", 17), ("Q6_K", 18),
                        ("Q8_0", 7), ("IQ4_XS", 30)):
        p = tmp / f"heavy-{name}.gguf"
        U.llama_cpp_quantize(f32, p, ftype)
        yield f"gguf {name}", p
    yield from _ct_sources(tmp)


def _bf16_from(f32, tmp):
    out = tmp / "heavy-bf16"
    c = qb("convert", "--source", f32, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=bf16")
    assert c.returncode == 0, c.stderr
    return out


def _gptq_awq_sources(tmp, bf16):
    """The bf16 checkpoint's weights quantized GPTQ- and AWQ-style (quant_gptq_awq.py) on the
    activations of that model, in the GPTQ v1 and AWQ gemm layouts."""
    import quant_gptq_awq as Q
    cal = Q.load_and_calibrate(bf16)
    for label, gs, sym in (("gptq sym g128 act-order", 128, True),
                           ("gptq asym g32 act-order", 32, False)):
        yield label, Q.write_gptq(tmp / label.replace(" ", "-"), bf16, cal, gs, sym, True)
    for gs in (128, 32):
        label = f"awq asym g{gs}"
        yield label, Q.write_awq(tmp / label.replace(" ", "-"), bf16, cal, gs)


def _ct_sources(tmp):
    import torch
    import _ct_util as C
    from compressed_tensors.quantization import QuantizationArgs

    orig = C.tiny_llama

    def tiny_heavy(dtype, seed=7):
        m = orig(dtype, seed)
        rng = np.random.default_rng(seed)
        with torch.no_grad():
            for n, p in m.named_parameters():
                if p.ndim == 2 and "embed" not in n and "lm_head" not in n:
                    p.copy_(torch.from_numpy(heavy(rng, *p.shape)).to(dtype))
        return m
    C.tiny_llama = tiny_heavy
    for label, args in (
            ("ct int4 sym g128", dict(num_bits=4, type="int", symmetric=True, strategy="group",
                                      group_size=128)),
            ("ct int4 asym g32", dict(num_bits=4, type="int", symmetric=False, strategy="group",
                                      group_size=32)),
            ("ct fp8 channel", dict(num_bits=8, type="float", symmetric=True,
                                    strategy="channel"))):
        d = tmp / label.replace(" ", "-")
        C.compress(d, QuantizationArgs(**args), torch.float32)
        yield label, d


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    rows = []
    with tempfile.TemporaryDirectory(prefix="qb-fidelity-") as t:
        tmp = pathlib.Path(t)
        for label, src in sources(tmp):
            for g in ("128", "32"):
                r = measure(src, tmp / f"out-{label.replace(' ', '_')}-{g}", g)
                rows.append((label, g, r))
                print(label, g, r, file=sys.stderr)
                if "act-order" in label and "error" not in r:
                    # the writer's option that keeps act-order codes (feature
                    # input_permutation) instead of requantizing them
                    r = measure(src, tmp / f"out-{label.replace(' ', '_')}-{g}-perm", g,
                                ("--option", "act_order=permute"))
                    rows.append((label + ", act_order=permute", g, r))
                    print(label, g, "permute", r, file=sys.stderr)
    print("| source | group | KL mean | KL max | top-1 | logits cosine min | worst rel RMSE | "
          "exact linears | verify |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, g, r in rows:
        if "error" in r:
            print(f"| {label} | {g} | error: {r['error']} |||||||")
            continue
        print(f"| {label} | {g} | {fmt(r['kl_mean'], '.2e')} | {fmt(r['kl_max'], '.2e')} | "
              f"{fmt(r['top1'], '.3f')} | {fmt(r['cos'], '.5f')} | {fmt(r['rel_rmse_max'], '.3f')} | "
              f"{r['exact']} | {r['verify']} |")


if __name__ == "__main__":
    main()
