"""Private helpers of the issue-31 family tests (test_smollm3.py, test_llama4.py, ...).

A family's oracle is a tiny random model built by transformers' own classes (float32, a fixed
seed, weights spread so the logits are O(1)), saved as Hugging Face safetensors, and its eager
float32 logits on test_logits.TOKENS. The checks every family runs:
  - hf-dense f32 of the saved model holds every tensor bit for bit (read and write);
  - `quantbridge forward` on the saved model against transformers' logits (F32_REL of the scale);
  - W4A16 conversion: `quantbridge forward` on it against transformers on its decoded weights,
    and `verify`'s model check judging it;
  - llama.cpp's own converter (convert_hf_to_gguf.py) to an F32 GGUF, read back by our reader to
    the same tensors (hf-dense f32 of the GGUF equals the source's tensors).
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

import _hf_util as U
from test_logits import F32_REL, TOKENS, compare, quantbridge_logits  # noqa: F401


def spread_(model, seed, extra=None):
    """Random weights N(0, 0.1) (the init's 0.02 leaves every logit near 0), norms around 1;
    extra(name, param) may adjust one further."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0.0, 0.1)
            if "norm" in n:
                p.add_(1.0)
            if extra:
                extra(n, p)


def save_and_run(model, out):
    """Saves model (safetensors, its config) to `out`; returns its eager float32 logits on
    TOKENS [len, vocab]."""
    model.save_pretrained(str(out))
    with torch.no_grad():
        return model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)


def check_hf_dense(run_qb, src, tmp_path, name):
    """hf-dense f32 of `src` equals src's own tensors, every one, bit for bit (the source is
    float32); config.json keeps model_type. Returns the output directory."""
    out = tmp_path / f"{name}-hf32"
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    want = U.read_safetensors_dir(src)
    got = U.read_safetensors_dir(out)
    assert set(got) == set(want), \
        f"{name}: hf-dense tensors differ: missing {sorted(set(want) - set(got))}, " \
        f"extra {sorted(set(got) - set(want))}"
    for k, v in want.items():
        U.assert_same_tensor(k, got[k], v, f"{name} hf-dense f32")
    assert U.config(out)["model_type"] == U.config(src)["model_type"]
    return out


def transformers_logits_of(out):
    """transformers' eager float32 logits on TOKENS of the HF directory `out`."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        return model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)


# quantbridge forward on a W4A16 directory runs its linears through the W4A16 CPU backend, which
# rounds activations to fp16 at every product (docs/forward.md); transformers runs the same
# decoded weights in float32. fp16 keeps 11 bits (relative 2^-12 per rounding), ~15 chained
# products in a 4-layer model: a few 1e-4 of the logit scale; bound 5e-3.
W4A16_REL = 5e-3


def transformers_logits_a16(out, manifest):
    """transformers' eager float32 logits on TOKENS of the HF directory `out`, with the A16
    arithmetic of the W4A16 backend at the linears `manifest` lists as packed (docs/forward.md:
    their input and their output rounded to fp16; every other product stays float32)."""
    from transformers import AutoModelForCausalLM
    packed = set()
    for key in manifest["tensors"]:
        f, path = key.split(":", 1)
        packed.add(path if f == "lm_head.safetensors" else
                   f"model.layers.{int(f[len('layer_'):].split('.')[0])}.{path}")
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    hooked = 0
    for n, mod in model.named_modules():
        if n in packed and isinstance(mod, torch.nn.Linear):
            mod.register_forward_pre_hook(lambda m, a: (a[0].half().float(),) + tuple(a[1:]))
            mod.register_forward_hook(lambda m, a, y: y.half().float())
            hooked += 1
    assert hooked == len(packed), f"{out}: {len(packed)} packed linears, {hooked} modules found"
    with torch.no_grad():
        return model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)


def check_w4a16(run_qb, src, tmp_path, name, a16_ref=False):
    """W4A16 of `src`: `quantbridge forward` on it against transformers running its decoded
    weights (our sm86-w4a16 reader to hf-dense f32), and verify (with the model check) passes.
    a16_ref: transformers runs the decoded weights with the backend's A16 rounding
    (transformers_logits_a16), for a family whose float32 logits the fp16 activations alone
    move past W4A16_REL (the caller says why, and checks the layout in float32: quantbridge's
    float32 forward on the decoded weights); the float32 figure is reported as
    plain_rel_to_scale. Returns (dir, figures, verify JSON)."""
    out = tmp_path / f"{name}-w4a16"
    run_qb("convert", "--source", src, "--output", out, "--writer", "sm86-w4a16")
    man = json.loads((out / "manifest.json").read_text())
    assert man["architecture"] == U.config(src)["model_type"]
    dec = tmp_path / f"{name}-w4a16-decoded"
    run_qb("convert", "--source", out, "--output", dec, "--writer", "hf-dense",
           "--option", "dtype=f32")
    ref = transformers_logits_a16(dec, man) if a16_ref else transformers_logits_of(dec)
    got = quantbridge_logits(run_qb, out, tmp_path)
    fig = compare(f"{name} W4A16 quantbridge forward vs transformers on its decoded weights"
                  + (" (A16 rounding)" if a16_ref else ""), got, ref, W4A16_REL)
    if a16_ref:  # the float32 figure, reported (the caller bounds the layout in float32)
        plain = transformers_logits_of(dec)
        fig["plain_rel_to_scale"] = float(np.abs(got.astype(np.float64) - plain).max()
                                          / np.abs(plain).max())
        print(f"{name} W4A16 vs transformers float32 on its decoded weights: "
              f"{fig['plain_rel_to_scale']:.3g} of the logit scale")
    proc = run_qb("verify", "--source", src, "--converted", out, "--json",
                  "--tokens", ",".join(map(str, TOKENS)), ok=False)
    assert proc.returncode == 0, f"verify {name}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    js = json.loads(proc.stdout)
    mc = js.get("model_check") or {}
    assert mc.get("pass") is True, f"verify {name}: model check did not pass: {mc}"
    return out, fig, js


def llama_cpp_converter(build_dir):
    """Path of convert_hf_to_gguf.py in the llama-cpp-python 0.3.36 source package (the
    interop tier downloads it for its llama.cpp build: tests/support/pytier.sh); fetched with
    pip download when absent."""
    cache = pathlib.Path(build_dir) / "interop-llamacpp-src"
    hits = sorted(cache.glob("llama_cpp_python-*/vendor/llama.cpp/convert_hf_to_gguf.py"))
    if hits:
        return hits[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                    "-d", str(cache), "llama-cpp-python==0.3.36"], check=True)
    tgz = sorted(cache.glob("llama_cpp_python-0.3.36.tar.gz"))
    assert tgz, f"pip download left no llama_cpp_python-0.3.36.tar.gz in {cache}"
    subprocess.run(["tar", "-xzf", str(tgz[0]), "-C", str(cache)], check=True)
    hits = sorted(cache.glob("llama_cpp_python-*/vendor/llama.cpp/convert_hf_to_gguf.py"))
    assert hits, f"no convert_hf_to_gguf.py in the llama-cpp-python source package under {cache}"
    return hits[0]


# Runs convert_hf_to_gguf.py as its own __main__, after replacing one model class's set_vocab
# with its SentencePiece one (argv: converter, "module:Class" under conversion/ or "-", then the
# converter's args).
_DRIVER = """
import importlib, runpy, sys
conv, cls = sys.argv[1], sys.argv[2]
sys.argv = [conv] + sys.argv[3:]
if cls != "-":
    mod, name = cls.split(":")
    k = getattr(importlib.import_module("conversion." + mod), name)
    k.set_vocab = lambda self: self._set_vocab_sentencepiece()
