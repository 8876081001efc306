"""Interop test: the gguf writer (plugins/gguf/writer.c) against llama.cpp and gguf-py.

1. Legacy types byte for byte: a tiny random llama GGUF in F32 (gguf-py) quantized by llama.cpp's
   own quantizer (`llama_model_quantize`, `pure`, so every 2-D weight gets the ftype's type) and by
   `quantbridge convert --writer gguf --option type=T` must hold the same bytes in every tensor,
   for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, F16 and BF16; the same bytes again as gguf-py's numpy
   quantizer (`gguf.quants.quantize`) for the types it implements. Q/K rows go through the
   reader's un-permutation and the writer's permutation, so a wrong permutation would show.
2. Round trips for every architecture the writer writes (the interop fixtures' plus gemma v1,
   mixtral and qwen2moe): GGUF (F32) -> hf-dense (f32) ->
   GGUF (type F32) holds every tensor of the source bit for bit under the same name, shape and
   type; a Q4_0 source rewritten with type=auto keeps its blocks byte for byte (its stored rows
   copied, "exact" in the manifest); a Q8_0 source rewritten with type=Q8_0 too; llama.cpp's own
   K- and IQ-quantized files rewritten with type=auto keep every block and give llama.cpp the
   same logits (ABI 1.4 stored rows).
3. llama.cpp loads what we write and its logits match `quantbridge forward` on the source
   (hf-dense directory) within test_logits.py's bounds: F32 2e-4 of the logit scale; Q8_0 5e-2
   with top-1 >= 0.9 (llama.cpp quantizes activations to Q8_0 in its matmul, quantbridge forward
   does not; the reasoning is in test_logits.py).
"""
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

import _hf_util as H  # noqa: E402
import _llamacpp_util as L  # noqa: E402
import qbllama  # noqa: E402

Q = gguf.GGMLQuantizationType

# (our type option, llama ftype under `pure`)
LEGACY = [("Q4_0", 2), ("Q4_1", 3), ("Q5_0", 8), ("Q5_1", 9), ("Q8_0", 7), ("F16", 1), ("BF16", 32)]
GGUFPY_QUANTIZES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "F16", "BF16"}


def tensors(path):
    """{name: (ggml type id, ne tuple, raw bytes)} of a GGUF, via gguf-py."""
    r = gguf.GGUFReader(str(path))
    return {t.name: (int(t.tensor_type), tuple(int(x) for x in t.shape),
                     np.asarray(t.data).tobytes()) for t in r.tensors}


def convert_gguf(run_qb, src, out, *opts):
    args = ["convert", "--source", src, "--output", out, "--writer", "gguf"]
    for o in opts:
        args += ["--option", o]
    run_qb(*args)
    f = out / "model.gguf"
    assert f.is_file(), f"{out}: no model.gguf"
    return f


def assert_same_tensors(got, want, label):
    assert set(got) == set(want), f"{label}: names differ: {sorted(set(got) ^ set(want))}"
    for n, (t, shape, data) in want.items():
        gt, gshape, gdata = got[n]
        assert gt == t, f"{label}: {n}: type {gguf.GGMLQuantizationType(gt).name}, " \
                        f"want {gguf.GGMLQuantizationType(t).name}"
        assert gshape == shape, f"{label}: {n}: shape {gshape}, want {shape}"
        if gdata != data:
            a, b = np.frombuffer(gdata, np.uint8), np.frombuffer(data, np.uint8)
            bad = np.flatnonzero(a != b)
            pytest.fail(f"{label}: {n}: {bad.size} of {a.size} bytes differ, first at byte {bad[0]}")


@pytest.fixture(scope="module")
def f32_src(tmp_path_factory):
    p = tmp_path_factory.mktemp("gguf-writer") / "tiny-f32.gguf"
    values = L.write_f32_gguf(p)
    return p, values


