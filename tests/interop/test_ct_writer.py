"""Interop test: the compressed-tensors writer (issue 29) read back by the compressed-tensors
library and by transformers.

Sources: tiny Llama models as GGUF Q4_0 and Q8_0 (gguf-py's quantizer), GPTQ sym, asym and
act-order and AWQ GEMM (the project's generators, qb-gen-quant), our W4A16 format, and a dense
F32 GGUF (quantized anew). Each is converted with `--writer compressed-tensors` and:

  1. the library's own model-free decompression (CompressedTensorsDequantizer) of our output
     equals our reader's decode of it (`--writer hf-dense --option dtype=f32`) bit for bit,
     every tensor; the library dequantizes in the scale's dtype, so the model dtype f32
     (`--option dtype=f32`) makes both sides one float32 product;
  2. transformers loads the output (its CompressedTensors quantizer decompresses it; the
     asymmetric ones with CompressedTensorsConfig(dequantize=True), see SOURCES) and its
     float32 logits agree with `quantbridge forward` on the same directory within F32_REL of
     the logit scale (the bound test_logits.py derives for two float32 runtimes), top-1 equal;
  3. where the plan says exact, the integer codes are the source's: `quantbridge verify`
     (run by convert --verify) holds every declared tensor to bit equality.

The dense F32 GGUF also with `--option quant_rule=search` (the W4A16 writer's int4 search, whose
scales may be negative), checked the same way.

And the round-to-nearest rule: for the same dense weights, `--option quant_rule=minmax`
writes the very weight_packed and weight_scale tensors the library's own calibration
(calculate_qparams, the minmax observer llm-compressor's W4A16 preset uses) and compression
write, bit for bit.
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
from transformers import AutoModelForCausalLM, CompressedTensorsConfig  # noqa: E402

import _hf_util as U  # noqa: E402
import qbct  # noqa: E402
from compressed_tensors.quantization import QuantizationArgs  # noqa: E402

F32_REL = 2e-4
TOKENS = [1, 45, 3, 20, 7, 33, 60, 12, 2, 9, 50, 61]

# source id -> (kind, generator argument, exact linears expected, transformers loads it as is).
# Asymmetric pack-quantized checkpoints (zero points packed along N, [ceil(N/pf), G], as the
# library itself writes them) do not load in transformers 5.24 with compressed-tensors 0.20.1 by
# default: PackedQuantizationCompressor.compress returns early for the meta-device model
# transformers builds, before it packs the zero point, so the module keeps an [N, G] parameter
# and the checkpoint's packed one mismatches; the library's own output fails the same way
# (docs/formats/compressed-tensors.md, "Writing"). Those load with
# CompressedTensorsConfig(dequantize=True), which decompresses each module's tensors with the
# library's decompress (it unpacks the zero point), and are checked that way.
SOURCES = {
    "gguf_q4_0": ("gguf", gguf.GGMLQuantizationType.Q4_0, True, True),
    "gguf_q8_0": ("gguf", gguf.GGMLQuantizationType.Q8_0, True, True),
    "gptq_sym": ("quant", "gptq-4-g128-sym-v1", True, True),
    "gptq_asym": ("quant", "gptq-4-g128-asym-v1", True, False),
    "gptq_actorder": ("quant", "gptq-4-g128-sym-v1-actorder", False, True),
    "gptq_8bit_asym": ("quant", "gptq-8-chan-asym-v2", True, False),
    "awq_gemm": ("quant", "awq-gemm-g128-zp", True, False),
    "w4a16": ("w4a16", gguf.GGMLQuantizationType.F32, True, True),
    "gguf_f32": ("gguf", gguf.GGMLQuantizationType.F32, False, True),
    "gguf_f32_search": ("gguf", gguf.GGMLQuantizationType.F32, False, True),
}
# source id -> quant_rule (the default absmax otherwise): the sm86-w4a16 writer's int4 search,
# whose scales may be negative (the largest magnitude on code -8), which the library's linear
# decode (code - 8) * scale must carry as it is
RULES = {"gguf_f32_search": "search"}


def strip_bias(d):
    """The generators' Llama fixtures carry q_proj.bias while their config declares no
    attention_bias, so transformers ignores it and quantbridge does not: dropped here so both
    runtimes run the same model."""
    from safetensors.torch import load_file, save_file
    for f in pathlib.Path(d).glob("*.safetensors"):
        t = load_file(str(f))
        save_file({k: v for k, v in t.items() if not k.endswith("_proj.bias")}, str(f),
                  metadata={"format": "pt"})


def make_source(kind, arg, tmp_path, run_qb, build_dir):
    if kind == "gguf":
        p = tmp_path / "src.gguf"
        U.write_gguf(p, "llama", arg, seed=5)
        return p
    if kind == "quant":
        p = tmp_path / "src"
        subprocess.run([str(build_dir / "tests" / "bin" / "qb-gen-quant"), str(p), arg],
                       check=True, capture_output=True)
        strip_bias(p)
        return p
    g = tmp_path / "dense.gguf"
    U.write_gguf(g, "llama", arg, seed=5)
    p = tmp_path / "w4a16"
    run_qb("convert", "--source", g, "--output", p, "--writer", "sm86-w4a16")
    return p


def forward(run_qb, model, out, vocab):
    run_qb("forward", "--model", model, "--tokens", ",".join(str(t % vocab) for t in TOKENS),
           "--output", out, "--threads", "2")
    return load_np(str(out))["logits"]


@pytest.mark.parametrize("case", list(SOURCES))
def test_ct_writer_roundtrip(case, tmp_path, run_qb, build_dir):
    kind, arg, exact, loads = SOURCES[case]
    src = make_source(kind, arg, tmp_path, run_qb, build_dir)
    ct = tmp_path / "ct"
    rule = ["--option", f"quant_rule={RULES[case]}"] if case in RULES else []
    proc = run_qb("convert", "--source", src, "--output", ct, "--writer", "compressed-tensors",
                  "--option", "dtype=f32", "--verify", *rule)
    assert "verify: PASS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    text = proc.stdout + proc.stderr
    summary = [ln for ln in text.splitlines() if "% of quantized weights exact" in ln]
    assert summary, text
    if exact:
        assert "100.0 % of quantized weights exact" in summary[0], summary[0]
    print(f"\n{case}: {summary[0]}")

    # 1. the library's decompression equals our decode, bit for bit
    ours_dir = tmp_path / "ours"
    run_qb("convert", "--source", ct, "--output", ours_dir, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours = U.read_safetensors_dir(ours_dir)
    lib = qbct.library_decompress(ct, torch.float32)
    assert set(ours) == set(lib), sorted(set(ours) ^ set(lib))
    for name, want in lib.items():
        U.assert_same_tensor(name, ours[name], want, f"{case} library vs ours")
    if case in RULES:
        written = U.read_safetensors_dir(ct)
        neg = sum(int((np.asarray(v) < 0).sum()) for k, v in written.items()
                  if k.endswith(".weight_scale"))
        print(f"{case}: {neg} negative scales")
        assert neg > 0, f"{case}: no negative scale, the sign path is not exercised"

    # 2. transformers runs it; its logits agree with quantbridge forward
    kw = {} if loads else {"quantization_config": CompressedTensorsConfig(dequantize=True)}
    cfg = U.config(ct)
    vocab = cfg["vocab_size"]
    ref = forward(run_qb, ct, tmp_path / "fwd.safetensors", vocab)
    model = AutoModelForCausalLM.from_pretrained(str(ct), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager",
                                                 **kw)
    model.eval()
    with torch.no_grad():
        got = model(torch.tensor([[t % vocab for t in TOKENS]])).logits[0].numpy()
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"{case}: reference logits ~0"
    diff = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"{case}: transformers{'' if loads else ' (dequantize=True)'} vs quantbridge forward: "
          f"max|diff| {diff:.3g} "
          f"({diff / scale:.3g} of scale {scale:.3g}), top-1 {top1:.3f}")
    assert diff <= F32_REL * scale, f"{case}: logits differ by {diff:.3g} (scale {scale:.3g})"
    assert top1 == 1.0, f"{case}: top-1 agreement {top1}"


def test_ct_writer_minmax_equals_library(tmp_path, run_qb):
    """Round to nearest from the same dense float32 weights: ours with quant_rule=minmax, the
    library's minmax calibration and pack-quantized compression (tests/support/py/qbct.py)."""
    g = tmp_path / "dense.gguf"
    U.write_gguf(g, "llama", gguf.GGMLQuantizationType.F32, seed=9)
    dense = tmp_path / "dense"
    run_qb("convert", "--source", g, "--output", dense, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours_dir = tmp_path / "ours"
    run_qb("convert", "--source", dense, "--output", ours_dir, "--writer", "compressed-tensors",
           "--option", "quant_rule=minmax", "--option", "group_size=128")
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True,
                                                 dtype=torch.float32)
    lib_dir = tmp_path / "lib"
    qbct.compress_model(model, lib_dir, QuantizationArgs(num_bits=4, type="int", symmetric=True,
                                                         strategy="group", group_size=128))
    ours = U.read_safetensors_dir(ours_dir)
    lib = U.read_safetensors_dir(lib_dir)
    packed = [k for k in lib if k.endswith(".weight_packed")]
    assert len(packed) == 2 * 7, sorted(lib)
    for k in packed:
        m = k[: -len(".weight_packed")]
        for suffix in (".weight_packed", ".weight_scale", ".weight_shape"):
            U.assert_same_tensor(m + suffix, ours[m + suffix], lib[m + suffix],
                                 "ours (minmax) vs library")
