"""The real-model tier on the published Gemma 3 270M GGUF Q4_K_M (docs/real-models.md): every
command with its default options, judged by gguf-py, transformers and llama.cpp.

Bounds are relative to the largest |logit| of the reference (`scale`, about 35 on the tier's
text). Measured figures are in docs/real-models.md; `-s` prints them.
"""
import math
import re

import numpy as np

import _real_util as U
import _tf_util as T

# ------------------------------------------------------------------------------------------------
# inspect


def test_inspect_text(run_qb, gemma_gguf, gemma_reader):
    """`inspect` (text): the reader, the architecture, the facts and the type census of the
    file, each against gguf-py's reading of the same file."""
    r = gemma_reader
    arch = r.fields["general.architecture"].contents()
    assert arch == "gemma3"
    kv = {k: r.fields[f"gemma3.{k}"].contents() for k in (
        "block_count", "embedding_length", "feed_forward_length", "attention.head_count",
        "attention.head_count_kv", "attention.key_length")}
    n_vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    out = run_qb("inspect", gemma_gguf).stdout
    print(out[:2000])
    assert re.search(r"^format: gguf \(reader gguf ", out, re.M), out[:600]
    assert re.search(r"^architecture: gemma3_text$", out, re.M), out[:600]
    facts = (f"facts: layers {kv['block_count']}, hidden {kv['embedding_length']}, vocab {n_vocab}, "
             f"heads {kv['attention.head_count']}, kv heads {kv['attention.head_count_kv']}, "
             f"head dim {kv['attention.key_length']}, intermediate {kv['feed_forward_length']}, "
             f"tied yes, experts 0")
    assert facts in out, f"expected '{facts}' in:\n{out[:1200]}"
    census = U.type_counts(r)
    summary = re.search(r"^summary: (.*)$", out, re.M).group(1)
    for tname, n in census.items():
        assert f"{tname} x{n}" in summary, f"gguf-py counts {n} {tname} tensors; summary: {summary}"
    assert re.search(rf"^tensors: {len(r.tensors)}$", out, re.M)
    # The tokenizer is rebuilt from tokenizer.ggml.* (docs/formats/gguf.md, "Tokenizer"); what
    # it holds is tests/real/test_real_tokenizer.py's business.
    assert re.search(rf"^tokenizer kind: .*vocab {n_vocab}$", out, re.M), out[:1500]


def test_inspect_json(run_qb, gemma_gguf, gemma_reader):
    """`inspect --json`: every tensor's name, shape, encoding, parameter count and stored bytes
    equal gguf-py's (names through gguf-py's TensorNameMap), and the totals add up."""
    import json
    r = gemma_reader
    j = json.loads(run_qb("inspect", gemma_gguf, "--json").stdout)
    assert j["format"] == "gguf" and j["reader"] == "gguf"
    assert j["architecture"] == "gemma3_text"
    facts = j["facts"]
    assert facts["n_layers"] == r.fields["gemma3.block_count"].contents()
    assert facts["hidden_size"] == r.fields["gemma3.embedding_length"].contents()
    assert facts["vocab_size"] == len(r.fields["tokenizer.ggml.tokens"].data)
    assert facts["tied_embeddings"] is True
    ours = {t["name"]: t for t in j["tensors"]}
    names = U.hf_to_gguf_names(ours)
    by_gguf = {t.name: t for t in r.tensors}
    assert sorted(names.values()) == sorted(by_gguf), "inspect's tensors are not the file's"
    for hf, g in names.items():
        t, o = by_gguf[g], ours[hf]
        assert tuple(o["shape"]) == U.gguf_shape(t), f"{hf}: shape {o['shape']} vs {U.gguf_shape(t)}"
        assert o["encoding"] == f"gguf {t.tensor_type.name}", f"{hf}: {o['encoding']}"
        assert o["parameters"] == int(t.n_elements), hf
        assert o["bytes"] == int(t.n_bytes), f"{hf}: {o['bytes']} bytes vs gguf-py {t.n_bytes}"
        # Q4_0 and Q8_0 are one integer grid (d * q, q signed, one fp16 d per 32), which the
        # reader offers so that writers carry the codes over; no other block type is
        want = t.tensor_type.name in ("Q4_0", "Q8_0")
        assert o["grid"] is want, f"{hf}: {t.tensor_type.name} grid {o['grid']}"
    assert j["parameters"] == sum(int(t.n_elements) for t in r.tensors)
    assert j["bytes"] == sum(int(t.n_bytes) for t in r.tensors)
    enc = {e["encoding"]: e["tensors"] for e in j["encodings"]}
    assert enc == {f"gguf {k}": v for k, v in U.type_counts(r).items()}


