#!/usr/bin/env python3
"""convert --dry-run, --group-size auto, --json and progress, end to end.

Ground truth, independent of the plan: the manifest the writer records
after a real conversion (its `exact` flags come from a bit-for-bit check
of every written block, and rel_rmse from the decoded weights), the
generators' own group sizes (GGUF Q4_0 blocks of 32, ggml's QK4_0; GPTQ
fixtures written at g32 / g128), and the files on disk.

Usage: test_plan.py GEN_BIN_DIR CASE   (QB_TEST_BIN names quantbridge)
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile

QB = os.environ["QB_TEST_BIN"]
GEN = sys.argv[1]
CASE = sys.argv[2]
TMP = tempfile.mkdtemp(prefix="qb-plan-", dir=os.environ.get("QB_TEST_TMPDIR") or None)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args, ok=True):
    r = subprocess.run([QB] + args, capture_output=True, text=True)
    if ok and r.returncode != 0:
        fail("%s -> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def gen(kind):
    if kind in ("q4_k", "q6_k"):
        # ggml type ids 12 / 14 (ggml.h enum ggml_type), quantized by the
        # generator from float weights
        path = os.path.join(TMP, kind + ".gguf")
        subprocess.run([os.path.join(GEN, "qb-gen-gguf"), "llama", "12" if kind == "q4_k" else "14",
                        path], check=True)
    elif kind == "q4_0":
        path = os.path.join(TMP, "q40.gguf")
        subprocess.run([os.path.join(GEN, "qb-gen-gguf"), "llama", "q4_0", path], check=True)
    elif kind == "bf16":
        path = os.path.join(TMP, "bf16")
        subprocess.run([os.path.join(GEN, "qb-gen-hf-dense"), "--out", path, "--dtype", "bf16",
                        "--hidden", "256", "--intermediate", "512"], check=True)
    else:
        path = os.path.join(TMP, kind)
        subprocess.run([os.path.join(GEN, "qb-gen-quant"), path, kind], check=True)
    return path


def tree(path):
    """Every entry under the parent of path (a dry run must add none)."""
    out = set()
    for d, dirs, files in os.walk(os.path.dirname(path)):
        for n in dirs + files:
            out.add(os.path.join(d, n))
    return out


def dry_run(src, extra=()):
    out = os.path.join(TMP, "never")
    before = tree(out)
    r = run(["convert", "--source", src, "--output", out, "--dry-run", "--json"] + list(extra))
    if tree(out) != before or os.path.exists(out):
        fail("dry run wrote something: %s" % sorted(tree(out) - before))
    try:
        return json.loads(r.stdout), r.stderr
    except ValueError:
        fail("dry-run stdout is not JSON: %r" % r.stdout[:400])


def convert(src, name, extra=()):
    out = os.path.join(TMP, name)
    shutil.rmtree(out, ignore_errors=True)
    r = run(["convert", "--source", src, "--output", out, "--progress", "none"] + list(extra))
    with open(os.path.join(out, "manifest.json")) as f:
        return json.load(f), r


def check_against_manifest(plan, man, want_gs):
    """Every planned linear's action equals what the manifest records."""
    if man["group_size"] != want_gs:
        fail("manifest group_size %s, expected %s" % (man["group_size"], want_gs))
    if plan["settings"]["group_size"]["value"] != str(want_gs):
        fail("plan group size %s, expected %s" % (plan["settings"]["group_size"], want_gs))
    linears = [t for t in plan["tensors"] if t["action"] in ("exact", "requant")]
    if len(linears) != len(man["tensors"]):
        fail("plan has %d linears, manifest %d" % (len(linears), len(man["tensors"])))
    for t in linears:
        m = man["tensors"].get(t["target"])
        if m is None:
            fail("plan target %s not in the manifest" % t["target"])
        if (t["action"] == "exact") != m["exact"]:
            fail("%s: plan says %s (%s), manifest exact=%s" % (t["name"], t["action"], t["reason"],
                                                               m["exact"]))
        if m["exact"] and m["rel_rmse"] != 0.0:
            fail("%s: exact with rel_rmse %g" % (t["name"], m["rel_rmse"]))
        if t["group_size"] != want_gs:
            fail("%s: plan group size %s" % (t["name"], t["group_size"]))
        if not t["reason"] or not t["source_encoding"]:
            fail("%s: empty reason or encoding" % t["name"])
    names = [t["name"] for t in plan["tensors"]]
    tot = plan["totals"]
    if tot["tensors"] != len(set(names)):
        fail("totals.tensors %d for %d names" % (tot["tensors"], len(set(names))))
    if tot["exact"] != sum(1 for t in linears if t["action"] == "exact"):
        fail("totals.exact disagrees with the tensors")
    if tot["bytes_out"] != sum(t["bytes_out"] for t in plan["tensors"]):
        fail("totals.bytes_out is not the sum of the tensors'")
    return sum(1 for t in linears if t["action"] == "exact"), len(linears)


