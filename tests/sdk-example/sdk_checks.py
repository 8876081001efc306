#!/usr/bin/env python3
"""Output checks for tests/sdk-example/run.sh (standard library only).

  listed PLUGINS.json NAME...        every NAME listed exactly once and loaded
  same-tensor A B TENSOR             tensor TENSOR holds the same float32 values
                                     in A and B; each a .npy file, or a
                                     safetensors model directory (F32 tensors)
  same-json A B                      A and B hold equal JSON values
  manifest DIR SOURCE_DIR READER     DIR/manifest.json of the npy-writer: facts
                                     from SOURCE_DIR/config.json, one entry per
                                     .npy file, READER named as the source's

Exit 0 when the check holds; 1 with a message otherwise.
"""
import ast
import json
import os
import struct
import sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def listed(path, names):
    with open(path) as f:
        doc = json.load(f)
    plugins = doc.get("plugins")
    if not isinstance(plugins, list):
        fail(f"{path}: no plugins array")
    for name in names:
        hits = [p for p in plugins if p.get("name") == name]
        if len(hits) != 1:
            fail(f"{path}: plugin {name} listed {len(hits)} times")
        status = str(hits[0].get("status", "")).lower()
        if status not in ("loaded", "ok"):
            fail(f"{path}: plugin {name} has status {status!r}: {hits[0].get('error')}")


def read_npy(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:6] != b"\x93NUMPY" or b[6] != 1:
        fail(f"{path}: not a .npy 1.0 file")
    hl = struct.unpack("<H", b[8:10])[0]
    if (10 + hl) % 64:
        fail(f"{path}: data not 64-byte aligned")
    hdr = ast.literal_eval(b[10:10 + hl].decode("latin1"))
    if hdr.get("descr") != "<f4" or hdr.get("fortran_order") is not False:
        fail(f"{path}: header {hdr}")
    n = 1
    for d in hdr["shape"]:
        n *= d
    data = b[10 + hl:]
    if len(data) != 4 * n:
        fail(f"{path}: {len(data)} data bytes for shape {hdr['shape']}")
    return tuple(hdr["shape"]), data


def read_st(model_dir, tensor):
    for name in sorted(os.listdir(model_dir)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(model_dir, name), "rb") as f:
            b = f.read()
        n = struct.unpack("<Q", b[:8])[0]
        head = json.loads(b[8:8 + n])
        if tensor in head:
            t = head[tensor]
            if t["dtype"] != "F32":
                fail(f"{model_dir}/{name}: {tensor} is {t['dtype']}, not F32")
            lo, hi = t["data_offsets"]
            return tuple(t["shape"]), b[8 + n + lo:8 + n + hi]
    fail(f"{model_dir}: no tensor {tensor}")


def load(path, tensor):
    return read_npy(path) if path.endswith(".npy") else read_st(path, tensor)


def same_tensor(a, b, tensor):
    sa, da = load(a, tensor)
    sb, db = load(b, tensor)
    if sa != sb:
        fail(f"{tensor}: shape {sa} in {a}, {sb} in {b}")
    if da != db:
        fail(f"{tensor}: values differ between {a} and {b}")


def manifest(out_dir, src_dir, reader):
    with open(os.path.join(out_dir, "manifest.json")) as f:
        m = json.load(f)
    with open(os.path.join(src_dir, "config.json")) as f:
        cfg = json.load(f)
    facts = m.get("facts", {})
    if facts.get("n_layers") != cfg["num_hidden_layers"]:
        fail(f"manifest n_layers {facts.get('n_layers')}, config {cfg['num_hidden_layers']}")
    if facts.get("hidden_size") != cfg["hidden_size"]:
        fail(f"manifest hidden_size {facts.get('hidden_size')}, config {cfg['hidden_size']}")
    if m.get("writer", {}).get("name") != "npy-writer":
        fail(f"manifest writer {m.get('writer')}")
    if m.get("source", {}).get("reader") != reader:
        fail(f"manifest source reader {m.get('source')}, want {reader}")
    files = sorted(x for x in os.listdir(out_dir) if x.endswith(".npy"))
    entries = m.get("tensors", [])
    if sorted(e["file"] for e in entries) != files:
        fail("manifest tensors do not match the .npy files")
    for e in entries:
        if e["file"] != e["name"] + ".npy" or e["dtype"] != "<f4":
            fail(f"manifest entry {e}")
        shape, _ = read_npy(os.path.join(out_dir, e["file"]))
        if list(shape) != e["shape"]:
            fail(f"{e['file']}: shape {shape}, manifest {e['shape']}")
        if os.path.getsize(os.path.join(out_dir, e["file"])) != e["bytes"]:
            fail(f"{e['file']}: size differs from the manifest's bytes")
    with open(os.path.join(out_dir, "config.json")) as f:
        out_cfg = json.load(f)
    if out_cfg.get("model_type") != cfg["model_type"] or out_cfg.get("torch_dtype") != "float32":
        fail(f"output config.json: model_type {out_cfg.get('model_type')}, torch_dtype {out_cfg.get('torch_dtype')}")
    if "quantization_config" in out_cfg:
        fail("output config.json keeps quantization_config")


def same_json(a, b):
    with open(a) as fa, open(b) as fb:
        if json.load(fa) != json.load(fb):
            fail(f"{a} and {b} differ")


def main(argv):
    if len(argv) >= 3 and argv[1] == "listed":
        listed(argv[2], argv[3:])
    elif len(argv) == 5 and argv[1] == "same-tensor":
        same_tensor(argv[2], argv[3], argv[4])
    elif len(argv) == 4 and argv[1] == "same-json":
        same_json(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == "manifest":
        manifest(argv[2], argv[3], argv[4])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
