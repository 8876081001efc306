"""Interop: the gguf writer on gpt-oss (issue 28): MXFP4 experts carried over, llama.cpp runs it.

Sources: our MXFP4 generator (tests/gen/gen_mxfp4.c: the openai/gpt-oss layout, `*_blocks` E2M1 +
`*_scales` E8M0 experts, everything else BF16) and the float gpt-oss GGUF fixture of
test_gguf_deepseek_oss.py (GptOssModel's non-MXFP4 layout, written by gguf-py). Checks:

1. MXFP4 -> GGUF with type=auto: gguf-py reads ffn_{gate,up,down}_exps as MXFP4 and their bytes
   equal the source's scales and codes in ggml's block layout (block_mxfp4: the E8M0 byte, then
   qs[j] = element j | element j + 16 << 4), built here from the stored blocks with the layout
   llama.cpp's converter documents (conversion/gpt_oss.py repack_mxfp4: gate = rows 0::2, up =
   rows 1::2); gguf-py's own MXFP4 decoder on our bytes equals transformers'
   convert_moe_packed_tensors on the source (value equality: ggml decodes the code of -0 as +0).
2. llama.cpp runs that GGUF (non-expert linears kept F32 by tensor_type; `convert --verify` passes) and
   its logits match `quantbridge forward` on the MXFP4 source within test_gguf_writer.py's Q8_0 bound (5e-2 of the
   logit scale, top-1 >= 0.9): ggml multiplies MXFP4 against Q8_0-quantized activations.
3. Round trips: the float gpt-oss GGUF -> hf-dense -> GGUF (type=F32) holds every tensor of the
   source bit for bit; our MXFP4 GGUF rewritten with type=auto keeps every block.
"""
import json
import os
import subprocess

os.environ["HF_HUB_OFFLINE"] = "1"

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

import _hf_util as H  # noqa: E402
import qbllama  # noqa: E402
from test_gguf_deepseek_oss import write_gpt_oss  # noqa: E402
from test_gguf_writer import assert_same_tensors, convert_gguf, tensors  # noqa: E402

Q = gguf.GGMLQuantizationType
LAYERS, HIDDEN, INTER, EXPERTS, VOCAB = 2, 64, 96, 4, H.VOCAB  # the tokenizer fixture's vocabulary


@pytest.fixture(scope="module")
def mxfp4_ckpt(build_dir, tmp_path_factory):
    gen = build_dir / "tests" / "bin" / "qb-gen-mxfp4"
    if not gen.is_file():
        pytest.fail(f"{gen} is missing: build the project first")
    d = tmp_path_factory.mktemp("gguf-oss") / "gpt-oss-mxfp4"
    subprocess.run([str(gen), str(d), "--layers", str(LAYERS), "--hidden", str(HIDDEN), "--intermediate",
                    str(INTER), "--experts", str(EXPERTS), "--vocab", str(VOCAB), "--seed", "7"], check=True)
    return d


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory, run_qb):
    """The tiny llama fixture's SentencePiece tokenizer (H.VOCAB tokens), which llama.cpp accepts (the tiny llama fixture's, rebuilt by
    the gguf reader): the MXFP4 generator writes no tokenizer."""
    d = tmp_path_factory.mktemp("gguf-oss-tok")
    g = d / "llama.gguf"
    H.write_gguf(g, "llama", Q.F32, seed=1)
    hf = d / "hf"
    run_qb("convert", "--source", g, "--output", hf, "--writer", "hf-dense", "--option", "dtype=f32")
    return hf


def ggml_mxfp4(blocks, scales):
    """ggml MXFP4 rows from OpenAI's blocks [..., G, 16] (element 2i in the low nibble of byte i)
    and E8M0 scales [..., G]: per block the scale byte, then qs[j] = code j | code j + 16 << 4."""
    codes = np.empty(blocks.shape[:-1] + (32,), np.uint8)
    codes[..., 0::2] = blocks & 0x0F
    codes[..., 1::2] = blocks >> 4
    qs = codes[..., :16] | (codes[..., 16:] << 4)
    out = np.concatenate([scales[..., None], qs], axis=-1)
    return out.reshape(out.shape[:-2] + (-1,)).tobytes()


