"""Interop test: the compressed-tensors writer's FP8 output (issue 29) read back
by the compressed-tensors library and by transformers.

Sources: the project's FP8 fixtures (qb-gen-fp8: per-channel, per-tensor, 128x128 blocks and
48x40 blocks with partial edge blocks, read by the fp8 reader) and a dense F32 GGUF quantized
anew with `--option scheme=fp8`. Each output is checked as test_ct_writer.py checks the
pack-quantized ones:

  1. exact where declared: the e4m3 bytes and scales in our files are the source's, byte for
     byte (the writer declares them exact, and `convert --verify` holds them to bit equality),
     and converting our output again (compressed-tensors reader to writer) changes no tensor;
  2. the library's own model-free decompression (CompressedTensorsDequantizer) of our output
     equals our reader's decode (`--writer hf-dense --option dtype=f32`) bit for bit;
  3. transformers loads the output and its float32 logits agree with `quantbridge forward` on
     the same directory within F32_REL of the logit scale, top-1 equal;
  4. the quantization_config's weights are the library's FP8_DYNAMIC / FP8 / FP8_BLOCK preset
     weights (QuantizationArgs equality) and its format is the one the library infers for the
     scheme (infer_module_format: naive-quantized for weight-only FP8), so vLLM picks its FP8
     paths from it.

And round to nearest: verify has no plain rule for an FP8 encoding, so the relative RMSE is
bounded here (0.04: e4m3's 3 mantissa bits give ~0.026 on these weights). For the same dense
weights, `scheme=fp8` writes the very weight and weight_scale tensors the library's own
calibration (calculate_qparams) and naive-quantized compression write for FP8_DYNAMIC's
weights, bit for bit.
"""
import os
import pathlib
import subprocess

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file as load_np  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402
import qbct  # noqa: E402
from compressed_tensors.compressors.format import infer_module_format  # noqa: E402
from compressed_tensors.quantization import (  # noqa: E402
    QuantizationArgs,
    QuantizationConfig,
    preset_name_to_scheme,
)

F32_REL = 2e-4
TOKENS = [1, 45, 3, 20, 7, 33, 60, 12, 2, 9, 50, 61]

# fixture -> (name of the source's scale tensor, preset whose weights ours must equal)
FP8_SOURCES = {
    "fp8-channel": ("weight_scale", "FP8_DYNAMIC"),
    "fp8-tensor": ("weight_scale", "FP8"),
    "fp8-block128": ("weight_scale_inv", "FP8_BLOCK"),
    "fp8-block48x40": ("weight_scale_inv", None),
}


def forward(run_qb, model, out, vocab):
    run_qb("forward", "--model", model, "--tokens", ",".join(str(t % vocab) for t in TOKENS),
           "--output", out, "--threads", "2")
    return load_np(str(out))["logits"]


