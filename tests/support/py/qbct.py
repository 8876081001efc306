"""compressed-tensors driven as its users drive it, for the Python tiers (tests/interop's tiny
random Llama, tests/real's Gemma 3 270M): a model's projections quantized and compressed by the
library itself into config.json + model.safetensors, and the library's own model-free
decompression of the files on disk."""
import pathlib

import torch
from safetensors.torch import load_file, save_file

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

# A regex target rather than "Linear": the library's model-free decompression cannot tell
# module types and would match every `.weight` (embeddings, norms) for unpacked formats.
PROJ_TARGET = r"re:.*(q|k|v|o|gate|up|down)_proj$"


def calibrate(module):
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


def compress_model(model, out: pathlib.Path, weights: QuantizationArgs,
                   extra: dict | None = None) -> QuantizationConfig:
    """Quantizes every attention and MLP projection of `model` with `weights`, compresses it
    with ModelCompressor (format inferred by the library) and writes config.json (with the
    library's quantization_config) and model.safetensors into `out` (created). A tied lm_head
    is not written twice (safetensors refuses tensors that share memory; transformers re-ties
    it on load). Returns the written quantization_config."""
    scheme = QuantizationScheme(targets=[PROJ_TARGET], weights=weights, **(extra or {}))
    qcfg = QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"])
    apply_quantization_config(model, qcfg)
    with torch.no_grad():
        for _, m in model.named_modules():
            if getattr(m, "quantization_scheme", None) is not None:
                calibrate(m)
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    out.mkdir(parents=True)
    model.config.save_pretrained(out)
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if getattr(model.config, "tie_word_embeddings", False):
        sd.pop("lm_head.weight", None)
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    compressor.update_config(str(out))
    return compressor.quantization_config


def library_decompress(d: pathlib.Path, dtype: torch.dtype):
    """The library's own model-free decompression of the files on disk
    (CompressedTensorsDequantizer.process), cast to `dtype` at the end as the library does."""
    deq = CompressedTensorsDequantizer(str(d), dtype=dtype)
    return deq.process(load_file(str(d / "model.safetensors")))
