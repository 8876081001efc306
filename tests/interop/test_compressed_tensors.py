"""Interop test 4: compressed-tensors checkpoints written by the library itself.

The compressed-tensors library quantizes and compresses a tiny random Llama (every attention and
MLP projection; embeddings, norms and lm_head stay dense): pack-quantized int4 symmetric and
asymmetric at g32 and g128, int8 channel-wise (pack-quantized weight-only, int-quantized with W8A8
activations), FP8 channel and tensor (float-quantized with FP8 activations, naive-quantized
weight-only), with f32 and bf16 models; it writes model.safetensors and a
config.json carrying its own quantization_config. `quantbridge convert --writer hf-dense` must
equal the library's own decompression (CompressedTensorsDequantizer) bit for bit, for every
tensor. Tolerance: none. The library dequantizes in the scale's dtype ((q - zp) * scale), so an
f32 model is compared with our f32 output and a bf16 model with our bf16 output (one rounding
of the same f32 product on both sides).

NVFP4 (nvfp4-pack-quantized) and MXFP4 (mxfp4-pack-quantized), written by the library's own
compressors from a bf16 model: the library decompresses them in float32 and ends in bf16
(docs/formats/nvfp4.md), so our f32 output is compared bit for bit with the library's `dequantize`
run in float32 on the stored tensors, and its bf16 rounding (and our dtype=bf16 output) with the
library's decompression.
"""
import pytest
import torch
from safetensors.torch import load_file

import _ct_util as U
from compressed_tensors.quantization import QuantizationArgs
from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
from compressed_tensors.compressors.mx_utils import decompress_mx_scale
from compressed_tensors.quantization.lifecycle.forward import dequantize
from compressed_tensors.quantization.quant_scheme import (FP8_DYNAMIC, INT8_W8A8, MXFP4A16,
                                                         NVFP4A16)


def _int(bits, sym, strategy, group=None):
    return QuantizationArgs(num_bits=bits, type="int", symmetric=sym, strategy=strategy,
                            group_size=group)


def _fp8(strategy):
    return QuantizationArgs(num_bits=8, type="float", symmetric=True, strategy=strategy)


# id -> (weights, model dtype, format the library must choose)
CASES = {
    "int4_sym_g32": (_int(4, True, "group", 32), torch.float32, "pack-quantized"),
    "int4_sym_g128": (_int(4, True, "group", 128), torch.float32, "pack-quantized"),
    "int4_asym_g32": (_int(4, False, "group", 32), torch.float32, "pack-quantized"),
    "int4_asym_g128": (_int(4, False, "group", 128), torch.float32, "pack-quantized"),
    "int4_sym_g128_bf16": (_int(4, True, "group", 128), torch.bfloat16, "pack-quantized"),
    "int4_asym_g32_bf16": (_int(4, False, "group", 32), torch.bfloat16, "pack-quantized"),
    # weight-only int8 is packed too (the library picks pack-quantized for any INT weights
    # without activation quantization, infer_module_format); int-quantized is W8A8's format.
    "int8_channel": (_int(8, True, "channel"), torch.float32, "pack-quantized"),
    "int8_channel_w8a8": (_int(8, True, "channel"), torch.float32, "int-quantized"),
    # weight-only FP8 is naive-quantized; float-quantized is the format with FP8 activations.
    "fp8_channel_weight_only": (_fp8("channel"), torch.float32, "naive-quantized"),
    "fp8_channel": (_fp8("channel"), torch.float32, "float-quantized"),
    "fp8_tensor": (_fp8("tensor"), torch.float32, "float-quantized"),
    "fp8_channel_bf16": (_fp8("channel"), torch.bfloat16, "float-quantized"),
}

DTYPE_OPT = {torch.float32: "f32", torch.bfloat16: "bf16"}
BITS_VIEW = {torch.float32: torch.int32, torch.bfloat16: torch.int16}


# Activation schemes change only the format the library writes; our reader ignores them.
FP8_ACT = {"input_activations": FP8_DYNAMIC["input_activations"]}
EXTRA = {"int8_channel_w8a8": {"input_activations": INT8_W8A8["input_activations"]},
         "fp8_channel": FP8_ACT, "fp8_tensor": FP8_ACT, "fp8_channel_bf16": FP8_ACT}