@pytest.mark.parametrize("name,ftype", LEGACY)
def test_legacy_types_equal_llama_cpp(name, ftype, f32_src, tmp_path, run_qb):
    src, values = f32_src
    ref = tmp_path / f"llamacpp-{name}.gguf"
    L.quantize(src, ref, ftype, False)
    ours = convert_gguf(run_qb, src, tmp_path / f"ours-{name}", f"type={name}")
    want, got = tensors(ref), tensors(ours)
    qt = Q[name]
    n_quant = sum(1 for t, _, _ in want.values() if t == int(qt))
    assert n_quant >= 7, f"llama.cpp wrote only {n_quant} {name} tensors"
    assert_same_tensors(got, want, f"type={name} vs llama.cpp")
    if name in GGUFPY_QUANTIZES:
        for n, a in values.items():
            if a.ndim != 2:
                continue
            oracle = np.asarray(gguf.quants.quantize(a, qt)).tobytes()
            assert got[n][2] == oracle, f"type={name}: {n} differs from gguf-py's quantizer"


def _hf_source(tmp_path, run_qb, arch, seed=3):
    g = tmp_path / f"src-{arch}.gguf"
    H.write_gguf(g, arch, Q.F32, seed=seed)
    hf = tmp_path / f"hf-{arch}"
    run_qb("convert", "--source", g, "--output", hf, "--writer", "hf-dense", "--option", "dtype=f32")
    return g, hf


# Every architecture the writer writes: the interop fixtures' ARCHS plus gemma (v1), mixtral and
# qwen2moe (ROUND_TRIP_ARCHS); deepseek2 and gpt-oss round-trip in test_gguf_writer_ds.py and
# test_gguf_gptoss.py.
@pytest.mark.parametrize("arch", list(H.ALL_ARCHS))
def test_round_trip_gguf_hf_gguf(arch, tmp_path, run_qb):
    g, hf = _hf_source(tmp_path, run_qb, arch)
    back = convert_gguf(run_qb, hf, tmp_path / "back", "type=F32")
    assert_same_tensors(tensors(back), tensors(g), f"{arch}: GGUF -> hf-dense -> GGUF")
    r = gguf.GGUFReader(str(back))
    assert r.fields["general.architecture"].contents() == H.ALL_ARCHS[arch][0]
    src = gguf.GGUFReader(str(g))
    assert r.fields["tokenizer.ggml.tokens"].contents() == src.fields["tokenizer.ggml.tokens"].contents()
    # the hyper-parameters come back too (expert counts and widths, shared expert width, sliding
    # window, softcaps); rope.dimension_count may be left out where it equals key_length, the value
    # llama.cpp's load_hparams takes when the key is absent (only LlamaModel writes it)
    garch = H.ALL_ARCHS[arch][0] + "."
    want = {k: f.contents() for k, f in src.fields.items() if k.startswith(garch)}
    got = {k: f.contents() for k, f in r.fields.items() if k.startswith(garch)}
    if garch + "rope.dimension_count" not in got and \
            want.get(garch + "rope.dimension_count") == want.get(garch + "attention.key_length"):
        del want[garch + "rope.dimension_count"]
    for k, v in want.items():
        assert got.get(k) == v, f"{arch}: {k} = {got.get(k)!r} after the round trip, source {v!r}"


# A named type puts routers (ffn_gate_inp) in F32 as llama.cpp's converter does, so the MoE
# model is rewritten byte for byte only with type=auto (the router's Q4_0 grid carried over).
REWRITES = [(a, "Q4_0", "type=auto") for a in ("llama", "qwen2", "gemma3", "phi3", "qwen3moe")] + \
           [(a, "Q8_0", "type=Q8_0") for a in ("llama", "qwen2", "gemma3", "phi3")]


@pytest.mark.parametrize("arch,qname,opt", REWRITES)
def test_rewrite_keeps_blocks(arch, qname, opt, tmp_path, run_qb):
    g = tmp_path / f"src-{arch}-{qname}.gguf"
    H.write_gguf(g, arch, Q[qname], seed=5)
    out = tmp_path / "out"
    back = convert_gguf(run_qb, g, out, opt)
    assert_same_tensors(tensors(back), tensors(g), f"{arch} {qname} rewritten with {opt}")
    man = json.loads((out / "gguf-manifest.json").read_text())
    quant = [t for t in man["tensors"] if t["type"] == qname]
    assert quant, "no quantized tensor in the manifest"
    if opt == "type=auto":
        # since ABI 1.4 the GGUF source's stored rows are copied (checked row by row against the
        # reader's values), before the Q4_0 grid would be carried over: exact either way
        for t in quant:
            assert t["action"] == "exact" and t["rel_rmse"] == 0.0, t


