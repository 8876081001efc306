#!/usr/bin/env python3
"""`quantbridge inspect` sizes, --raw, --metadata and split-GGUF directories
(issue 17 points 3 and 4), against ground truth the test computes itself:

  - parameters: the product of each tensor's shape;
  - GGUF Q4_0 bytes: ggml's block size, 18 bytes per 32 weights
    (docs/formats/gguf.md "ggml type table"), so exactly 4.5 bits per weight;
  - stored bytes of a safetensors checkpoint: the file's data section
    (file size - 8 - header length), read here from the file;
  - GGUF metadata: the generator's arguments (2 layers);
  - GPTQ stored tensors: qweight of K x N 4-bit codes holds K*N/2 bytes.

    inspect_cli.py QUANTBRIDGE GEN_BIN_DIR WORK_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

QB, GEN, WORK = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, rc=0):
    p = subprocess.run([QB, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == rc, f"{' '.join(args)}: exit {p.returncode} (want {rc}): {p.stderr.strip()}")
    return p


def inspect_json(*args):
    p = run("inspect", "--json", *args)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def st_data_bytes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
    return os.path.getsize(path) - 8 - n


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
gguf = os.path.join(WORK, "m.gguf")
subprocess.run([GEN + "/qb-gen-gguf", "llama", "q4_0", gguf], check=True, stdout=subprocess.DEVNULL)
split = os.path.join(WORK, "split")
os.makedirs(split)
subprocess.run([GEN + "/qb-gen-gguf", "llama", "q4_0", split + "/m", "2"], check=True,
               stdout=subprocess.DEVNULL)
gptq = os.path.join(WORK, "gptq")
subprocess.run([GEN + "/qb-gen-quant", gptq, "gptq-4-g128-sym-v1-actorder"], check=True,
               stdout=subprocess.DEVNULL)

# ---- sizes: parameters, bytes, bits per weight, totals per encoding ----
j = inspect_json(gguf)
total_p = total_b = 0
by_enc = {}
for t in j.get("tensors", []):
    p = prod(t["shape"])
    check(t["parameters"] == p, f"{t['name']}: parameters {t['parameters']} != {p}")
    if t["encoding"] == "gguf Q4_0":
        check(t["bytes"] == p // 32 * 18, f"{t['name']}: Q4_0 bytes {t['bytes']} != {p // 32 * 18}")
        check(abs(t["bits_per_weight"] - 4.5) < 1e-12, f"{t['name']}: bpw {t['bits_per_weight']}")
    elif t["encoding"] == "gguf F32":
        check(t["bytes"] == 4 * p and t["bits_per_weight"] == 32, f"{t['name']}: F32 size")
    total_p += p
    total_b += t["bytes"]
    e = by_enc.setdefault(t["encoding"], [0, 0, 0])
    e[0] += 1
    e[1] += p
    e[2] += t["bytes"]
check(j.get("tensors") and j["parameters"] == total_p, f"total parameters {j.get('parameters')} != {total_p}")
check(j.get("bytes") == total_b, f"total bytes {j.get('bytes')} != {total_b}")
check(abs(j.get("bits_per_weight", 0) - total_b * 8 / total_p) < 1e-9, "total bits_per_weight")
encs = {e["encoding"]: e for e in j.get("encodings", [])}
check(set(encs) == set(by_enc), f"encodings {sorted(encs)} != {sorted(by_enc)}")
for name, (n, p, b) in by_enc.items():
    e = encs.get(name, {})
    check((e.get("tensors"), e.get("parameters"), e.get("bytes")) == (n, p, b), f"encoding {name} totals {e}")

# the text view: the same totals, and [grid] explained in a legend
txt = run("inspect", gguf).stdout
check(f"total: {total_p} parameters" in txt, "text total line")
check("legend:" in txt and "[grid]  the reader offers" in txt, "text legend explains [grid]")
check("BPW" in txt and " 4.50  [grid]" in txt, "text per-tensor bpw and [grid]")

# GPTQ: bytes include qzeros, scales and g_idx; their sum is the file's data section
j = inspect_json(gptq)
check(j.get("bytes") == st_data_bytes(gptq + "/model.safetensors"),
      f"gptq bytes {j.get('bytes')} != data section {st_data_bytes(gptq + '/model.safetensors')}")
down = [t for t in j.get("tensors", []) if t["name"] == "model.layers.0.mlp.down_proj.weight"]
check(len(down) == 1 and down[0]["bits_per_weight"] > 4.0, "gptq down_proj: more than 4 bits per weight")

# ---- --raw: the tensors as stored ----
j = inspect_json("--raw", gptq)
raw = {t["name"]: t for t in j.get("raw_tensors", [])}
check("tensors" not in j, "--raw replaces the canonical tensors")
check(sum(t["bytes"] for t in raw.values()) == st_data_bytes(gptq + "/model.safetensors"), "--raw bytes sum")
m = "model.layers.0.mlp.down_proj"
for part in ("qweight", "qzeros", "scales", "g_idx"):
    t = raw.get(f"{m}.{part}")
    check(t is not None and t["canonical"] == m + ".weight", f"--raw {m}.{part} feeds {m}.weight: {t}")
qw = raw.get(m + ".qweight", {"shape": [0, 0], "bytes": -1, "type": ""})
k, n = qw["shape"][0] * 8, qw["shape"][1]  # GPTQ qweight: [K / (32 / 4), N] int32
check(qw["type"] == "I32" and qw["bytes"] == k * n // 2, f"--raw qweight {qw}")
check(raw.get(m + ".g_idx", {}).get("shape") == [k], "--raw g_idx has one entry per input column")
j = inspect_json("--raw", gguf)
rg = {t["name"]: t for t in j.get("raw_tensors", [])}
q = rg.get("blk.0.attn_q.weight", {})
check(q.get("type") == "Q4_0" and q.get("canonical") == "model.layers.0.self_attn.q_proj.weight",
      f"--raw gguf attn_q {q}")
check(q.get("bytes") == prod(q.get("shape", [0])) // 32 * 18, "--raw gguf Q4_0 bytes")

# ---- --metadata: GGUF key/values with types, config fields ----
j = inspect_json("--metadata", gguf)
meta = {e["key"]: e for e in j.get("metadata", [])}
check(meta.get("llama.block_count", {}).get("type") == "u32" and meta["llama.block_count"]["value"] == "2",
      f"block_count {meta.get('llama.block_count')}")
check(meta.get("general.architecture", {}).get("value") == '"llama"', "general.architecture")
tok = meta.get("tokenizer.ggml.tokens", {})
check(tok.get("type") == "array[string]" and tok.get("value", "").endswith(", ..."), f"tokens summary {tok}")
check(j.get("config", {}).get("num_hidden_layers") == 2, "config.num_hidden_layers")
txt = run("inspect", "--metadata", gguf).stdout
check("llama.block_count" in txt and "u32" in txt and "config.json:" in txt, "text metadata sections")
j = inspect_json("--metadata", gptq)
check("metadata" not in j and j.get("config", {}).get("quantization_config", {}).get("bits") == 4,
      "gptq --metadata: config fields, no reader metadata")

# ---- a directory of split GGUF files is one model ----
j = inspect_json(split)
check(j.get("format") == "gguf", f"split dir format {j.get('format')}")
one = inspect_json(gguf)
check(j.get("parameters") == one.get("parameters") and len(j.get("tensors", [])) == len(one.get("tensors", [1])),
      "split dir = the same model as one file")

# ---- a reader without the stored view: --raw refused, nothing printed ----
out = os.path.join(WORK, "w4")
run("convert", "--source", gguf, "--output", out)
p = run("inspect", "--raw", out, rc=1)
check(p.stdout == "" and "sm86-w4a16" in p.stderr and "stored tensors" in p.stderr,
      f"--raw without the view: {p.stderr.strip()}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("inspect_cli: all checks passed")
