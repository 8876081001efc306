"""Helpers private to test_compressed_tensors.py: a tiny random Llama model compressed by the
compressed-tensors library itself (tests/support/py/qbct.py drives the library), and the
library's own model-free decompression."""
import pathlib
import sys

import torch
from safetensors.torch import load_file

import transformers
from compressed_tensors.quantization import QuantizationArgs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support" / "py"))

import qbct  # noqa: E402
from qbct import PROJ_TARGET, library_decompress  # noqa: E402,F401

# hidden and intermediate sizes are multiples of 128 so g32 and g128 both divide every row.
CONFIG = dict(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              tie_word_embeddings=False, rms_norm_eps=1e-5)


def tiny_llama(dtype: torch.dtype, seed: int = 7):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(**CONFIG)
    model = transformers.LlamaForCausalLM(cfg).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # not all ones, so a dropped norm would show
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return model


def compress(out: pathlib.Path, weights: QuantizationArgs, dtype: torch.dtype,
             extra: dict | None = None):
    """Quantizes every attention and MLP projection of a tiny Llama with `weights`, compresses it
    with ModelCompressor (format inferred by the library) and writes config.json (with the
    library's quantization_config) and model.safetensors. Returns the written quantization_config."""
    return qbct.compress_model(tiny_llama(dtype), out, weights, extra)


def read_ours(d: pathlib.Path):
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out
