"""Sources derived from the real Gemma 3 270M weights by the ecosystem's own tools
(docs/real-models.md, "Derived sources"), each converted by quantbridge and judged by the tool
that made it:

- llama.cpp's quantizer: the F32 GGUF of the published file (conftest `f32_gguf`), and from it
  Q4_0, Q8_0, Q6_K and IQ4_XS (`pure`: every weight the file type's type where its rows admit
  it; token_embd overridden to Q8_0 as llama.cpp's own mixtures keep it). Oracle: gguf-py's
  dequantization, bit for bit.
- compressed-tensors: int4 group 128, symmetric and asymmetric, pack-quantized, made by the
  library from our hf-dense output (bfloat16, as such checkpoints are published). Oracle: the
  library's own decompression, bit for bit.

Each W4A16 conversion passes verify, whose model check runs on text (the first paragraph of
tests/real/text.txt, to keep three forward passes per source short) with a model verdict of exact
codes for the repacks and no worse than the plain absmax rule for the requantized ones.
"""
import pathlib
import shutil

import numpy as np
import pytest

import _real_util as U

# name -> llama.cpp file type. Gemma's 640-wide rows (q, k, v, gate, up, the embedding) are
# not a multiple of 256, so llama.cpp stores the 256-element types' tensors of that width in a
# 32-element type (llama_tensor_get_type's fallback): Q6_K -> Q8_0, IQ4_XS -> IQ4_NL; o_proj
# (1024) and down_proj (2048) keep the type.
LLAMA_TYPES = {"Q4_0": "Q4_0", "Q8_0": "Q8_0", "Q6_K": "Q6_K", "IQ4_XS": "IQ4_XS"}
FALLBACK = {"Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}


def expected_type(name: str, shape: tuple, want: str) -> str:
    """The ggml type llama.cpp's pure quantization gives a tensor (see FALLBACK)."""
    import gguf
    if len(shape) == 1:
        return "F32"
    if name == "token_embd.weight":
        return "Q8_0"
    block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[want]][0]
    return want if shape[-1] % block == 0 else FALLBACK[want]


def short_text(text_file: pathlib.Path) -> str:
    return text_file.read_text().split("\n\n")[0]


def check_hf_dense_equals_gguf_py(reader, out: pathlib.Path):
    files = U.safetensors_names(out)
    names = U.hf_to_gguf_names(files)
    assert sorted(names.values()) == sorted(t.name for t in reader.tensors)
    inv = {g: hf for hf, g in names.items()}
    for t in reader.tensors:
        hf = inv[t.name]
        got = U.read_tensor(files[hf], hf)
        assert got.dtype == np.float32, f"{hf}: {got.dtype}"
        U.assert_bits_equal(hf, got, U.ggufpy_hf_value(t), f"gguf-py ({t.tensor_type.name})")


# ------------------------------------------------------------------------------------------------
# llama.cpp's quantizer


@pytest.fixture(scope="module", params=list(LLAMA_TYPES))
def quantized(request, f32_gguf, work):
    """(type name, GGUF path, gguf-py reader) of one llama.cpp quantization of the F32 GGUF.
    Module-scoped and parametrized: pytest runs every test of one type before the next, so each
    file is made and opened once."""
    name = request.param
    out = work / f"gemma-{name.lower()}.gguf"
    if not out.exists():
        U.make_llama_quant(f32_gguf, name, out)
    return name, out, U.gguf_reader(out)


