"""Interop test 2: transformers reads what quantbridge writes.

2a  Our hf-dense output of a GGUF, GPTQ, AWQ, compressed-tensors and FP8
    source loads offline with AutoModelForCausalLM.from_pretrained(dir) with
    no missing, unexpected or mismatched keys, and the model's state dict
    equals the values in our safetensors bit for bit, dtype included.
2b  transformers' own GGUF loader (from_pretrained(dir, gguf_file=...)) and
    transformers loading our hf-dense output of the same GGUF give the same
    tensors bit for bit, for every architecture both support, F32 and the
    quantized types Q4_0, Q6_K and Q8_0.

Exactness is the right bar for both: hf-dense at dtype=f32 stores the
reader's float32 rows unchanged, and transformers' GGUF loader dequantizes
with gguf-py in float32 (the same ggml formulas, see interop test 1), undoes
llama.cpp's Q/K permutation by reshaping (no arithmetic) and subtracts 1 from
Gemma norms in float32, which is what our reader does.
"""
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import gguf  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402

Q = gguf.GGMLQuantizationType


def load_hf(d, **kw):
    """from_pretrained(d) offline; fails the test on any loading-info entry."""
    model, info = AutoModelForCausalLM.from_pretrained(
        str(d), output_loading_info=True, local_files_only=True, **kw)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info.get(key), f"transformers loading {d}: {key} = {sorted(info[key])}"
    return model


def assert_state_dict_is_ours(model, d):
    """model.state_dict() equals our safetensors in d exactly; the one key
    ours may lack is a tied lm_head, which must then be the embedding."""
    ours = U.read_safetensors_dir(d)
    sd = model.state_dict()
    cfg = U.config(d)
    for k, v in ours.items():
        assert k in sd, f"{d}: our tensor {k} is not a parameter of {type(model).__name__}"
        U.assert_same_tensor(k, sd[k], v, f"{d} loaded by transformers")
    extra = sorted(set(sd) - set(ours))
    if cfg.get("tie_word_embeddings"):
        assert extra in ([], ["lm_head.weight"]), f"{d}: tensors we did not write: {extra}"
        if extra:
            U.assert_same_tensor("lm_head.weight (tied)", sd["lm_head.weight"],
                                 ours["model.embed_tokens.weight"], str(d))
    else:
        assert not extra, f"{d}: untied model, but transformers has tensors we did not write: {extra}"


def convert_hf(run_qb, src, out, dtype, *extra):
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", f"dtype={dtype}", *extra)
    return out


def gen(build_dir, tool, *args):
    import subprocess
    exe = build_dir / "tests" / "bin" / tool
    if not exe.is_file():
        pytest.fail(f"{exe} is missing: build the project first")
    p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, f"{tool} {args}: exit {p.returncode}\n{p.stderr}"


# ---- 2a: every source format, through hf-dense, into transformers ----------

# (source kind, how to make it, writer dtype). The dtypes vary so that each
# of f32/f16/bf16 is checked to reach torch as written ("auto" dtype).
def _src_gguf(tmp, build_dir):
    p = tmp / "tiny-llama-q8_0.gguf"
    U.write_gguf(p, "llama", Q.Q8_0)
    return p


def _drop_q_only_bias(model_dir):
    """The project's GPTQ/AWQ generator gives each llama layer a q_proj.bias
    alone. LlamaAttention holds biases on q, k, v and o together or on none
    (config attention_bias), so transformers drops a lone q bias with only a
    warning, from the source as from our output. Such a checkpoint is not a
    valid llama; the fixture here drops the stray bias so that the test
    compares a model transformers can represent."""
    from safetensors import safe_open
    from safetensors.numpy import save_file
    for f in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(f), framework="np") as st:
            meta = st.metadata()
            keep = {k: st.get_tensor(k) for k in st.keys()
                    if not k.endswith("self_attn.q_proj.bias")}
        save_file(keep, str(f), metadata=meta)
    idx = model_dir / "model.safetensors.index.json"
    if idx.exists():
        j = json.loads(idx.read_text())
        j["weight_map"] = {k: v for k, v in j["weight_map"].items()
                           if not k.endswith("self_attn.q_proj.bias")}
        idx.write_text(json.dumps(j))


def _src_gen_quant(variant):
    def make(tmp, build_dir):
        gen(build_dir, "qb-gen-quant", tmp / variant, variant)
        _drop_q_only_bias(tmp / variant)
        return tmp / variant
    return make


def _src_gen_dir(tool, variant):
    def make(tmp, build_dir):
        gen(build_dir, tool, tmp / "all")
        return tmp / "all" / variant
    return make


SOURCES_2A = {
    "gguf": (_src_gguf, "f32"),
    "gptq": (_src_gen_quant("gptq-4-g128-sym-v1"), "f16"),
    "awq": (_src_gen_quant("awq-gemm-g128-zp"), "bf16"),
    "compressed-tensors": (_src_gen_dir("qb-gen-ct", "ct-w4a16-g32-asym"), "f16"),
    "fp8": (_src_gen_dir("qb-gen-fp8", "fp8-block128"), "bf16"),
}


