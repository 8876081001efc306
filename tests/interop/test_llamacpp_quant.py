"""Interop test 1: real llama.cpp quantization.

A tiny llama model with random weights is written as an all-F32 GGUF by gguf-py; llama.cpp's own
quantizer (llama-cpp-python's `llama_model_quantize`, `pure` so every 2-D weight gets the ftype's
type) makes every type it can. For each, `quantbridge convert --writer hf-dense --option dtype=f32`
must equal, bit for bit, the dequantization of two oracles:
  A. gguf-py: `GGUFReader` + `gguf.quants.dequantize` (numpy), for every type gguf-py implements;
  B. ggml itself: its GGUF parser and `type_traits[type].to_float` (the C `dequantize_row_*`).
The one transform applied to the oracles before comparing is the llama Q/K row permutation our
reader undoes (docs/formats/gguf.md, "Q/K permutation"); names map through gguf-py's
TensorNameMap. Tolerance: none (array_equal on the float32 bits) since both sides dequantize the
same bytes with the same float operations.
"""
import numpy as np
import pytest

import _llamacpp_util as U

# (ggml type, llama ftype that yields it under `pure`, needs an importance matrix)
# ftype ids: llama.h `enum llama_ftype`; IQ2_S comes from IQ2_M and IQ3_S from IQ3_S
# (llama-quant.cpp `llama_ftype_get_default_type`). The imatrix column marks the types
# llama.cpp refuses without one (`tensor_requires_imatrix`).
TYPES = [
    ("F16", 1, False), ("BF16", 32, False),
    ("Q4_0", 2, False), ("Q4_1", 3, False), ("Q5_0", 8, False), ("Q5_1", 9, False),
    ("Q8_0", 7, False),
    ("Q2_K", 10, False), ("Q3_K", 11, False), ("Q4_K", 14, False), ("Q5_K", 16, False),
    ("Q6_K", 18, False),
    ("IQ2_XXS", 19, True), ("IQ2_XS", 20, True), ("IQ2_S", 29, True), ("IQ3_XXS", 23, True),
    ("IQ3_S", 26, False), ("IQ1_S", 24, True), ("IQ1_M", 31, True), ("IQ4_NL", 25, False),
    ("IQ4_XS", 30, False),
    ("TQ1_0", 36, False), ("TQ2_0", 37, False),
    # llama.cpp 0.3.36's quantizer refuses LLAMA_FTYPE_MOSTLY_NVFP4 (39) as a file type
    # ("invalid output file type": llama_ftype_get_default_type has no case for it), so NVFP4
    # comes from a Q8_0 run with a tensor-type override to ggml NVFP4 (40); see OVERRIDE.
    ("MXFP4", 38, False), ("NVFP4", 7, False),
    ("Q1_0", 40, False), ("Q2_0", 41, False),
]
# ggml type ids (ggml.h `enum ggml_type`) for the check that llama.cpp really wrote the type.
GGML_ID = {"F32": 0, "F16": 1, "BF16": 30, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8,
           "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "IQ2_XXS": 16,
           "IQ2_XS": 17, "IQ3_XXS": 18, "IQ1_S": 19, "IQ4_NL": 20, "IQ3_S": 21, "IQ2_S": 22,
           "IQ4_XS": 23, "IQ1_M": 29, "TQ1_0": 34, "TQ2_0": 35, "MXFP4": 39, "NVFP4": 40,
           "Q1_0": 41, "Q2_0": 42}
OVERRIDE = {"NVFP4": 40}
# Types gguf-py 0.19 cannot dequantize (no class in gguf/quants.py; Q2_0 is not even in its
# GGMLQuantizationType, so GGUFReader cannot open such a file): oracle B only.
NOT_IN_GGUFPY = {"Q1_0", "Q2_0"}


@pytest.fixture(scope="module")
def f32_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("llamacpp") / "tiny-f32.gguf"
    U.write_f32_gguf(path)
    return path