def test_gpt_oss_mxfp4_codes_carried_over(mxfp4_ckpt, tmp_path, run_qb):
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    import torch

    out = tmp_path / "gguf"
    f = convert_gguf(run_qb, mxfp4_ckpt, out, "type=auto")
    got = tensors(f)
    from safetensors.torch import load_file as load_torch

    raw = {k: v.numpy() for k, v in load_torch(str(mxfp4_ckpt / "model.safetensors")).items() if v.dtype == torch.uint8}
    r = {t.name: t for t in gguf.GGUFReader(str(f)).tensors}
    n = 0
    for layer in range(LAYERS):
        p = f"model.layers.{layer}.mlp.experts."
        b = f"blk.{layer}."
        gub, gus = raw[p + "gate_up_proj_blocks"], raw[p + "gate_up_proj_scales"]
        dnb, dns = raw[p + "down_proj_blocks"], raw[p + "down_proj_scales"]
        want = {b + "ffn_gate_exps.weight": (gub[:, 0::2], gus[:, 0::2]),
                b + "ffn_up_exps.weight": (gub[:, 1::2], gus[:, 1::2]),
                b + "ffn_down_exps.weight": (dnb, dns)}
        dense = {b + "ffn_gate_exps.weight": None, b + "ffn_up_exps.weight": None, b + "ffn_down_exps.weight": None}
        gu = convert_moe_packed_tensors(torch.from_numpy(gub), torch.from_numpy(gus), dtype=torch.float32)
        dn = convert_moe_packed_tensors(torch.from_numpy(dnb), torch.from_numpy(dns), dtype=torch.float32)
        gu_t = gu.transpose(1, 2).numpy()  # [E, 2I, H]: output rows
        dense[b + "ffn_gate_exps.weight"] = gu_t[:, 0::2]
        dense[b + "ffn_up_exps.weight"] = gu_t[:, 1::2]
        dense[b + "ffn_down_exps.weight"] = dn.transpose(1, 2).numpy()
        for name, (bl, sc) in want.items():
            t, shape, data = got[name]
            assert t == int(Q.MXFP4), f"{name}: type {Q(t).name}, want MXFP4"
            assert shape == (bl.shape[2] * 32, bl.shape[1], bl.shape[0]), f"{name}: ne {shape}"
            assert data == ggml_mxfp4(bl, sc), f"{name}: bytes differ from the source's codes in ggml's layout"
            dec = gguf.quants.dequantize(np.asarray(r[name].data), Q.MXFP4).reshape(dense[name].shape)
            assert np.array_equal(dec, dense[name]), f"{name}: gguf-py's decode differs from transformers'"
            n += 1
    assert n == 3 * LAYERS
    man = json.loads((out / "gguf-manifest.json").read_text())
    for t in man["tensors"]:
        if t["type"] == "MXFP4":
            assert t["action"] == "exact" and t["rel_rmse"] == 0.0, t


def test_gpt_oss_llama_cpp_runs_mxfp4_gguf(mxfp4_ckpt, tokdir, tmp_path, run_qb):
    ours = tmp_path / "gguf"
    # --verify: the experts declared exact must read back equal to the source (zeros of either sign)
    run_qb("convert", "--source", mxfp4_ckpt, "--output", ours, "--writer", "gguf", "--tokenizer", tokdir,
           "--option", "type=auto", "--option", "tensor_type=(attn|token_embd|output)=F32", "--verify")
    f = ours / "model.gguf"
    kinds = {Q(t).name for t, _, _ in tensors(f).values()}
    assert kinds == {"F32", "MXFP4"}, kinds
    tokens = [1, 45, 200, 3, 120, 87, 77, 9, 150, 33, 250, 99]
    got = qbllama.llama_logits(f, tokens)
    fwd = tmp_path / "fwd.safetensors"
    run_qb("forward", "--model", mxfp4_ckpt, "--tokens", ",".join(map(str, tokens)), "--output", fwd,
           "--threads", "2")
    ref = load_file(str(fwd))["logits"]
    assert got.shape == ref.shape
    scale = float(np.abs(ref).max())
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"\ngpt-oss MXFP4: llama.cpp on our GGUF vs quantbridge forward on the MXFP4 source: "
          f"max|diff|/scale {diff / scale:.3g}, top-1 {agree:.3f}")
    assert diff / scale <= 5e-2, f"{diff / scale:.3g} of the logit scale > 5e-2"
    assert agree >= 0.9


def test_gpt_oss_round_trip_gguf_hf_gguf(tmp_path, run_qb):
    g = tmp_path / "gpt-oss.gguf"
    write_gpt_oss(g)
    hf = tmp_path / "hf"
    run_qb("convert", "--source", g, "--output", hf, "--writer", "hf-dense", "--option", "dtype=f32")
    back = convert_gguf(run_qb, hf, tmp_path / "back", "type=F32")
    assert_same_tensors(tensors(back), tensors(g), "gpt-oss: GGUF -> hf-dense -> GGUF")
    assert gguf.GGUFReader(str(back)).fields["general.architecture"].contents() == "gpt-oss"


def test_gpt_oss_mxfp4_gguf_rewrite_keeps_blocks(mxfp4_ckpt, tmp_path, run_qb):
    first = convert_gguf(run_qb, mxfp4_ckpt, tmp_path / "first", "type=auto")
    out = tmp_path / "again"
    again = convert_gguf(run_qb, first, out, "type=auto")
    assert_same_tensors(tensors(again), tensors(first), "gpt-oss MXFP4 GGUF rewritten with type=auto")
    man = json.loads((out / "gguf-manifest.json").read_text())
    assert sum(1 for t in man["tensors"] if t["type"] == "MXFP4" and t["action"] == "exact") == 3 * LAYERS
