"""Interop (issue 31): Llama 4's text model end to end against transformers' own Llama4ForCausalLM.

Llama4ForCausalLM (model_type llama4_text) is the text decoder; published Llama 4 checkpoints are
the multimodal wrapper (Llama4ForConditionalGeneration, model_type llama4, `language_model.*` and
`vision_model.*` tensors), which this slice does not read (refused by name: docs/forward.md,
"Llama 4"). Variants:
  - defaults_like: NoPE layer 3 (no_rope_layer_interval 4) with temperature tuning (floor_scale 4
    so that it changes q within 16 tokens), chunked attention on the rope layers (chunk 5), L2 q/k
    norm, MoE on every second layer (interleave_moe_layer_step 2), 4 experts top-2 plus the shared
    expert, dense layers of intermediate_size_mlp;
  - llama3_rope: llama3 rope scaling, explicit moe_layers [0, 2] and no_rope_layers, layer_types
    without chunking, no q/k norm, no temperature tuning, top-1 routing.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402

import _family_oracle as F  # noqa: E402
import _hf_util as U  # noqa: E402

VARIANTS = {
    "defaults_like": dict(interleave_moe_layer_step=2, num_experts_per_tok=2,
                          attention_chunk_size=5, floor_scale=4, attn_scale=0.5),
    "llama3_rope": dict(moe_layers=[0, 2], no_rope_layers=[1, 0, 1, 1], num_experts_per_tok=1,
                        layer_types=["full_attention"] * 4, use_qk_norm=False,
                        attn_temperature_tuning=False, tie_word_embeddings=True,
                        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0,
                                         "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 8}),
}


def _model(tmp_path, name):
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    cfg = Llama4TextConfig(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=32,
                           intermediate_size_mlp=96, num_hidden_layers=4, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16, num_local_experts=4,
                           max_position_embeddings=256, pad_token_id=0, bos_token_id=1,
                           eos_token_id=2, **VARIANTS[name])
    cfg._attn_implementation = "eager"
    model = Llama4ForCausalLM(cfg).float().eval()

    def routers(n, p):
        if "router" in n:
            p.mul_(5.0)  # routers without near-ties

    F.spread_(model, 13, routers)
    out = tmp_path / f"tiny-llama4-{name}"
    return out, F.save_and_run(model, out)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_llama4_forward_vs_transformers(name, tmp_path, run_qb):
    src, ref = _model(tmp_path, name)
    got = F.quantbridge_logits(run_qb, src, tmp_path)
    F.compare(f"llama4 {name} quantbridge forward vs transformers", got, ref, F.F32_REL)


def test_llama4_hf_dense(tmp_path, run_qb):
    src, _ = _model(tmp_path, "defaults_like")
    F.check_hf_dense(run_qb, src, tmp_path, "llama4")
