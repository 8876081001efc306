/*
 * compressed-tensors reader — the model: every quantized module paired
 * with its partners across shards, the canonical tensor list, and row /
 * grid decoding.
 *
 * Tensors per quantized module <m> (compressed-tensors
 * compressors/quantized_compressors/pack_quantized.py
 * PackedQuantizationCompressor.compression_param_info / compress_weight,
 * naive_quantized.py NaiveQuantizationCompressor):
 *   pack-quantized: <m>.weight_packed I32 [N, ceil(K/pf)], pf = 32/bits;
 *                   <m>.weight_shape I32/I64 [2] = [N, K];
 *   naive:          <m>.weight I8 (int) or F8_E4M3 (float) [N, K];
 *   both:           <m>.weight_scale (tensor [1], channel [N,1], group
 *                   [N, ceil(K/gs)], block [ceil(N/bh), ceil(K/bw)]);
 *                   <m>.weight_zero_point when asymmetric (pack group/
 *                   channel: I32 packed along N [ceil(N/pf), G]; else I8
 *                   unpacked, scale's shape); <m>.weight_g_idx I32 [K]
 *                   with actorder "group".
 * Codes are signed q in [-2^(b-1), 2^(b-1)-1] stored as u = q + 2^(b-1)
 * (pack_to_int32 / unpack_from_int32), zero points likewise.
 * Dense value (forward.py _dequantize: (x_q - zero_point) * scale):
 *   (float)(q - zq) * scale in float32. Upstream computes in the scale's
 *   dtype. For BF16/F16 scales q - zq (an integer of at most 9 bits) times
 *   a scale of at most 11 significant bits is exact in float32, so
 *   upstream's bf16/f16 result is this value rounded once more; for F32
 *   scales upstream does the same single float32 multiplication.
 * FP4 formats (compressors/nvfp4/base.py NVFP4PackedCompressor,
 * compressors/mxfp4/base.py MXFP4PackedCompressor; docs/formats/nvfp4.md):
 *   <m>.weight_packed U8 [N, K/2], E2M1 pairs, even column in the low
 *   nibble (pack_fp4_to_uint8); <m>.weight_scale [N, K/gs]: F8_E4M3 (NVFP4,
 *   gs 16) or U8 E8M0 exponents (MXFP4, gs 32); NVFP4 also
 *   <m>.weight_global_scale F32 [1]. No weight_shape is written (K is twice
 *   the packed width); one that is present must agree.
 *   Dense value (decompress -> forward.py dequantize, global scale as a
 *   [1] F32 tensor promotes the division to float32):
 *     NVFP4: e2m1 * (e4m3 / global) - the quotient rounded to float32
 *            first, then the product rounded;
 *     MXFP4: e2m1 * 2^(e - 127), exact.
 *   Upstream then casts to bf16 (unpack_fp4_from_uint8's dtype): its
 *   result is this float32 value rounded once more.
 * Grid view (integer formats, strategies tensor/channel/group): unsigned
 * codes u, zero zu = zq + 2^(b-1) (2^(b-1) when symmetric), so
 * (u - zu) * scale is the dense value bit for bit.
 */
#ifndef CT_MODEL_H
#define CT_MODEL_H

#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_tensor.h>

#include "qbk_reader.h"

#include <quantbridge/base/qb_streader.h>

#include "ct_config.h"

typedef enum ct_kind {
    CT_K_DENSE = 0,  /* float tensor passed through */
    CT_K_PACKED = 1, /* pack-quantized integer codes */
    CT_K_INT = 2,    /* naive/int-quantized I8 codes */
    CT_K_FLOAT = 3,  /* naive/float-quantized FP8 E4M3 values */
    CT_K_NVFP4 = 4,  /* nvfp4-pack-quantized */
    CT_K_MXFP4 = 5   /* mxfp4-pack-quantized */
} ct_kind;

typedef struct ct_tensor {
    char *name;                /* canonical name of a quantized module (owned); NULL for dense */
    ct_kind kind;
    const qb_st_tensor *w;     /* dense tensor, weight_packed or quantized weight */
    const qb_st_tensor *scale; /* NULL for dense */
    const qb_st_tensor *zp;    /* zero points or NULL (symmetric) */
    int zp_packed;             /* zp is I32 packed along N */
    int32_t *g_idx;            /* [cols] validated group map (owned) or NULL */
    int64_t rows, cols;        /* matrix view (N, K for quantized) */
    int bits;
    ct_strategy strategy;
    int64_t gs;                /* columns per group (group), K (tensor/channel) */
    int64_t bh, bw;            /* block */
    int64_t n_groups;          /* scale columns */
    int grid_symmetric;        /* every zero point is 2^(bits-1) */
    int has_grid;
    float gscale;              /* NVFP4 weight_global_scale (positive, finite) */
    char *encoding;            /* owned; NULL for dense */
} ct_tensor;

typedef struct ct_model {
    qbk_reader_model b;        /* directory and config (kit qbk_reader.h): first */
    ct_config cfg;
    ct_tensor *t;
    size_t n, cap;
    size_t n_quant;
    size_t *scheme_use;  /* [cfg.n] modules per scheme */
} ct_model;

/* The compressed-tensors format for the reader base (qb_streader.h). open
 * validates the checkpoint (see the file comment): every quantized module
 * has exactly its partners with the right dtypes and shapes, every partner
 * has its module, every module's scheme is found in config_groups (ignore
 * respected), everything else is a float dense tensor or an activation
 * parameter (dropped); messages name the file and tensor. Integer schemes
 * (tensor/channel/group strategies) offer the grid view. The data calls
 * are thread-safe (the model is immutable after open). */
extern const qb_streader_class ct_class;

/* Dense rows [row0, row0+n_rows) of t as float32 into dst. Thread-safe.
 * QB_E_RANGE for a bad range, QB_E_FORMAT for a code outside its range
 * (naive int), QB_E_NOMEM. */
qb_status ct_tensor_read_rows(const qb_host *h, const ct_tensor *t, int64_t row0, int64_t n_rows,
                              float *dst);

/* Grid rows into the caller's buffers (qb_tensor.h qb_grid_rows). Only for
 * t->has_grid. Thread-safe. Same errors as ct_tensor_read_rows. */
qb_status ct_tensor_read_grid(const qb_host *h, const ct_tensor *t, int64_t row0, int64_t n_rows,
                              uint8_t *codes, float *scales, int32_t *zeros);

#endif /* CT_MODEL_H */
