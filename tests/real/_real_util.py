"""Helpers of the real-model tier (tests/real, docs/real-models.md): llama.cpp (through
tests/support/py/qbllama.py), gguf-py's reading and dequantization in Hugging Face names, our
outputs read back, and the comparisons every test states its bound with."""
import json
import math
import pathlib

import numpy as np

import gguf

from qbllama import FTYPE, GGML_Q8_0, llama_logits, llama_quantize, llama_tokenize  # noqa: F401

# ------------------------------------------------------------------------------------------------
# gguf-py

GEMMA_LAYERS = 18


def gguf_reader(path: pathlib.Path) -> gguf.GGUFReader:
    return gguf.GGUFReader(str(path))


def hf_to_gguf_names(hf_names, n_layers: int = GEMMA_LAYERS) -> dict:
    """Hugging Face name -> GGUF name for a gemma3 model, from gguf-py's own TensorNameMap."""
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA3, n_layers)
    out = {}
    for n in hf_names:
        g = tmap.get_name(n, try_suffixes=(".weight",))
        assert g is not None, f"gguf-py has no GGUF name for {n}"
        out[n] = g
    return out


def gguf_shape(t) -> tuple:
    """numpy (row-major) shape of a GGUFReader tensor: ggml's ne reversed."""
    return tuple(int(x) for x in reversed(t.shape.tolist()))


def ggufpy_hf_value(t) -> np.ndarray:
    """gguf-py's dequantization of one tensor, as the Hugging Face tensor: float32, numpy shape,
    and for a Gemma norm the stored `1 + w` minus 1 in float32 (docs/formats/gguf.md, "Tensor
    names"). Gemma uses NEOX rope, so there is no Q/K permutation to undo."""
    a = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
    a = a.reshape(gguf_shape(t))
    if t.name.endswith("norm.weight"):
        a = a - np.float32(1.0)
    return a


def type_counts(reader) -> dict:
    out = {}
    for t in reader.tensors:
        out[t.tensor_type.name] = out.get(t.tensor_type.name, 0) + 1
    return out


# ------------------------------------------------------------------------------------------------
# our outputs

def safetensors_names(d: pathlib.Path) -> dict:
    """tensor name -> file for every safetensors file of a directory."""
    from safetensors import safe_open
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        with safe_open(str(f), "np") as s:
            for k in s.keys():
                assert k not in out, f"{k} appears in two files of {d}"
                out[k] = f
    return out


def read_tensor(f: pathlib.Path, name: str) -> np.ndarray:
    """One tensor of a safetensors file (numpy; bf16 comes back as its uint16 bits)."""
    from safetensors import safe_open
    try:
        with safe_open(str(f), "np") as s:
            return s.get_tensor(name)
    except TypeError:  # numpy has no bfloat16: read the raw bits
        hdr_len = int.from_bytes(f.open("rb").read(8), "little")
        with f.open("rb") as fh:
            fh.seek(8)
            hdr = json.loads(fh.read(hdr_len))
            info = hdr[name]
            a, b = info["data_offsets"]
            fh.seek(8 + hdr_len + a)
            raw = fh.read(b - a)
        assert info["dtype"] == "BF16", f"{f}: {name} has dtype {info['dtype']}"
        return np.frombuffer(raw, dtype=np.uint16).reshape(info["shape"])


def safetensors_dtype(f: pathlib.Path, name: str) -> str:
    hdr_len = int.from_bytes(f.open("rb").read(8), "little")
    with f.open("rb") as fh:
        fh.seek(8)
        return json.loads(fh.read(hdr_len))[name]["dtype"]


def f32_to_f16_bits(a: np.ndarray) -> np.ndarray:
    """Round to nearest even in IEEE half (numpy's cast), as uint16 bits."""
    return a.astype(np.float16).view(np.uint16)


def f32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round to nearest even in bfloat16 (finite values), as uint16 bits."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def assert_bits_equal(name: str, got: np.ndarray, want: np.ndarray, label: str):
    assert got.shape == want.shape, f"{name}: shape {got.shape}, {label} {want.shape}"
    assert got.dtype.itemsize == want.dtype.itemsize, f"{name}: dtype {got.dtype} vs {want.dtype}"
    ui = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    g, w = got.view(ui), want.view(ui)
    if not np.array_equal(g, w):
        bad = np.flatnonzero(g != w)
        i = np.unravel_index(bad[0], got.shape)
        raise AssertionError(f"{name}: {bad.size} of {got.size} values differ from {label}; "
                             f"first at {i}: ours {got[i]!r}, {label} {want[i]!r}")


def read_json(p: pathlib.Path):
    return json.loads(p.read_text())


# ------------------------------------------------------------------------------------------------
# logits

