"""Interop test 3: logits agree across engines on the same weights.

One tiny random model is written as GGUF with gguf-py (F32 and Q8_0) and run
on a fixed token list by
  - llama.cpp (llama-cpp-python's low-level API through
    tests/support/py/qbllama.py: all logits, F32 KV cache, flash attention
    off, 2 threads, no extra buffer types),
  - transformers (float32, eager attention) on our hf-dense (f32) output of
    that GGUF,
  - `quantbridge forward` on the GGUF itself (issue 16's CLI).

Tolerances: errors are compared to the scale of the logits, max|logit| of
the reference. Measured (llama.cpp 0.3.36, transformers 5.24, 16 tokens,
hidden 256, 2 layers): F32 max|diff|/scale 4.7e-7 .. 6.5e-7 (llama, mistral,
qwen2, qwen3, qwen3moe), 6.5e-6 (gemma3), 5.1e-5 (gemma2, tanh soft-capping
at 30); Q8_0 1.2e-3 .. 1.3e-2 with top-1 0.94 .. 1.0.
  - Same float32 weights, float32 arithmetic in both engines (transformers vs
    quantbridge forward everywhere; llama.cpp on an F32 GGUF): only the
    order of accumulation differs. A length-K float32 dot product carries a
    relative error of about sqrt(K) * 2^-24 (random-walk rounding), ~1.4e-6
    at K=512, and a 2-layer model chains about 15 such products, norms and
    softmaxes, so ~2e-5 of the logit scale is expected; the bound is
    F32_REL = 2e-4 (10x headroom), far below any real mistake (a wrong
    permutation, norm offset or bias moves logits by O(1)).
  - llama.cpp on a Q8_0 GGUF: its CPU matmul quantizes each activation row
    to Q8_0 too (32-element blocks, scale amax/127) before the integer dot
    product, while transformers and quantbridge multiply the dequantized
    weights by float activations. That rounding is up to amax/254 per
    element, about 0.5% rms of each matmul input, so ~1-2% of the logit scale
    after two layers; the bound is Q8_REL = 5e-2, and top-1 must agree on
    nearly every position (at least 90%: a near-tie may flip under 1%
    noise, a broken model agrees on ~1/vocab).
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402
import qbllama  # noqa: E402

Q = gguf.GGMLQuantizationType

F32_REL = 2e-4
Q8_REL = 5e-2
Q8_MIN_TOP1 = 0.9

# BOS then a spread of ids over the vocabulary (byte tokens and pieces).
TOKENS = [1, 45, 260, 3, 120, 287, 77, 200, 261, 9, 150, 270, 33, 250, 99, 281]

ARCHS = ["llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "qwen3moe"]
# llama.cpp 0.3.36 refuses the minimal vocabulary for arch phi3 ("error
# loading model vocabulary: unordered_map::at", a phi3-specific token lookup),
# so phi3 runs in transformers and quantbridge forward only.
ARCHS_LLAMA_CPP = [a for a in ARCHS if a != "phi3"]
QTYPES = {"F32": Q.F32, "Q8_0": Q.Q8_0}


def _model(tmp_path, arch, qname):
    p = tmp_path / f"tiny-{arch}-{qname}.gguf"
    if not p.exists():
        U.write_gguf(p, arch, QTYPES[qname], seed=3)
    return p


def llama_cpp_logits(path):
    # qbllama: all logits, F32 KV cache, flash attention off, 2 threads, and no extra buffer
    # types (llama.cpp's AMX matmul crashes on the build machine; the file says more).
    return qbllama.llama_logits(path, TOKENS)


def transformers_logits(run_qb, gguf_path, tmp_path):
    out = tmp_path / (gguf_path.stem + "-hf")
    if not out.exists():
        run_qb("convert", "--source", gguf_path, "--output", out, "--writer", "hf-dense",
               "--option", "dtype=f32")
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits[0]
    return logits.numpy().astype(np.float32)


def quantbridge_logits(run_qb, model, tmp_path):
    f = tmp_path / (model.stem + "-forward.safetensors")
    run_qb("forward", "--model", model, "--tokens", ",".join(map(str, TOKENS)), "--output", f,
           "--threads", "2")
    t = load_file(str(f))
    assert set(t) == {"logits"}, f"{f}: tensors {sorted(t)}, want only logits"
    assert t["logits"].dtype == np.float32
    assert t["logits"].shape == (len(TOKENS), U.VOCAB), f"{f}: logits shape {t['logits'].shape}"
    return t["logits"]


def compare(name, got, ref, rel, min_top1=1.0):
    """Asserts max|got-ref| <= rel * max|ref| and top-1 agreement; returns the
    measured figures (printed with -s, quoted in docs/interop.md)."""
    assert got.shape == ref.shape, f"{name}: shape {got.shape} vs {ref.shape}"
    assert np.isfinite(got).all() and np.isfinite(ref).all(), f"{name}: non-finite logits"
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"{name}: reference logits are ~0 (max {scale}); the test would prove nothing"
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    fig = {"max_abs": float(diff.max()), "rel_to_scale": float(diff.max()) / scale,
           "scale": scale, "top1": top1}
    print(f"\n{name}: {fig}")
    assert fig["rel_to_scale"] <= rel, \
        f"{name}: max |diff| {fig['max_abs']:.3g} is {fig['rel_to_scale']:.3g} of the logit scale " \
        f"{scale:.3g}, bound {rel}"
    assert top1 >= min_top1, f"{name}: top-1 agreement {top1:.3f} < {min_top1}"
    return fig


@pytest.mark.parametrize("qname", list(QTYPES))
@pytest.mark.parametrize("arch", ARCHS_LLAMA_CPP)
def test_logits_llama_cpp_vs_transformers(arch, qname, tmp_path, run_qb):
    g = _model(tmp_path, arch, qname)
    ref = llama_cpp_logits(g)
    got = transformers_logits(run_qb, g, tmp_path)
    if qname == "F32":
        compare(f"{arch} {qname} transformers(ours) vs llama.cpp", got, ref, F32_REL)
    else:
        compare(f"{arch} {qname} transformers(ours) vs llama.cpp", got, ref, Q8_REL, Q8_MIN_TOP1)


# quantbridge forward (issue 16) is built on another branch; until it is
# merged these fail with quantbridge's "unknown command" error.
@pytest.mark.parametrize("qname", list(QTYPES))
@pytest.mark.parametrize("arch", ARCHS)
def test_logits_quantbridge_forward_vs_transformers(arch, qname, tmp_path, run_qb):
    # Both multiply the same dequantized float32 weights by float32
    # activations, so F32_REL holds for Q8_0 too.
    g = _model(tmp_path, arch, qname)
    got = quantbridge_logits(run_qb, g, tmp_path)
    ref = transformers_logits(run_qb, g, tmp_path)
    compare(f"{arch} {qname} quantbridge forward vs transformers(ours)", got, ref, F32_REL)


@pytest.mark.parametrize("qname", list(QTYPES))
@pytest.mark.parametrize("arch", ARCHS_LLAMA_CPP)
def test_logits_quantbridge_forward_vs_llama_cpp(arch, qname, tmp_path, run_qb):
    g = _model(tmp_path, arch, qname)
    got = quantbridge_logits(run_qb, g, tmp_path)
    ref = llama_cpp_logits(g)
    if qname == "F32":
        compare(f"{arch} {qname} quantbridge forward vs llama.cpp", got, ref, F32_REL)
    else:
        compare(f"{arch} {qname} quantbridge forward vs llama.cpp", got, ref, Q8_REL, Q8_MIN_TOP1)


# DeepSeek-V2/V3 (issue 18): llama.cpp's GGUF path is not ours yet, so
# transformers builds and saves the model itself (random float32 weights,
# per-expert tensors as DeepSeek's checkpoints name them) and runs it;
# `quantbridge forward` reads the saved directory. Variants cover MLA with
# and without q_lora, interleaved and rotate_half rope, yarn (its cos/sin
# factor and the mscale_all_dim score scale), the V3 router (sigmoid,
# correction bias, groups by top-2 sum) and both V2 routers.
DEEPSEEK = {
    "v3_yarn_groups": ("deepseek_v3", dict(
        q_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=24,
        n_group=4, topk_group=2, num_experts_per_tok=3, n_shared_experts=2,
        routed_scaling_factor=2.5, norm_topk_prob=True, num_mtp_layers=0,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 64, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.8})),
    "v3_rotate_half_no_qlora": ("deepseek_v3", dict(
        q_lora_rank=None, qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=24,
        n_group=1, topk_group=1, num_experts_per_tok=2, n_shared_experts=1,
        routed_scaling_factor=2.5, norm_topk_prob=True, rope_interleave=False, num_mtp_layers=0,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000.0, "factor": 8.0,
                         "original_max_position_embeddings": 32, "beta_fast": 16,
                         "beta_slow": 2, "mscale": 0.9, "mscale_all_dim": 1.0})),
    "v2_group_limited": ("deepseek_v2", dict(
        q_lora_rank=None, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=24,
        topk_method="group_limited_greedy", n_group=4, topk_group=2, num_experts_per_tok=2,
        n_shared_experts=1, routed_scaling_factor=1.5, norm_topk_prob=False)),
    "v2_greedy_yarn": ("deepseek_v2", dict(
        q_lora_rank=32, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=24,
        topk_method="greedy", num_experts_per_tok=2, n_shared_experts=2,
        routed_scaling_factor=1.0, norm_topk_prob=False,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                         "original_max_position_embeddings": 64, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707})),
}


def _deepseek_model(tmp_path, name):
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    arch, extra = DEEPSEEK[name]
    cls_cfg, cls = ((DeepseekV3Config, DeepseekV3ForCausalLM) if arch == "deepseek_v3"
                    else (DeepseekV2Config, DeepseekV2ForCausalLM))
    cfg = cls_cfg(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=96,
                  moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, n_routed_experts=8, kv_lora_rank=32,
                  first_k_dense_replace=1, max_position_embeddings=256, **extra)
    torch.manual_seed(5)
    model = cls(cfg).float().eval()
    with torch.no_grad():
        # Spread-out weights (the init's 0.02 leaves every logit near 0);
        # norms around 1; a correction bias large enough to change choices.
        for n, p in model.named_parameters():
            p.normal_(0.0, 0.1)
            if "norm" in n:
                p.add_(1.0)
        for n, b in model.named_buffers():
            if n.endswith("e_score_correction_bias"):
                b.normal_(0.0, 0.3)
    out = tmp_path / f"tiny-{name}"
    model.save_pretrained(str(out))
    with torch.no_grad():
        ref = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    return out, ref


@pytest.mark.parametrize("name", list(DEEPSEEK))
def test_logits_quantbridge_forward_vs_transformers_deepseek(name, tmp_path, run_qb):
    model, ref = _deepseek_model(tmp_path, name)
    got = quantbridge_logits(run_qb, model, tmp_path)
    compare(f"{name} quantbridge forward vs transformers", got, ref, F32_REL)


# gpt-oss (issue 18): transformers builds and saves the model (random float32
# weights, fused [E, in, out] experts as gpt-oss checkpoints hold them) and
# runs it eagerly; `quantbridge forward` reads the saved directory. Variants:
# GptOssConfig's own rope (yarn, truncate false) with its default layer_types,
# and explicit yarn rope_parameters with full layers first; sliding_window 3
# and swiglu_limit 0.6 so that the window and both clamps matter.
GPT_OSS = {
    "default_rope": dict(),
    "yarn_full_first": dict(
        layer_types=["full_attention", "sliding_attention"],
        rope_parameters={"rope_type": "yarn", "rope_theta": 5000.0, "factor": 8.0,
                         "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                         "original_max_position_embeddings": 32}),
}


def _gpt_oss_model(tmp_path, name):
    from transformers import GptOssConfig, GptOssForCausalLM
    cfg = GptOssConfig(vocab_size=U.VOCAB, hidden_size=64, intermediate_size=32,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                       sliding_window=3, swiglu_limit=0.6, max_position_embeddings=256,
                       **GPT_OSS[name])
    cfg._attn_implementation = "eager"
    torch.manual_seed(7)
    model = GptOssForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0.0, 0.1)
            if "norm" in n:
                p.add_(1.0)
            if n.endswith("sinks") or "router" in n:
                p.mul_(5.0)  # sinks that weigh, routers without near-ties
    out = tmp_path / f"tiny-gpt-oss-{name}"
    model.save_pretrained(str(out))
    with torch.no_grad():
        ref = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    return out, ref


@pytest.mark.parametrize("name", list(GPT_OSS))
def test_logits_quantbridge_forward_vs_transformers_gpt_oss(name, tmp_path, run_qb):
    model, ref = _gpt_oss_model(tmp_path, name)
    got = quantbridge_logits(run_qb, model, tmp_path)
    compare(f"gpt-oss {name} quantbridge forward vs transformers", got, ref, F32_REL)