LOGIT_ARCHS = ["llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "qwen3moe"]


@pytest.mark.parametrize("qname,rel,top1", [("F32", 2e-4, 1.0), ("Q8_0", 5e-2, 0.9)])
@pytest.mark.parametrize("arch", LOGIT_ARCHS)
def test_llama_cpp_runs_our_gguf(arch, qname, rel, top1, tmp_path, run_qb):
    _, hf = _hf_source(tmp_path, run_qb, arch)
    ours = convert_gguf(run_qb, hf, tmp_path / "ours", f"type={qname}")
    tokens = [1, 45, 260, 3, 120, 287, 77, 200, 261, 9, 150, 270, 33, 250, 99, 281]
    got = qbllama.llama_logits(ours, tokens)
    f = tmp_path / "fwd.safetensors"
    run_qb("forward", "--model", hf, "--tokens", ",".join(map(str, tokens)), "--output", f,
           "--threads", "2")
    ref = load_file(str(f))["logits"]
    assert got.shape == ref.shape
    scale = float(np.abs(ref).max())
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"\n{arch} {qname}: llama.cpp on our GGUF vs quantbridge forward on the source: "
          f"max|diff|/scale {diff / scale:.3g}, top-1 {agree:.3f}")
    assert diff / scale <= rel, f"{arch} {qname}: {diff / scale:.3g} of the logit scale > {rel}"
    assert agree >= top1


# K types: (our type, llama ftype whose `pure` type it is: Q4_K_S 14, Q5_K_S 16, Q6_K 18).
K_TYPES = [("Q4_K", 14), ("Q5_K", 16), ("Q6_K", 18)]
K_RMSE_RATIO = 1.01


@pytest.mark.parametrize("name,ftype", K_TYPES)
def test_k_types_error_within_llama_cpp(name, ftype, f32_src, tmp_path, run_qb):
    """Each tensor's RMSE against the F32 values is at most 1.01 x that of llama.cpp's quantizer
    on the same input; the share of bit-identical super-blocks is printed (-s)."""
    src, values = f32_src
    ref = tmp_path / f"llamacpp-{name}.gguf"
    L.quantize(src, ref, ftype, False)
    ours = convert_gguf(run_qb, src, tmp_path / f"ours-{name}", f"type={name}")
    want, got = tensors(ref), tensors(ours)
    qt = Q[name]
    bs = gguf.GGML_QUANT_SIZES[qt][1]
    same = total = 0
    worst = 0.0
    n_k = 0
    for n, a in values.items():
        if a.ndim != 2:
            continue
        assert want[n][0] == int(qt) and got[n][0] == int(qt), f"{n}: not {name} in both"
        n_k += 1
        g = gguf.quants.dequantize(np.frombuffer(got[n][2], np.uint8).reshape(a.shape[0], -1), qt)
        w = gguf.quants.dequantize(np.frombuffer(want[n][2], np.uint8).reshape(a.shape[0], -1), qt)
        e_ours = float(np.sqrt(np.mean((g.astype(np.float64) - a) ** 2)))
        e_ref = float(np.sqrt(np.mean((w.astype(np.float64) - a) ** 2)))
        worst = max(worst, e_ours / e_ref)
        assert e_ours <= K_RMSE_RATIO * e_ref, f"{name}: {n}: RMSE {e_ours:.6g} > 1.01 x llama.cpp's {e_ref:.6g}"
        gb = np.frombuffer(got[n][2], np.uint8).reshape(-1, bs)
        wb = np.frombuffer(want[n][2], np.uint8).reshape(-1, bs)
        same += int((gb == wb).all(axis=1).sum())
        total += gb.shape[0]
    assert n_k >= 7
    print(f"\n{name}: worst RMSE ratio ours/llama.cpp {worst:.6f}; bit-identical super-blocks "
          f"{same}/{total} ({100.0 * same / total:.2f} %)")