def _quantized(f32_gguf, name, ftype, imatrix):
    out = f32_gguf.parent / f"tiny-{name}.gguf"
    if not out.exists():
        U.quantize(f32_gguf, out, ftype, imatrix, OVERRIDE.get(name))
    return out


def _check_against(oracle, ours, label):
    hf2gguf = U.hf_name_map()
    assert set(ours) == set(hf2gguf), (
        f"{label}: our tensors {sorted(set(ours) ^ set(hf2gguf))} differ from the model's")
    for hf_name, gguf_name in hf2gguf.items():
        _, want = oracle[gguf_name]
        want = U.oracle_in_hf_order(gguf_name, want)
        got = ours[hf_name]
        assert got.dtype == np.float32, f"{hf_name}: dtype {got.dtype}, asked for f32"
        assert got.shape == want.shape, f"{hf_name}: shape {got.shape} vs {label} {want.shape}"
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
            i = np.unravel_index(bad[0], got.shape)
            pytest.fail(f"{hf_name} ({gguf_name}): {bad.size} of {got.size} values differ "
                        f"from {label}; first at {i}: ours {got[i]!r}, {label} {want[i]!r}")


@pytest.mark.parametrize("name,ftype,imatrix", TYPES, ids=[t[0].lower() for t in TYPES])
def test_hf_dense_f32_equals_oracles(f32_gguf, run_qb, tmp_path, name, ftype, imatrix):
    src = _quantized(f32_gguf, name, ftype, imatrix)
    ggml = U.ggml_read(src)
    # llama.cpp really produced the type for every 2-D weight (no silent fallback), and left
    # the 1-D norms in F32.
    for tname, (t, arr) in ggml.items():
        want = GGML_ID[name] if arr.ndim == 2 else GGML_ID["F32"]
        assert t == want, f"{src.name}: {tname} has ggml type {t}, expected {want}"

    out = tmp_path / "hf"
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours = U.read_safetensors_dir(out)

    _check_against(ggml, ours, "ggml to_float")
    if name not in NOT_IN_GGUFPY:
        _check_against(U.ggufpy_read(src), ours, "gguf-py dequantize")


def test_q4_0_group32_sm86_is_exact(f32_gguf, run_qb, tmp_path):
    """Q4_0 (fp16 scale per 32, zero 8) at --group-size 32 is a repack: reading the W4A16 output
    back (the sm86-w4a16 reader, to hf-dense f32) gives gguf-py's dequantization bit for bit for
    every linear, and the manifest says exact. Embeddings, norms and the head are F16 in the
    format (docs/w4a16-format.md, "Directory"), so they must equal the oracle rounded to f16."""
    src = _quantized(f32_gguf, "Q4_0", 2, False)
    w4 = tmp_path / "w4a16"
    run_qb("convert", "--source", src, "--output", w4, "--writer", "sm86-w4a16",
           "--group-size", "32")
    man = U.read_manifest(w4)
    assert man["group_size"] == 32
    linears = {k: v for k, v in man["tensors"].items() if k.startswith("layer_")}
    assert len(linears) == 7 * U.N_LAYER, f"manifest lists {sorted(linears)}"
    for k, v in linears.items():
        assert v["exact"] is True and v["rel_rmse"] == 0.0, f"manifest: {k} is {v}"

    back = tmp_path / "back"
    run_qb("convert", "--source", w4, "--output", back, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours = U.read_safetensors_dir(back)
    oracle = U.ggufpy_read(src)
    hf2gguf = U.hf_name_map()
    for hf_name, gguf_name in hf2gguf.items():
        want = U.oracle_in_hf_order(gguf_name, oracle[gguf_name][1])
        linear = any(s in hf_name for s in ("_proj.",))
        if not linear:
            want = want.astype(np.float16).astype(np.float32)
        got = ours[hf_name]
        assert got.shape == want.shape, hf_name
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (
            f"{hf_name}: {int((got != want).sum())} values differ from gguf-py "
            f"({'exact repack' if linear else 'f16 rounding'} expected)")
