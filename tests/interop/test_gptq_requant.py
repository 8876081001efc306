"""GPTQ requantization (issue 27): `convert --calibration TEXT --option quant_rule=gptq`.

Ground truth, all computed here independently of quantbridge:
  - the input of layer 0's q/k/v in float64 from the model's own F32 weights, over the tokens the
    documented chunking feeds (as test_imatrix.py: RMSNorm(embedding) * attn_norm, sequences of
    256 led by the text's first id), hence its Hessian H = X^T X / tokens;
  - GPTQ in numpy as the paper states it (Frantar et al. 2022, Algorithm 1, without the lazy
    batches): dead columns zeroed, H += 0.01 mean(diag H) I, U = the upper Cholesky factor of
    H^-1 (numpy's cholesky of the inverse, transposed), one column at a time with the rest of the
    row updated by err * U[i, i+1:], a group's scale (absmax / 7, rounded to fp16: our format's
    symmetric int4) fixed from the updated weights at its first column;
  - the output error ||(W - Q) X||^2 of what quantbridge wrote, decoded by the format's definition
    (docs/w4a16-format.md: low nibble for even columns, q + 8, w = q * scale in fp32).
"""
import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import _llamacpp_util as U

GS = 32


@pytest.fixture(scope="module")
def setup(tmp_path_factory, run_qb):
    d = tmp_path_factory.mktemp("gptq")
    src = d / "tiny-f32.gguf"
    values = U.write_f32_gguf(src)
    text = d / "calib.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. " * 12)
    ids = [int(x) for x in run_qb("forward", "--model", src, "--text-file", text,
                                  "--print-tokens").stdout.strip().split(",")]
    fed, pos = [], 1
    while pos < len(ids):
        fed += [ids[0]] + ids[pos:pos + 255]
        pos += 255
    emb = values["token_embd.weight"].astype(np.float64)[fed]
    x = emb / np.sqrt((emb * emb).mean(axis=1, keepdims=True) + 1e-5)
    x *= values["blk.0.attn_norm.weight"].astype(np.float64)
    return src, values, text, x


def convert(run_qb, src, out, *extra):
    run_qb("convert", "--source", src, "--output", out, "--progress", "none", "-q",
           "--group-size", str(GS), *extra)
    man = json.loads((out / "manifest.json").read_text())
    # one file per layer, the same tensor names in each: {"layer_00.safetensors/NAME": array}
    return man, {f.name + "/" + k: v for f in sorted(out.glob("*.safetensors"))
                 for k, v in load_file(str(f)).items()}


def decode(t, path):
    """Codes and decoded weights of one packed linear (docs/w4a16-format.md)."""
    p, s = t[path + ".packed"], t[path + ".scales"].astype(np.float32)
    q = np.empty((p.shape[0], p.shape[1] * 2), np.int64)
    q[:, 0::2] = (p & 15).astype(np.int64) - 8
    q[:, 1::2] = (p >> 4).astype(np.int64) - 8
    cols = s.shape[1] * GS
    q = q[:, :cols]
    w = (q.astype(np.float32) * np.repeat(s, GS, axis=1)[:, :cols]).astype(np.float32)
    return q, w


def f16(v):
    return np.float32(np.float16(v))


