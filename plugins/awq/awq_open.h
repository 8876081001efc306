/*
 * AWQ reader — open(): reads the AWQ config (config.json:quantization_config,
 * or the pre-2023-11 quant_config.json), refuses layouts it cannot decode by
 * name, pairs every qweight with its qzeros/scales across shards and builds
 * the canonical tensor table.
 */
#ifndef AWQ_OPEN_H
#define AWQ_OPEN_H

#include "qlinear.h"

/* Opens the AWQ checkpoint at `path` (a Hugging Face directory or one
 * .safetensors file next to its config). On success *out owns everything
 * (free with qlinear_free); on failure *out is NULL, nothing is left
 * allocated and the message names the file and tensor. Errors:
 * QB_E_NOT_FOUND, QB_E_FORMAT, QB_E_UNSUPPORTED (gemv_fast, marlin,
 * exllama, ipex, llm-awq, bits != 4, unknown versions), QB_E_MISMATCH,
 * QB_E_IO, QB_E_NOMEM.
 *
 * zero_point false: AutoAWQ itself then produces signed codes with an
 * implicit zero of 8 (AwqQuantizer.pseudo_quantize_tensor, WQLinear_Marlin);
 * exporters that keep a qzeros tensor (GPTQModel AWQ with sym) store 8 in
 * it. Both are read; stored zeros other than 8 under zero_point false are an
 * error (the config and the data disagree and neither can be preferred).
 * Not thread-safe (instance class). */
qb_status awq_open_model(const qb_host *h, const char *path, qlinear_model **out);

/* Probe score for a config.json text / presence of quant_config.json. */
int awq_probe_config(const char *config_json, int has_quant_config);

#endif /* AWQ_OPEN_H */
