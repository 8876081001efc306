"""Interop (issue 31): Llama 4's text model end to end against transformers' own Llama4ForCausalLM.

Llama4ForCausalLM (model_type llama4_text) is the text decoder; published Llama 4 checkpoints are
the multimodal wrapper (Llama4ForConditionalGeneration, model_type llama4, `language_model.*` and
`vision_model.*` tensors), read as its text model with --option towers=drop (test_multimodal.py;
docs/formats/hf-dense.md, "Multimodal wrappers"). Variants:
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


def test_llama4_w4a16(tmp_path, run_qb):
    """The W4A16 layout of every tensor kind: attention and both MLP forms packed, the router
    F16, the fused experts stored per expert (docs/w4a16-format.md, "SmolLM3, Llama 4, Gemma 4")
    and served fused again; forward on it against transformers on its decoded weights; verify."""
    src, _ = _model(tmp_path, "defaults_like")
    out, fig, js = F.check_w4a16(run_qb, src, tmp_path, "llama4")
    import json
    man = json.loads((out / "manifest.json").read_text())
    assert [f["layout"] for f in man["fused_experts"]] == ["expert-in-out-concatenated"] * 2
    print(f"\nllama4 verify: model check {js.get('model_check')}")


def test_llama4_gguf_by_llama_cpp_converter(tmp_path, run_qb, build_dir):
    """llama.cpp's converter (Llama4Model, arch "llama4") on the tiny text model: its set_vocab
    wants a real Llama 4 BPE tokenizer (a pre-tokenizer hash it knows), so the tiny model's
    SentencePiece vocabulary is written instead; the tensors and keys are the converter's. The
    GGUF holds the experts split and transposed (ffn_gate_exps / ffn_up_exps / ffn_down_exps);
    our reader serves transformers' fused tensors again, bit for bit. llama.cpp fixes
    attention_chunk_size 8192, floor_scale 8192, attn_scale 0.1 and the NoPE interval 4 (no
    keys), so the model compared is one with those values (defaults), where the rebuilt config
    runs the same forward pass."""
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    cfg = Llama4TextConfig(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=32,
                           intermediate_size_mlp=96, num_hidden_layers=4, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16, num_local_experts=4,
                           num_experts_per_tok=2, interleave_moe_layer_step=2,
                           max_position_embeddings=256, pad_token_id=0, bos_token_id=1,
                           eos_token_id=2)
    cfg._attn_implementation = "eager"
    model = Llama4ForCausalLM(cfg).float().eval()

    def routers(n, p):
        if "router" in n:
            p.mul_(5.0)

    F.spread_(model, 17, routers)
    src = tmp_path / "tiny-llama4-gguf-src"
    ref = F.save_and_run(model, src)
    F.write_tokenizer(src)
    g = tmp_path / "llama4.gguf"
    proc = F.convert_to_gguf(build_dir, src, g, spm_vocab_for="llama:Llama4Model")
    assert proc.returncode == 0, f"convert_hf_to_gguf.py llama4:\n{proc.stderr[-3000:]}"
    _, cfg_out = F.check_gguf_readback(run_qb, src, g, tmp_path, "llama4")
    assert cfg_out["intermediate_size"] == 32 and cfg_out["intermediate_size_mlp"] == 96
    got = F.quantbridge_logits(run_qb, g, tmp_path)
    F.compare("llama4 GGUF (llama.cpp's converter) quantbridge forward vs transformers", got, ref,
              F.F32_REL)