# ------------------------------------------------------------------------------------------------
# convert to hf-dense: gguf-py and transformers' own GGUF loader


def test_hf_dense_f32_equals_gguf_py(gemma_reader, hf_f32):
    """Every tensor of our hf-dense f32 output equals gguf-py's dequantization of the published
    file bit for bit (Gemma norms: the stored 1 + w minus 1, docs/formats/gguf.md)."""
    files = U.safetensors_names(hf_f32)
    names = U.hf_to_gguf_names(files)
    r = gemma_reader
    assert sorted(names.values()) == sorted(t.name for t in r.tensors)
    inv = {g: hf for hf, g in names.items()}
    for t in r.tensors:
        hf = inv[t.name]
        got = U.read_tensor(files[hf], hf)
        assert got.dtype == np.float32, f"{hf}: {got.dtype}, asked for f32"
        U.assert_bits_equal(hf, got, U.ggufpy_hf_value(t), "gguf-py")


def test_hf_dense_default_is_f16_rounding(hf_default, hf_f32):
    """`convert --writer hf-dense` with its defaults writes f16: each value is our f32 value
    (equal to gguf-py's, test above) rounded to nearest even in f16, and the model directory is
    complete (config, generation config, the rebuilt tokenizer)."""
    f16 = U.safetensors_names(hf_default)
    f32 = U.safetensors_names(hf_f32)
    assert sorted(f16) == sorted(f32)
    for name in f16:
        got = U.read_tensor(f16[name], name)
        assert got.dtype == np.float16, f"{name}: {got.dtype}, the default is f16"
        want = U.read_tensor(f32[name], name)
        U.assert_bits_equal(name, got.view(np.uint16), U.f32_to_f16_bits(want), "f32 rounded")
    for side in ("config.json", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json"):
        assert (hf_default / side).is_file(), f"{side} missing from {sorted(hf_default.iterdir())}"
    cfg = U.read_json(hf_default / "config.json")
    assert cfg["model_type"] == "gemma3_text" and cfg["tie_word_embeddings"] is True


def test_transformers_gguf_loader_equals_hf_dense(gemma_gguf, hf_f32):
    """transformers' own GGUF loader (from_pretrained(dir, gguf_file=...), which dequantizes with
    gguf-py and subtracts 1 from Gemma's norms in float32) gives every parameter bit for bit as
    our f32 output; the tied head is the embedding."""
    import torch
    from transformers import AutoModelForCausalLM
    theirs = AutoModelForCausalLM.from_pretrained(str(gemma_gguf.parent), gguf_file=gemma_gguf.name,
                                                  dtype=torch.float32, local_files_only=True)
    sd = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    files = U.safetensors_names(hf_f32)
    assert set(sd) - set(files) == {"lm_head.weight"}, sorted(set(sd) ^ set(files))
    assert set(files) <= set(sd)
    for name in files:
        U.assert_bits_equal(name, U.read_tensor(files[name], name), sd[name],
                            "transformers' GGUF loader")
    U.assert_bits_equal("lm_head.weight", sd["lm_head.weight"], sd["model.embed_tokens.weight"],
                        "the tied embedding")


# ------------------------------------------------------------------------------------------------
# forward against transformers

# Same float32 weights, float32 arithmetic (quantbridge forward keeps sums in double): only the
# order of operations differs. A length-K float32 product carries a relative error of about
# sqrt(K) * 2^-24 (1e-6 at K = 2048) and Gemma 3 270M chains 18 layers of about 12 such steps;
# measured 2.7e-6 of the logit scale on the 620 tokens. A real mistake moves logits by far more:
# the norm offset forgotten, a wrong rope base or a missing sliding window (positions 512-619
# here) changes them by whole units. Bound: 5e-5 of the scale (20x the measurement).
F32_REL = 5e-5


def test_forward_equals_transformers(hf_f32, tf_logits, fwd_source, made, text_ids):
    """transformers (Gemma3ForCausalLM, float32, eager attention) on our hf-dense f32 output, fed
    llama.cpp's token ids, against quantbridge forward on the published GGUF and on that output:
    max |diff| <= F32_REL of the logit scale, the same argmax everywhere. Both our runs read the
    same float32 values, so they must agree bit for bit."""
    ref = tf_logits
    fwd_hf = made.forward(hf_f32, "gemma-hf-f32", text_ids)
    for label, got in (("forward(source GGUF)", fwd_source), ("forward(hf-dense f32)", fwd_hf)):
        fig = U.logit_figures(got, ref)
        print(f"\n{label} vs transformers: {U.fmt(fig)}")
        assert fig["max_rel"] <= F32_REL, f"{label}: {U.fmt(fig)}; bound {F32_REL}"
        assert fig["top1"] == 1.0, f"{label}: {U.fmt(fig)}"
    U.assert_bits_equal("logits", fwd_hf, fwd_source, "forward on the source")
    ppl = U.perplexity(fwd_source, text_ids)
    print(f"perplexity on the text: {ppl:.3f}")
    assert 1.0 < ppl < 100.0, f"perplexity {ppl}: a trained 270M model reads English far better"


# ------------------------------------------------------------------------------------------------
# forward against llama.cpp


def test_llama_cpp_f32_gguf(f32_gguf, fwd_source, hf_f32, text_ids):
    """llama.cpp on the F32 GGUF of the real weights (made by its own quantizer) against
    quantbridge forward on the published file: the same float32 weights, so what differs is
    arithmetic. ggml's GELU reads an fp16 table (_tf_util); that table turns rounding noise into
    logit noise: moving every embedding value of transformers' model (with ggml's GELU) by one
    ulp moves its logits by N = max/rms |diff|. The bound is 3 N (measured: the disagreement is
    1.5 N at most), and position 0 (no attention to mix in other tokens) must come within a
    third of its distance once transformers uses ggml's GELU: the table, not our arithmetic, is
    what differs there."""
    llama = U.llama_logits(f32_gguf, text_ids)
    m = T.load(hf_f32)
    T.use_ggml_gelu(m)
    g = T.logits(m, text_ids)
    T.perturb_embedding_one_ulp(m)
    g_ulp = T.logits(m, text_ids)
    noise = U.logit_figures(g_ulp, g)
    fig = U.logit_figures(llama, fwd_source)
    fig_g = U.logit_figures(llama, g)
    print(f"\nllama.cpp F32 vs forward: {U.fmt(fig)}\nllama.cpp F32 vs transformers with ggml's "
          f"GELU: {U.fmt(fig_g)}\none-ulp noise with ggml's GELU: {U.fmt(noise)}")
    assert fig["max_rel"] <= 3 * noise["max_rel"], f"{U.fmt(fig)}; noise {U.fmt(noise)}"
    assert fig["rms_rel"] <= 3 * noise["rms_rel"], f"{U.fmt(fig)}; noise {U.fmt(noise)}"
    assert fig["top1"] >= 0.99, U.fmt(fig)
    p0 = float(np.abs(llama[0] - fwd_source[0]).max())
    p0_g = float(np.abs(llama[0] - g[0]).max())
    print(f"position 0: {p0:.3g} ours, {p0_g:.3g} with ggml's GELU")
    assert p0_g <= p0 / 3, f"position 0: {p0_g} with ggml's GELU vs {p0} without"


def test_llama_cpp_q4_k_m(gemma_gguf, gemma_types, fwd_source, hf_f32, tf_logits, text_ids):
    """llama.cpp on the published Q4_K_M file against quantbridge forward on it. ggml multiplies
    each quantized weight by activations quantized to 8 bits (Q8_K for the K-quants, Q8_0 for
    Q5_0/Q8_0, the head included: _tf_util), so its logits are not ours bit for bit; that
    rounding is random noise of a definite size. transformers with ggml's activation rounding
    and GELU against plain transformers measures the size E of the effect on this text; the
    bound is 2 E on the KL mean and the rms difference and 3 E on the max (measured: 1.0 E,
    1.0 E and 1.4 E), top-1 at least 0.9. Broken weights or a wrong attention put the KL at
    whole nats, a thousand times this."""
    llama = U.llama_logits(gemma_gguf, text_ids)
    plain = tf_logits
    m = T.load(hf_f32)
    T.use_ggml_gelu(m)
    T.use_ggml_activation_rounding(m, gemma_types)
    emul = T.logits(m, text_ids)
    effect = U.logit_figures(emul, plain)
    fig = U.logit_figures(llama, fwd_source)
    ppl_l, ppl_q = U.perplexity(llama, text_ids), U.perplexity(fwd_source, text_ids)
    print(f"\nllama.cpp Q4_K_M vs forward: {U.fmt(fig)}\nggml's rounding emulated in "
          f"transformers vs plain: {U.fmt(effect)}\nperplexity llama.cpp {ppl_l:.3f}, "
          f"quantbridge {ppl_q:.3f}")
    assert fig["kl_mean"] <= 2 * effect["kl_mean"], f"{U.fmt(fig)}; effect {U.fmt(effect)}"
    assert fig["rms_rel"] <= 2 * effect["rms_rel"], f"{U.fmt(fig)}; effect {U.fmt(effect)}"
    assert fig["max_rel"] <= 3 * effect["max_rel"], f"{U.fmt(fig)}; effect {U.fmt(effect)}"
    assert fig["top1"] >= 0.9, U.fmt(fig)
    assert abs(math.log(ppl_l / ppl_q)) <= 0.05, f"perplexity {ppl_l} vs {ppl_q}"


# ------------------------------------------------------------------------------------------------
# verify


def test_verify_hf_dense_f32(made, gemma_gguf, hf_f32):
    """verify against the f32 output finds every one of the 236 tensors bit-equal to the
    source (the model check is skipped: the logits are equal by test_forward_equals_transformers)."""
    js = made.verify(gemma_gguf, hf_f32, "gemma-hf-f32", "--no-model-check")
    assert js["pass"] is True and js["n_failed"] == 0 and js["n_missing"] == 0
    assert js["n_compared"] == 236 and js["n_exact"] == 236, (js["n_compared"], js["n_exact"])


def test_verify_hf_dense_default(made, gemma_gguf, hf_default):
    """verify with its defaults, source against the default hf-dense output: every tensor
    passes the nearest rule of f16 (none is declared exact: f16 rounds), and the model check
    runs on the built-in text through the rebuilt tokenizer: f16 weights move the logits by f16
    rounding only (KL mean below 1e-4 nats, top-1 at least 0.98, perplexity within 1 %)."""
    js = made.verify(gemma_gguf, hf_default, "gemma-hf-default")
    assert js["pass"] is True and js["n_failed"] == 0 and js["n_missing"] == 0
    rules = {t["name"]: t.get("rule") for t in js["tensors"]}
    assert len(rules) == 236
    assert set(rules.values()) == {"nearest"}, sorted(set(rules.values()))
    mc = U.model_check_on_text(js)
    assert mc["kl_mean"] < 1e-4 and mc["top1_agreement"] >= 0.98, mc
    assert abs(mc["perplexity_ratio"] - 1.0) < 0.01, mc["perplexity_ratio"]
    # A float output has no integer grid, so no absmax baseline to compare with.
    U.assert_verdict(js, {"no_baseline"})


def test_w4a16_default(made, gemma_gguf, w4a16_default):
    """The default writer with its defaults: no K-quant grid carries over, so every linear is
    requantized and declared so, at the automatic group size 32: the source's resolution, one
    scale per 32 columns (Q4_K, Q5_0, Q8_0) or 16 (Q6_K), as the gguf reader declares it
    (docs/w4a16-format.md, "Choosing the group size"); verify's tensor rule (absmax
    per group, docs/verify.md) passes on all 126 linears, and the model check on text reports
    the perplexities: the conversion is lossy, so the converted model must read the text worse
    than the source (a check that compared the source with itself would give KL 0, ratio 1),
    but no worse than the plain absmax rule does (the model verdict)."""
    man = U.read_json(w4a16_default / "manifest.json")
    assert man["group_size"] == 32 and man["architecture"] == "gemma3_text"
    assert "declared by its reader" in man["group_size_choice"]["reason"], man["group_size_choice"]
    assert man["tie_word_embeddings"] is True and not (w4a16_default / "lm_head.safetensors").exists()
    lin = {k: v for k, v in man["tensors"].items() if k.startswith("layer_")}
    assert len(lin) == 7 * 18, sorted(lin)[:10]
    assert all(v["exact"] is False and v["rel_rmse"] > 0 for v in lin.values())
    assert (w4a16_default / "tokenizer.json").is_file()
    js = made.verify(gemma_gguf, w4a16_default, "gemma-w4a16")
    assert js["pass"] is True and js["n_failed"] == 0 and js["n_missing"] == 0
    grid = [t for t in js["tensors"] if t.get("rule") == "absmax"]
    assert len(grid) == 126, f"{len(grid)} tensors judged by the absmax rule"
    assert all(t["n_worse_than_baseline"] == 0 for t in grid)
    mc = U.model_check_on_text(js)
    assert mc["kl_mean"] > 0 and mc["perplexity_ratio"] > 1.0, mc
    # Against the plain absmax rule at the same grid (docs/verify.md, "Model verdict"): the
    # writer's rule must not lose to it on a real model (docs/fidelity.md, "Requantizing lossy
    # sources").
    U.assert_verdict(js, {"better_than_baseline", "as_expected"})
