"""Interop: deepseek2 and gpt-oss GGUF files.

Hugging Face-side tensors are made first (random float32, transformers' names and layouts), then
written with gguf-py's own GGUFWriter after the transforms llama.cpp's converter applies
(DeepseekV2Model.modify_tensors: kv_b_proj viewed [H, nope + v, R], split, k_b transposed;
GptOssModel.modify_tensors: fused experts [E, in, out] transposed and gate/up de-interleaved at
even/odd rows), re-implemented here in numpy. Two checks per file:
  1. llama.cpp's own loader (llama-cpp-python `llama_model_load_from_file`) accepts it, so the
     names, shapes and keys are the ones llama.cpp expects;
  2. `quantbridge convert --writer hf-dense --option dtype=f32` returns every HF tensor bit for
     bit (array_equal on float32), and config.json carries the right model_type and widths.
"""
import ctypes
import json

import numpy as np
import pytest

import gguf
import llama_cpp

import _llamacpp_util as U

E, H, VOCAB = 64, 4, 256
# deepseek2 widths, all different so a nope/rope/v/rank mix-up shows
Q_LORA, KV_LORA, NOPE, ROPE, V = 48, 32, 16, 8, 24
N_EXP, N_USED, FF_EXP, FF, N_LAYER = 4, 2, 32, 96, 2
# gpt-oss widths
HKV, HD, I_OSS = 2, 16, 32