def case_gguf_q4_0():
    src = gen("q4_0")
    plan, _ = dry_run(src)
    man, _ = convert(src, "q40-auto")
    n_exact, n_lin = check_against_manifest(plan, man, 32)
    if n_exact != n_lin or n_lin == 0:
        fail("Q4_0 at auto: %d of %d linears exact, expected all" % (n_exact, n_lin))
    if man["group_size_choice"]["requested"] != "auto" or "32" not in man["group_size_choice"]["reason"]:
        fail("manifest group_size_choice: %s" % man["group_size_choice"])
    if abs(plan["totals"]["exact_share"] - 1.0) > 0:
        fail("exact share %s" % plan["totals"]["exact_share"])
    if plan["totals"]["bytes_in"] != os.path.getsize(src):
        fail("bytes_in %s, file has %d" % (plan["totals"]["bytes_in"], os.path.getsize(src)))
    # explicit coarser group: warned, alternative named, all requantized
    plan128, err = dry_run(src, ["--group-size", "128"])
    if not re.search(r"group_size 128 requantizes \d+ linear\(s\) that group_size 32 keeps exact", err):
        fail("no warning naming group size 32: %r" % err)
    man128, _ = convert(src, "q40-128", ["--group-size", "128"])
    n_exact, n_lin = check_against_manifest(plan128, man128, 128)
    if n_exact != 0:
        fail("Q4_0 at 128: %d exact" % n_exact)
    # the text form carries the same actions
    r = run(["convert", "--source", src, "--dry-run"])
    if len(re.findall(r"^exact ", r.stdout, re.M)) != n_lin or "totals:" not in r.stdout:
        fail("text plan: %r" % r.stdout[:600])


def case_gguf_kquant(kind, declared):
    """A K-quant source requantizes every linear; auto keeps its sub-block
    resolution (ggml-common.h: block_q4_K has 8 scales per 256, one per 32;
    block_q6_K 16, one per 16, rounded up to the kernels' multiple of 32),
    as the reader declares it in its metadata view."""
    src = gen(kind)
    meta = run(["inspect", "--metadata", src]).stdout
    key = "quantbridge.scale_block:model.layers.0.self_attn.q_proj.weight"
    if not re.search(re.escape(key) + r"\s.*\b%d\b" % declared, meta):
        fail("%s: inspect --metadata lacks %s = %d:\n%s" % (kind, key, declared, meta[-800:]))
    plan, _ = dry_run(src)
    why = plan["settings"]["group_size"]["reason"]
    if "declared by its reader" not in why or (": %d" % declared) not in why:
        fail("%s: auto's reason does not say why 32: %s" % (kind, why))
    if declared != 32 and "rounded up" not in why:
        fail("%s: reason does not say %d was rounded up: %s" % (kind, declared, why))
    man, _ = convert(src, kind + "-auto")
    n_exact, n_lin = check_against_manifest(plan, man, 32)
    if n_exact != 0 or n_lin == 0:
        fail("%s: %d of %d linears exact, expected none (a K-quant grid is not int4)" %
             (kind, n_exact, n_lin))
    if man["group_size_choice"]["reason"] != why:
        fail("manifest reason %r differs from the plan's %r" % (man["group_size_choice"], why))
    # an explicit size is kept, the declaration does not override it
    plan128, _ = dry_run(src, ["--group-size", "128"])
    if plan128["settings"]["group_size"]["value"] != "128":
        fail("%s: explicit 128 became %s" % (kind, plan128["settings"]["group_size"]))


