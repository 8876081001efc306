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
  int8-model DIR                     writes the example-int8 checkpoint the
                                     int8-example reader (sdk/examples/int8-reader)
                                     reads: I8 codes with F32 row scales, F32 rest
  int8-same DIR OUT                  every tensor of the int8 checkpoint DIR is in
                                     the F32 model OUT with the value (float)q * scale
                                     (rounded to float32 once), or its own

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


INT8_CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8,
               "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
               "num_key_value_heads": 2, "vocab_size": 16, "rms_norm_eps": 1e-05,
               "tie_word_embeddings": False,
               "quantization_config": {"quant_method": "example-int8"}}
INT8_LINEARS = {"model.layers.0.self_attn.q_proj.weight": (8, 8),
                "model.layers.0.mlp.down_proj.weight": (8, 16)}
INT8_DENSE = {"model.embed_tokens.weight": (16, 8), "model.norm.weight": (8,),
              "lm_head.weight": (16, 8)}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def int8_tensors():
    """name -> (dtype, shape, values), deterministic."""
    out = {}
    for i, (name, (n, k)) in enumerate(sorted(INT8_LINEARS.items())):
        out[name] = ("I8", [n, k], [((r * 31 + c * 7 + i) % 255) - 127 for r in range(n)
                                    for c in range(k)])
        out[name + "_scale"] = ("F32", [n], [f32(0.001 * (r + 1) + 0.0003 * i) for r in range(n)])
    for i, (name, shape) in enumerate(sorted(INT8_DENSE.items())):
        cnt = 1
        for d in shape:
            cnt *= d
        out[name] = ("F32", list(shape), [f32(((j * 13 + i) % 97 - 48) / 64.0) for j in range(cnt)])
    return out


def int8_model(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(INT8_CONFIG, f, indent=1)
    head, data = {}, b""
    for name, (dt, shape, vals) in sorted(int8_tensors().items()):
        raw = struct.pack(f"<{len(vals)}b" if dt == "I8" else f"<{len(vals)}f", *vals)
        head[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def int8_same(d, out):
    t = int8_tensors()
    for name in list(INT8_LINEARS) + list(INT8_DENSE):
        dt, shape, vals = t[name]
        if dt == "I8":
            k = shape[1]
            scales = t[name + "_scale"][2]
            want = [f32(q * scales[j // k]) for j, q in enumerate(vals)]
        else:
            want = vals
        got_shape, raw = read_st(out, name)
        if list(got_shape) != shape:
            fail(f"{name}: shape {got_shape}, want {shape}")
        got = struct.unpack(f"<{len(raw) // 4}f", raw)
        if list(got) != want:
            fail(f"{name}: values differ from (float)q * scale")


def main(argv):
    if len(argv) >= 3 and argv[1] == "listed":
        listed(argv[2], argv[3:])
    elif len(argv) == 5 and argv[1] == "same-tensor":
        same_tensor(argv[2], argv[3], argv[4])
    elif len(argv) == 4 and argv[1] == "same-json":
        same_json(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == "manifest":
        manifest(argv[2], argv[3], argv[4])
    elif len(argv) == 3 and argv[1] == "int8-model":
        int8_model(argv[2])
    elif len(argv) == 4 and argv[1] == "int8-same":
        int8_same(argv[2], argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