def gptq_reference(W, H, gs=GS, percdamp=0.01):
    """The plain algorithm (no lazy batches) in float64; returns (codes, decoded)."""
    W = W.astype(np.float64).copy()
    H = H.copy()
    dead = np.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    H[np.diag_indices_from(H)] += percdamp * np.mean(np.diag(H))
    Uc = np.linalg.cholesky(np.linalg.inv(H)).T
    rows, n = W.shape
    q = np.zeros((rows, n), np.int64)
    deq = np.zeros((rows, n), np.float32)
    s = None
    for i in range(n):
        if i % gs == 0:
            amax = np.abs(W[:, i:i + gs].astype(np.float32)).max(axis=1)
            s = np.array([f16(a / np.float32(7)) for a in amax], np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(s != 0, np.rint(W[:, i].astype(np.float32) / s), 0)
        q[:, i] = np.clip(r, -8, 7)
        deq[:, i] = q[:, i].astype(np.float32) * s
        err = (W[:, i] - deq[:, i]) / Uc[i, i]
        W[:, i + 1:] -= np.outer(err, Uc[i, i + 1:])
    return q, deq


def out_err(W, Q, x):
    d = (W.astype(np.float64) - Q.astype(np.float64)) @ x.T
    return float((d * d).sum())


def test_gptq_matches_reference_and_lowers_output_error(setup, tmp_path, run_qb):
    src, values, text, x = setup
    man, t = convert(run_qb, src, tmp_path / "gptq", "--calibration", text,
                     "--option", "quant_rule=gptq")
    _, ta = convert(run_qb, src, tmp_path / "absmax", "--option", "quant_rule=absmax")
    H = x.T @ x / x.shape[0]
    rules = {k: v["quant_rule"] for k, v in man["tensors"].items()}
    assert rules and all(r.startswith("gptq:") for r in rules.values()), rules
    # v_proj: the GGUF's rows are HF's (only q/k are permuted by llama.cpp's converter)
    W = values["blk.0.attn_v.weight"]
    q_ref, w_ref = gptq_reference(W, H)
    q_got, w_got = decode(t, "layer_00.safetensors/self_attn.v_proj")
    same = (q_ref == q_got).mean()
    assert same >= 0.99, same
    e_got, e_ref = out_err(W, w_got, x), out_err(W, w_ref, x)
    e_abs = out_err(W, decode(ta, "layer_00.safetensors/self_attn.v_proj")[1], x)
    print("v_proj ||(W-Q)X||^2: gptq %.6g, reference %.6g, absmax %.6g; codes equal %.4f"
          % (e_got, e_ref, e_abs, same))
    assert abs(e_got - e_ref) <= 0.02 * e_ref
    assert e_got < 0.9 * e_abs
    # q_proj multiplies the same input (one Hessian for q/k/v): rows in HF order here
    Wq = U.oracle_in_hf_order("blk.0.attn_q.weight", values["blk.0.attn_q.weight"])
    q_ref, _ = gptq_reference(Wq, H)
    assert (decode(t, "layer_00.safetensors/self_attn.q_proj")[0] == q_ref).mean() >= 0.99


def test_gptq_act_order(setup, tmp_path, run_qb):
    """act_order=permute: the columns stored by descending diag(H) (the reference code's
    act_order) with <path>.perm, and GPTQ run in that order."""
    src, values, text, x = setup
    man, t = convert(run_qb, src, tmp_path / "ao", "--calibration", text,
                     "--option", "quant_rule=gptq", "--option", "act_order=permute")
    _, ta = convert(run_qb, src, tmp_path / "absmax", "--option", "quant_rule=absmax")
    assert "input_permutation" in man["features"]
    key = "layer_00.safetensors:self_attn.v_proj"
    assert man["tensors"][key]["quant_rule"].startswith("gptq: columns in descending-importance")
    H = x.T @ x / x.shape[0]
    perm = t["layer_00.safetensors/self_attn.v_proj.perm"].astype(np.int64)
    want = np.argsort(-np.diag(H), kind="stable")
    # float32 (ours) against float64 (here) may swap columns of nearly equal importance
    assert sorted(perm) == list(range(H.shape[0])) and (perm == want).mean() >= 0.95
    d = np.diag(H)[perm]
    assert np.all(d[:-1] >= d[1:] * (1 - 1e-5))
    W = values["blk.0.attn_v.weight"][:, perm]
    q_ref, w_ref = gptq_reference(W, H[np.ix_(perm, perm)])
    q_got, w_got = decode(t, "layer_00.safetensors/self_attn.v_proj")
    same = (q_ref == q_got).mean()
    xp = x[:, perm]
    e_got, e_ref = out_err(W, w_got, xp), out_err(W, w_ref, xp)
    e_abs = out_err(values["blk.0.attn_v.weight"],
                    decode(ta, "layer_00.safetensors/self_attn.v_proj")[1], x)
    print("v_proj act order ||(W-Q)X||^2: gptq %.6g, reference %.6g, absmax %.6g; codes equal %.4f"
          % (e_got, e_ref, e_abs, same))
    assert same >= 0.99
    assert abs(e_got - e_ref) <= 0.02 * e_ref
    assert e_got < 0.9 * e_abs


def test_gptq_budget_passes_give_the_same_output(setup, tmp_path, run_qb):
    """--hessian-budget 1 (MiB): ffn_down's 512 x 512 floats fill a pass alone, so the Hessians
    come from several calibration passes; the result must not change."""
    src, _, text, _ = setup
    _, t1 = convert(run_qb, src, tmp_path / "one", "--calibration", text,
                    "--option", "quant_rule=gptq")
    _, t2 = convert(run_qb, src, tmp_path / "many", "--calibration", text,
                    "--option", "quant_rule=gptq", "--hessian-budget", "1")
    assert sorted(t1) == sorted(t2)
    for k in t1:
        np.testing.assert_array_equal(t1[k], t2[k], err_msg=k)


def test_gptq_with_imatrix_falls_back_to_weighted(setup, tmp_path, run_qb):
    """An imatrix holds only the Hessian's diagonal: gptq is refused per tensor, weighted runs and
    the manifest says why."""
    src, _, text, _ = setup
    saved = tmp_path / "calib.dat"
    convert(run_qb, src, tmp_path / "a", "--calibration", text, "--save-imatrix", saved)
    man, _ = convert(run_qb, src, tmp_path / "b", "--imatrix", saved,
                     "--option", "quant_rule=gptq")
    rules = [v["quant_rule"] for v in man["tensors"].values()]
    assert rules and all(r.startswith("weighted (gptq not used: no Hessian") for r in rules), rules


def test_gptq_without_statistics_refused(setup, tmp_path, run_qb):
    src, _, _, _ = setup
    r = run_qb("convert", "--source", src, "--output", tmp_path / "out",
               "--option", "quant_rule=gptq", ok=False)
    assert r.returncode == 1 and "quant_rule=gptq needs activation statistics" in r.stderr
    assert not (tmp_path / "out").exists()