def case_gptq_g32_actorder():
    src = gen("gptq-4-g32-sym-v1-actorder")
    plan, err = dry_run(src)
    man, _ = convert(src, "ao-auto")
    n_exact, n_lin = check_against_manifest(plan, man, 128)
    if n_exact != 0:
        fail("act-order without permute: %d exact" % n_exact)
    if "act_order=permute" not in err or "act_order=permute" not in plan["settings"]["group_size"]["reason"]:
        fail("act_order=permute not suggested: %r / %s" % (err, plan["settings"]))
    if not all("act_order=permute with group size 32" in t["reason"] for t in plan["tensors"]
               if t["action"] == "requant"):
        fail("a requantized act-order linear's reason lacks the suggestion")
    ext = ["--option", "act_order=permute"]
    plan_p, _ = dry_run(src, ext)
    man_p, _ = convert(src, "ao-permute", ext)
    n_exact, n_lin = check_against_manifest(plan_p, man_p, 32)
    if n_exact != n_lin:
        fail("act-order with permute at auto: %d of %d exact" % (n_exact, n_lin))


def case_gptq_g32():
    src = gen("gptq-4-g32-sym-v1-sharded")
    plan, _ = dry_run(src)
    man, _ = convert(src, "g32-auto")
    n_exact, n_lin = check_against_manifest(plan, man, 32)
    if n_exact != n_lin:
        fail("GPTQ g32 at auto: %d of %d exact" % (n_exact, n_lin))


def case_bf16():
    src = gen("bf16")
    plan, _ = dry_run(src)
    man, _ = convert(src, "bf16-auto")
    n_exact, n_lin = check_against_manifest(plan, man, 128)
    if n_exact != 0 or n_lin == 0:
        fail("bf16: %d of %d exact" % (n_exact, n_lin))
    if plan["totals"]["exact_share"] != 0:
        fail("bf16 exact share %s" % plan["totals"]["exact_share"])
    conv = [t for t in plan["tensors"] if t["action"] == "convert"]
    if not conv or any(t["group_size"] is not None for t in conv):
        fail("bf16 dense tensors: %s" % conv[:2])


def case_json_summary():
    src = gen("q4_0")
    out = os.path.join(TMP, "json-out")
    r = run(["convert", "--source", src, "--output", out, "--json", "--verify"])
    try:
        j = json.loads(r.stdout)
    except ValueError:
        fail("stdout is not one JSON document: %r" % r.stdout[:400])
    man = json.load(open(os.path.join(out, "manifest.json")))
    files = [n for n in os.listdir(out)]
    if j["output"] != out or j["tensors"]["total"] != 21:
        fail("summary: %s" % j)
    if j["tensors"]["exact"] != sum(1 for t in man["tensors"].values() if t["exact"]):
        fail("summary exact %d, manifest says otherwise" % j["tensors"]["exact"])
    if j["files"] != len(files):
        fail("summary files %d, directory has %d" % (j["files"], len(files)))
    if j["bytes_out"] != sum(os.path.getsize(os.path.join(out, n)) for n in files):
        fail("summary bytes_out %d is not the directory's size" % j["bytes_out"])
    if not (j["seconds"] > 0 and j["peak_rss_bytes"] > 1 << 20):
        fail("seconds/peak RSS: %s %s" % (j["seconds"], j["peak_rss_bytes"]))
    if j["verify"] is None or j["verify"]["passed"] is not True:
        fail("verify result: %s" % j["verify"])
    if "quantbridge: wrote" not in r.stderr:
        fail("messages are not on stderr: %r" % r.stderr)


