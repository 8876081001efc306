"""Interop: the Qwen3-Next hybrids (issue 31: qwen3_next and the Qwen3.5
text models qwen3_5_text, qwen3_5_moe_text) against transformers 5.24.

transformers builds each tiny model with its own classes (fixed seed,
float32, eager attention), saves it as its checkpoints are published
(per-expert tensors) and runs it on TOKENS; then
  - `quantbridge forward` on the saved directory must match its logits to
    F32_REL of the largest logit (test_logits.py says why 2e-4);
  - hf-dense (f32) must write every tensor back bit for bit, and
    transformers loading that output must give the same logits;
  - sm86-w4a16 must convert it, `verify` (tensors and its model check,
    docs/verify.md "Model verdict") must pass, the F32 decay parameters
    (A_log, dt_bias) come back bit for bit and the F16 ones (norms, conv1d)
    rounded to f16, and `quantbridge forward` on the W4A16 output must
    match transformers run on the W4A16 weights (W4_REL).

Variants: Qwen3-Next with 2 value heads per key head (the grouped
in_proj_qkvz / in_proj_ba layout), a dense layer among MoE layers
(mlp_only_layers), full attention on the last layer (the default
full_attention_interval 4) and on an explicit layer_types list; Qwen3.5
dense (unfused in_proj_qkv / _z / _b / _a) and MoE (experts on every layer,
3 value heads per key head, alternating layer_types).
Weights are spread out (normal 0.1): the init's 0.02 leaves logits near 0;
A_log and dt_bias spread so decays differ per head; routers scaled so
top-k choices are not near-ties.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import _hf_util as U  # noqa: E402
from test_logits import F32_REL, TOKENS, compare, quantbridge_logits  # noqa: E402

# `quantbridge forward` on the W4A16 output against transformers on the
# same int4 weights (the W4A16 output dequantized to f32 by hf-dense): the
# W4A16 CPU backend rounds each linear's input and output to fp16
# (qb_w4a16.h), measured 9.4e-3 of the logit scale; a wrong layout or a
# lost gate moves the logits by O(1).
W4_REL = 2e-2

COMMON = dict(vocab_size=U.VOCAB, hidden_size=64, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=256)

FAMILIES = {
    "qwen3_next_interval": ("qwen3_next", dict(
        num_hidden_layers=4, intermediate_size=96, linear_conv_kernel_dim=4, linear_key_head_dim=16,
        linear_value_head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4,
        moe_intermediate_size=32, shared_expert_intermediate_size=48, num_experts=4,
        num_experts_per_tok=2, mlp_only_layers=[1])),
    "qwen3_next_layer_types": ("qwen3_next", dict(
        num_hidden_layers=3, intermediate_size=96, layer_types=["full_attention", "linear_attention", "linear_attention"],
        linear_conv_kernel_dim=3, linear_key_head_dim=8, linear_value_head_dim=16,
        linear_num_key_heads=4, linear_num_value_heads=4, moe_intermediate_size=32,
        shared_expert_intermediate_size=32, num_experts=8, num_experts_per_tok=3,
        norm_topk_prob=False, rope_parameters={"rope_type": "default", "rope_theta": 1000.0,
                                               "partial_rotary_factor": 0.5})),
    "qwen3_5": ("qwen3_5_text", dict(
        num_hidden_layers=4, intermediate_size=96, linear_conv_kernel_dim=4,
        linear_key_head_dim=16, linear_value_head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=4)),
    "qwen3_5_moe": ("qwen3_5_moe_text", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention",
                                          "linear_attention", "full_attention"],
        linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=6, moe_intermediate_size=32,
        shared_expert_intermediate_size=48, num_experts=6, num_experts_per_tok=2)),
}


def _classes(arch):
    if arch == "qwen3_next":
        from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
        return Qwen3NextConfig, Qwen3NextForCausalLM
    if arch == "qwen3_5_text":
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        return Qwen3_5TextConfig, Qwen3_5ForCausalLM
    if arch == "qwen3_5_moe_text":
        from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
        return Qwen3_5MoeTextConfig, Qwen3_5MoeForCausalLM
    raise AssertionError(arch)


def _model(tmp_path, name):
    arch, extra = FAMILIES[name]
    cls_cfg, cls = _classes(arch)
    cfg = cls_cfg(**COMMON, **extra)
    cfg._attn_implementation = "eager"
    torch.manual_seed(11)
    model = cls(cfg).float().eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0.0, 0.1)
            if n.endswith("A_log") or n.endswith("dt_bias"):
                p.normal_(0.0, 0.5)
            if n.endswith("linear_attn.norm.weight"):
                p.add_(1.0)  # plain weight (Qwen3NextRMSNormGated); the others are 1 + w
            if n.endswith("mlp.gate.weight"):
                p.mul_(5.0)
    out = tmp_path / f"tiny-{name}"
    model.save_pretrained(str(out))
    with torch.no_grad():
        ref = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    return out, ref


@pytest.mark.parametrize("name", list(FAMILIES))
def test_qwen_hybrid_forward_vs_transformers(name, tmp_path, run_qb):
    model, ref = _model(tmp_path, name)
    got = quantbridge_logits(run_qb, model, tmp_path)
    compare(f"{name} quantbridge forward vs transformers", got, ref, F32_REL)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_qwen_hybrid_hf_dense_roundtrip(name, tmp_path, run_qb):
    from transformers import AutoModelForCausalLM
    model, ref = _model(tmp_path, name)
    out = tmp_path / "hf"
    run_qb("convert", "--source", model, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    src, got = U.read_safetensors_dir(model), U.read_safetensors_dir(out)
    assert set(got) == set(src), f"tensors differ: {sorted(set(got) ^ set(src))}"
    for k in sorted(src):
        U.assert_same_tensor(k, got[k], src[k], "hf-dense output")
    m = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    with torch.no_grad():
        logits = m(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    compare(f"{name} transformers on hf-dense output vs source", logits, ref, 0.0)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_qwen_hybrid_w4a16(name, tmp_path, run_qb):
    from transformers import AutoModelForCausalLM
    model, _ = _model(tmp_path, name)
    w4, back = tmp_path / "w4", tmp_path / "w4-hf"
    run_qb("convert", "--source", model, "--output", w4)
    v = run_qb("verify", "--source", model, "--converted", w4, "--tokens",
               ",".join(map(str, TOKENS)))
    assert "verify: PASS" in v.stdout + v.stderr, v.stdout + v.stderr
    assert "model verdict:" in v.stdout + v.stderr, v.stdout + v.stderr
    run_qb("convert", "--source", w4, "--output", back, "--writer", "hf-dense",
           "--option", "dtype=f32")
    src, got = U.read_safetensors_dir(model), U.read_safetensors_dir(back)
    assert set(got) == set(src), f"tensors differ: {sorted(set(got) ^ set(src))}"
    n_f32 = n_f16 = 0
    for k in sorted(src):
        if k.endswith("A_log") or k.endswith("dt_bias"):
            U.assert_same_tensor(k, got[k], src[k], "W4A16 F32 parameter")
            n_f32 += 1
        elif k.endswith("conv1d.weight") or k.endswith("norm.weight"):
            U.assert_same_tensor(k, got[k], src[k].half().float(), "W4A16 F16 tensor")
            n_f16 += 1
    assert n_f32 > 0 and n_f16 > 0
    m = AutoModelForCausalLM.from_pretrained(str(back), local_files_only=True,
                                             dtype=torch.float32,
                                             attn_implementation="eager").eval()
    with torch.no_grad():
        ref = m(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    got_logits = quantbridge_logits(run_qb, w4, tmp_path)
    compare(f"{name} quantbridge forward on W4A16 vs transformers on its weights", got_logits,
            ref, W4_REL)


def test_qwen_hybrid_mtp_dropped(tmp_path, run_qb):
    """Published Qwen3-Next / Qwen3.5 checkpoints carry their MTP block as
    `mtp.*` (transformers ignores `^mtp.*` on load): hf-dense leaves it out
    by default, so the W4A16 writer converts the decoder; mtp=keep presents
    it and hf-dense writes it back unchanged."""
    from safetensors.torch import load_file, save_file
    model, ref = _model(tmp_path, "qwen3_next_interval")
    f = model / "model.safetensors"
    t = load_file(str(f))
    torch.manual_seed(3)
    mtp = {"mtp.fc.weight": torch.randn(64, 128), "mtp.norm.weight": torch.randn(64),
           "mtp.layers.0.input_layernorm.weight": torch.randn(64)}
    save_file({**t, **mtp}, str(f), metadata={"format": "pt"})
    dropped = tmp_path / "drop"
    run_qb("convert", "--source", model, "--output", dropped, "--writer", "hf-dense",
           "--option", "dtype=f32")
    got = U.read_safetensors_dir(dropped)
    assert set(got) == set(t), f"mtp=drop: {sorted(set(got) ^ set(t))}"
    kept = tmp_path / "keep"
    run_qb("convert", "--source", model, "--output", kept, "--writer", "hf-dense",
           "--option", "dtype=f32", "--option", "mtp=keep")
    got = U.read_safetensors_dir(kept)
    assert set(got) == set(t) | set(mtp)
    for k in mtp:
        U.assert_same_tensor(k, got[k], mtp[k], "mtp=keep")
    run_qb("convert", "--source", model, "--output", tmp_path / "w4")
    logits = quantbridge_logits(run_qb, model, tmp_path)
    compare("qwen3_next with mtp.* quantbridge forward vs transformers", logits, ref, F32_REL)