@pytest.fixture(scope="module")
def f32_src_10(tmp_path_factory):
    """The tiny llama with 10 layers, so llama.cpp's use_more_bits picks some layers and not others."""
    p = tmp_path_factory.mktemp("gguf-writer-10") / "tiny10-f32.gguf"
    keep = L.N_LAYER
    L.N_LAYER = 10
    try:
        L.write_f32_gguf(p, seed=77)
    finally:
        L.N_LAYER = keep
    return p


@pytest.mark.parametrize("name,ftype", [("Q4_K_M", 15), ("Q5_K_M", 17)])
def test_presets_equal_llama_cpp(name, ftype, f32_src_10, tmp_path, run_qb):
    """type=Q4_K_M / Q5_K_M: every tensor gets the type llama.cpp's own quantizer (not pure) picks,
    and the same bytes."""
    ref = tmp_path / f"llamacpp-{name}.gguf"
    H.llama_cpp_quantize(f32_src_10, ref, ftype)
    ours = convert_gguf(run_qb, f32_src_10, tmp_path / f"ours-{name}", f"type={name}")
    want, got = tensors(ref), tensors(ours)
    mix = sorted({gguf.GGMLQuantizationType(t).name for t, _, _ in want.values()})
    assert len(mix) >= 3, f"llama.cpp's {name} mix is only {mix}: the test would prove little"
    assert_same_tensors(got, want, f"type={name} vs llama.cpp")
    r = gguf.GGUFReader(str(ours))
    assert r.fields["general.file_type"].contents() == ftype


def test_tensor_type_override(f32_src, tmp_path, run_qb):
    src, _ = f32_src
    base = tensors(convert_gguf(run_qb, src, tmp_path / "q4", "type=Q4_0"))
    q8 = tensors(convert_gguf(run_qb, src, tmp_path / "q8", "type=Q8_0"))
    mixed = tensors(convert_gguf(run_qb, src, tmp_path / "mixed", "type=Q4_0",
                                 "tensor_type=attn_(q|k)\\.weight=Q8_0,ffn_down=Q4_1"))
    for n, (t, _, data) in mixed.items():
        if "attn_q.weight" in n or "attn_k.weight" in n:
            assert (t, data) == (q8[n][0], q8[n][2]), n
        elif "ffn_down" in n:
            assert t == int(Q.Q4_1), n
        else:
            assert (t, data) == (base[n][0], base[n][2]), n


# Real vocabularies (tests/data/tokenizers): the tokenizer.ggml.* we write, run by llama.cpp's own
# tokenizer (a vocab-only load), must cut the corpus into the ids the original tokenizer.json gives.
# llama.cpp is asked to parse special tokens (`special=True`), as tokenizers always matches added
# tokens. llama.cpp applies no Unicode normalizer (its qwen2 pre type has no NFC step; its own
# conversion of Qwen behaves the same), so for a vocabulary with an NFC normalizer it gets the
# NFC form of each line: what tokenizers' normalizer hands its model. llama.cpp also retypes some
# end-of-generation texts to CONTROL when the vocabulary holds them as normal tokens
# (llama_vocab::impl::load, "control-looking token ... will be overridden"): Qwen3 has "</s>" as an
# ordinary piece, so llama.cpp cuts it out of the text where tokenizers merges it; llama.cpp does
# the same with its own conversion. Only lines holding such a text may differ, and must.
TOKENIZERS = [("llama3", "gpt2", "llama-bpe"), ("qwen3", "gpt2", "qwen2"), ("llama2", "llama", "default")]