def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def logit_figures(got: np.ndarray, ref: np.ndarray) -> dict:
    """How far `got` is from `ref`, relative to the reference's largest |logit|: max and rms of
    the difference, top-1 agreement, KL(ref || got) mean and max in nats."""
    assert got.shape == ref.shape, f"logits shape {got.shape} vs {ref.shape}"
    assert np.isfinite(got).all() and np.isfinite(ref).all(), "non-finite logits"
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"reference logits are ~0 (max {scale}): a comparison would prove nothing"
    d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    lr, lg = log_softmax(ref), log_softmax(got)
    kl = (np.exp(lr) * (lr - lg)).sum(-1)
    return {"scale": scale, "max_rel": float(d.max()) / scale,
            "rms_rel": float(np.sqrt((d ** 2).mean())) / scale,
            "top1": float((got.argmax(-1) == ref.argmax(-1)).mean()),
            "kl_mean": float(kl.mean()), "kl_max": float(kl.max())}


def perplexity(logits: np.ndarray, ids: list[int]) -> float:
    """exp(mean -log p(ids[t+1] | ids[..t])) over positions 0..T-2 (docs/verify.md)."""
    lp = log_softmax(logits[:-1])
    nll = -lp[np.arange(len(ids) - 1), np.asarray(ids[1:])]
    return float(np.exp(nll.mean()))


def fmt(fig: dict) -> str:
    return ", ".join(f"{k} {v:.3g}" for k, v in fig.items())


def model_check_on_text(js: dict) -> dict:
    """verify's model check from a JSON report: it must have run on text (token ids from the
    source's tokenizer.json) and report finite perplexities and their ratio. Prints its figures
    and, where verify gives one, the model verdict. Returns the model_check object."""
    mc = js.get("model_check") or {}
    brief = {k: v for k, v in mc.items() if k not in ("kl_per_position", "token_ids")}
    assert mc.get("token_source") == "text", f"the model check did not run on text: {brief}"
    for k in ("perplexity_source", "perplexity_converted", "perplexity_ratio"):
        v = mc.get(k)
        assert isinstance(v, float) and math.isfinite(v) and v > 0, f"{k} is {v!r}: {brief}"
    assert 1.0 < mc["perplexity_source"] < 1000.0, brief
    print(f"model check ({len(mc['token_ids'])} tokens): KL mean {mc['kl_mean']:.3g}, top-1 "
          f"{mc['top1_agreement']:.3f}, perplexity {mc['perplexity_source']:.3f} -> "
          f"{mc['perplexity_converted']:.3f} (ratio {mc['perplexity_ratio']:.4f})")
    if js.get("model_verdict"):
        print(f"model verdict: {js['model_verdict'].get('verdict')}: "
              f"{js['model_verdict'].get('words')}")
    return mc


# ------------------------------------------------------------------------------------------------
# sources derived from the real weights (the tier's tests and bench/real make them the same way)

def make_f32_gguf(published: pathlib.Path, out: pathlib.Path):
    """The published weights as an all-F32 GGUF: llama.cpp's own quantizer, file type ALL_F32,
    requantizing allowed (so llama.cpp dequantizes every tensor)."""
    llama_quantize(published, out, FTYPE["F32"], pure=False)


def make_llama_quant(f32_gguf: pathlib.Path, type_name: str, out: pathlib.Path):
    """llama.cpp's quantizer from the F32 GGUF to file type `type_name` (FTYPE), `pure` (every
    weight the type's default where its rows admit it) with token_embd kept Q8_0, as llama.cpp's
    own mixtures keep it."""
    llama_quantize(f32_gguf, out, FTYPE[type_name], pure=True, embd_type=GGML_Q8_0)


def make_ct(hf_f32: pathlib.Path, tokenizer_dir: pathlib.Path, out: pathlib.Path,
            symmetric: bool):
    """compressed-tensors' own int4 group-128 pack-quantized checkpoint of our hf-dense f32
    output, loaded by transformers in bfloat16 (as such checkpoints are published); the
    tokenizer files of `tokenizer_dir` copied beside, as a publisher ships them."""
    import shutil

    import torch
    from compressed_tensors.quantization import QuantizationArgs
    from transformers import AutoModelForCausalLM

    import qbct
    model = AutoModelForCausalLM.from_pretrained(str(hf_f32), dtype=torch.float32,
                                                 local_files_only=True).to(torch.bfloat16)
    qbct.compress_model(model, out, QuantizationArgs(num_bits=4, type="int", symmetric=symmetric,
                                                     strategy="group", group_size=128))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / f, out / f)


def assert_verdict(js: dict, allowed: set) -> str:
    """verify's model verdict (docs/verify.md, "Model verdict") is one of `allowed` and does not
    fail the verification; returns it."""
    mv = js.get("model_verdict")
    assert mv, f"verify wrote no model_verdict: {sorted(js)}"
    assert mv["verdict"] in allowed and mv["fails"] is False, \
        f"model verdict {mv['verdict']} (allowed: {sorted(allowed)}): {mv.get('words')}"
    return mv["verdict"]
