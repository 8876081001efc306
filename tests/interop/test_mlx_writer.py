"""Interop test: the mlx writer and reader (issue 29) against MLX itself (mlx with its CPU
backend, mlx-lm; tests/interop/requirements.txt pins both).

Sources as in test_ct_writer.py: GGUF Q4_0 and Q8_0, GPTQ sym and asym, AWQ GEMM, our W4A16
format, and a dense F32 GGUF (quantized anew). Each is converted with `--writer mlx` and:

  1. `mlx.core.dequantize` of every quantized module equals our reader's decode
     (`--writer hf-dense --option dtype=f32` of the MLX directory) value for value: MLX computes
     scale * q + bias in float32, the same number as (q - zero) * scale where the bias is an
     integer multiple of the scale, except that x + (-x) is +0 where the source (a negative
     GGUF scale) holds -0: compared with ==, and every bitwise difference must be such a zero;
  2. with `--option dtype=f32` mlx-lm loads the directory and runs it in float32; its logits
     agree with `quantbridge forward` on the same directory within F32_REL of the logit scale,
     top-1 equal;
  3. the default model dtype (float16 for these sources, with float32 scales and biases where
     a source grid is asymmetric) loads in mlx-lm too and agrees within F16_REL (MLX then runs
     in float16: its activations round to 11 bits).
  4. (test_mlx_writer_shards, GGUF Q4_0) a small --option max_shard_size: the shards are what
     mlx_lm.utils.make_shards cuts, mlx-lm's logits on them equal the whole file's bit for bit,
     and the index metadata is save_model's.
"""
import os
import pathlib
import subprocess

os.environ["HF_HUB_OFFLINE"] = "1"

import gguf  # noqa: E402
import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

import _hf_util as U  # noqa: E402
from test_ct_writer import make_source  # noqa: E402

F32_REL = 2e-4
F16_REL = 2e-2
TOKENS = [1, 45, 3, 20, 7, 33, 60, 12, 2, 9, 50, 61]

# id -> (kind, generator argument, every linear exact)
SOURCES = {
    "gguf_q4_0": ("gguf", gguf.GGMLQuantizationType.Q4_0, True),
    "gguf_q8_0": ("gguf", gguf.GGMLQuantizationType.Q8_0, True),
    "gptq_sym": ("quant", "gptq-4-g128-sym-v1", True),
    "gptq_asym": ("quant", "gptq-4-g128-asym-v1", True),
    "awq_gemm": ("quant", "awq-gemm-g128-zp", True),
    "w4a16": ("w4a16", gguf.GGMLQuantizationType.F32, True),
    "gguf_f32": ("gguf", gguf.GGMLQuantizationType.F32, False),
}


def mlx_logits(d, vocab):
    # the model alone (mlx_lm.utils.load_model, what mlx_lm.load calls before the tokenizer):
    # the generators' GPTQ/AWQ fixtures carry no tokenizer.json
    model, _ = load_model(pathlib.Path(d))
    out = model(mx.array([[t % vocab for t in TOKENS]]))
    return np.array(out.astype(mx.float32))[0]


def qb_logits(run_qb, d, out, vocab):
    run_qb("forward", "--model", d, "--tokens", ",".join(str(t % vocab) for t in TOKENS),
           "--output", out, "--threads", "2")
    return load_file(str(out))["logits"]


def agree(case, got, ref, rel):
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"{case}: reference logits ~0"
    diff = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"{case}: mlx-lm vs quantbridge forward: max|diff| {diff:.3g} ({diff / scale:.3g} of "
          f"scale {scale:.3g}), top-1 {top1:.3f}")
    assert diff <= rel * scale, f"{case}: logits differ by {diff:.3g} (scale {scale:.3g})"
    assert top1 == 1.0, f"{case}: top-1 agreement {top1}"


