"""Interop: DeepSeek-V2/V3 checkpoints against transformers and an independent FP8 dequantizer.

1  qb-gen-hf-dense --arch deepseek_v3 / deepseek_v2 (bf16, v3 with an MTP layer) converted by
   quantbridge to hf-dense f32 (mtp=drop, the default) loads offline with
   AutoModelForCausalLM with no missing, unexpected or mismatched keys, and transformers' state
   dict equals our safetensors bit for bit. transformers 5 holds the routed experts fused
   (DeepseekV3Experts.gate_up_proj [E, 2 * moe_intermediate, hidden], down_proj [E, hidden,
   moe_intermediate]; gate rows first, as its forward's chunk(2) reads them), so each of our
   per-expert tensors is compared with its slice. The router bias must stay float32.
2  qb-gen-fp8 --deepseek-v3: our fp8 reader's hf-dense f32 output equals a dequantization
   written here with torch alone (float8_e4m3fn -> float32, weight_scale_inv repeated over its
   128x128 blocks and cropped to the weight's shape: the partial edge blocks), for every FP8
   weight; every other tensor equals its stored value widened to float32.
"""
import os
import subprocess

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402


def gen(build_dir, *args):
    subprocess.run([str(build_dir / "tests" / "bin" / args[0]), *map(str, args[1:])], check=True)


@pytest.mark.parametrize("arch", ["deepseek_v3", "deepseek_v2"])
def test_transformers_loads_deepseek(tmp_path, build_dir, run_qb, arch):
    src, out = tmp_path / "src", tmp_path / "f32"
    extra = ["--mtp-layers", "1"] if arch == "deepseek_v3" else []
    gen(build_dir, "qb-gen-hf-dense", "--arch", arch, "--dtype", "bf16", "--layers", "3",
        "--hidden", "128", "--intermediate", "192", "--vocab", "64", "--experts", "4",
        "--first-k-dense", "1", "--seed", "9", "--out", src, *extra)
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    model, info = AutoModelForCausalLM.from_pretrained(
        str(out), output_loading_info=True, local_files_only=True, dtype=torch.float32)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info.get(key), f"{arch}: {key} = {sorted(info[key])}"
    sd = model.state_dict()
    ours = U.read_safetensors_dir(out)
    cfg = U.config(out)
    mi = cfg["moe_intermediate_size"]
    assert not any(k.startswith("model.layers.3.") for k in ours), "MTP layer not dropped"
    seen = set()
    for k, v in ours.items():
        if ".mlp.experts." in k:
            pre, rest = k.split(".mlp.experts.")
            e, proj = int(rest.split(".")[0]), rest.split(".")[1]
            if proj == "down_proj":
                got = sd[f"{pre}.mlp.experts.down_proj"][e]
            else:
                fused = sd[f"{pre}.mlp.experts.gate_up_proj"][e]
                got = fused[:mi] if proj == "gate_proj" else fused[mi:]
            U.assert_same_tensor(k, got.contiguous(), v, f"{arch} expert slice")
            seen.add(f"{pre}.mlp.experts.{'down_proj' if proj == 'down_proj' else 'gate_up_proj'}")
        else:
            assert k in sd, f"{arch}: our {k} is not a parameter of {type(model).__name__}"
            U.assert_same_tensor(k, sd[k], v, f"{arch} loaded by transformers")
            seen.add(k)
    assert set(sd) == seen, f"{arch}: parameters we did not write: {sorted(set(sd) - seen)}"
    if arch == "deepseek_v3":
        assert ours["model.layers.1.mlp.gate.e_score_correction_bias"].dtype == torch.float32


def dequant_block(w8, s, block=128):
    """Independent block dequantization: fp8 -> f32 times the scale grid expanded to the
    weight's shape (edge blocks cropped)."""
    n, k = w8.shape
    full = s.repeat_interleave(block, 0).repeat_interleave(block, 1)[:n, :k]
    return w8.to(torch.float32) * full


def test_fp8_deepseek_dequant(tmp_path, build_dir, run_qb):
    src, out = tmp_path / "fp8", tmp_path / "f32"
    gen(build_dir, "qb-gen-fp8", "--deepseek-v3", src)
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32", "--option", "mtp=keep")
    raw = U.read_safetensors_dir(src)
    ours = U.read_safetensors_dir(out)
    n_fp8 = 0
    partial = False
    for k, v in raw.items():
        if k.endswith(".weight_scale_inv"):
            continue
        if v.dtype == torch.float8_e4m3fn:
            s = raw[k[: -len(".weight")] + ".weight_scale_inv"]
            assert s.dtype == torch.float32
            assert tuple(s.shape) == (-(-v.shape[0] // 128), -(-v.shape[1] // 128))
            partial |= v.shape[0] % 128 != 0 or v.shape[1] % 128 != 0
            want = dequant_block(v, s)
            n_fp8 += 1
        else:
            want = v.to(torch.float32)
        U.assert_same_tensor(k, ours[k], want, "fp8 deepseek to hf-dense f32")
    assert n_fp8 > 0 and partial
    assert len(ours) == len([k for k in raw if not k.endswith(".weight_scale_inv")])
    assert any(k.startswith("model.layers.3.eh_proj") for k in ours), "mtp=keep lost the MTP layer"