runpy.run_path(conv, run_name="__main__")
"""


def convert_to_gguf(build_dir, src, out, spm_vocab_for=None, extra=()):
    """llama.cpp's converter on the HF directory src, F32 output; returns the process (the
    caller asserts on it: a family the converter refuses is said so by the test).
    spm_vocab_for ("llama:Llama4Model") names a converter class whose set_vocab wants a real model's
    BPE tokenizer (its pre-tokenizer hash must be one llama.cpp knows): there the tiny model's
    SentencePiece vocabulary is written instead; tensors and hyper-parameters stay the
    converter's own. extra: further converter arguments ("--no-mtp": a checkpoint without the
    MTP block its class otherwise requires)."""
    conv = llama_cpp_converter(build_dir)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(conv.parent), str(conv.parent / "gguf-py"),
                                         env.get("PYTHONPATH", "")])
    env["NO_LOCAL_GGUF"] = ""
    return subprocess.run([sys.executable, "-c", _DRIVER, str(conv), spm_vocab_for or "-",
                           str(src), "--outfile", str(out), "--outtype", "f32", *extra],
                          capture_output=True, text=True, env=env)


def logits_of(path):
    t = load_file(str(path))
    return t["logits"]


def write_tokenizer(d, vocab_size=None):
    """A SentencePiece BPE tokenizer.model (byte fallback, at most the config's vocab_size
    pieces) trained here on a fixed text, so llama.cpp's converter has a vocabulary to write
    (its LlamaModel.set_vocab reads tokenizer.model; it pads up to vocab_size)."""
    import io
    import sentencepiece as spm
    vocab_size = vocab_size or U.config(d)["vocab_size"]
    words = ("the a of and to in is it on model weight tensor layer token quant bridge llama "
             "gguf logit test smol rope chunk expert router norm gemma attention window").split()
    text = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) for i in range(400)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=buf,
                                   vocab_size=min(vocab_size, 300), model_type="bpe",
                                   byte_fallback=True, character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2)
    (pathlib.Path(d) / "tokenizer.model").write_bytes(buf.getvalue())


def check_gguf_readback(run_qb, src, gguf_path, tmp_path, name, rename=None):
    """Our GGUF reader on llama.cpp's F32 conversion of src: hf-dense f32 of the GGUF holds
    exactly src's tensors (names via rename(name) -> source name when the GGUF form regroups
    them, else the same), bit for bit, and config.json names src's model_type."""
    out = tmp_path / f"{name}-gguf-hf32"
    run_qb("convert", "--source", gguf_path, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    want = U.read_safetensors_dir(src)
    got = U.read_safetensors_dir(out)
    if rename:
        got = {rename(k): v for k, v in got.items()}
    assert set(got) == set(want), \
        f"{name}: GGUF read back: missing {sorted(set(want) - set(got))}, " \
        f"extra {sorted(set(got) - set(want))}"
    for k, v in want.items():
        U.assert_same_tensor(k, got[k], v, f"{name} GGUF (llama.cpp's converter) read back")
    cfg = U.config(out)
    assert cfg["model_type"] == U.config(src)["model_type"], cfg
    return out, cfg