@pytest.mark.parametrize("fmt", list(SOURCES_2A))
def test_hf_dense_output_loads_in_transformers(fmt, tmp_path, build_dir, run_qb):
    make, dtype = SOURCES_2A[fmt]
    src = make(tmp_path, build_dir)
    out = convert_hf(run_qb, src, tmp_path / "hf", dtype)
    model = load_hf(out, dtype="auto")
    want = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    assert model.dtype == want, f"{out}: transformers chose {model.dtype}, we wrote {dtype}"
    assert_state_dict_is_ours(model, out)
    # The generation config we write must load too (GenerationConfig
    # validates it), and carry the ids config.json has.
    cfg = U.config(out)
    gc = model.generation_config
    for key in ("bos_token_id", "eos_token_id"):
        if key in cfg and cfg[key] is not None:
            g = getattr(gc, key)
            g = g if isinstance(g, list) else [g]
            c = cfg[key] if isinstance(cfg[key], list) else [cfg[key]]
            assert set(c) <= set(g), f"{out}: generation_config {key} {g} lacks config's {c}"


# ---- 2b: transformers' GGUF loader vs our hf-dense output of the GGUF -------

# Architectures both transformers' GGUF loader (GGUF_SUPPORTED_ARCHITECTURES)
# and our gguf reader support: llama, mistral (arch "llama"), qwen2, qwen3,
# gemma2, gemma3, phi3, qwen3moe. Not here: gemma (transformers has no GGUF
# mapping for it), mixtral (transformers reads arch "llama" with experts as a
# dense Llama), qwen2moe (transformers' mapping reads neither
# expert_feed_forward_length nor expert_shared_feed_forward_length, so only
# Qwen1.5-MoE's own widths, 1408 and 5632, would load; 1408 admits no K-quant).
ARCHS_2B = ["llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "qwen3moe"]
QTYPES_2B = [Q.F32, Q.Q4_0, Q.Q6_K, Q.Q8_0]


@pytest.mark.parametrize("qtype", QTYPES_2B, ids=lambda q: q.name)
@pytest.mark.parametrize("arch", ARCHS_2B)
def test_gguf_loader_equals_our_hf_dense(arch, qtype, tmp_path, run_qb):
    name = f"tiny-{arch}-{qtype.name}.gguf"
    U.write_gguf(tmp_path / name, arch, qtype, seed=7)
    theirs = load_hf(tmp_path, gguf_file=name, dtype=torch.float32)
    out = convert_hf(run_qb, tmp_path / name, tmp_path / "hf", "f32")
    ours = load_hf(out, dtype=torch.float32)
    if arch == "mistral":
        # Stated difference: transformers' GGUF loader makes a Mistral only
        # when general.name is exactly "mistral", and then fails (gguf-py
        # 0.19 has no arch "mistral" to map tensor names with), so a
        # Mistral GGUF loads there as LlamaForCausalLM. The two classes have
        # the same parameters; the tensors are compared all the same.
        assert type(theirs).__name__ == "LlamaForCausalLM"
        assert type(ours).__name__ == "MistralForCausalLM"
    else:
        assert type(ours) is type(theirs), \
            f"{name}: we make {type(ours).__name__}, transformers' GGUF loader {type(theirs).__name__}"
    sd_t, sd_o = theirs.state_dict(), ours.state_dict()
    assert sorted(sd_o) == sorted(sd_t), \
        f"{name}: tensor names differ: only ours {sorted(set(sd_o) - set(sd_t))}, " \
        f"only theirs {sorted(set(sd_t) - set(sd_o))}"
    for k in sd_t:
        U.assert_same_tensor(k, sd_o[k], sd_t[k], f"{name}: ours vs transformers' GGUF loader")
    # The config both derive from the GGUF metadata must describe the same
    # network (the fields a forward pass reads).
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "rms_norm_eps", "tie_word_embeddings",
                "sliding_window"):
        a, b = getattr(ours.config, key, None), getattr(theirs.config, key, None)
        if key == "sliding_window" and arch in ("llama", "mistral", "qwen2", "qwen3", "phi3", "qwen3moe"):
            continue  # transformers reads it from GGUF only for Gemma (mistral: Llama there)
        if key == "head_dim" and b is None:
            # the config class has no head_dim (Qwen2, Phi3): it is
            # hidden_size / num_attention_heads, which ours must equal
            b = theirs.config.hidden_size // theirs.config.num_attention_heads
        if isinstance(a, float) or isinstance(b, float):
            assert a == pytest.approx(b, rel=1e-6), f"{name}: config {key}: ours {a}, theirs {b}"
        else:
            assert a == b, f"{name}: config {key}: ours {a}, theirs {b}"
