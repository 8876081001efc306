"""The default quant rule against absmax at the model's output, over every source of the bench
(issue 27: "the default is never worse than absmax at the model level on any of them";
docs/fidelity.md, "Default rule against absmax").

Sources:
- the real tier's Gemma 3 270M Q4_K_M GGUF (QB_REAL_CACHE, docs/real-models.md);
- the sources the real tier derives from it, made by the tier's own helpers (tests/real/
  _real_util.py): the all-F32 GGUF (llama.cpp's dequantization; no declared granularity, so the
  default group is 128), llama.cpp's pure Q4_0, Q8_0, Q6_K and IQ4_XS of it, and
  compressed-tensors' int4 g128 symmetric and asymmetric pack-quantized checkpoints of our
  hf-dense f32 output (bfloat16, as published);
- the fixtures of the fidelity bench (bench/fidelity/run.py `sources`: a tiny llama with heavy
  tails and outlier columns as bf16, GPTQ sym/asym with act-order, AWQ g128/g32, the GGUF types
  llama.cpp makes of it, compressed-tensors int4 sym/asym and fp8);
- the heavy-tailed checkpoints of the project's C generator (tests/gen, seeds 1-10).

Per source: the W4A16 conversion with the default options (group size auto) against
`--option quant_rule=absmax` at the same group size; for the fixtures also at the other group
size (32 <-> 128); where the source can be calibrated, `--calibration builtin` (the Gemma Q4_K_M;
its importance, saved with --save-imatrix, is given to the GGUFs derived from it with --imatrix,
their tensor names being the same) against absmax at its group size. A source whose default
conversion is an exact repack (every linear declared exact) is not run: the rule is not used.

Each model is run by `quantbridge forward` on the same ids as its source, and compared with the
source's logits per position: KL(source || variant), top-1 agreement, next-token log-likelihood.
Gemma and its derived sources: the real tier's text (tests/real/text.txt, 620 tokens, one
sequence). The fixtures (random weights, a toy vocabulary where text means nothing): 8 sequences
of 64 pseudo-random ids (their context length is 64).

Against absmax: d_t = KL_variant,t - KL_absmax,t per position, paired on the same positions;
its mean and standard error sd(d)/sqrt(T) (the paired per-position standard error verify's model
verdict uses, docs/verify.md). "loses" when mean(d) > 2 SE, "wins" when mean(d) < -2 SE, else
"tie".

Environment: QB_BUILD_DIR, QB_REAL_CACHE, QB_QUALITY_WORK (scratch, default a temporary
directory), QB_RULES_SOURCES=real,derived,fixtures,generator (which groups), QB_RULES_EXTRA_ARGS (extra
convert arguments for every W4A16 conversion, e.g. to try a rule), QB_RULES_DERIVED_TOKENS=N
(the derived sources on the text's first N tokens only: each Gemma forward pass is a few minutes
on a loaded machine), QB_RULES_DERIVED_IMATRIX=0 (no --imatrix variants on them),
QB_QUALITY_JSON=FILE keeps the rows. Prints a markdown table on stdout.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
for p in ("tests/real", "tests/support/py", "tests/interop", "bench/fidelity"):
    sys.path.insert(0, str(REPO / p))
BUILD = pathlib.Path(os.environ.get("QB_BUILD_DIR", REPO / "build")).resolve()
QB = BUILD / "bin" / "quantbridge"
REAL_CACHE = pathlib.Path(os.environ.get("QB_REAL_CACHE", BUILD / "real-cache")).resolve()
EXTRA = os.environ.get("QB_RULES_EXTRA_ARGS", "").split()

FIXTURE_SEQS, FIXTURE_LEN, FIXTURE_IDS = 8, 64, 256  # ids below every fixture's vocabulary


def qb(*args, ok=True):
    p = subprocess.run([str(QB), *map(str, args)], capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit("quantbridge %s -> %d\n%s" % (" ".join(map(str, args)), p.returncode,
                                                p.stderr[-3000:]))
    return p


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# ---- logits and per-position figures ------------------------------------------------------------

def forward(model, ids, work):
    from safetensors.numpy import load_file
    f = work / "logits.safetensors"
    qb("forward", "--model", model, "--tokens", ",".join(map(str, ids)), "--output", f)
    x = load_file(str(f))["logits"]
    f.unlink()
    assert x.shape[0] == len(ids), (model, x.shape)
    return x


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def positions(ref, got, ids):
    """Per position of one sequence: KL(ref || got), top-1 agreement, and the next-token
    log-likelihoods of both (NaN at the last position, which has no next token). Blocks of 32
    rows: a Gemma row is 262,144 logits."""
    kl, agree, lp_ref, lp_got = [], [], [], []
    nxt = np.asarray(list(ids[1:]) + [0])
    for r0 in range(0, ref.shape[0], 32):
        a, b = log_softmax(ref[r0:r0 + 32]), log_softmax(got[r0:r0 + 32])
        kl.append((np.exp(a) * (a - b)).sum(axis=1))
        agree.append(a.argmax(axis=1) == b.argmax(axis=1))
        rows = np.arange(a.shape[0])
        lp_ref.append(a[rows, nxt[r0:r0 + 32]])
        lp_got.append(b[rows, nxt[r0:r0 + 32]])
    lp_ref, lp_got = np.concatenate(lp_ref), np.concatenate(lp_got)
    lp_ref[-1] = lp_got[-1] = np.nan
    return {"kl": np.concatenate(kl), "top1": np.concatenate(agree), "lp_ref": lp_ref,
            "lp_got": lp_got}


def concat(parts):
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def figures(pp):
    ok = ~np.isnan(pp["lp_ref"])
    return {"kl_mean": float(pp["kl"].mean()), "kl_p99": float(np.percentile(pp["kl"], 99)),
            "top1": float(pp["top1"].mean()),
            "ppl_ratio": float(np.exp(pp["lp_ref"][ok].mean() - pp["lp_got"][ok].mean())),
            "positions": int(pp["kl"].size)}


def paired(pp, base):
    """mean and standard error of KL_t(variant) - KL_t(base) over the same positions, and the
    verdict at 2 standard errors."""
    d = pp["kl"] - base["kl"]
    se = float(d.std(ddof=1) / np.sqrt(d.size))
    m = float(d.mean())
    return {"d_mean": m, "d_se": se,
            "vs_absmax": "loses" if m > 2 * se else "wins" if m < -2 * se else "tie"}


# ---- conversions -----------------------------------------------------------------------------

def convert(src, out, args):
    if out.exists():
        shutil.rmtree(out)
    t0 = time.time()
    qb("convert", "--source", src, "--output", out, "--progress", "none", *args, *EXTRA)
    man = json.loads((out / "manifest.json").read_text())
    man["_seconds"] = time.time() - t0
    return man


def rule_counts(man):
    """How many requantized linears got each rule (the first word of the manifest's quant_rule),
    and how many are exact repacks."""
    out = {}
    for v in man["tensors"].values():
        if v.get("exact") is True:
            out["exact"] = out.get("exact", 0) + 1
        elif "quant_rule" in v:
            r = v["quant_rule"].split(":")[0]
            out[r] = out.get(r, 0) + 1
    return out


def weights_sha(man):
    return {f["name"]: f["sha256"] for f in man["files"] if f["name"].endswith(".safetensors")}


# ---- the sources ----------------------------------------------------------------------------

class Source:
    """One source: its path, the sequences of ids it is run on, the group sizes to compare at
    besides its default, and the calibration arguments it supports (None: none)."""

    def __init__(self, group, name, path, seqs, other_groups=(), calib=None, calib_name=None):
        self.group, self.name, self.path, self.seqs = group, name, path, seqs
        self.other_groups, self.calib, self.calib_name = other_groups, calib, calib_name


def real_sources(work):
    import _real_util as U
    q4km = REAL_CACHE / "gemma-3-270m-q4_k_m.gguf"
    if not q4km.is_file():
        sys.exit(f"{q4km} is missing: tests/real/run.sh fetches it (fetch_models.py)")
    r = qb("forward", "--model", q4km, "--text-file", REPO / "tests" / "real" / "text.txt",
           "--print-tokens")
    ids = [int(x) for x in r.stdout.strip().split(",")]
    imatrix = work / "gemma-builtin.imatrix.dat"
    yield Source("real", "Gemma 3 270M Q4_K_M (published)", q4km, [ids],
                 calib=["--calibration", "builtin", "--save-imatrix", imatrix],
                 calib_name="--calibration builtin")
    if "derived" not in GROUPS:
        return
    f32 = work / "gemma-f32.gguf"
    if not f32.exists():
        U.make_f32_gguf(q4km, f32)
    imat = ["--imatrix", imatrix] if imatrix.exists() and \
        os.environ.get("QB_RULES_DERIVED_IMATRIX", "1") == "1" else None
    ids = ids[:int(os.environ.get("QB_RULES_DERIVED_TOKENS", len(ids)))]
    imat_name = "--imatrix (Q4_K_M's builtin calibration)"
    yield Source("derived", "F32 GGUF (llama.cpp's dequantization)", f32, [ids], calib=imat,
                 calib_name=imat_name)
    for t in ("Q4_0", "Q8_0", "Q6_K", "IQ4_XS"):
        p = work / f"gemma-{t.lower()}.gguf"
        if not p.exists():
            U.make_llama_quant(f32, t, p)
        yield Source("derived", f"llama.cpp {t} (pure) of the F32 GGUF", p, [ids], calib=imat,
                     calib_name=imat_name)
    f32.unlink()
    hf = work / "gemma-hf-f32"
    if not hf.exists():
        qb("convert", "--source", q4km, "--output", hf, "--writer", "hf-dense", "--option",
           "dtype=f32", "--progress", "none")
    for kind in ("sym", "asym"):
        d = work / f"gemma-ct-int4-{kind}-g128"
        if not d.exists():
            U.make_ct(hf, hf, d, symmetric=kind == "sym")
        yield Source("derived", f"compressed-tensors int4 {kind} g128 (bf16 source)", d, [ids])
    shutil.rmtree(hf, ignore_errors=True)


def fixture_sources(work):
    import run as fidelity  # bench/fidelity/run.py
    rng = np.random.default_rng(27)
    seqs = [rng.integers(0, FIXTURE_IDS, FIXTURE_LEN).tolist() for _ in range(FIXTURE_SEQS)]
    d = work / "fixtures"
    d.mkdir(exist_ok=True)
    for label, src in fidelity.sources(d):
        yield Source("fixtures", "fixture " + label, src, seqs, other_groups=(32, 128),
                     calib=["--calibration", "builtin"], calib_name="--calibration builtin")


def generator_sources(work):
    """The heavy-tailed checkpoints of the project's own generator (tests/gen/gen_hf_dense.c,
    --heavy-tails 1: Student-t weights with about one input column in 128 x16; the fixture of
    docs/verify.md's model verdict is seed 5), seeds 1-10, bf16. The generator writes no
    tokenizer: the calibrated variant borrows the fidelity fixtures' (its ids are below 512)."""
    gen = BUILD / "tests" / "bin" / "qb-gen-hf-dense"
    rng = np.random.default_rng(27)
    seqs = [rng.integers(0, FIXTURE_IDS, FIXTURE_LEN).tolist() for _ in range(FIXTURE_SEQS)]
    tok = work / "fixtures" / "heavy-bf16"
    for seed in range(1, 11):
        d = work / f"gen-heavy-{seed}"
        if not d.exists():
            p = subprocess.run([str(gen), "--out", str(d), "--heavy-tails", "1", "--seed",
                                str(seed), "--dtype", "bf16"], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{gen}: {p.stderr}")
        calib = ["--calibration", "builtin", "--tokenizer", tok] \
            if (tok / "tokenizer.json").exists() else None
        yield Source("generator", f"generator heavy-tails seed {seed}", d, seqs,
                     other_groups=(32, 128), calib=calib,
                     calib_name="--calibration builtin (fixtures' tokenizer)")


# ---- one source -----------------------------------------------------------------------------

def measure_source(s, work, rows, later):
    log("source", s.name)
    ref = [forward(s.path, ids, work) for ids in s.seqs]

    def model_positions(model):
        got = [forward(model, ids, work) for ids in s.seqs]
        return concat([positions(r, x, ids) for r, x, ids in zip(ref, got, s.seqs)])

    def row(label, g, man, pp, base=None):
        r = {"group": s.group, "source": s.name, "variant": label, "group_size": g,
             "bits": 4.0 + 16.0 / g, "rules": rule_counts(man), "convert_s": man["_seconds"],
             **figures(pp)}
        if base is not None:
            r.update(paired(pp, base))
        rows.append(r)
        log("  ", label, "g%d" % g, {k: r[k] for k in r if k in (
            "kl_mean", "kl_p99", "top1", "ppl_ratio", "d_mean", "d_se", "vs_absmax", "rules")})

    out_d, out_a = work / "w4-default", work / "w4-absmax"
    man = convert(s.path, out_d, [])
    g0 = man["group_size"]
    if set(rule_counts(man)) == {"exact"}:
        # every linear a repack of the source's codes: no rule is applied
        man_a = convert(s.path, out_a, ["--group-size", g0, "--option", "quant_rule=absmax"])
        same = weights_sha(man_a) == weights_sha(man)
        rows.append({"group": s.group, "source": s.name,
                     "variant": "default = absmax (exact repack)" if same
                     else "EXACT REPACK, BUT absmax WROTE OTHER BYTES", "group_size": g0,
                     "bits": 4.0 + 16.0 / g0, "rules": rule_counts(man),
                     "convert_s": man["_seconds"], "exact_repack": True, "same_bytes": same})
        log("   exact repack; absmax output byte-identical:", same)
    else:
        for g in [g0] + [g for g in s.other_groups if g != g0]:
            if g != g0:
                man = convert(s.path, out_d, ["--group-size", g])
            man_a = convert(s.path, out_a, ["--group-size", g, "--option", "quant_rule=absmax"])
            base = model_positions(out_a)
            row("absmax", g, man_a, base)
            row("default" if g == g0 else "default rule", g, man, model_positions(out_d), base)
            if g == g0 and s.calib:
                later.append(lambda g=g, base=base, row=row, model_positions=model_positions:
                             calibrated(s, work, rows, g, base, row, model_positions))
    shutil.rmtree(out_d, ignore_errors=True)
    shutil.rmtree(out_a, ignore_errors=True)


def calibrated(s, work, rows, g, base, row, model_positions):
    """The calibrated conversion of source s at its default group g, against absmax (base)."""
    out = work / "w4-calibrated"
    log("source", s.name, "(calibrated)")
    t0 = time.time()
    p = qb("convert", "--source", s.path, "--output", out, "--overwrite", "--progress", "none",
           *s.calib, *EXTRA, ok=False)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["?"])[-1]
        rows.append({"group": s.group, "source": s.name, "variant": s.calib_name,
                     "group_size": g, "bits": 4.0 + 16.0 / g, "error": why})
        log("  ", s.calib_name, "refused:", why)
        return
    man = json.loads((out / "manifest.json").read_text())
    man["_seconds"] = time.time() - t0
    if man["group_size"] != g:
        sys.exit(f"{s.name}: the calibrated conversion chose group {man['group_size']}, the "
                 f"default {g}")
    row(s.calib_name, g, man, model_positions(out), base)
    shutil.rmtree(out, ignore_errors=True)


def fmt_rules(r):
    return ", ".join(f"{k} {v}" for k, v in sorted(r.items()))


def main():
    global GROUPS
    GROUPS = os.environ.get("QB_RULES_SOURCES", "real,derived,fixtures,generator").split(",")
    work = pathlib.Path(os.environ.get("QB_QUALITY_WORK") or tempfile.mkdtemp(prefix="qb-rules-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    t0 = time.time()
    gens = []
    if "real" in GROUPS:
        gens.append(real_sources(work))
    if "fixtures" in GROUPS:
        gens.append(fixture_sources(work))
    if "generator" in GROUPS:
        gens.append(generator_sources(work))
    for gen in gens:
        # the calibrated conversions come last: on Gemma the calibration pass is the longest
        # step of the bench. So the derived GGUFs get --imatrix variants only from the Gemma
        # importance an earlier run left in the same QB_QUALITY_WORK.
        later = []
        for s in gen:
            measure_source(s, work, rows, later)
        for f in later:
            f()
    order = {}
    for r in rows:
        order.setdefault(r["source"], len(order))
    rows.sort(key=lambda r: order[r["source"]])  # stable: each source's rows together
    log("total %.0f s" % (time.time() - t0))
    print("| source | variant | group | bits / linear weight | KL mean | KL p99 | top-1 | "
          "perplexity ratio | KL - absmax (2 SE) | vs absmax | rules (linears) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['source']} | {r['variant']} | {r['group_size']} | - | refused: "
                  f"{r['error']} |||||||")
            continue
        if r.get("exact_repack"):
            print(f"| {r['source']} | {r['variant']} | {r['group_size']} | {r['bits']:.3f} | "
                  f"- | - | - | - | 0 | tie | {fmt_rules(r['rules'])} |")
            continue
        d = "-" if "d_mean" not in r else f"{r['d_mean']:+.4f} ({2 * r['d_se']:.4f})"
        print(f"| {r['source']} | {r['variant']} | {r['group_size']} | {r['bits']:.3f} | "
              f"{r['kl_mean']:.4f} | {r['kl_p99']:.3f} | {r['top1']:.3f} | {r['ppl_ratio']:.3f} | "
              f"{d} | {r.get('vs_absmax', '-')} | {fmt_rules(r['rules'])} |")
    if os.environ.get("QB_QUALITY_JSON"):
        pathlib.Path(os.environ["QB_QUALITY_JSON"]).write_text(
            json.dumps({"build": str(BUILD), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
