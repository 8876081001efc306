"""Interop (issue 31): Gemma 4's text model (Gemma4ForCausalLM, model_type gemma4_text), made by
transformers' own classes, where quantbridge stands today.

Done: the source reads and hf-dense writes it bit for bit (every tensor kind: per-layer
embeddings `model.embed_tokens_per_layer`, `model.per_layer_model_projection`, the per-layer
input gate/projection/norm, `layer_scalar`, the per-layer-type head sizes of `per_layer_config`).
Not done: the CPU forward pass and the W4A16 layout (Gemma4TextAttention's scale 1 with a
weightless v norm, proportional rope with per-type head_dim, per-layer inputs, KV sharing,
k_eq_v attention, the MoE block): both refuse the architecture by name, which is what this file
asserts, so that a silent half-support cannot appear.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import _family_oracle as F  # noqa: E402
import _hf_util as U  # noqa: E402


def _model(tmp_path):
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig
    cfg = Gemma4TextConfig(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=16, global_head_dim=32, max_position_embeddings=256,
                           vocab_size_per_layer_input=U.VOCAB, hidden_size_per_layer_input=8,
                           sliding_window=4, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    cfg._attn_implementation = "eager"
    model = Gemma4ForCausalLM(cfg).float().eval()
    F.spread_(model, 19)
    out = tmp_path / "tiny-gemma4"
    return out, F.save_and_run(model, out)


def test_gemma4_hf_dense(tmp_path, run_qb):
    src, ref = _model(tmp_path)
    out = F.check_hf_dense(run_qb, src, tmp_path, "gemma4")
    # transformers runs our f32 output to the same logits bit for bit (same weights, same code).
    got = F.transformers_logits_of(out)
    F.compare("gemma4 transformers on our hf-dense f32 vs the source", got, ref, 0.0)


def test_gemma4_refused_by_name(tmp_path, run_qb):
    src, _ = _model(tmp_path)
    fwd = run_qb("forward", "--model", src, "--tokens", "1,2,3", "--output",
                 tmp_path / "g4.safetensors", ok=False)
    assert fwd.returncode == 1 and "'gemma4_text' is not supported" in fwd.stderr, fwd.stderr
    conv = run_qb("convert", "--source", src, "--output", tmp_path / "g4-w4a16", "--writer",
                  "sm86-w4a16", ok=False)
    assert conv.returncode != 0 and "gemma4_text" in conv.stderr, conv.stderr
    assert not (tmp_path / "g4-w4a16" / "manifest.json").exists()