@pytest.mark.parametrize("name,model,pre", TOKENIZERS)
def test_tokenizer_llama_cpp_matches_hf(name, model, pre, repo_root, build_dir, tmp_path, run_qb):
    import lzma
    import subprocess

    import llama_cpp
    from tokenizers import Tokenizer

    data = repo_root / "tests" / "data" / "tokenizers" / name
    hf = tmp_path / "hf"
    subprocess.run([str(build_dir / "tests" / "bin" / "qb-gen-hf-dense"), "--out", str(hf), "--arch",
                    "llama", "--dtype", "f32", "--layers", "1", "--hidden", "64", "--intermediate", "128",
                    "--heads", "2", "--kv-heads", "2"], check=True)
    (hf / "tokenizer.json").write_bytes(lzma.decompress((data / "tokenizer.json.xz").read_bytes()))
    (hf / "tokenizer_config.json").write_bytes((data / "tokenizer_config.json").read_bytes())
    out = convert_gguf(run_qb, hf, tmp_path / "out", "type=F32")
    r = gguf.GGUFReader(str(out))
    assert r.fields["tokenizer.ggml.model"].contents() == model
    assert r.fields["tokenizer.ggml.pre"].contents() == pre
    hf_tok = Tokenizer.from_file(str(hf / "tokenizer.json"))
    vocab = hf_tok.get_vocab(with_added_tokens=True)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    for text, i in vocab.items():
        assert tokens[i] == text, f"id {i}: {tokens[i]!r} vs tokenizer.json {text!r}"
    lcpp = llama_cpp.Llama(model_path=str(out), vocab_only=True, verbose=False)
    lines = [ln for ln in (repo_root / "tests" / "data" / "tokenizers" / "corpus.txt")
             .read_text(encoding="utf-8").splitlines() if ln.strip()]
    import unicodedata
    nfc = '"NFC"' in json.dumps(json.loads((hf / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"])
    bad = []
    for ln in lines:
        want = hf_tok.encode(ln, add_special_tokens=False).ids
        text = unicodedata.normalize("NFC", ln) if nfc else ln
        got = lcpp.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if got != want:
            bad.append((ln, got[:12], want[:12]))
    added = {t["content"] for t in json.loads((hf / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]}
    retyped = [t for t in ("</s>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>") if t in vocab and t not in added]
    unexplained = [b for b in bad if not any(t in b[0] for t in retyped)]
    assert not unexplained, \
        f"{name}: {len(unexplained)} of {len(lines)} lines cut differently by llama.cpp, first: {unexplained[0]}"


# Block copy (ABI 1.4 stored rows, issue 28): a GGUF source in any ggml type is rewritten with
# type=auto keeping every tensor's blocks -- the K and IQ types too, which the writer has no
# quantizer for (IQ) or whose requantization would not give the same bytes (K). The sources are
# llama.cpp's own quantizer's output (`pure`, every 2-D weight in the type), IQ2_XXS with the
# test importance matrix, as llama.cpp requires one for it. (llama ftype, the main ggml type)
BLOCK_COPIES = [(14, "Q4_K", False), (18, "Q6_K", False), (10, "Q2_K", False), (11, "Q3_K", False),
                (16, "Q5_K", False), (25, "IQ4_NL", False), (30, "IQ4_XS", False),
                (19, "IQ2_XXS", True), (26, "IQ3_S", True)]


@pytest.mark.parametrize("ftype,qname,imx", BLOCK_COPIES)
def test_rewrite_copies_k_and_iq_blocks(ftype, qname, imx, f32_src, tmp_path, run_qb):
    src, _ = f32_src
    g = tmp_path / f"llamacpp-{qname}.gguf"
    L.quantize(src, g, ftype, imx)
    want = tensors(g)
    n_main = sum(1 for t, _, _ in want.values() if t == int(Q[qname]))
    assert n_main >= 7, f"llama.cpp wrote only {n_main} {qname} tensors"
    out = tmp_path / "out"
    back = convert_gguf(run_qb, g, out, "type=auto")
    assert_same_tensors(tensors(back), want, f"{qname} source rewritten with type=auto")
    man = json.loads((out / "gguf-manifest.json").read_text())
    for t in man["tensors"]:
        if t["type"] == qname:
            assert t["action"] == "exact" and t["rel_rmse"] == 0.0, t
    # the same tensors under the same metadata: llama.cpp computes the same logits from both
    tokens = [1, 45, 200, 3, 120, 87, 77, 9]
    a, b = qbllama.llama_logits(g, tokens), qbllama.llama_logits(back, tokens)
    assert np.array_equal(a, b), f"{qname}: llama.cpp's logits differ between source and rewrite " \
                                 f"(max |diff| {float(np.abs(a - b).max()):.3g})"
