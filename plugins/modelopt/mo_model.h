/*
 * modelopt reader — NVIDIA TensorRT Model Optimizer (ModelOpt) NVFP4
 * checkpoints: the configuration, every packed linear paired with its
 * scales, and the canonical tensor list. Facts in docs/formats/nvfp4.md.
 *
 * Configuration: hf_quant_config.json {"quantization": {"quant_algo":
 * "NVFP4", "group_size": 16, "exclude_modules": [...]}} and/or config.json
 * quantization_config {"quant_method": "modelopt", "quant_algo": "NVFP4",
 * ...}; when both are present they must agree. Other quant_algo values
 * (FP8, W4A16_AWQ, NVFP4_AWQ, MIXED_PRECISION, ...) are refused by name.
 *
 * Tensors per quantized linear <m> (modelopt NVFP4QTensor; vLLM
 * ModelOptNvFp4LinearMethod.create_weights):
 *   <m>.weight          U8 [N, K/2], E2M1 pairs, column 2i in the low nibble;
 *   <m>.weight_scale    F8_E4M3 [N, K/16];
 *   <m>.weight_scale_2  F32 with one element (0-d or [1]), the per-tensor
 *                       second-level scale;
 *   <m>.input_scale     F32, an activation scale: dropped (a weight-only
 *                       conversion never uses it), noted in the summary.
 * Dense value (NVFP4QTensor.dequantize): e2m1 * (e4m3 * weight_scale_2),
 * the parenthesis rounded to float32 first, then the product.
 * Modules matching exclude_modules (fnmatch wildcards, `*` crossing dots)
 * must be stored dense; everything not quantized passes through as float.
 */
#ifndef MO_MODEL_H
#define MO_MODEL_H

#include <stdint.h>

#include <quantbridge/base/qb_streader.h>
#include <quantbridge/qb_host.h>
#include <quantbridge/qb_tensor.h>

#include "qbk_reader.h"

typedef struct mo_tensor {
    int quant;                 /* 1: NVFP4 linear; 0: float tensor passed through */
    const qb_st_tensor *w;     /* dense tensor or the packed weight */
    const qb_st_tensor *scale; /* weight_scale (quant only) */
    const qb_st_tensor *scale2;/* weight_scale_2 (quant only) */
    float s2;                  /* value of weight_scale_2 */
    int64_t rows, cols, n_groups;
} mo_tensor;

typedef struct mo_model {
    qbk_reader_model b;        /* directory and config (kit qbk_reader.h): first */
    mo_tensor *t;
    size_t n, n_quant, n_input_scales;
    char **exclude;            /* exclude_modules patterns (owned) */
    size_t n_exclude;
} mo_model;

/* The modelopt format for the reader base (qb_streader.h). open validates
 * the configuration, every packed weight's partners (names, dtypes,
 * shapes, no NaN scale, a positive finite weight_scale_2), no partner
 * without its weight, no quantized module in exclude_modules, every other
 * tensor a float dense tensor; messages name the file and tensor/key. The
 * data calls are thread-safe (the model is immutable after open). */
extern const qb_streader_class mo_class;

/* Probe score for a directory: QB_PROBE_LIKELY + 10 when config.json's
 * quantization_config says quant_method "modelopt"; QB_PROBE_LIKELY when
 * hf_quant_config.json is among `siblings` and config.json has no
 * quantization_config of another method; else QB_PROBE_NONE (also when
 * the strict parser, qbk_json.h, refuses config.json). Pure. */
int mo_probe(const char *config_json, const char *const *siblings);

#endif /* MO_MODEL_H */
