"""Interop: gpt-oss MXFP4 checkpoints against transformers' own dequantization.

Our generator (tests/gen/gen_mxfp4.c) writes a tiny gpt-oss checkpoint in the openai/gpt-oss layout
(`*_blocks` U8 + `*_scales` E8M0 experts, everything else BF16). transformers reads it two ways:

- loading: GptOssForCausalLM.from_pretrained with Mxfp4Config(dequantize=True) on CPU, in float32
  (the Mxfp4Dequantize load operation, i.e. convert_moe_packed_tensors into the BF16 model's
  GptOssExperts parameters [E, in, out]); its whole state_dict must equal our
  `convert --writer hf-dense --option dtype=f32` output bit for bit, key for key, shape for shape;
- the function itself: integrations.mxfp4.convert_moe_packed_tensors on the stored blocks and scales,
  in float32 and in bfloat16 (its default), against our f32 and bf16 outputs bit for bit;
- its BF16 save (save_pretrained of the dequantized model) read by our hf-dense reader: the same f32
  tensors, and byte-identical W4A16 layer files, as from the MXFP4 checkpoint.

Tolerance: none (E2M1 times a power of two is exact in both float32 and bfloat16).
"""
import json
import subprocess

import pytest
import torch
from safetensors.torch import load_file

BITS = {torch.float32: torch.int32, torch.bfloat16: torch.int16}


@pytest.fixture(scope="module")
def mxfp4_ckpt(build_dir, tmp_path_factory):
    gen = build_dir / "tests" / "bin" / "qb-gen-mxfp4"
    if not gen.is_file():
        pytest.fail(f"{gen} is missing: build the project first")
    d = tmp_path_factory.mktemp("mxfp4") / "gpt-oss-mxfp4"
    subprocess.run([str(gen), str(d), "--layers", "2", "--hidden", "64", "--intermediate", "96",
                    "--experts", "4", "--seed", "5"], check=True)
    return d


def _ours(run_qb, src, out, dtype):
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", f"dtype={dtype}")
    t = {}
    for f in sorted(out.glob("*.safetensors")):
        t.update(load_file(str(f)))
    return t


def _same_bits(a, b, what):
    assert a.shape == b.shape, f"{what}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    va, vb = a.contiguous().view(BITS[a.dtype]), b.contiguous().view(BITS[b.dtype])
    bad = (va != vb).nonzero()
    assert bad.numel() == 0, (f"{what}: {bad.shape[0]} elements differ, first at "
                              f"{bad[0].tolist()}: {a[tuple(bad[0])]} != {b[tuple(bad[0])]}")


def test_loaded_state_dict_equals_hf_dense_f32(mxfp4_ckpt, run_qb, tmp_path):
    from transformers import GptOssForCausalLM, Mxfp4Config

    assert json.loads((mxfp4_ckpt / "config.json").read_text())["quantization_config"][
        "quant_method"] == "mxfp4"
    ours = _ours(run_qb, mxfp4_ckpt, tmp_path / "f32", "f32")
    model = GptOssForCausalLM.from_pretrained(
        str(mxfp4_ckpt), quantization_config=Mxfp4Config(dequantize=True),
        dtype=torch.float32, device_map="cpu")
    theirs = model.state_dict()
    assert set(theirs) == set(ours), (f"only transformers: {sorted(set(theirs) - set(ours))}; "
                                      f"only ours: {sorted(set(ours) - set(theirs))}")
    n_expert = 0
    for k, v in theirs.items():
        _same_bits(ours[k], v.detach(), k)
        n_expert += k.endswith(("experts.gate_up_proj", "experts.down_proj"))
    assert n_expert == 4  # 2 layers x (gate_up_proj, down_proj)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_convert_moe_packed_tensors_equals_ours(mxfp4_ckpt, run_qb, tmp_path, dtype):
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    name = {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    ours = _ours(run_qb, mxfp4_ckpt, tmp_path / name, name)
    raw = load_file(str(mxfp4_ckpt / "model.safetensors"))
    n = 0
    for k in raw:
        if not k.endswith("_blocks"):
            continue
        p = k[: -len("_blocks")]
        ref = convert_moe_packed_tensors(raw[k], raw[p + "_scales"], dtype=dtype)
        _same_bits(ours[p], ref, p)
        n += 1
    assert n == 4


def test_transformers_saved_bf16_converts_like_mxfp4(mxfp4_ckpt, run_qb, tmp_path):
    """transformers' own BF16 save of the dequantized model (no quantization_config; experts
    `gate_up_proj` [E, in, 2I], `down_proj` [E, I, in]) is what the mxfp4 reader presents:
    read by hf-dense it gives the same f32 tensors, and the same W4A16 layer files."""
    from transformers import GptOssForCausalLM, Mxfp4Config

    model = GptOssForCausalLM.from_pretrained(
        str(mxfp4_ckpt), quantization_config=Mxfp4Config(dequantize=True),
        dtype=torch.bfloat16, device_map="cpu")
    saved = tmp_path / "saved-bf16"
    model.save_pretrained(str(saved))
    assert "quantization_config" not in json.loads((saved / "config.json").read_text())
    ours = _ours(run_qb, mxfp4_ckpt, tmp_path / "from-mxfp4", "f32")
    theirs = _ours(run_qb, saved, tmp_path / "from-saved", "f32")
    assert set(ours) == set(theirs)
    for k in ours:
        _same_bits(theirs[k], ours[k], k)
    for src, out in ((mxfp4_ckpt, "w4-mxfp4"), (saved, "w4-saved")):
        run_qb("convert", "--source", src, "--output", tmp_path / out, "--group-size", "32")
    for f in sorted((tmp_path / "w4-mxfp4").glob("layer_*.safetensors")):
        assert f.read_bytes() == (tmp_path / "w4-saved" / f.name).read_bytes(), f.name
