/*
 * compressed-tensors writer — internals shared by ctw_writer.c (the
 * vtable and the streaming), ctw_plan.c (what each source tensor becomes),
 * ctw_encode.c (codes, scales and zero points of one row) and
 * ctw_config.c (config.json's quantization_config). Every symbol here is
 * hidden (the plugin exports only its entry).
 *
 * Output (docs/formats/compressed-tensors.md, "Writing"): one pack-quantized
 * module <m> per quantized linear, its tensors in this order:
 *   <m>.weight_packed     I32 [N, ceil(K / pf)], pf = 32 / bits
 *   <m>.weight_scale      D   [N, G]
 *   <m>.weight_zero_point I32 [ceil(N / pf), G]   asymmetric only
 *   <m>.weight_g_idx      I32 [K]                 act-order (actorder "group")
 *   <m>.weight_shape      I64 [2] = [N, K]
 * or one FP8 module (e4m3 weights; weight-only, so naive-quantized):
 *   <m>.weight            F8_E4M3 [N, K]
 *   <m>.weight_scale      D   tensor [1], channel [N, 1], block [ceil(N/bn), G]
 * or one NVFP4 module (scheme nvfp4, NVFP4A16's weights: nvfp4-pack-quantized):
 *   <m>.weight_packed       U8      [N, K/2]   e2m1 codes, column 2i in the low nibble
 *   <m>.weight_scale        F8_E4M3 [N, K/16]
 *   <m>.weight_global_scale F32     [1]        divides weight_scale
 * (NVFP4 sources: their codes and e4m3 scales as they were, the global
 * scale the source's or 1 / ModelOpt's weight_scale_2: ctw_plan.c),
 * every other tensor dense in the model dtype D (f16, bf16 or f32).
 */
#ifndef CTW_H
#define CTW_H

#include <stdint.h>

#include <quantbridge/quantbridge.h>

#include "qbk_out_dtype.h"
#include "qbk_shards.h"
#include "qbk_st_writer.h"

extern const qb_writer_vtable ct_writer_vtable;
extern const qb_option_decl *const ct_option_decls[];
extern const qb_host *ct_host;

/* What one source tensor becomes. */
typedef enum ctw_kind {
    CTW_DENSE = 0, /* kept dense in D */
    CTW_EXACT = 1, /* the source's integer grid carried over code for code */
    CTW_RTN = 2,   /* quantized anew from the dense rows (round to nearest) */
    CTW_CARRY = 3  /* NVFP4 codes and group scales carried over, the global scale
                      rounded (1 / weight_scale_2): values measured, not exact */
} ctw_kind;

/* One quantization scheme (a config_groups entry). */
typedef struct ctw_scheme {
    int bits;          /* 4 or 8 */
    int symmetric;
    int64_t group_size;/* columns per scale; 0: channel (one group per row) */
    int act_group;     /* weight_g_idx written (actorder "group") */
    int fp8;           /* type "float": e4m3 codes, unpacked (bits 8, symmetric) */
    int per_tensor;    /* fp8: strategy "tensor" (one scale) */
    int64_t block_rows;/* fp8: strategy "block", block_structure [block_rows, group_size] */
    int nvfp4;         /* type "float" 4 bits, strategy "tensor_group", group_size 16 */
} ctw_scheme;

#define CTW_MAX_OUT 5

typedef struct ctw_item {
    size_t src;              /* source tensor index */
    const char *name;        /* source name (the reader's) */
    ctw_kind kind;
    ctw_scheme sc;           /* quantized kinds */
    int shift;               /* EXACT: added to source codes and zeros */
    int src_bits;            /* EXACT: the source grid's bits */
    const int32_t *col_group;/* EXACT act-order: the source's map (reader-owned) */
    float gscale;            /* NVFP4 EXACT/CARRY: weight_global_scale written */
    int64_t rows, cols, n_groups;
    size_t out0, n_out;      /* output tensors [out0, out0 + n_out) */
    uint32_t shard;
    char reason[240];
    /* RTN, filled while writing: sum of squared errors and of squared
     * values (in D), largest absolute error */
    double err2, ref2, err_max;
} ctw_item;

typedef struct ctw_plan {
    qb_dtype dt;             /* model dtype D: F16, BF16 or F32 */
    char dt_reason[200];
    ctw_item *it;            /* [n_src], in write order */
    size_t n;
    qbk_st_out_tensor *out;  /* output tensors in file order */
    char **out_names;        /* owned names of out[] */
    size_t n_out;
    qbk_shards sh;           /* item ranges of the shard files; sh.total: all bytes */
    ctw_scheme rtn;          /* scheme for requantized linears */
    int act_gidx;            /* act_order=g_idx */
    int minmax;              /* quant_rule=minmax */
    int i4rule;              /* quant_rule=search|keep|auto: a qbk_int4_rule; -1 otherwise */
} ctw_plan;

/* Options as begin and plan read them. */
typedef struct ctw_options {
    const char *dtype;       /* auto|f16|bf16|f32 */
    ctw_scheme rtn;
    int act_gidx;
    int minmax;              /* quant_rule=minmax: compressed-tensors' own scale */
    int i4rule;              /* quant_rule=search|keep|auto: a qbk_int4_rule; -1 otherwise */
    uint64_t max_shard;
} ctw_options;

