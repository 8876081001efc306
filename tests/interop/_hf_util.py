"""Private helpers of test_transformers_load.py and test_logits.py.

Tiny random decoder models written as GGUF with gguf-py (the upstream writer),
a minimal valid vocabulary so llama.cpp can load them, and readers for what
quantbridge writes.
"""
import json
import pathlib

import gguf
import numpy as np
import torch
from safetensors import safe_open

# Shapes: every quantized row (the ggml "ne0", HF in_features) is a multiple
# of 256 so the K-quants (256-element super-blocks) apply to every matrix.
HIDDEN = 256
INTER = 512
LAYERS = 2
N_HEAD = 4
N_HEAD_KV = 2
RMS_EPS = 1e-5
ROPE_THETA = 10000.0
N_CTX = 64


def vocabulary():
    """SentencePiece-style ("llama") vocabulary llama.cpp accepts: <unk>, <s>,
    </s>, the 256 byte tokens <0xNN> (its SPM tokenizer looks up <0x0A> for
    the newline id) and a few normal pieces. Returns (tokens, scores, types)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    pieces = ["\u2581" + w for w in ("the", "a", "of", "and", "to", "in", "is", "it", "on",
                                     "model", "weight", "tensor", "layer", "token", "quant",
                                     "bridge", "llama", "gguf", "logit", "test")]
    pieces += [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["\u2581"]
    tokens += pieces
    types += [gguf.TokenType.NORMAL] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    return tokens, scores, [int(t) for t in types]


VOCAB = len(vocabulary()[0])

# GGUF arch name, general.name, HF model_type per test architecture.
ARCHS = {
    # arch: (gguf arch, general.name, head_dim, has output.weight)
    "llama": ("llama", "tiny-llama", HIDDEN // N_HEAD, True),
    # llama.cpp writes Mistral as arch "llama"; quantbridge picks Mistral
    # from attention.sliding_window (see test_transformers_load.py for what
    # transformers' GGUF loader makes of it).
    "mistral": ("llama", "tiny-mistral", HIDDEN // N_HEAD, True),
    "qwen2": ("qwen2", "tiny-qwen2", HIDDEN // N_HEAD, True),
    # transformers' GGUF mapping for qwen3 does not read attention.key_length,
    # so Qwen3Config's default head_dim (128) must be the real one.
    "qwen3": ("qwen3", "tiny-qwen3", 128, True),
    # Gemma ties the embedding (no output.weight).
    "gemma2": ("gemma2", "tiny-gemma2", HIDDEN // N_HEAD, False),
    "gemma3": ("gemma3", "tiny-gemma3", HIDDEN // N_HEAD, False),
    "phi3": ("phi3", "tiny-phi3", HIDDEN // N_HEAD, True),
    "qwen3moe": ("qwen3moe", "tiny-qwen3moe", 128, True),
}

# Architectures only the gguf writer's round trip (test_gguf_writer.py) uses;
# the transformers and llama.cpp tiers keep their own lists of ARCHS above.
# Gemma v1 ties the embedding like gemma2/3 but has neither their post norms
# nor q/k norms. Mixtral is written by llama.cpp as arch "llama" with
# expert_count (LlamaModel: stacked w1/w3/w2 as ffn_{gate,up,down}_exps and
# feed_forward_length = the expert width). Qwen2-MoE adds a shared expert
# (ffn_{gate,up,down}_shexp) and its sigmoid gate ffn_gate_inp_shexp, stored
# as HF's [1, n_embd] (ne {n_embd, 1}).
ROUND_TRIP_ARCHS = {
    "gemma": ("gemma", "tiny-gemma", HIDDEN // N_HEAD, False),
    "mixtral": ("llama", "tiny-mixtral", HIDDEN // N_HEAD, True),
    "qwen2moe": ("qwen2moe", "tiny-qwen2moe", HIDDEN // N_HEAD, True),
}
ALL_ARCHS = {**ARCHS, **ROUND_TRIP_ARCHS}

# Mixture of experts (qwen3moe). transformers' GGUF mapping does not read
# expert_feed_forward_length, so the expert width must be Qwen3MoeConfig's
# default moe_intermediate_size (768, a multiple of 256).
N_EXPERT = 4
N_EXPERT_USED = 2
FF_EXP = 768
# qwen2moe's shared expert width (Qwen2-MoE's shared_expert_intermediate_size
# is 4 x the routed width; here a multiple of 256 like every other row).
FF_SHEXP = 1024


def _norm(rng, n, gemma):
    # llama.cpp stores Gemma norms as 1 + w; keep them near 1 either way.
    return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)


def make_weights(arch, seed=0):
    """Random weights of a tiny `arch` model, keyed by GGUF tensor name, in
    numpy (row-major, [out, in]) order as gguf-py takes them."""
    rng = np.random.default_rng(seed)
    _, _, hd, has_out = ALL_ARCHS[arch]
    gemma = arch.startswith("gemma")
    q_out, kv_out = N_HEAD * hd, N_HEAD_KV * hd

    def mat(rows, cols):
        # std 1/sqrt(cols): activations stay O(1) through the layers, so
        # logits are O(1) and a relative tolerance means something.
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    w = {"token_embd.weight": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32),
         "output_norm.weight": _norm(rng, HIDDEN, gemma)}
    if has_out:
        w["output.weight"] = mat(VOCAB, HIDDEN)
    for i in range(LAYERS):
        b = f"blk.{i}."
        w[b + "attn_norm.weight"] = _norm(rng, HIDDEN, gemma)
        if arch == "phi3":
            w[b + "attn_qkv.weight"] = mat(q_out + 2 * kv_out, HIDDEN)
        else:
            w[b + "attn_q.weight"] = mat(q_out, HIDDEN)
            w[b + "attn_k.weight"] = mat(kv_out, HIDDEN)
            w[b + "attn_v.weight"] = mat(kv_out, HIDDEN)
        if arch in ("qwen2", "qwen2moe"):
            w[b + "attn_q.bias"] = (0.1 * rng.standard_normal(q_out)).astype(np.float32)
            w[b + "attn_k.bias"] = (0.1 * rng.standard_normal(kv_out)).astype(np.float32)
            w[b + "attn_v.bias"] = (0.1 * rng.standard_normal(kv_out)).astype(np.float32)
        if arch in ("qwen3", "qwen3moe", "gemma3"):
            w[b + "attn_q_norm.weight"] = _norm(rng, hd, gemma)
            w[b + "attn_k_norm.weight"] = _norm(rng, hd, gemma)
        w[b + "attn_output.weight"] = mat(HIDDEN, q_out)
        w[b + "ffn_norm.weight"] = _norm(rng, HIDDEN, gemma)
        if gemma and arch != "gemma":
            w[b + "post_attention_norm.weight"] = _norm(rng, HIDDEN, gemma)
            w[b + "post_ffw_norm.weight"] = _norm(rng, HIDDEN, gemma)
        if arch == "phi3":
            w[b + "ffn_up.weight"] = mat(2 * INTER, HIDDEN)  # gate and up, fused
            w[b + "ffn_down.weight"] = mat(HIDDEN, INTER)
        elif arch in ("qwen3moe", "qwen2moe", "mixtral"):
            ff = INTER if arch == "mixtral" else FF_EXP
            w[b + "ffn_gate_inp.weight"] = mat(N_EXPERT, HIDDEN)
            w[b + "ffn_gate_exps.weight"] = np.stack([mat(ff, HIDDEN) for _ in range(N_EXPERT)])
            w[b + "ffn_up_exps.weight"] = np.stack([mat(ff, HIDDEN) for _ in range(N_EXPERT)])
            w[b + "ffn_down_exps.weight"] = np.stack([mat(HIDDEN, ff) for _ in range(N_EXPERT)])
            if arch == "qwen2moe":
                w[b + "ffn_gate_inp_shexp.weight"] = mat(1, HIDDEN)
                w[b + "ffn_gate_shexp.weight"] = mat(FF_SHEXP, HIDDEN)
                w[b + "ffn_up_shexp.weight"] = mat(FF_SHEXP, HIDDEN)
                w[b + "ffn_down_shexp.weight"] = mat(HIDDEN, FF_SHEXP)
        else:
            w[b + "ffn_gate.weight"] = mat(INTER, HIDDEN)
            w[b + "ffn_up.weight"] = mat(INTER, HIDDEN)
            w[b + "ffn_down.weight"] = mat(HIDDEN, INTER)
    return w


# ggml types gguf-py can quantize itself; the K-quants it can only
# dequantize, so those files come from llama.cpp's own quantizer.
GGUF_PY_QUANT = {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.Q4_0,
                 gguf.GGMLQuantizationType.Q8_0}
LLAMA_FTYPE = {gguf.GGMLQuantizationType.Q6_K: 18}  # LLAMA_FTYPE_MOSTLY_Q6_K


def llama_cpp_quantize(src, dst, ftype):
    """llama.cpp's quantizer (llama_model_quantize) from GGUF src to dst."""
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
    assert rc == 0, f"llama_model_quantize {src} -> {dst} (ftype {ftype}) returned {rc}"


