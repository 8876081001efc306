"""Interop (issue 31): SmolLM3 end to end against transformers' own SmolLM3 classes.

SmolLM3 is llama's decoder layer with NoPE layers: `no_rope_layers[L] == 0` skips the rotation
(SmolLM3Attention.use_rope), by default every 4th layer; `use_sliding_window` windows the layers
whose `layer_types` entry says sliding_attention (by default the NoPE ones). Variants: the
configuration class's defaults (layer 3 NoPE, rope_theta 2e6, tied head) and an explicit
pattern with sliding NoPE layers (window 3), rope_theta 10000 and an untied head.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402

import _family_oracle as F  # noqa: E402
import _hf_util as U  # noqa: E402

VARIANTS = {
    "defaults": dict(),
    "sliding_nope": dict(no_rope_layers=[0, 1, 0, 1], use_sliding_window=True, sliding_window=3,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                         tie_word_embeddings=False),
}


def _model(tmp_path, name):
    from transformers import SmolLM3Config, SmolLM3ForCausalLM
    cfg = SmolLM3Config(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=96,
                        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=256, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2, **VARIANTS[name])
    cfg._attn_implementation = "eager"
    model = SmolLM3ForCausalLM(cfg).float().eval()
    F.spread_(model, 11)
    out = tmp_path / f"tiny-smollm3-{name}"
    return out, F.save_and_run(model, out)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_smollm3_forward_vs_transformers(name, tmp_path, run_qb):
    src, ref = _model(tmp_path, name)
    got = F.quantbridge_logits(run_qb, src, tmp_path)
    F.compare(f"smollm3 {name} quantbridge forward vs transformers", got, ref, F.F32_REL)


def test_smollm3_hf_dense_and_w4a16(tmp_path, run_qb):
    src, _ = _model(tmp_path, "sliding_nope")
    F.check_hf_dense(run_qb, src, tmp_path, "smollm3")
    out, fig, js = F.check_w4a16(run_qb, src, tmp_path, "smollm3")
    print(f"\nsmollm3 verify: model check {js.get('model_check')}")
    # The tied variant has no lm_head in the format; this one keeps its own.
    assert (out / "lm_head.safetensors").exists()


def test_smollm3_gguf_by_llama_cpp_converter(tmp_path, run_qb, build_dir):
    """llama.cpp's converter (SmolLM3Model in convert_hf_to_gguf.py, arch "smollm3") on the
    tiny model; our GGUF reader gives back the source's tensors and config, and forward on the
    GGUF matches transformers."""
    src, ref = _model(tmp_path, "defaults")
    F.write_tokenizer(src)
    g = tmp_path / "smollm3.gguf"
    proc = F.convert_to_gguf(build_dir, src, g)
    assert proc.returncode == 0, f"convert_hf_to_gguf.py smollm3:\n{proc.stderr[-3000:]}"
    F.check_gguf_readback(run_qb, src, g, tmp_path, "smollm3")
    got = F.quantbridge_logits(run_qb, g, tmp_path)
    F.compare("smollm3 GGUF (llama.cpp's converter) quantbridge forward vs transformers", got, ref,
              F.F32_REL)