/* Reads the writer's parameters. QB_E_INVALID with a message on a bad
 * combination. */
qb_status ctw_options_read(const qb_host *h, const qb_param *params, ctw_options *o);

/* Decides every source tensor (ctw_item), the model dtype and the file
 * layout. Reads grid descriptions, never tensor data. Errors name the
 * tensor. On failure *p holds nothing. Not thread-safe. */
qb_status ctw_plan_build(const qb_host *h, const qb_model_src *src, const ctw_options *o,
                         ctw_plan *p);
void ctw_plan_free(ctw_plan *p);

/* Round-to-nearest quantization of one row x[cols] (values in D) into
 * signed codes q[cols] in [-2^(b-1), 2^(b-1)-1], scales s[n_groups] (in D)
 * and zero points z[n_groups] (signed, 0 when symmetric), following
 * compressed-tensors' calculate_qparams and _quantize in D's arithmetic
 * (docs/formats/compressed-tensors.md, "Round to nearest"). Adds the
 * row's squared error and squared values to *err2 / *ref2 and raises
 * *err_max. Symmetric scales: amax / (2^b - 1) * 2 with minmax (the
 * library's: the largest positive value may clip), else amax / (2^(b-1) - 1)
 * (nothing clips). Pure. */
void ctw_rtn_row(qb_dtype dt, const ctw_scheme *sc, int minmax, const float *x, int64_t cols,
                 int8_t *q,
                 float *s, int8_t *z, double *err2, double *ref2, double *err_max);

/* Symmetric int4 quantization of one row x[cols] (values in D) under the
 * kit's rule `rule` (a qbk_int4_rule: search, keep or auto; codes
 * -8..7, one scale per group of gs columns (0: the whole row) rounded to D
 * before codes and error are computed, qbk_int4_rules.h) into q[cols] and
 * s[n_groups]; an all-zero group gets finfo(D).eps as the scale, as
 * ctw_rtn_row gives it. Adds to *err2 / *ref2 and raises *err_max as
 * ctw_rtn_row. Returns 0, or the kit's negative error (a non-finite value,
 * a scale past D's range). Pure. */
int ctw_int4_rule_row(qb_dtype dt, int rule, int64_t gs, const float *x, int64_t cols, int8_t *q,
                      float *s, double *err2, double *ref2, double *err_max);

/* float8 e4m3fn byte nearest to v (ties to even, as torch's cast to
 * float8_e4m3fn); |v| must be at most 448 (callers clamp first). Pure. */
uint8_t ctw_f32_to_e4m3(float v);

/* FP8 round to nearest of one row x[cols] (values in D) into e4m3 bytes
 * q[cols] with the channel scale *s = amax / 448 in D (a zero scale
 * becomes finfo(D).eps), as compressed-tensors' calculate_qparams and
 * _quantize compute it for type "float" (docs/formats/compressed-tensors.md,
 * "Round to nearest"). Adds the row's squared error and squared values to
 * *err2 / *ref2 and raises *err_max. Pure. */
void ctw_fp8_row(qb_dtype dt, const float *x, int64_t cols, uint8_t *q, float *s, double *err2,
                 double *ref2, double *err_max);

/* E2M1 code (sign in bit 3, magnitude index 0..7 of 0, 0.5, 1, 1.5, 2, 3,
 * 4, 6) of v clamped to [-6, 6] and rounded as compressed-tensors'
 * cast_to_fp4 does (nearest, ties to the even code); a negative value that
 * rounds to 0 keeps its sign bit, as pack_fp4_to_uint8 reads torch.signbit.
 * Pure. */
uint8_t ctw_f32_to_e2m1(float v);

/* Packs cols (even) E2M1 codes into cols / 2 bytes, column 2i in the low
 * nibble (pack_fp4_to_uint8). Pure. */
void ctw_pack_e2m1_row(const uint8_t *codes, int64_t cols, uint8_t *out);

/* NVFP4 global scale of a tensor whose largest magnitude (in D) is amax:
 * fl_D(fl_D(1 / amax) * 2688) as generate_gparam's 448 * 6 / amax computes it
 * (torch's Python-number-over-tensor is a reciprocal and a product), then float32; 1 when
 * that is not finite. Pure. */
float ctw_nvfp4_global(qb_dtype dt, float amax);

/* NVFP4 round to nearest of one row x[cols] (values in D, cols a multiple
 * of 16) under global scale gs: e4m3 group scale bytes s[cols / 16] =
 * e4m3(fl32(gs * fl_D(amax_g / 6))) (0 becomes 0.125) and E2M1 codes
 * q[cols] of fl32(x / fl32(e4m3 / gs)), as calculate_qparams and _quantize
 * compute them (docs/formats/compressed-tensors.md, "Round to nearest").
 * Adds the row's squared error and squared values to *err2 / *ref2 and
 * raises *err_max. Pure. */
void ctw_nvfp4_row(qb_dtype dt, float gs, const float *x, int64_t cols, uint8_t *q, uint8_t *s,
                   double *err2, double *ref2, double *err_max);

/* quantization_config as JSON text (compact, the member order
 * compressed-tensors 0.20 writes) into *out (qbk_malloc'd). */
qb_status ctw_quant_config(const qb_host *h, const qb_model_src *src, const ctw_plan *p,
                           char **out);

#endif /* CTW_H */