@pytest.mark.parametrize("case", list(SOURCES))
def test_mlx_writer_roundtrip(case, tmp_path, run_qb, build_dir):
    kind, arg, exact = SOURCES[case]
    src = make_source(kind, arg, tmp_path, run_qb, build_dir)
    m32 = tmp_path / "mlx32"
    proc = run_qb("convert", "--source", src, "--output", m32, "--writer", "mlx",
                  "--option", "dtype=f32", "--verify")
    text = proc.stdout + proc.stderr
    assert "verify: PASS" in text, text
    summary = [ln for ln in text.splitlines() if "% of quantized weights exact" in ln]
    assert summary, text
    if exact:
        assert "100.0 % of quantized weights exact" in summary[0], summary[0]
    print(f"\n{case}: {summary[0]}")

    # 1. mlx.core.dequantize equals our decode
    ours_dir = tmp_path / "ours"
    run_qb("convert", "--source", m32, "--output", ours_dir, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ours = {k: v.numpy() for k, v in U.read_safetensors_dir(ours_dir).items()}
    stored = {}
    for f in sorted(m32.glob("*.safetensors")):
        stored.update(mx.load(str(f)))
    cfg = U.config(m32)
    q = cfg["quantization"]
    n_mod = 0
    for k in stored:
        if not k.endswith(".scales"):
            continue
        m = k[: -len(".scales")]
        p = q.get(m, q)
        d = mx.dequantize(stored[m + ".weight"], stored[m + ".scales"], stored[m + ".biases"],
                          group_size=p["group_size"], bits=p["bits"])
        got = np.array(d.astype(mx.float32))
        want = ours[m + ".weight"]
        assert got.shape == want.shape, f"{m}: {got.shape} vs {want.shape}"
        assert np.array_equal(got, want), \
            f"{case}: {m}: {int((got != want).sum())} values differ from mlx.core.dequantize"
        bits_differ = got.view(np.uint32) != want.view(np.uint32)
        assert (got[bits_differ] == 0).all(), f"{case}: {m}: a bitwise difference not at zero"
        n_mod += 1
    assert n_mod == 2 * 7, f"{case}: {n_mod} quantized modules"

    # 2. mlx-lm runs the float32 model; logits agree with quantbridge forward
    vocab = cfg["vocab_size"]
    agree(f"{case} f32", mlx_logits(m32, vocab), qb_logits(run_qb, m32, tmp_path / "f32.st", vocab),
          F32_REL)

    # 3. the default dtype loads too
    md = tmp_path / "mlx"
    run_qb("convert", "--source", src, "--output", md, "--writer", "mlx", "--verify")
    agree(f"{case} default", mlx_logits(md, vocab), qb_logits(run_qb, md, tmp_path / "d.st", vocab),
          F16_REL)


class _Bytes(int):
    """A make_shards cap given in bytes: make_shards computes `max_file_size_gb << 30`
    (whole GiB only), too coarse for a test model, so the shift hands the bytes back."""

    def __lshift__(self, _):
        return int(self)


def _header_order(path):
    """Tensor names of a safetensors file in data order."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return sorted(h, key=lambda k: h[k]["data_offsets"][0])


def test_mlx_writer_shards(tmp_path, run_qb, build_dir, monkeypatch):
    """4. Shards (docs/formats/mlx.md, "Shards"): a GGUF Q4_0 source written whole and with a
    small --option max_shard_size. mlx-lm loads the shards and its logits equal those of the
    whole output bit for bit, as do `quantbridge forward`'s (our mlx reader through the index);
    the shards hold what mlx_lm.utils.make_shards cuts from the whole file's tensors in their
    order with the same cap; the index's metadata equals what mlx_lm.utils.save_model writes for
    the model mlx-lm loaded from our output, and for one shard the whole index file is
    byte-identical to save_model's."""
    import json

    import mlx_lm.utils as MU

    src = make_source("gguf", gguf.GGMLQuantizationType.Q4_0, tmp_path, run_qb, build_dir)
    whole = tmp_path / "whole"
    proc = run_qb("convert", "--source", src, "--output", whole, "--writer", "mlx",
                  "--option", "dtype=f32", "--verify")
    assert "verify: PASS" in proc.stdout + proc.stderr
    ours_ix = json.loads((whole / "model.safetensors.index.json").read_text())
    cap = ours_ix["metadata"]["total_size"] // 5
    sh = tmp_path / "sharded"
    proc = run_qb("convert", "--source", src, "--output", sh, "--writer", "mlx",
                  "--option", "dtype=f32", "--option", f"max_shard_size={cap}", "--verify")
    assert "verify: PASS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr

    # the layout: make_shards over the whole file's tensors in its order
    order = _header_order(whole / "model.safetensors")
    loaded = mx.load(str(whole / "model.safetensors"))
    weights = {k: loaded[k] for k in order}
    want = MU.make_shards(weights, _Bytes(cap))
    n = len(want)
    assert n >= 4, f"{n} shards for cap {cap}"
    names = [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
    assert sorted(p.name for p in sh.glob("*.safetensors")) == names
    for name, shard in zip(names, want):
        assert _header_order(sh / name) == list(shard), name
        got = mx.load(str(sh / name))
        for k in shard:
            assert np.array_equal(np.array(got[k]), np.array(loaded[k])), f"{name}: {k}"
    ix = json.loads((sh / "model.safetensors.index.json").read_text())
    assert list(ix["weight_map"]) == sorted(ix["weight_map"])
    assert ix["weight_map"] == {k: names[i] for i, s in enumerate(want) for k in s}
    print(f"\nshards: {n} files under a {cap}-byte cap, as make_shards cuts them")

    # mlx-lm runs the shards as it runs the whole file, bit for bit
    vocab = U.config(whole)["vocab_size"]
    a, b = mlx_logits(whole, vocab), mlx_logits(sh, vocab)
    assert np.array_equal(a, b), f"mlx-lm logits differ: {float(np.abs(a - b).max())}"
    qa = qb_logits(run_qb, whole, tmp_path / "a.st", vocab)
    qb = qb_logits(run_qb, sh, tmp_path / "b.st", vocab)
    assert np.array_equal(qa, qb), "quantbridge forward differs between whole and shards"

    # save_model's index for the model mlx-lm loaded from our output
    model, _ = load_model(whole)
    orig = MU.make_shards
    monkeypatch.setattr(MU, "make_shards", lambda w: orig(w, _Bytes(cap)))
    MU.save_model(tmp_path / "theirs", model)
    theirs = json.loads((tmp_path / "theirs" / "model.safetensors.index.json").read_text())
    assert list(theirs["metadata"]) == list(ix["metadata"])
    assert theirs["metadata"] == ix["metadata"], (theirs["metadata"], ix["metadata"])
    assert sorted(theirs["weight_map"]) == sorted(ix["weight_map"])
    moved = sum(theirs["weight_map"][k] != ix["weight_map"][k] for k in ix["weight_map"])
    print(f"save_model on mlx-lm's parameter order: {len(set(theirs['weight_map'].values()))} "
          f"files, {moved} of {len(theirs['weight_map'])} tensors in another file than ours (it "
          f"cuts in its module order, we in the file's)")
    monkeypatch.setattr(MU, "make_shards", orig)
    MU.save_model(tmp_path / "theirs1", model)
    assert (tmp_path / "theirs1" / "model.safetensors.index.json").read_bytes() == \
        (whole / "model.safetensors.index.json").read_bytes()
