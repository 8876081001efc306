"""Interop: the Qwen3-Next hybrid family (issue 31) against transformers 5.24.

transformers builds each tiny model with its own classes (fixed seed,
float32, eager attention), saves it as its checkpoints are published
(per-expert tensors) and runs it on TOKENS; then
  - `quantbridge forward` on the saved directory must match its logits to
    F32_REL of the largest logit (test_logits.py says why 2e-4);
  - hf-dense (f32) must write every tensor back bit for bit, and
    transformers loading that output must give the same logits;
  - sm86-w4a16 must convert it, `verify` (tensors and its model check,
    docs/verify.md "Model verdict") must pass, and `quantbridge forward`
    on the W4A16 output must stay near the source's logits (4-bit weights:
    W4_REL, a bound for int4 noise, not for a wrong layout, which moves
    logits by O(1)).

Variants: Qwen3-Next with 2 value heads per key head (the grouped
in_proj_qkvz / in_proj_ba layout), a dense layer among MoE layers
(mlp_only_layers), full attention on the last layer (the default
full_attention_interval 4) and on an explicit layer_types list.
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

# int4 absmax weights at group 128 (here one group per row: every width
# is at most 128) in a 4-layer model: ~5-10 % of the logit scale measured.
W4_REL = 0.25

COMMON = dict(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=256)

FAMILIES = {
    "qwen3_next_interval": ("qwen3_next", dict(
        num_hidden_layers=4, linear_conv_kernel_dim=4, linear_key_head_dim=16,
        linear_value_head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4,
        moe_intermediate_size=32, shared_expert_intermediate_size=48, num_experts=4,
        num_experts_per_tok=2, mlp_only_layers=[1])),
    "qwen3_next_layer_types": ("qwen3_next", dict(
        num_hidden_layers=3, layer_types=["full_attention", "linear_attention", "linear_attention"],
        linear_conv_kernel_dim=3, linear_key_head_dim=8, linear_value_head_dim=16,
        linear_num_key_heads=4, linear_num_value_heads=4, moe_intermediate_size=32,
        shared_expert_intermediate_size=32, num_experts=8, num_experts_per_tok=3,
        norm_topk_prob=False, rope_parameters={"rope_type": "default", "rope_theta": 1000.0,
                                               "partial_rotary_factor": 0.5})),
}


def _classes(arch):
    if arch == "qwen3_next":
        from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
        return Qwen3NextConfig, Qwen3NextForCausalLM
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
