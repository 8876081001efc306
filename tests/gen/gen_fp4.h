/*
 * Test fixtures: tiny llama checkpoints with 4-bit float (E2M1) weights in
 * the three forms the readers take (gen_fp4.c; docs/formats/nvfp4.md):
 * compressed-tensors nvfp4-pack-quantized and mxfp4-pack-quantized, and
 * NVIDIA ModelOpt NVFP4. The model skeleton, dense tensors and file
 * writing are gen_ct.c's (gen_ct.h). Tests only; never linked into the tool.
 *
 * Functions return 0 on success, -1 on failure (message on stderr).
 */
#ifndef QBT_GEN_FP4_H
#define QBT_GEN_FP4_H

#include <stddef.h>
#include <stdint.h>

#include "gen_ct.h"

enum {
    QBT_FP4_CT_NVFP4 = 0, /* compressed-tensors nvfp4-pack-quantized */
    QBT_FP4_CT_MXFP4 = 1, /* compressed-tensors mxfp4-pack-quantized */
    QBT_FP4_MODELOPT = 2  /* ModelOpt NVFP4 (hf_quant_config.json and/or config.json) */
};

/* Ground truth of one FP4 linear, as stored. */
typedef struct qbt_fp4_lin {
    char name[128];   /* canonical "<module>.weight" */
    int form;         /* QBT_FP4_* */
    int64_t N, K, gs; /* rows, columns, elements per scale */
    uint8_t *packed;  /* [N * K/2]: column 2i in the low nibble of byte i */
    uint8_t *scale;   /* [N * K/gs]: E4M3 bytes (NVFP4) or E8M0 exponents (MXFP4) */
    float second;     /* CT: weight_global_scale (divides); ModelOpt: weight_scale_2 (multiplies) */
    int pow2_second;  /* in: ModelOpt weight_scale_2 a power of two (qbt_fp4_spec) */
} qbt_fp4_lin;

typedef struct qbt_fp4_model {
    qbt_cq_model *dense; /* BF16 tensors (embed, norms, lm_head, excluded linears) */
    qbt_fp4_lin t[16];
    size_t n;
} qbt_fp4_model;

void qbt_fp4_model_free(qbt_fp4_model *m);

/* Ground truth at (n, k), computed from the bit definitions (ldexp) in the
 * order the producer's dequantizer rounds (docs/formats/nvfp4.md):
 * CT NVFP4 e2m1 * (e4m3 / global), ModelOpt e2m1 * (e4m3 * scale_2), MXFP4
 * e2m1 * 2^(e-127); each parenthesis and product rounded to float32. */
float qbt_fp4_value(const qbt_fp4_lin *l, int64_t n, int64_t k);

/* E2M1 code value (sign bit 3, exponent bits 2..1 bias 1, mantissa bit 0). */
double qbt_e2m1_value(uint8_t nib);

const qbt_fp4_lin *qbt_fp4_find(const qbt_fp4_model *m, const char *name);

typedef struct qbt_fp4_spec {
    int form;        /* QBT_FP4_* */
    int mo_config;   /* ModelOpt: 0 hf_quant_config.json only (config.json without
                        quantization_config), 1 config.json quantization_config only,
                        2 both */
    int exclude;     /* layer 1 mlp.down_proj left BF16 and listed in ignore /
                        exclude_modules (ModelOpt: as a wildcard) */
    int shards;      /* 1 or more */
    uint64_t seed;
    int pow2_second; /* ModelOpt: weight_scale_2 rounded down to a power of two (so
                        1 / weight_scale_2 is exact in float32) */
} qbt_fp4_spec;

/* Writes the checkpoint into `dir` (created); *truth (when not NULL)
 * receives the ground truth (qbt_fp4_model_free). */
int qbt_fp4_write(const char *dir, const qbt_fp4_spec *spec, qbt_fp4_model **truth);

#endif /* QBT_GEN_FP4_H */
