"""Activation statistics (issue 27): `convert --imatrix` reads llama.cpp's importance matrix in both
of its forms, and `convert --calibration` computes the same statistics with the forward pass.

Ground truth:
  - the GGUF form is written here by gguf-py (llama.cpp's own GGUF library) in the layout
    llama-imatrix writes: per weight "<name>.in_sum2" (sum of x_j^2, F32 [n_cols]) and
    "<name>.counts" (F32 [1]); the legacy .dat with struct in llama-imatrix's legacy layout;
    every value is known here, so the means the reader must find are sum / count;
  - the calibration statistics of layer 0's q/k/v are recomputed here in float64 from the
    model's own F32 weights: their input is RMSNorm(embedding) * attn_norm (no attention before
    layer 0), over the tokens the documented chunking feeds (sequences of 256 led by the text's
    first id: docs/fidelity.md, "Requantizing lossy sources").
What quantbridge found is read back through `--save-imatrix` (the legacy layout, parsed here).
"""
import json
import struct

import gguf
import numpy as np
import pytest

import _llamacpp_util as U


def parse_dat(path):
    """llama-imatrix's legacy .dat: {name: (ncall, values)}."""
    b = path.read_bytes()
    off = 0

    def i32():
        nonlocal off
        v = struct.unpack_from("<i", b, off)[0]
        off += 4
        return v

    out = {}
    for _ in range(i32()):
        n = i32()
        name = b[off:off + n].decode()
        off += n
        ncall, nval = i32(), i32()
        out[name] = (ncall, np.frombuffer(b, "<f4", nval, off).copy())
        off += 4 * nval
    return out


def write_dat(path, entries):
    """entries: {name: (ncall, values)} in llama-imatrix's legacy layout."""
    parts = [struct.pack("<i", len(entries))]
    for name, (ncall, vals) in entries.items():
        nb = name.encode()
        parts += [struct.pack("<i", len(nb)), nb, struct.pack("<ii", ncall, len(vals)),
                  np.asarray(vals, "<f4").tobytes()]
    parts += [struct.pack("<i", 7), struct.pack("<i", 4), b"test"]
    path.write_bytes(b"".join(parts))


LINEARS = [n for n, s in U.tensor_shapes().items() if len(s) == 2 and n.startswith("blk.")]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = tmp_path_factory.mktemp("imatrix")
    path = d / "tiny-f32.gguf"
    values = U.write_f32_gguf(path)
    return path, values


def convert(run_qb, src, out, *extra):
    run_qb("convert", "--source", src, "--output", out, "--progress", "none", "-q", *extra)
    return json.loads((out / "manifest.json").read_text())


def random_sums(seed=5):
    rng = np.random.default_rng(seed)
    return {n: (rng.uniform(0.1, 50.0, U.tensor_shapes()[n][1]).astype(np.float32),
                float(rng.integers(10, 1000))) for n in LINEARS}


def test_imatrix_gguf_form(source, tmp_path, run_qb):
    src, _ = source
    sums = random_sums()
    im = tmp_path / "imatrix.gguf"
    w = gguf.GGUFWriter(str(im), "llama")
    w.add_string("general.type", "imatrix")
    w.add_array("imatrix.datasets", ["test"])
    w.add_uint32("imatrix.chunk_count", 3)
    w.add_uint32("imatrix.chunk_size", 512)
    for n, (s, c) in sums.items():
        w.add_tensor(n + ".in_sum2", s)
        w.add_tensor(n + ".counts", np.array([c], np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    saved = tmp_path / "back.dat"
    man = convert(run_qb, src, tmp_path / "out", "--imatrix", im, "--save-imatrix", saved)
    got = parse_dat(saved)
    assert sorted(got) == sorted(LINEARS)
    for n, (s, c) in sums.items():
        ncall, vals = got[n]
        assert ncall == int(c)
        np.testing.assert_allclose(vals / ncall, s.astype(np.float64) / c, rtol=1e-6)
    rules = [t["quant_rule"] for t in man["tensors"].values()]
    assert rules and all(r.startswith("weighted:") and "imatrix" in r for r in rules), rules


def test_imatrix_legacy_form(source, tmp_path, run_qb):
    src, _ = source
    sums = random_sums(7)
    im = tmp_path / "imatrix.dat"
    # llama-imatrix's legacy save writes sum / count * ncall; llama-quantize divides by ncall
    write_dat(im, {n: (int(c), s / c * int(c)) for n, (s, c) in sums.items()})
    saved = tmp_path / "back.dat"
    convert(run_qb, src, tmp_path / "out", "--imatrix", im, "--save-imatrix", saved)
    got = parse_dat(saved)
    for n, (s, c) in sums.items():
        ncall, vals = got[n]
        np.testing.assert_allclose(vals / ncall, s.astype(np.float64) / c, rtol=1e-5)


def test_imatrix_unknown_name_refused(source, tmp_path, run_qb):
    src, _ = source
    im = tmp_path / "bad.dat"
    write_dat(im, {"blk.9.attn_q.weight": (4, np.ones(U.N_EMBD, np.float32))})
    r = run_qb("convert", "--source", src, "--output", tmp_path / "out", "--imatrix", im, ok=False)
    assert r.returncode == 1 and "blk.9.attn_q.weight" in r.stderr and str(im) in r.stderr
    assert not (tmp_path / "out").exists()


def test_calibration_layer0_against_numpy(source, tmp_path, run_qb, repo_root):
    src, values = source
    # bytes the byte-level vocabulary can spell, long enough for two sequences
    text = tmp_path / "calib.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. " * 12)
    ids = [int(x) for x in run_qb("forward", "--model", src, "--text-file", text,
                                  "--print-tokens").stdout.strip().split(",")]
    assert len(ids) > 256, len(ids)
    saved = tmp_path / "calib.dat"
    man = convert(run_qb, src, tmp_path / "out", "--calibration", text, "--save-imatrix", saved)
    got = parse_dat(saved)
    # the documented chunking: sequences of 256, each led by ids[0]
    fed, pos = [], 1
    while pos < len(ids):
        chunk = [ids[0]] + ids[pos:pos + 255]
        pos += 255
        fed += chunk
    emb = values["token_embd.weight"].astype(np.float64)[fed]
    x = emb / np.sqrt((emb * emb).mean(axis=1, keepdims=True) + 1e-5)
    x *= values["blk.0.attn_norm.weight"].astype(np.float64)
    want = (x * x).mean(axis=0)
    for n in ("blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"):
        ncall, vals = got[n]
        assert ncall == len(fed)
        np.testing.assert_allclose(vals / ncall, want, rtol=2e-5)
    # every linear of the model was observed, over the same tokens
    assert sorted(got) == sorted(LINEARS)
    assert all(got[n][0] == len(fed) for n in LINEARS)
    assert all(t["quant_rule"].startswith("weighted:") for t in man["tensors"].values())