def test_llama_cpp_wrote_the_types(quantized):
    """The file holds the type on every weight llama.cpp allows it on, the documented fallback
    on the others, F32 norms; printed per kind of tensor (docs/real-models.md records it)."""
    name, path, r = quantized
    kinds = {}
    for t in r.tensors:
        shape = U.gguf_shape(t)
        want = expected_type(t.name, shape, LLAMA_TYPES[name])
        assert t.tensor_type.name == want, f"{path.name}: {t.name} {shape} is " \
                                           f"{t.tensor_type.name}, expected {want}"
        kind = t.name.split(".")[-2] if t.name.startswith("blk.") else t.name
        kinds.setdefault(t.tensor_type.name, set()).add(kind)
    print(f"\n{name}: " + "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(kinds.items())))
    assert any(t.tensor_type.name == LLAMA_TYPES[name] for t in r.tensors)


def test_hf_dense_f32_equals_gguf_py(quantized, made):
    """`convert --writer hf-dense --option dtype=f32` equals gguf-py's dequantization of every
    tensor bit for bit (Gemma norms minus 1)."""
    name, path, r = quantized
    out = made.convert(path, f"gemma-{name.lower()}-hf-f32", "--writer", "hf-dense",
                       "--option", "dtype=f32")
    check_hf_dense_equals_gguf_py(r, out)
    made.drop(f"gemma-{name.lower()}-hf-f32")


def test_w4a16(quantized, made, text_file):
    """Q4_0 at --group-size 32 is a repack: every linear declared exact, and the packed codes and
    fp16 scales of the output are Q4_0's own nibbles and block scales (docs/w4a16-format.md,
    "Encoding of a packed linear"). The other types are requantized with the default options,
    at the source's resolution (group size 32).
    verify passes either way, its model check on text."""
    name, path, r = quantized
    if name == "Q4_0":
        w4 = made.convert(path, "gemma-q4_0-w4a16-g32", "--group-size", "32")
        man = U.read_json(w4 / "manifest.json")
        assert man["group_size"] == 32
        lin = {k: v for k, v in man["tensors"].items() if k.startswith("layer_")}
        assert len(lin) == 126 and all(v["exact"] is True and v["rel_rmse"] == 0.0
                                       for v in lin.values()), \
            [k for k, v in lin.items() if not v["exact"]][:5]
        check_q4_0_codes(r, w4)
    else:
        w4 = made.convert(path, f"gemma-{name.lower()}-w4a16")
        man = U.read_json(w4 / "manifest.json")
        # requantized at the source's resolution: Q8_0's own 8-bit grid (groups of 32), or the
        # scale block the gguf reader declares for a type without a grid (32 for IQ4_XS, IQ4_NL;
        # Q6_K's 16 rounded up to the kernels' 32; 640-wide rows fall back to Q8_0 in part)
        assert man["group_size"] == 32, man["group_size_choice"]
        why = man["group_size_choice"]["reason"]
        assert "declared by its reader" in why or "its grid's groups" in why, why
    js = made.verify(path, w4, f"gemma-{name.lower()}-w4a16", "--text", short_text(text_file))
    assert js["pass"] is True and js["n_failed"] == 0 and js["n_missing"] == 0
    rules = {t["name"]: t["rule"] for t in js["tensors"] if t.get("layer") is not None
             and t["name"].endswith("_proj.weight")}
    assert len(rules) == 126
    assert set(rules.values()) == ({"exact"} if name == "Q4_0" else {"absmax"}), set(rules.values())
    U.model_check_on_text(js)
    U.assert_verdict(js, {"exact_codes"} if name == "Q4_0"
                     else {"better_than_baseline", "as_expected"})


def check_q4_0_codes(reader, w4: pathlib.Path):
    """Q4_0 block (ggml-common.h block_q4_0): fp16 d, then 16 bytes whose low nibbles are
    elements 0-15 and high nibbles 16-31, value d * (nibble - 8) (docs/formats/gguf.md, "Legacy
    blocks"). W4A16 stores code q + 8 = the same nibble, column c in the low nibble of byte c/2
    when c is even, and the block's d as the group's fp16 scale."""
    files = {}
    for t in reader.tensors:
        if t.tensor_type.name != "Q4_0":
            continue
        parts = t.name.split(".")  # blk.N.attn_q.weight
        hf = {v: k for k, v in {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                                "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                                "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                                "mlp.down_proj": "ffn_down"}.items()}[parts[2]]
        lf = w4 / f"layer_{int(parts[1]):02d}.safetensors"
        files[t.name] = lf
        rows, cols = U.gguf_shape(t)
        raw = np.asarray(t.data, dtype=np.uint8).reshape(rows, cols // 32, 18)
        d = raw[:, :, :2].copy().view(np.uint16).reshape(rows, cols // 32)
        qs = raw[:, :, 2:]
        nib = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(rows, cols)
        packed = U.read_tensor(lf, f"{hf}.packed")
        scales = U.read_tensor(lf, f"{hf}.scales")
        assert packed.dtype == np.uint8 and packed.shape == (rows, cols // 2), (hf, packed.shape)
        assert scales.dtype == np.float16 and scales.shape == (rows, cols // 32), (hf, scales.shape)
        ours = np.stack([packed & 0x0F, packed >> 4], axis=2).reshape(rows, cols)
        assert np.array_equal(ours, nib), f"{lf.name}: {hf} codes differ from Q4_0's nibbles " \
                                          f"at {np.argwhere(ours != nib)[0]}"
        U.assert_bits_equal(f"{hf}.scales", scales.view(np.uint16), d, "Q4_0 block scales")
    assert len(files) == 126, f"{len(files)} Q4_0 tensors"


def test_f32_gguf(f32_gguf, made, hf_f32, w4a16_default, text_file):
    """The F32 GGUF is llama.cpp's dequantization of the published file: converted to hf-dense
    f32 it equals gguf-py's reading of it and our f32 output of the published file bit for bit,
    so llama.cpp's and our dequantization of Q4_K/Q5_0/Q6_K/Q8_0 agree. Its W4A16 conversion
    holds the same values, so at the published file's automatic group size (32, its declared
    scale blocks; an F32 file declares none, so it is given here) every weight file equals the
    one made from the published file byte for byte (the manifest's sha256); verify passes, its
    model check on text."""
    r = U.gguf_reader(f32_gguf)
    assert set(U.type_counts(r)) == {"F32"}, U.type_counts(r)
    out = made.convert(f32_gguf, "gemma-f32-hf-f32", "--writer", "hf-dense", "--option", "dtype=f32")
    check_hf_dense_equals_gguf_py(r, out)
    ours, theirs = U.safetensors_names(out), U.safetensors_names(hf_f32)
    assert sorted(ours) == sorted(theirs)
    for n in ours:
        U.assert_bits_equal(n, U.read_tensor(ours[n], n), U.read_tensor(theirs[n], n),
                            "our dequantization of the published file")
    made.drop("gemma-f32-hf-f32")
    w4 = made.convert(f32_gguf, "gemma-f32-w4a16", "--group-size", "32")
    assert U.read_json(w4a16_default / "manifest.json")["group_size"] == 32
    sha = {f["name"]: f["sha256"] for f in U.read_json(w4 / "manifest.json")["files"]}
    ref = {f["name"]: f["sha256"] for f in U.read_json(w4a16_default / "manifest.json")["files"]}
    weights = [n for n in ref if n.endswith(".safetensors")]
    assert len(weights) == 20 and all(sha.get(n) == ref[n] for n in weights), \
        [n for n in weights if sha.get(n) != ref[n]]
    js = made.verify(f32_gguf, w4, "gemma-f32-w4a16", "--text", short_text(text_file))
    assert js["pass"] is True and js["n_failed"] == 0
    U.model_check_on_text(js)
    U.assert_verdict(js, {"better_than_baseline", "as_expected"})


# ------------------------------------------------------------------------------------------------
# compressed-tensors


@pytest.fixture(scope="module", params=["sym", "asym"])
def ct_source(request, hf_f32, hf_default, work):
    """(kind, directory): our hf-dense f32 output loaded by transformers in bfloat16, every
    projection quantized to int4 group 128 (symmetric or not) and compressed pack-quantized by
    compressed-tensors itself; the tokenizer files copied beside, as a publisher ships them."""
    kind = request.param
    out = work / f"gemma-ct-int4-{kind}-g128"
    if out.exists():
        shutil.rmtree(out)
    U.make_ct(hf_f32, hf_default, out, symmetric=kind == "sym")
    return kind, out


def test_ct_hf_dense_equals_library(ct_source, made):
    """`convert --writer hf-dense --option dtype=bf16` equals compressed-tensors' own
    decompression (CompressedTensorsDequantizer, bfloat16) of every tensor bit for bit."""
    import torch
    import qbct
    kind, src = ct_source
    cfg = U.read_json(src / "config.json")["quantization_config"]
    assert cfg["format"] == "pack-quantized", cfg["format"]
    out = made.convert(src, f"gemma-ct-{kind}-hf-bf16", "--writer", "hf-dense",
                       "--option", "dtype=bf16")
    lib = qbct.library_decompress(src, torch.bfloat16)
    files = U.safetensors_names(out)
    lib = {k: v for k, v in lib.items() if k != "lm_head.weight"}
    assert sorted(files) == sorted(lib), sorted(set(files) ^ set(lib))
    for n, v in lib.items():
        assert U.safetensors_dtype(files[n], n) == "BF16", n
        U.assert_bits_equal(n, U.read_tensor(files[n], n), v.view(torch.int16).numpy().view(np.uint16),
                            "compressed-tensors' decompression")
    made.drop(f"gemma-ct-{kind}-hf-bf16")


def test_ct_w4a16(ct_source, made, text_file):
    """Symmetric g128 with bfloat16 scales (exact in fp16) is a repack at the automatic group
    size: every linear declared exact, and reading the W4A16 output back (the sm86-w4a16 reader,
    hf-dense f32) gives the library's decompression once rounded to bfloat16, bit for bit.
    Asymmetric codes have no symmetric int4 grid: requantized at 128. verify passes both, its
    model check on text."""
    import torch
    import qbct
    kind, src = ct_source
    w4 = made.convert(src, f"gemma-ct-{kind}-w4a16")
    man = U.read_json(w4 / "manifest.json")
    assert man["group_size"] == 128
    lin = {k: v for k, v in man["tensors"].items() if k.startswith("layer_")}
    assert len(lin) == 126
    assert all(v["exact"] is (kind == "sym") for v in lin.values()), \
        [k for k, v in lin.items() if v["exact"] is not (kind == "sym")][:5]
    if kind == "sym":
        back = made.convert(w4, "gemma-ct-sym-w4a16-back", "--writer", "hf-dense",
                            "--option", "dtype=f32")
        files = U.safetensors_names(back)
        lib = qbct.library_decompress(src, torch.bfloat16)
        for n, v in lib.items():
            if not n.endswith("_proj.weight"):
                continue  # embeddings and norms are F16 in the format
            U.assert_bits_equal(n, U.f32_to_bf16_bits(U.read_tensor(files[n], n)),
                                v.view(torch.int16).numpy().view(np.uint16),
                                "compressed-tensors' decompression")
        made.drop("gemma-ct-sym-w4a16-back")
    js = made.verify(src, w4, f"gemma-ct-{kind}-w4a16", "--text", short_text(text_file))
    assert js["pass"] is True and js["n_failed"] == 0
    U.model_check_on_text(js)
    U.assert_verdict(js, {"exact_codes"} if kind == "sym"
                     else {"better_than_baseline", "as_expected"})
