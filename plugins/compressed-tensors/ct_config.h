/*
 * compressed-tensors reader — the `quantization_config` of config.json:
 * formats, config_groups (schemes with their targets) and the ignore list.
 *
 * Schema: compressed-tensors quantization/quant_config.py (QuantizationConfig),
 * quant_scheme.py (QuantizationScheme), quant_args.py (QuantizationArgs,
 * validate_model_after for strategy inference), config/base.py
 * (CompressionFormat names). See docs/formats/compressed-tensors.md, "Config schema".
 *
 * Decisions (documented in the error texts too):
 *   - formats read: pack-quantized, naive-quantized, int-quantized,
 *     float-quantized, nvfp4-pack-quantized, mxfp4-pack-quantized, and
 *     mixed-precision with those per scheme; every other CompressionFormat
 *     (dense, marlin-24, sparse-*, mxfp6/mxfp8) is refused by name;
 *   - the FP4 formats take exactly the weights their compressors accept
 *     (compressors/nvfp4/base.py and mxfp4/base.py can_compress): float
 *     4-bit symmetric, NVFP4 strategy tensor_group with group_size 16,
 *     MXFP4 strategy group with group_size 32 (docs/formats/nvfp4.md);
 *   - quantization_status must be "compressed" when present;
 *   - a non-empty transform_config (online rotations) changes what the
 *     stored weights mean and is refused; a sparsity_config whose format
 *     is not "dense" is refused;
 *   - input/output activation and KV-cache schemes never change how the
 *     stored weights dequantize (upstream decompress_weight reads only the
 *     weight args), so they are accepted and their parameters dropped;
 *   - dynamic weights, "token"/"attn_head" weight strategies, "tensor_group"
 *     outside NVFP4, float weights other than 8-bit FP8 and the FP4 formats'
 *     4-bit, and preset-name group entries are refused.
 */
#ifndef CT_CONFIG_H
#define CT_CONFIG_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>

#include "ct_match.h"

typedef enum ct_format {
    CT_F_NONE = 0,   /* not set (scheme falls back to the global format) */
    CT_F_PACK = 1,   /* pack-quantized */
    CT_F_NAIVE = 2,  /* naive-quantized / int-quantized / float-quantized: unpacked */
    CT_F_MIXED = 3,  /* mixed-precision (global only) */
    CT_F_NVFP4 = 4,  /* nvfp4-pack-quantized: E2M1 pairs, E4M3 group-16 scales, global scale */
    CT_F_MXFP4 = 5   /* mxfp4-pack-quantized: E2M1 pairs, E8M0 group-32 scales */
} ct_format;

typedef enum ct_strategy {
    CT_S_TENSOR = 0,
    CT_S_CHANNEL = 1,
    CT_S_GROUP = 2,
    CT_S_BLOCK = 3,
    CT_S_TENSOR_GROUP = 4 /* groups along K plus one global scale (NVFP4) */
} ct_strategy;

typedef struct ct_scheme {
    char *name;           /* config_groups key (owned) */
    ct_pattern *targets;  /* owned */
    size_t n_targets;
    ct_format format;     /* resolved: CT_F_PACK, CT_F_NAIVE, CT_F_NVFP4 or CT_F_MXFP4 */
    char *format_name;    /* as written, e.g. "int-quantized" (owned) */
    int has_weights;      /* 0: activation-only scheme; weights stay dense */
    int is_float;         /* type "float" (FP8 E4M3, or E2M1 in the FP4 formats) */
    int bits;             /* num_bits */
    int symmetric;
    ct_strategy strategy;
    int64_t group_size;   /* CT_S_GROUP */
    int64_t bh, bw;       /* CT_S_BLOCK: block_structure */
    int act_group;        /* actorder "group": weight_g_idx expected */
} ct_scheme;

typedef struct ct_config {
    ct_scheme *s;
    size_t n;
    ct_pattern *ignore;
    size_t n_ignore;
    char *global_format;  /* as written (owned) */
} ct_config;

/* Parses quantization_config `q` of `dir`/config.json into *cfg (zeroed by
 * the caller). Returns QB_OK, or QB_E_FORMAT / QB_E_UNSUPPORTED /
 * QB_E_NOMEM with a message naming config.json and the offending key.
 * *cfg must be released with ct_config_free in both cases. */
qb_status ct_config_parse(const qb_host *h, const char *dir, const cJSON *q, ct_config *cfg);

void ct_config_free(ct_config *cfg);

/* Scheme for `module` or NULL: *n_match is the number of distinct matching
 * schemes (several matching schemes with different weight args is
 * ambiguous: the caller reports it). *ignored is set when the ignore list
 * matches (ignore wins, as in upstream apply_quantization_config). */
const ct_scheme *ct_config_lookup(const ct_config *cfg, const char *module, int is_linear,
                                  int *ignored, int *n_match, int *by_name);

/* Nonzero when a config.json text is a compressed-tensors checkpoint. */
int ct_config_probe(const char *config_json);

#endif /* CT_CONFIG_H */
