"""Real-model table (docs/real-models.md, "Benchmark"): the published Gemma 3 270M GGUF Q4_K_M
and the sources the real-model tier derives from it (llama.cpp's F32, Q4_0, Q8_0, Q6_K, IQ4_XS;
compressed-tensors' int4 g128 symmetric and asymmetric), each converted with the default options
to hf-dense and to W4A16 (the default writer) under /usr/bin/time -v, then `quantbridge verify
--json` with its defaults (the tensor rules, the model check on the built-in text, the model
verdict where the build has one).

    python bench/real/run.py CACHE_DIR WORK_DIR     (bench/real/run.sh sets up the environment)

Columns: the group size and how many tensors verify found bit-equal to the source (`exact`: of
all compared; the linears the W4A16 manifest declares exact), the model check's KL mean
(converted vs source, nats) and perplexity ratio (converted / source) on the built-in text, the
model verdict, the conversion's wall time and peak RSS. Markdown on stdout, progress on stderr;
WORK_DIR/results.json keeps the rows. CACHE_DIR holds the published checkpoint (the tier's
cache; fetched there when missing); the derived sources stay in WORK_DIR between runs, each
output is deleted once verified.
"""
import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("QB_BUILD_DIR", REPO / "build")).resolve()
QB = BUILD / "bin" / "quantbridge"
sys.path.insert(0, str(REPO / "tests" / "support" / "py"))
sys.path.insert(0, str(REPO / "tests" / "real"))

import _real_util as U  # noqa: E402
import fetch_models  # noqa: E402

LLAMA = ["Q4_0", "Q8_0", "Q6_K", "IQ4_XS"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(args):
    """Runs quantbridge under /usr/bin/time -v; (wall seconds, peak RSS MB)."""
    p = subprocess.run(["/usr/bin/time", "-v", str(QB), *map(str, args)], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit(f"quantbridge {' '.join(map(str, args))} exited {p.returncode}:\n"
                         f"{p.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    secs = 0.0
    for part in wall.split(":"):
        secs = secs * 60 + float(part)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return secs, rss / 1024.0


def sources(cache: pathlib.Path, work: pathlib.Path) -> list:
    """(label, path) of every source, made on first use."""
    with contextlib.redirect_stdout(sys.stderr):
        fetch_models.main(cache)
    pub = cache / "gemma-3-270m-q4_k_m.gguf"
    out = [("published Q4_K_M", pub)]
    f32 = work / "gemma-f32.gguf"
    if not f32.exists():
        log("making the F32 GGUF (llama.cpp)")
        U.make_f32_gguf(pub, f32)
    out.append(("llama.cpp F32", f32))
    for t in LLAMA:
        p = work / f"gemma-{t.lower()}.gguf"
        if not p.exists():
            log(f"making {t} (llama.cpp)")
            U.make_llama_quant(f32, t, p)
        out.append((f"llama.cpp {t}", p))
    hf = work / "gemma-hf-f32"
    if not hf.exists():
        subprocess.run([str(QB), "convert", "--source", pub, "--output", hf, "--writer",
                        "hf-dense", "--option", "dtype=f32", "-q"], check=True)
    for kind in ("sym", "asym"):
        p = work / f"gemma-ct-int4-{kind}-g128"
        if not p.exists():
            log(f"making compressed-tensors int4 g128 {kind}")
            U.make_ct(hf, hf, p, symmetric=kind == "sym")
        out.append((f"compressed-tensors int4 g128 {kind}", p))
    return out


def row(label, src, writer, out_dir):
    args = ["convert", "--source", src, "--output", out_dir, "-q"]
    if writer == "hf-dense":
        args += ["--writer", "hf-dense"]
    if out_dir.exists():
        shutil.rmtree(out_dir)
    log(f"{label} -> {writer}")
    wall, rss = timed(args)
    p = subprocess.run([str(QB), "verify", "--source", src, "--converted", out_dir, "--json"],
                       capture_output=True, text=True)
    js = json.loads(p.stdout) if p.stdout.strip() else {}
    mc = js.get("model_check") or {}
    mv = js.get("model_verdict") or {}
    group = "-"
    man_exact = None
    if writer == "sm86-w4a16":
        man = json.loads((out_dir / "manifest.json").read_text())
        group = man["group_size"]
        lin = [v for k, v in man["tensors"].items() if k.startswith("layer_")]
        man_exact = f"{sum(v['exact'] for v in lin)}/{len(lin)}"
    return {"source": label, "writer": writer, "group": group,
            "exact": f"{js.get('n_exact', '?')}/{js.get('n_compared', '?')}",
            "linears_exact": man_exact, "verify_exit": p.returncode,
            "kl_mean": mc.get("kl_mean"), "ppl_ratio": mc.get("perplexity_ratio"),
            "tokens": len(mc.get("token_ids", [])), "token_source": mc.get("token_source"),
            "verdict": mv.get("verdict"), "wall_s": wall, "rss_mb": rss}


def fnum(v, f):
    return "-" if v is None else format(v, f)


def main(cache: pathlib.Path, work: pathlib.Path):
    (work / "out").mkdir(parents=True, exist_ok=True)
    rows = []
    load0 = os.getloadavg()
    t0 = time.time()
    for label, src in sources(cache, work):
        for writer in ("hf-dense", "sm86-w4a16"):
            slug = re.sub(r"[^a-z0-9]+", "-", f"{label} {writer}".lower()).strip("-")
            rows.append(row(label, src, writer, work / "out" / slug))
            shutil.rmtree(work / "out" / slug)
    (work / "results.json").write_text(json.dumps(rows, indent=1))
    load1 = os.getloadavg()
    print("| source | writer | group | bit-equal tensors (linears declared exact) | KL mean | "
          "perplexity ratio | verdict | verify | wall s | peak RSS MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ex = r["exact"] + (f" ({r['linears_exact']})" if r["linears_exact"] else "")
        print(f"| {r['source']} | {r['writer']} | {r['group']} | {ex} | {fnum(r['kl_mean'], '.3g')} | "
              f"{fnum(r['ppl_ratio'], '.4f')} | {r['verdict'] or '-'} | "
              f"{'pass' if r['verify_exit'] == 0 else 'exit %d' % r['verify_exit']} | "
              f"{r['wall_s']:.2f} | {r['rss_mb']:.0f} |")
    toks = sorted({(r["token_source"], r["tokens"]) for r in rows})
    print(f"\nModel check tokens: {toks}; load average {load0[0]:.1f} at the start, "
          f"{load1[0]:.1f} at the end; {time.time() - t0:.0f} s in all.")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: run.py CACHE_DIR WORK_DIR")
    main(pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve())