def _vocab(w):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(VOCAB - 3)]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * VOCAB)
    w.add_token_types([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
                      + [gguf.TokenType.BYTE] * (VOCAB - 3))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def _common(w, n_layer, n_head_kv, ff):
    w.add_name("quantbridge-interop")
    w.add_context_length(4096)
    w.add_embedding_length(E)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(ff)
    w.add_head_count(H)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    _vocab(w)


def _rand(rng, *shape, norm=False):
    if norm:
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    return (0.05 * rng.standard_normal(shape)).astype(np.float32)


def write_deepseek2(path, seed=7):
    """A DeepSeek-V3-shaped deepseek2 file in the newer (split kv_b, _mla keys) form."""
    rng = np.random.default_rng(seed)
    hf = {"model.embed_tokens.weight": _rand(rng, VOCAB, E), "model.norm.weight": _rand(rng, E, norm=True),
          "lm_head.weight": _rand(rng, VOCAB, E)}
    g = {"token_embd.weight": hf["model.embed_tokens.weight"], "output_norm.weight": hf["model.norm.weight"],
         "output.weight": hf["lm_head.weight"]}
    for l in range(N_LAYER):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        t = {
            "input_layernorm.weight": (_rand(rng, E, norm=True), "attn_norm.weight"),
            "self_attn.q_a_proj.weight": (_rand(rng, Q_LORA, E), "attn_q_a.weight"),
            "self_attn.q_a_layernorm.weight": (_rand(rng, Q_LORA, norm=True), "attn_q_a_norm.weight"),
            "self_attn.q_b_proj.weight": (_rand(rng, H * (NOPE + ROPE), Q_LORA), "attn_q_b.weight"),
            "self_attn.kv_a_proj_with_mqa.weight": (_rand(rng, KV_LORA + ROPE, E), "attn_kv_a_mqa.weight"),
            "self_attn.kv_a_layernorm.weight": (_rand(rng, KV_LORA, norm=True), "attn_kv_a_norm.weight"),
            "self_attn.o_proj.weight": (_rand(rng, E, H * V), "attn_output.weight"),
            "post_attention_layernorm.weight": (_rand(rng, E, norm=True), "ffn_norm.weight"),
        }
        if l == 0:  # first_k_dense_replace = 1
            t.update({"mlp.gate_proj.weight": (_rand(rng, FF, E), "ffn_gate.weight"),
                      "mlp.up_proj.weight": (_rand(rng, FF, E), "ffn_up.weight"),
                      "mlp.down_proj.weight": (_rand(rng, E, FF), "ffn_down.weight")})
        else:
            t.update({"mlp.gate.weight": (_rand(rng, N_EXP, E), "ffn_gate_inp.weight"),
                      "mlp.gate.e_score_correction_bias": (_rand(rng, N_EXP), "exp_probs_b.bias"),
                      "mlp.shared_experts.gate_proj.weight": (_rand(rng, FF_EXP, E), "ffn_gate_shexp.weight"),
                      "mlp.shared_experts.up_proj.weight": (_rand(rng, FF_EXP, E), "ffn_up_shexp.weight"),
                      "mlp.shared_experts.down_proj.weight": (_rand(rng, E, FF_EXP), "ffn_down_shexp.weight")})
            for proj, shape, gname in (("gate_proj", (FF_EXP, E), "ffn_gate_exps.weight"),
                                       ("up_proj", (FF_EXP, E), "ffn_up_exps.weight"),
                                       ("down_proj", (E, FF_EXP), "ffn_down_exps.weight")):
                per = [_rand(rng, *shape) for _ in range(N_EXP)]
                for x, a in enumerate(per):
                    hf[p + f"mlp.experts.{x}.{proj}.weight"] = a
                g[b + gname] = np.stack(per)  # torch.stack(datas, dim=0)
        for k, (a, gname) in t.items():
            hf[p + k] = a
            g[b + gname] = a
        kv_b = _rand(rng, H * (NOPE + V), KV_LORA)
        hf[p + "self_attn.kv_b_proj.weight"] = kv_b
        v3 = kv_b.reshape(H, NOPE + V, KV_LORA)
        g[b + "attn_k_b.weight"] = np.ascontiguousarray(v3[:, :NOPE, :].transpose(0, 2, 1))  # [H, R, nope]
        g[b + "attn_v_b.weight"] = np.ascontiguousarray(v3[:, NOPE:, :])                     # [H, v, R]
    w = gguf.GGUFWriter(str(path), "deepseek2")
    _common(w, N_LAYER, 1, FF)
    w.add_q_lora_rank(Q_LORA)
    w.add_kv_lora_rank(KV_LORA)
    w.add_key_length(KV_LORA + ROPE)
    w.add_value_length(KV_LORA)
    w.add_key_length_mla(NOPE + ROPE)
    w.add_value_length_mla(V)
    w.add_rope_dimension_count(ROPE)
    w.add_leading_dense_block_count(1)
    w.add_expert_count(N_EXP)
    w.add_expert_used_count(N_USED)
    w.add_expert_shared_count(1)
    w.add_expert_feed_forward_length(FF_EXP)
    w.add_expert_weights_scale(2.5)
    w.add_expert_weights_norm(True)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(40.0)
    w.add_rope_scaling_orig_ctx_len(4096)
    w.add_rope_scaling_yarn_log_mul(0.1 * 1.0)
    for k, a in g.items():
        w.add_tensor(k, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf


def write_gpt_oss(path, seed=11):
    """A gpt-oss file with float experts (GptOssModel's non-MXFP4 path)."""
    rng = np.random.default_rng(seed)
    hf = {"model.embed_tokens.weight": _rand(rng, VOCAB, E), "model.norm.weight": _rand(rng, E, norm=True),
          "lm_head.weight": _rand(rng, VOCAB, E)}
    g = {"token_embd.weight": hf["model.embed_tokens.weight"], "output_norm.weight": hf["model.norm.weight"],
         "output.weight": hf["lm_head.weight"]}
    for l in range(N_LAYER):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        t = {
            "input_layernorm.weight": (_rand(rng, E, norm=True), "attn_norm.weight"),
            "post_attention_layernorm.weight": (_rand(rng, E, norm=True), "post_attention_norm.weight"),
            "self_attn.q_proj.weight": (_rand(rng, H * HD, E), "attn_q.weight"),
            "self_attn.q_proj.bias": (_rand(rng, H * HD), "attn_q.bias"),
            "self_attn.k_proj.weight": (_rand(rng, HKV * HD, E), "attn_k.weight"),
            "self_attn.k_proj.bias": (_rand(rng, HKV * HD), "attn_k.bias"),
            "self_attn.v_proj.weight": (_rand(rng, HKV * HD, E), "attn_v.weight"),
            "self_attn.v_proj.bias": (_rand(rng, HKV * HD), "attn_v.bias"),
            "self_attn.o_proj.weight": (_rand(rng, E, H * HD), "attn_output.weight"),
            "self_attn.o_proj.bias": (_rand(rng, E), "attn_output.bias"),
            "self_attn.sinks": (_rand(rng, H), "attn_sinks.weight"),
            "mlp.router.weight": (_rand(rng, N_EXP, E), "ffn_gate_inp.weight"),
            "mlp.router.bias": (_rand(rng, N_EXP), "ffn_gate_inp.bias"),
            "mlp.experts.down_proj_bias": (_rand(rng, N_EXP, E), "ffn_down_exps.bias"),
        }
        for k, (a, gname) in t.items():
            hf[p + k] = a
            g[b + gname] = a
        gu = _rand(rng, N_EXP, E, 2 * I_OSS)       # [E, H, 2I]
        gub = _rand(rng, N_EXP, 2 * I_OSS)         # [E, 2I]
        dn = _rand(rng, N_EXP, I_OSS, E)           # [E, I, H]
        hf[p + "mlp.experts.gate_up_proj"] = gu
        hf[p + "mlp.experts.gate_up_proj_bias"] = gub
        hf[p + "mlp.experts.down_proj"] = dn
        gt = gu.transpose(0, 2, 1)                 # [E, 2I, H]
        g[b + "ffn_gate_exps.weight"] = np.ascontiguousarray(gt[:, ::2, :])
        g[b + "ffn_up_exps.weight"] = np.ascontiguousarray(gt[:, 1::2, :])
        g[b + "ffn_gate_exps.bias"] = np.ascontiguousarray(gub[..., ::2])
        g[b + "ffn_up_exps.bias"] = np.ascontiguousarray(gub[..., 1::2])
        g[b + "ffn_down_exps.weight"] = np.ascontiguousarray(dn.transpose(0, 2, 1))
    w = gguf.GGUFWriter(str(path), "gpt-oss")
    _common(w, N_LAYER, HKV, I_OSS)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_rope_dimension_count(HD)
    w.add_expert_count(N_EXP)
    w.add_expert_used_count(N_USED)
    w.add_expert_feed_forward_length(I_OSS)
    w.add_sliding_window(128)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(32.0)
    w.add_rope_scaling_orig_ctx_len(4096)
    for k, a in g.items():
        w.add_tensor(k, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf


def _llama_loads(path):
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 0
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    ok = bool(model)
    if ok:
        llama_cpp.llama_model_free(model)
    return ok


CASES = {"deepseek2": (write_deepseek2, "deepseek_v3"), "gpt-oss": (write_gpt_oss, "gpt_oss")}


@pytest.mark.parametrize("arch", sorted(CASES))
def test_llamacpp_loads_and_hf_dense_exact(arch, tmp_path, run_qb):
    write, model_type = CASES[arch]
    src = tmp_path / f"{arch}.gguf"
    hf = write(src)
    assert _llama_loads(src), f"llama.cpp refused the {arch} fixture"
    out = tmp_path / "hf"
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense", "--option", "dtype=f32")
    got = U.read_safetensors_dir(out)
    assert sorted(got) == sorted(hf)
    for k, want in hf.items():
        assert got[k].shape == want.shape, k
        assert np.array_equal(got[k].view(np.uint32), want.view(np.uint32)), k
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == model_type
    if arch == "deepseek2":
        assert (cfg["q_lora_rank"], cfg["kv_lora_rank"]) == (Q_LORA, KV_LORA)
        assert (cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]) == (NOPE, ROPE, V)
        assert cfg["num_key_value_heads"] == H and cfg["first_k_dense_replace"] == 1
    else:
        assert cfg["num_local_experts"] == N_EXP and cfg["intermediate_size"] == I_OSS
        assert cfg["layer_types"] == ["sliding_attention", "full_attention"]