def write_gguf(path, arch, qtype=gguf.GGMLQuantizationType.F32, seed=0):
    """Writes a tiny `arch` model to `path`: with gguf-py, 2-D weights in
    `qtype` (gguf.quants.quantize) and 1-D tensors F32 as llama.cpp keeps
    them; for the K-quants, an F32 file through llama.cpp's quantizer (which
    picks its own type mix per tensor, as it does for real models).
    Returns the float32 weights before quantization."""
    if qtype not in GGUF_PY_QUANT:
        path = pathlib.Path(path)
        f32 = path.with_name(path.stem + "-f32src.gguf")
        w = write_gguf(f32, arch, gguf.GGMLQuantizationType.F32, seed)
        llama_cpp_quantize(f32, path, LLAMA_FTYPE[qtype])
        f32.unlink()
        return w
    garch, name, hd, _ = ALL_ARCHS[arch]
    w = make_weights(arch, seed)
    wr = gguf.GGUFWriter(str(path), garch)
    wr.add_name(name)
    p = garch + "."
    wr.add_uint32(p + "context_length", N_CTX)
    wr.add_uint32(p + "embedding_length", HIDDEN)
    wr.add_uint32(p + "block_count", LAYERS)
    wr.add_uint32(p + "feed_forward_length", INTER)
    wr.add_uint32(p + "attention.head_count", N_HEAD)
    wr.add_uint32(p + "attention.head_count_kv", N_HEAD_KV)
    wr.add_uint32(p + "attention.key_length", hd)
    wr.add_uint32(p + "attention.value_length", hd)
    wr.add_uint32(p + "rope.dimension_count", hd)
    wr.add_float32(p + "rope.freq_base", ROPE_THETA)
    wr.add_float32(p + "attention.layer_norm_rms_epsilon", RMS_EPS)
    if arch in ("mistral", "gemma2", "gemma3"):
        wr.add_uint32(p + "attention.sliding_window", 32)
    if arch in ("qwen3moe", "qwen2moe", "mixtral"):
        wr.add_uint32(p + "expert_count", N_EXPERT)
        wr.add_uint32(p + "expert_used_count", N_EXPERT_USED)
    if arch in ("qwen3moe", "qwen2moe"):
        wr.add_uint32(p + "expert_feed_forward_length", FF_EXP)
    if arch == "qwen2moe":
        wr.add_uint32(p + "expert_shared_feed_forward_length", FF_SHEXP)
    if arch == "gemma2":
        wr.add_float32(p + "attn_logit_softcapping", 50.0)
        wr.add_float32(p + "final_logit_softcapping", 30.0)
    wr.add_file_type(int(qtype) if qtype != gguf.GGMLQuantizationType.F32 else 0)
    tokens, scores, types = vocabulary()
    wr.add_tokenizer_model("llama")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_scores(scores)
    wr.add_token_types(types)
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)
    # A padding id inside the vocabulary: without one, transformers takes its
    # config class default (Phi3: 32000), beyond this tiny vocabulary.
    wr.add_pad_token_id(0)
    for tname, arr in w.items():
        if arr.ndim >= 2 and qtype != gguf.GGMLQuantizationType.F32:
            wr.add_tensor(tname, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
        else:
            wr.add_tensor(tname, arr)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return w


def read_safetensors_dir(d):
    """Every tensor of the safetensors files in directory `d` (single file or
    shards), as torch tensors in their stored dtype."""
    out = {}
    for f in sorted(pathlib.Path(d).glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as fh:
            for k in fh.keys():
                assert k not in out, f"{k} appears in two shards of {d}"
                out[k] = fh.get_tensor(k)
    assert out, f"no safetensors files in {d}"
    return out


def config(d):
    return json.loads((pathlib.Path(d) / "config.json").read_text())


def assert_same_tensor(name, got, want, where):
    """Exact equality, dtype and shape included; on failure names the tensor
    and the largest difference."""
    assert got.dtype == want.dtype, f"{where}: {name} dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), \
        f"{where}: {name} shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not torch.equal(got, want):
        d = (got.double() - want.double()).abs()
        i = int(d.argmax())
        raise AssertionError(f"{where}: {name} differs: max |diff| {float(d.max()):.3g} at flat "
                             f"index {i} ({float(got.flatten()[i])!r} vs {float(want.flatten()[i])!r}), "
                             f"{int((d > 0).sum())} of {d.numel()} elements")
