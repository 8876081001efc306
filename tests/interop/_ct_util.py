"""Helpers private to test_compressed_tensors.py: a tiny random Llama model compressed by the
compressed-tensors library itself, and the library's own model-free decompression."""
import pathlib

import torch
from safetensors.torch import load_file, save_file

import transformers
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.entrypoints.convert.converters.ct_dequantizer import (
    CompressedTensorsDequantizer,
)
from compressed_tensors.quantization import (
    QuantizationArgs,
    QuantizationConfig,
    QuantizationScheme,
    QuantizationStrategy,
    apply_quantization_config,
)
from compressed_tensors.quantization.utils.helpers import (
    calculate_qparams,
    compute_dynamic_scales_and_zp,
    generate_gparam,
)

# hidden and intermediate sizes are multiples of 128 so g32 and g128 both divide every row.
CONFIG = dict(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              tie_word_embeddings=False, rms_norm_eps=1e-5)


PROJ_TARGET = r"re:.*(q|k|v|o|gate|up|down)_proj$"


def tiny_llama(dtype: torch.dtype, seed: int = 7):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(**CONFIG)
    model = transformers.LlamaForCausalLM(cfg).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # not all ones, so a dropped norm would show
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return model


def _calibrate(module):
    """Weight qparams from the weight's own range with the library's helpers (what a
    calibration-free "minmax" pass does): calculate_qparams / compute_dynamic_scales_and_zp,
    plus generate_gparam's global scale for tensor-group (NVFP4)."""
    args = module.quantization_scheme.weights
    w = module.weight.detach()
    gscale = None
    if args.strategy == QuantizationStrategy.TENSOR_GROUP:
        mn, mx = torch.aminmax(w)
        gscale = generate_gparam(mn.reshape(1), mx.reshape(1))
        module.weight_global_scale.data.copy_(gscale)
        scale, zp = compute_dynamic_scales_and_zp(w, args, module, global_scale=gscale)
    elif args.strategy == QuantizationStrategy.GROUP:
        scale, zp = compute_dynamic_scales_and_zp(w, args, module)
    elif args.strategy == QuantizationStrategy.CHANNEL:
        scale, zp = calculate_qparams(w.amin(dim=-1, keepdim=True), w.amax(dim=-1, keepdim=True),
                                      args)
    elif args.strategy == QuantizationStrategy.TENSOR:
        mn, mx = torch.aminmax(w)
        scale, zp = calculate_qparams(mn, mx, args)
    else:
        raise AssertionError(f"strategy {args.strategy} not handled by the test")
    module.weight_scale.data.copy_(scale.reshape(module.weight_scale.shape))
    if hasattr(module, "weight_zero_point"):
        module.weight_zero_point.data.copy_(zp.reshape(module.weight_zero_point.shape))


def compress(out: pathlib.Path, weights: QuantizationArgs, dtype: torch.dtype,
             extra: dict | None = None):
    """Quantizes every attention and MLP projection of a tiny Llama with `weights`, compresses it with
    ModelCompressor (format inferred by the library) and writes config.json (with the library's
    quantization_config) and model.safetensors. Returns the written quantization_config."""
    model = tiny_llama(dtype)
    # A regex target rather than "Linear": the library's model-free decompression cannot tell
    # module types and would match every `.weight` (embeddings, norms) for unpacked formats.
    scheme = QuantizationScheme(targets=[PROJ_TARGET], weights=weights, **(extra or {}))
    qcfg = QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"])
    apply_quantization_config(model, qcfg)
    with torch.no_grad():
        for _, m in model.named_modules():
            if getattr(m, "quantization_scheme", None) is not None:
                _calibrate(m)
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    out.mkdir(parents=True)
    model.config.save_pretrained(out)
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    compressor.update_config(str(out))
    return compressor.quantization_config


def library_decompress(d: pathlib.Path, dtype: torch.dtype):
    """The library's own model-free decompression of the files on disk
    (CompressedTensorsDequantizer.process), cast to `dtype` at the end as the library does."""
    deq = CompressedTensorsDequantizer(str(d), dtype=dtype)
    return deq.process(load_file(str(d / "model.safetensors")))


def read_ours(d: pathlib.Path):
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out
