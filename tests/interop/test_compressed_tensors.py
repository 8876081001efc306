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

NVFP4 (nvfp4-pack-quantized) exists in this library version; our reader refuses it (reading it
is another issue), so that case asserts the refusal: exit 1 and an error naming the format.
"""
import pytest
import torch

import _ct_util as U
from compressed_tensors.quantization import QuantizationArgs
from compressed_tensors.quantization.quant_scheme import FP8_DYNAMIC, INT8_W8A8, NVFP4A16


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


def test_nvfp4_is_refused_by_name(run_qb, tmp_path):
    src = tmp_path / "ct"
    qcfg = U.compress(src, NVFP4A16["weights"], torch.bfloat16)
    assert qcfg.format == "nvfp4-pack-quantized", qcfg.format
    # The library itself can decompress what it wrote (so the fixture is a valid checkpoint).
    assert all(torch.isfinite(t.float()).all() for t in U.library_decompress(src, torch.float32).values())
    proc = run_qb("convert", "--source", src, "--output", tmp_path / "hf", "--writer", "hf-dense",
                  ok=False)
    assert proc.returncode == 1, f"exit {proc.returncode}, stderr: {proc.stderr}"
    assert "nvfp4-pack-quantized" in proc.stderr, proc.stderr
    assert not (tmp_path / "hf").exists(), "a refused conversion left an output behind"