def case_progress_plain():
    src = gen("q4_0")
    out = os.path.join(TMP, "plain-out")
    r = run(["convert", "--source", src, "--output", out, "--progress", "plain"])
    lines = [l for l in r.stderr.splitlines() if re.match(r"quantbridge: \[\d+/21\]", l)]
    if len(lines) != 21:
        fail("plain progress: %d lines\n%s" % (len(lines), r.stderr))
    pct = [float(re.search(r"\] ([\d.]+)%", l).group(1)) for l in lines]
    if pct != sorted(pct) or pct[-1] != 100.0:
        fail("plain percent not rising to 100: %s" % pct)
    for l in lines:
        if not re.search(r"MB/s, [\d.]+ M weights/s, elapsed [\d.:s]+, ETA ", l):
            fail("plain line lacks rate/elapsed/ETA: %s" % l)
    if "\r" in r.stderr or "\033[K" in r.stderr:
        fail("plain mode drew terminal controls")
    if not re.search(r"tensors: \d+ exact, \d+ requantized", r.stdout) or "peak memory" not in r.stdout:
        fail("summary lines: %r" % r.stdout)
    shutil.rmtree(out)
    v = run(["convert", "--source", src, "--output", out, "--progress", "plain", "--verify"])
    vl = re.findall(r"^quantbridge: verify: tensors (\d+)/(\d+) \((\d+)%\)$", v.stderr, re.M)
    if len(vl) < 2 or vl[-1][0] != vl[-1][1] or vl[-1][2] != "100":
        fail("verify progress lines: %s\n%s" % (vl, v.stderr))
    shutil.rmtree(out)
    q = run(["convert", "--source", src, "--output", out, "-q"])
    if q.stdout or q.stderr:
        fail("-q printed: %r %r" % (q.stdout, q.stderr))


def case_progress_tty():
    src = gen("q4_0")
    out = os.path.join(TMP, "tty-out")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(QB, [QB, "convert", "--source", src, "--output", out])
    data = b""
    while True:
        try:
            rl, _, _ = select.select([fd], [], [], 60)
            if not rl:
                break
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    _, status = os.waitpid(pid, 0)
    text = data.decode("utf-8", "replace")
    if os.WEXITSTATUS(status) != 0:
        fail("tty convert failed: %r" % text)
    frames = re.findall(r"\r\033\[K\s*([\d.]+)% \[(\d+)/21\] [^,]+, [\d.]+ MB/s, [\d.]+ M weights/s, "
                        r"[\d.:s]+, ETA [\d.:s?]+", text)
    if len(frames) != 21:
        fail("tty frames: %d\n%r" % (len(frames), text[:800]))
    if [int(f[1]) for f in frames] != list(range(1, 22)) or float(frames[-1][0]) != 100.0:
        fail("tty frames out of order: %s" % frames)
    # every frame fits the terminal (a pty without a size counts as 80 columns)
    for seg in text.split("\r\033[K")[1:-1]:
        if len(seg) >= 80:
            fail("frame wider than the terminal: %r" % seg)
    # one updating line: no newline between frames, the line erased before the summary
    body = text[text.index("\r\033[K"):text.rindex("\r\033[K") + 4]
    if "\n" in body.replace("\r\n", ""):
        fail("a newline inside the progress line: %r" % body[:300])
    if "quantbridge: wrote" not in text[text.rindex("\r\033[K"):]:
        fail("summary not after the erased line")


CASES = {
    "gguf_q4_0": case_gguf_q4_0,
    "gguf_q4_k": lambda: case_gguf_kquant("q4_k", 32),
    "gguf_q6_k": lambda: case_gguf_kquant("q6_k", 16),
    "gptq_g32_actorder": case_gptq_g32_actorder,
    "gptq_g32": case_gptq_g32,
    "bf16": case_bf16,
    "json_summary": case_json_summary,
    "progress_plain": case_progress_plain,
    "progress_tty": case_progress_tty,
}

try:
    CASES[CASE]()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
print("ok " + CASE)