@pytest.mark.parametrize("case", list(CASES))
def test_hf_dense_equals_library_decompression(run_qb, tmp_path, case):
    weights, dtype, fmt = CASES[case]
    src = tmp_path / "ct"
    qcfg = U.compress(src, weights, dtype, EXTRA.get(case))
    assert qcfg.format == fmt, f"the library chose {qcfg.format}, the case expects {fmt}"

    out = tmp_path / "hf"
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", f"dtype={DTYPE_OPT[dtype]}")
    ours = U.read_ours(out)
    want = U.library_decompress(src, dtype)

    assert set(ours) == set(want), f"tensor names differ: {sorted(set(ours) ^ set(want))}"
    for name, w in want.items():
        g = ours[name]
        assert g.dtype == dtype and w.dtype == dtype, f"{name}: ours {g.dtype}, library {w.dtype}"
        assert g.shape == w.shape, f"{name}: ours {tuple(g.shape)}, library {tuple(w.shape)}"
        view = BITS_VIEW[dtype]
        diff = g.view(view) != w.view(view)
        if diff.any():
            i = tuple(int(x) for x in diff.nonzero()[0])
            pytest.fail(f"{case}: {name}: {int(diff.sum())} of {g.numel()} values differ; "
                        f"first at {i}: ours {g[i].item()!r}, library {w[i].item()!r}")


def _bits_equal(case, name, g, w):
    assert g.dtype == w.dtype and g.shape == w.shape, f"{name}: {g.dtype} {g.shape} vs {w.dtype} {w.shape}"
    view = BITS_VIEW[g.dtype]
    diff = g.view(view) != w.view(view)
    if diff.any():
        i = tuple(int(x) for x in diff.nonzero()[0])
        pytest.fail(f"{case}: {name}: {int(diff.sum())} of {g.numel()} values differ; "
                    f"first at {i}: ours {g[i].item()!r}, library {w[i].item()!r}")


def _library_f32(src, weights):
    """The library's own dequantize of every FP4 module on disk, in float32 throughout (the
    E2M1 values and the scales unpacked to float32; the same float32 quotient and product
    the library's decompress computes before its final cast to bf16)."""
    sd = load_file(str(src / "model.safetensors"))
    out = {}
    for k, packed in sd.items():
        if not k.endswith(".weight_packed"):
            continue
        m = k[: -len(".weight_packed")]
        rows, half = packed.shape
        x_q = unpack_fp4_from_uint8(packed, rows, half * 2, dtype=torch.float32)
        scale = sd[m + ".weight_scale"]
        scale = (decompress_mx_scale(scale) if scale.dtype == torch.uint8 else scale).to(torch.float32)
        out[m + ".weight"] = dequantize(x_q=x_q, scale=scale, args=weights, dtype=torch.float32,
                                        global_scale=sd.get(m + ".weight_global_scale"))
    return out


@pytest.mark.parametrize("case", ["nvfp4", "mxfp4"])
def test_fp4_equals_library_decompression(run_qb, tmp_path, case):
    weights, fmt = {"nvfp4": (NVFP4A16["weights"], "nvfp4-pack-quantized"),
                    "mxfp4": (MXFP4A16["weights"], "mxfp4-pack-quantized")}[case]
    src = tmp_path / "ct"
    qcfg = U.compress(src, weights, torch.bfloat16)
    assert qcfg.format == fmt, qcfg.format
    for dt in (torch.float32, torch.bfloat16):
        run_qb("convert", "--source", src, "--output", tmp_path / DTYPE_OPT[dt], "--writer",
               "hf-dense", "--option", f"dtype={DTYPE_OPT[dt]}")
    ours32 = U.read_ours(tmp_path / "f32")
    ours16 = U.read_ours(tmp_path / "bf16")
    lib16 = U.library_decompress(src, torch.bfloat16)
    lib32 = _library_f32(src, weights)
    assert set(ours32) == set(lib16) == set(ours16), sorted(set(ours32) ^ set(lib16))
    assert len(lib32) == 14, sorted(lib32)
    for name, w in lib32.items():
        _bits_equal(case, name, ours32[name], w)
    for name, w in lib16.items():
        _bits_equal(case, name, ours32[name].to(torch.bfloat16), w)
        _bits_equal(case, name, ours16[name], w)
