"""gguf writer vs llama.cpp's quantizer on the same F32 GGUF, same types, same thread count.

One F32 GGUF with Llama-2-7B matrix shapes (hidden 4096, FFN 11008, vocab 32000; QB_BENCH_LAYERS
layers, default 1) is written once with gguf-py. For each type, llama.cpp's `llama_model_quantize`
(llama-cpp-python, `pure` for the single types, not for the presets) and `quantbridge convert
--writer gguf --option type=T` run with the same number of threads (QB_BENCH_THREADS, default
nproc); wall time is the best of QB_BENCH_REPS runs (default 2). Peak RSS of our run is taken from
/usr/bin/time when present. Prints a markdown table: seconds each, ratio ours / llama.cpp, and
whether the outputs' tensor bytes are equal. Benchmark, not test: nothing is asserted.
"""
import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import gguf
import llama_cpp
import numpy as np

HIDDEN, FF, VOCAB, HEADS = 4096, 11008, 32000, 32
LAYERS = int(os.environ.get("QB_BENCH_LAYERS", "1"))
THREADS = int(os.environ.get("QB_BENCH_THREADS", str(os.cpu_count() or 1)))
REPS = int(os.environ.get("QB_BENCH_REPS", "2"))
TYPES = [("Q8_0", 7, True), ("Q4_0", 2, True), ("Q5_1", 9, True), ("Q4_K", 14, True),
         ("Q6_K", 18, True), ("Q4_K_M", 15, False)]
BUILD = pathlib.Path(os.environ.get("QB_BUILD_DIR", "build"))


def write_src(path):
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("bench-llama2-7b-shapes")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    toks += [f"\u2581t{i}" for i in range(VOCAB - len(toks))]
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    shapes = {"token_embd.weight": (VOCAB, HIDDEN), "output_norm.weight": (HIDDEN,),
              "output.weight": (VOCAB, HIDDEN)}
    for i in range(LAYERS):
        b = f"blk.{i}."
        shapes.update({b + "attn_norm.weight": (HIDDEN,), b + "ffn_norm.weight": (HIDDEN,),
                       b + "attn_q.weight": (HIDDEN, HIDDEN), b + "attn_k.weight": (HIDDEN, HIDDEN),
                       b + "attn_v.weight": (HIDDEN, HIDDEN), b + "attn_output.weight": (HIDDEN, HIDDEN),
                       b + "ffn_gate.weight": (FF, HIDDEN), b + "ffn_up.weight": (FF, HIDDEN),
                       b + "ffn_down.weight": (HIDDEN, FF)})
    for n, s in shapes.items():
        a = (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.02 * rng.standard_normal(s))
        w.add_tensor(n, a.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sum(int(np.prod(s)) for s in shapes.values())


def llama_quant(src, dst, ftype, pure):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = ftype
    p.pure = pure
    p.nthread = THREADS
    t = time.perf_counter()
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p))
    dt = time.perf_counter() - t
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize returned {rc}")
    return dt


def ours(src, out, tname):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(BUILD / "bin" / "quantbridge"), "convert", "--source", str(src), "--output", str(out),
           "--writer", "gguf", "--option", f"type={tname}", "--threads", str(THREADS)]
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    rss = None
    t = time.perf_counter()
    if timer:
        r = subprocess.run([timer, "-f", "RSS_KB=%M"] + cmd, capture_output=True, text=True)
        for line in r.stderr.splitlines():
            if line.startswith("RSS_KB="):
                rss = int(line[7:]) / 1024
    else:
        r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return dt, rss


def tensor_bytes(path):
    return {t.name: np.asarray(t.data).tobytes() for t in gguf.GGUFReader(str(path)).tensors}


def main():
    d = pathlib.Path(tempfile.mkdtemp(prefix="qb-bench-gguf-"))
    try:
        src = d / "src-f32.gguf"
        n = write_src(src)
        # llama.cpp logs through C stdio to the same files: the table is printed once at the end
        rows = [f"source: {n / 1e6:.0f} M weights F32 ({src.stat().st_size / 2**20:.0f} MiB), "
                f"{LAYERS} layer(s) of Llama-2-7B shapes, {THREADS} thread(s), best of {REPS}", "",
                "| type | llama.cpp s | ours s | ours / llama.cpp | ours peak RSS MiB | same bytes |",
                "| --- | ---: | ---: | ---: | ---: | --- |"]
        for tname, ftype, pure in TYPES:
            ref = d / f"ref-{tname}.gguf"
            t_ref = min(llama_quant(src, ref, ftype, pure) for _ in range(REPS))
            runs = [ours(src, d / f"ours-{tname}", tname) for _ in range(REPS)]
            t_ours = min(r[0] for r in runs)
            rss = max((r[1] for r in runs if r[1] is not None), default=None)
            same = tensor_bytes(ref) == tensor_bytes(d / f"ours-{tname}" / "model.gguf")
            rows.append(f"| {tname} | {t_ref:.2f} | {t_ours:.2f} | {t_ours / t_ref:.2f} | "
                        f"{'-' if rss is None else f'{rss:.0f}'} | {'yes' if same else 'no'} |")
        sys.stdout.flush()
        (d.parent / "qb-bench-gguf-writer.md").write_text("\n".join(rows) + "\n")
        print("\n" + "\n".join(rows), flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
