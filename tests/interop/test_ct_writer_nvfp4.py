"""Interop test: the compressed-tensors writer's NVFP4 output (issue 29, `--option scheme=nvfp4`,
nvfp4-pack-quantized as llm-compressor writes NVFP4A16 weights) read back by the
compressed-tensors library and by transformers.

From the same dense weights (float32 and bfloat16 sources, so both model dtypes' rounding is
exercised), ours is compared with the library's own calibration (generate_gparam,
compute_dynamic_scales_and_zp: tests/support/py/qbct.py) and NVFP4PackedCompressor output:

  1. weight_packed, weight_scale (e4m3 bytes) and weight_global_scale are the library's, bit
     for bit;
  2. the quantization_config's weights are the NVFP4A16 preset's (QuantizationArgs equality)
     and its format the one the library infers (nvfp4-pack-quantized);
  3. the library's decompression of our files equals our reader's decode bit for bit: its
     float32 dequantize our f32 decode, its model-free decompress (bf16 at the end) our bf16
     decode;
  4. decompress-then-run (transformers 5.24 on CPU cannot run the directory as loaded: see
     the test): the library's float32 dequantize of our files in transformers' dense Llama,
     whose float32 logits are within test_ct_writer_fp8's F32_REL of `quantbridge forward` on our
     directory, top-1 equal;
and `quantbridge verify` bounds the relative RMS error (0.15: E2M1 has one mantissa bit).
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import gguf  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402
import qbct  # noqa: E402
from compressed_tensors.compressors.format import infer_module_format  # noqa: E402
from compressed_tensors.quantization import (  # noqa: E402
    QuantizationConfig,
    preset_name_to_scheme,
)
from test_compressed_tensors import _library_f32  # noqa: E402
from test_ct_writer_fp8 import F32_REL, TOKENS, forward  # noqa: E402


def raw(t):
    """Bytes of a tensor, whatever its dtype (e4m3 and uint8 compare by bit pattern)."""
    return t.contiguous().view(torch.uint8)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_ct_writer_nvfp4_rtn_equals_library(dtype, tmp_path, run_qb):
    g = tmp_path / "dense.gguf"
    U.write_gguf(g, "llama", gguf.GGMLQuantizationType.F32, seed=11)
    dense = tmp_path / "dense"
    run_qb("convert", "--source", g, "--output", dense, "--writer", "hf-dense",
           "--option", f"dtype={dtype}")
    ct = tmp_path / "ct"
    proc = run_qb("convert", "--source", dense, "--output", ct, "--writer", "compressed-tensors",
                  "--option", "scheme=nvfp4", "--option", f"dtype={dtype}")
    proc = run_qb("verify", "--source", dense, "--converted", ct, "--max-rel-rmse", "0.15")
    assert "verify: PASS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    print("\n" + "\n".join((proc.stdout + proc.stderr).splitlines()[-4:]))

    # 1. the library's calibration and compression of the same weights
    tdt = torch.float32 if dtype == "f32" else torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True, dtype=tdt)
    lib_dir = tmp_path / "lib"
    qbct.compress_model(model, lib_dir, preset_name_to_scheme("NVFP4A16", ["Linear"]).weights)
    ours = U.read_safetensors_dir(ct)
    lib = U.read_safetensors_dir(lib_dir)
    packed = [k for k in lib if k.endswith(".weight_packed")]
    assert len(packed) == 2 * 7, sorted(lib)
    for k in packed:
        m = k[: -len(".weight_packed")]
        for suf in (".weight_packed", ".weight_scale", ".weight_global_scale"):
            a, b = ours[m + suf], lib[m + suf]
            assert a.dtype == b.dtype and a.shape == b.shape, \
                f"{m}{suf}: ours {a.dtype} {tuple(a.shape)}, library {b.dtype} {tuple(b.shape)}"
            diff = int((raw(a) != raw(b)).sum())
            assert diff == 0, f"{m}{suf}: {diff} bytes differ from the library's"

    # 2. the config names NVFP4A16's weights and the format the library infers
    qc = QuantizationConfig.model_validate(U.config(ct)["quantization_config"])
    (group,) = qc.config_groups.values()
    want_fmt = infer_module_format(torch.nn.Linear, group)
    assert group.format == want_fmt == "nvfp4-pack-quantized" and qc.format == want_fmt, \
        (group.format, qc.format, want_fmt)
    want_w = preset_name_to_scheme("NVFP4A16", ["Linear"]).weights
    assert group.weights == want_w, f"{group.weights} != NVFP4A16 {want_w}"

    # 3. the library's decompression equals our decode, bit for bit: its float32 dequantize
    # equals our f32 decode, and its decompress (which casts to bf16 at the end,
    # docs/formats/nvfp4.md) equals our bf16 decode and our f32 decode rounded to bf16
    for odt in ("f32", "bf16"):
        run_qb("convert", "--source", ct, "--output", tmp_path / f"ours-{odt}", "--writer",
               "hf-dense", "--option", f"dtype={odt}")
    ours32 = U.read_safetensors_dir(tmp_path / "ours-f32")
    ours16 = U.read_safetensors_dir(tmp_path / "ours-bf16")
    lib32 = _library_f32(ct, want_w)
    lib16 = qbct.library_decompress(ct, torch.bfloat16)
    assert len(lib32) == 14 and set(ours32) == set(lib16), sorted(set(ours32) ^ set(lib16))
    for name, want in lib32.items():
        U.assert_same_tensor(name, ours32[name], want, "library f32 dequantize vs ours")
    for name, want in lib16.items():
        if name not in lib32:
            # dense tensors come back as stored, in the model dtype
            U.assert_same_tensor(name, ours32[name].to(want.dtype), want, "dense tensor")
            continue
        U.assert_same_tensor(name, ours16[name], want, "library decompress vs ours bf16")
        U.assert_same_tensor(name, ours32[name].to(torch.bfloat16), want,
                             "library decompress vs ours f32 rounded to bf16")

    # 4. transformers runs the library's decompression; quantbridge forward runs our directory
    vocab = U.config(ct)["vocab_size"]
    ref = forward(run_qb, ct, tmp_path / "fwd.safetensors", vocab)
    # transformers 5.24 on CPU does not run this directory as loaded: with dtype=float32 the
    # decompressed bf16 weights meet float32 activations in compressed-tensors' quantized
    # forward (a dtype error), and that forward also re-quantizes the weights on every call.
    # So decompress-then-run: the library's own dequantize of our files (lib32, float32 as
    # its decompress computes before the final bf16 cast; dense tensors as stored), loaded
    # into the dense Llama transformers builds from the same config, run in float32
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    sd = {k: lib32.get(k, v).to(torch.float32) for k, v in lib16.items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.eval()
    with torch.no_grad():
        got = model(torch.tensor([[t % vocab for t in TOKENS]])).logits[0].numpy()
    scale = float(abs(ref).max())
    assert scale > 0.1, "reference logits ~0"
    diff = float(abs(got.astype("float64") - ref.astype("float64")).max())
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"nvfp4-{dtype}: transformers vs quantbridge forward: max|diff| {diff:.3g} "
          f"({diff / scale:.3g} of scale {scale:.3g}), top-1 {top1:.3f}")
    assert diff <= F32_REL * scale, f"logits differ by {diff:.3g} (scale {scale:.3g})"
    assert top1 == 1.0, f"top-1 agreement {top1}"


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _modelopt_from(lib_dir, out, scale_2):
    """A ModelOpt NVFP4 checkpoint (docs/formats/nvfp4.md) holding the library's codes and e4m3
    scales with weight_scale_2 = scale_2(global scale) per module; returns its dense values as
    ModelOpt's dequantizer defines them: e2m1 * (e4m3 * weight_scale_2), the parenthesis rounded
    to float32 first."""
    import json
    import shutil
    from safetensors.torch import load_file, save_file
    sd = load_file(str(lib_dir / "model.safetensors"))
    mo, dense = {}, {}
    for k, v in sd.items():
        if k.endswith(".weight_packed"):
            m = k[: -len(".weight_packed")]
            s2 = torch.tensor([scale_2(float(sd[m + ".weight_global_scale"].item()))],
                              dtype=torch.float32)
            mo[m + ".weight"] = v
            mo[m + ".weight_scale"] = sd[m + ".weight_scale"]
            mo[m + ".weight_scale_2"] = s2
            codes = torch.stack([v & 0xF, v >> 4], dim=-1).reshape(v.shape[0], -1).long()
            per = (sd[m + ".weight_scale"].to(torch.float32) * s2).repeat_interleave(16, dim=1)
            dense[m + ".weight"] = torch.tensor(E2M1, dtype=torch.float32)[codes] * per
        elif not k.endswith((".weight_scale", ".weight_global_scale")):
            mo[k] = v
    out.mkdir()
    save_file(mo, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = U.config(lib_dir)
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4",
                                  "kv_cache_quant_algo": None, "group_size": 16,
                                  "exclude_modules": ["lm_head"]}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    for f in lib_dir.iterdir():
        if f.name.startswith("tokenizer") or f.name == "special_tokens_map.json":
            shutil.copy(f, out / f.name)
    return dense


def _report(d):
    import json
    return {t["name"]: t for t in json.loads((d / "quantbridge-report.json").read_text())["tensors"]}


def _logits_vs_source(run_qb, dense, out, src, tmp_path, tag, want_w):
    """Transformers' dense Llama on the library's float32 dequantization of our output (the
    decompress-then-run of test_ct_writer_nvfp4_rtn_equals_library) against `quantbridge
    forward` on the *source*: max |diff| relative to the logit scale, and top-1 agreement."""
    vocab = U.config(out)["vocab_size"]
    ref = forward(run_qb, src, tmp_path / f"fwd-{tag}.safetensors", vocab)
    lib32 = _library_f32(out, want_w)
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    sd = {k: v.to(torch.float32) for k, v in U.read_safetensors_dir(out).items()
          if not k.endswith((".weight_packed", ".weight_scale", ".weight_global_scale"))}
    sd.update(lib32)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.eval()
    with torch.no_grad():
        got = model(torch.tensor([[t % vocab for t in TOKENS]])).logits[0].numpy()
    scale = float(abs(ref).max())
    diff = float(abs(got.astype("float64") - ref.astype("float64")).max())
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"\n{tag}: transformers on our output vs quantbridge forward on the source: "
          f"{diff / scale:.3g} of scale {scale:.3g}, top-1 {top1:.3f}")
    assert scale > 0.1 and diff <= F32_REL * scale and top1 == 1.0, (diff, scale, top1)


def test_ct_writer_nvfp4_sources_carry_over(tmp_path, run_qb):
    """NVFP4 sources (ABI 1.5 e2m1 grids) keep their codes and e4m3 scales under `auto`:
    the library's own NVFP4A16 checkpoint comes back byte for byte; a ModelOpt checkpoint with a
    power-of-two weight_scale_2 is exact (the library's f32 decompression of ours equals
    ModelOpt's dequantization bit for bit); with weight_scale_2 = 1 / global (rounded) the
    values differ at most in the last bit, each tensor reported exact being exact."""
    import shutil
    g = tmp_path / "dense.gguf"
    U.write_gguf(g, "llama", gguf.GGMLQuantizationType.F32, seed=12)
    dense = tmp_path / "dense"
    run_qb("convert", "--source", g, "--output", dense, "--writer", "hf-dense",
           "--option", "dtype=f32")
    model = AutoModelForCausalLM.from_pretrained(str(dense), local_files_only=True,
                                                 dtype=torch.float32)
    lib_dir = tmp_path / "lib"
    want_w = preset_name_to_scheme("NVFP4A16", ["Linear"]).weights
    qbct.compress_model(model, lib_dir, want_w)
    for f in dense.iterdir():
        if f.name.startswith("tokenizer") or f.name == "special_tokens_map.json":
            shutil.copy(f, lib_dir / f.name)
    lib = U.read_safetensors_dir(lib_dir)

    # the library's checkpoint written again: every byte of every NVFP4 tensor kept
    ct = tmp_path / "ct"
    run_qb("convert", "--source", lib_dir, "--output", ct, "--writer", "compressed-tensors",
           "--verify")
    ours = U.read_safetensors_dir(ct)
    packed = [k for k in lib if k.endswith(".weight_packed")]
    assert len(packed) == 14
    rep = _report(ct)
    for k in packed:
        m = k[: -len(".weight_packed")]
        for suf in (".weight_packed", ".weight_scale", ".weight_global_scale"):
            assert int((raw(ours[m + suf]) != raw(lib[m + suf])).sum()) == 0, m + suf
        assert rep[m + ".weight"]["action"] == "exact", rep[m + ".weight"]
    _logits_vs_source(run_qb, dense, ct, lib_dir, tmp_path, "compressed-tensors NVFP4", want_w)

    # ModelOpt sources made from the same codes and scales
    import math
    cases = {"pow2": lambda G: 2.0 ** round(math.log2(1.0 / G)),
             "recip": lambda G: float(torch.tensor(1.0 / G, dtype=torch.float32))}
    for name, s2 in cases.items():
        mo = tmp_path / f"mo-{name}"
        truth = _modelopt_from(lib_dir, mo, s2)
        out = tmp_path / f"ct-{name}"
        run_qb("convert", "--source", mo, "--output", out, "--writer", "compressed-tensors")
        got = U.read_safetensors_dir(out)
        lib32 = _library_f32(out, want_w)
        rep = _report(out)
        n_exact, worst = 0, 0.0
        for m_w, want in truth.items():
            m = m_w[: -len(".weight")]
            assert int((raw(got[m + ".weight_packed"]) != raw(lib[m + ".weight_packed"])).sum()) == 0
            assert int((raw(got[m + ".weight_scale"]) != raw(lib[m + ".weight_scale"])).sum()) == 0
            have = lib32[m_w]
            same = bool(torch.equal(have.view(torch.int32), want.view(torch.int32)))
            if rep[m_w]["action"] == "exact":
                n_exact += 1
                assert same, f"{name} {m_w}: reported exact, library's decode differs"
            else:
                assert rep[m_w]["action"] == "quantized", rep[m_w]
                rel = float(((have - want).norm() / want.norm()))
                assert rel <= 1e-6, f"{name} {m_w}: rel. error {rel:.3g}"
                worst = max(worst, rel)
        print(f"\nmodelopt {name}: {n_exact}/{len(truth)} exact, worst rel. error of the rest "
              f"{worst:.3g}")
        _logits_vs_source(run_qb, dense, out, mo, tmp_path, f"modelopt {name}", want_w)
        if name == "pow2":
            assert n_exact == len(truth)
        else:
            assert n_exact < len(truth)