def check_library_and_transformers(case, ct, tmp_path, run_qb):
    # 2. the library's decompression equals our decode, bit for bit
    ours_dir = tmp_path / "ours"
    run_qb("convert", "--source", ct, "--output", ours_dir, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours = U.read_safetensors_dir(ours_dir)
    lib = qbct.library_decompress(ct, torch.float32)
    assert set(ours) == set(lib), sorted(set(ours) ^ set(lib))
    for name, want in lib.items():
        U.assert_same_tensor(name, ours[name], want, f"{case} library vs ours")

    # 3. transformers runs it; its logits agree with quantbridge forward
    vocab = U.config(ct)["vocab_size"]
    ref = forward(run_qb, ct, tmp_path / "fwd.safetensors", vocab)
    model = AutoModelForCausalLM.from_pretrained(str(ct), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        got = model(torch.tensor([[t % vocab for t in TOKENS]])).logits[0].numpy()
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"{case}: reference logits ~0"
    diff = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"{case}: transformers vs quantbridge forward: max|diff| {diff:.3g} "
          f"({diff / scale:.3g} of scale {scale:.3g}), top-1 {top1:.3f}")
    assert diff <= F32_REL * scale, f"{case}: logits differ by {diff:.3g} (scale {scale:.3g})"
    assert top1 == 1.0, f"{case}: top-1 agreement {top1}"


def fp8_bytes(t):
    assert t.dtype == torch.float8_e4m3fn, t.dtype
    return t.view(torch.uint8)


@pytest.mark.parametrize("case", list(FP8_SOURCES))
def test_ct_writer_fp8_exact(case, tmp_path, run_qb, build_dir):
    scale_name, preset = FP8_SOURCES[case]
    subprocess.run([str(build_dir / "tests" / "bin" / "qb-gen-fp8"), str(tmp_path / "all")],
                   check=True, capture_output=True)
    src = tmp_path / "all" / case
    ct = tmp_path / "ct"
    proc = run_qb("convert", "--source", src, "--output", ct, "--writer", "compressed-tensors",
                  "--option", "dtype=f32", "--verify")
    text = proc.stdout + proc.stderr
    assert "verify: PASS" in text, text
    summary = [ln for ln in text.splitlines() if "% of quantized weights exact" in ln]
    assert summary and "100.0 % of quantized weights exact" in summary[0], text
    print(f"\n{case}: {summary[0]}")

    # 1. the source's e4m3 bytes and scales, as they were
    srct = U.read_safetensors_dir(src)
    ourt = U.read_safetensors_dir(ct)
    n = 0
    for k, w in srct.items():
        if w.dtype != torch.float8_e4m3fn:
            continue
        m = k[: -len(".weight")]
        assert torch.equal(fp8_bytes(ourt[k]), fp8_bytes(w)), f"{case}: {k} bytes differ"
        want = srct[f"{m}.{scale_name}"].to(torch.float32)
        got = ourt[f"{m}.weight_scale"]
        assert got.dtype == torch.float32
        assert got.numel() == want.numel(), f"{m}: {tuple(got.shape)} vs {tuple(want.shape)}"
        assert torch.equal(got.flatten(), want.flatten()), f"{case}: {m} scales differ"
        n += 1
    assert n > 0, f"{case}: no FP8 weight in the source"
    # ... and our output read back by the compressed-tensors reader (its FP8 weights offer the
    # same e4m3 grid) is written again tensor for tensor
    ct2 = tmp_path / "ct2"
    run_qb("convert", "--source", ct, "--output", ct2, "--writer", "compressed-tensors",
           "--option", "dtype=f32")
    again = U.read_safetensors_dir(ct2)
    assert set(again) == set(ourt), sorted(set(again) ^ set(ourt))
    for k, t in ourt.items():
        same = (torch.equal(fp8_bytes(again[k]), fp8_bytes(t)) if t.dtype == torch.float8_e4m3fn
                else again[k].dtype == t.dtype and torch.equal(again[k], t))
        assert same, f"{case}: {k} differs after compressed-tensors -> compressed-tensors"

    # 4. the config names the scheme llm-compressor's preset writes
    qc = QuantizationConfig.model_validate(U.config(ct)["quantization_config"])
    (group,) = qc.config_groups.values()
    # the format the library itself picks for this scheme: weight-only FP8 is naive-quantized
    want_fmt = infer_module_format(torch.nn.Linear, group)
    assert group.format == want_fmt and qc.format == want_fmt, (group.format, qc.format, want_fmt)
    if preset:
        want_w = preset_name_to_scheme(preset, ["Linear"]).weights
        assert group.weights == want_w, f"{case}: {group.weights} != {preset} {want_w}"
    assert qc.ignore == ["lm_head", "model.embed_tokens"], qc.ignore

    check_library_and_transformers(case, ct, tmp_path, run_qb)


def test_ct_writer_fp8_rtn_equals_library(tmp_path, run_qb):
    """Round to nearest from the same dense float32 weights: ours with scheme=fp8, the
    library's FP8_DYNAMIC weight calibration and naive-quantized compression (qbct)."""
    g = tmp_path / "dense.gguf"
    U.write_gguf(g, "llama", gguf.GGMLQuantizationType.F32, seed=9)
    dense = tmp_path / "dense"
    run_qb("convert", "--source", g, "--output", dense, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ct = tmp_path / "ct"
    proc = run_qb("convert", "--source", dense, "--output", ct, "--writer", "compressed-tensors",
                  "--option", "scheme=fp8")
    proc = run_qb("verify", "--source", dense, "--converted", ct, "--max-rel-rmse", "0.04")
    assert "verify: PASS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True,
                                                 dtype=torch.float32)
    lib_dir = tmp_path / "lib"
    qbct.compress_model(model, lib_dir, preset_name_to_scheme("FP8_DYNAMIC", ["Linear"]).weights)
    ours = U.read_safetensors_dir(ct)
    lib = U.read_safetensors_dir(lib_dir)
    scales = [k for k in lib if k.endswith(".weight_scale")]
    assert len(scales) == 2 * 7, sorted(lib)
    for k in scales:
        m = k[: -len(".weight_scale")]
        U.assert_same_tensor(k, ours[k], lib[k], "ours (fp8) vs library")
        assert torch.equal(fp8_bytes(ours[m + ".weight"]), fp8_bytes(lib[m + ".weight"])), \
            f"{m}.weight: e4m3 bytes differ from the library's"
    check_library_and_transformers("fp8-rtn", ct, tmp_path, run_qb)
