/*
 * gguf_ggml — ggml tensor types for the GGUF reader: the type table (block
 * size, bytes per block, supported or not) and a dequantizer for every
 * ggml block type that can appear in a GGUF file.
 *
 * Facts follow ggml-org/ggml `include/ggml.h` (enum ggml_type),
 * `src/ggml.c` (type_traits[]: blck_size, type_size) and `src/ggml-quants.c`
 * (dequantize_row_*); see also docs/formats/gguf.md "ggml type table".
 *
 * Exactness: gguf_ggml_dequantize_row produces the same fp32 bits as ggml's
 * own scalar dequantize_row_<type> for the same bytes (same float operations
 * in the same order, never fused into FMAs), so a GGUF tensor decodes here
 * exactly as llama.cpp's reference path decodes it. Q8_1 has no ggml
 * decoder (a dot-product intermediate): it decodes as qs[e] * d, like Q8_0.
 * NaN outputs (only from NaN/Inf scales) are NaN; their sign/payload match
 * ggml built with GCC, which IEEE 754 leaves unspecified.
 *
 * Threading: everything here is pure and reentrant; the tables are const.
 * Nothing allocates.
 */
#ifndef GGUF_GGML_TYPES_H
#define GGUF_GGML_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids as stored in GGUF tensor infos (ggml.h enum ggml_type).
 * Ids 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4...) and 36-38 (IQ4_NL_4_4...) were
 * removed upstream and never valid in a file this reader accepts. */
enum {
    GGUF_GGML_TYPE_F32 = 0,
    GGUF_GGML_TYPE_F16 = 1,
    GGUF_GGML_TYPE_Q4_0 = 2,
    GGUF_GGML_TYPE_Q4_1 = 3,
    GGUF_GGML_TYPE_Q5_0 = 6,
    GGUF_GGML_TYPE_Q5_1 = 7,
    GGUF_GGML_TYPE_Q8_0 = 8,
    GGUF_GGML_TYPE_Q8_1 = 9,
    GGUF_GGML_TYPE_Q2_K = 10,
    GGUF_GGML_TYPE_Q3_K = 11,
    GGUF_GGML_TYPE_Q4_K = 12,
    GGUF_GGML_TYPE_Q5_K = 13,
    GGUF_GGML_TYPE_Q6_K = 14,
    GGUF_GGML_TYPE_Q8_K = 15,
    GGUF_GGML_TYPE_IQ2_XXS = 16,
    GGUF_GGML_TYPE_IQ2_XS = 17,
    GGUF_GGML_TYPE_IQ3_XXS = 18,
    GGUF_GGML_TYPE_IQ1_S = 19,
    GGUF_GGML_TYPE_IQ4_NL = 20,
    GGUF_GGML_TYPE_IQ3_S = 21,
    GGUF_GGML_TYPE_IQ2_S = 22,
    GGUF_GGML_TYPE_IQ4_XS = 23,
    GGUF_GGML_TYPE_I8 = 24,
    GGUF_GGML_TYPE_I16 = 25,
    GGUF_GGML_TYPE_I32 = 26,
    GGUF_GGML_TYPE_I64 = 27,
    GGUF_GGML_TYPE_F64 = 28,
    GGUF_GGML_TYPE_IQ1_M = 29,
    GGUF_GGML_TYPE_BF16 = 30,
    GGUF_GGML_TYPE_TQ1_0 = 34,
    GGUF_GGML_TYPE_TQ2_0 = 35,
    GGUF_GGML_TYPE_MXFP4 = 39,
    GGUF_GGML_TYPE_NVFP4 = 40,
    GGUF_GGML_TYPE_Q1_0 = 41,
    GGUF_GGML_TYPE_Q2_0 = 42,
    GGUF_GGML_TYPE_ID_END = 43 /* one past the last id in the table */
};

/* QK_K: elements per super-block of the K- and I-quants (ggml-common.h). */
#define GGUF_GGML_QK_K 256

/* One row of the type table. */
typedef struct gguf_ggml_type_info {
    const char *name;    /* ggml's name: "Q4_K", "IQ2_XXS", "F32", ... */
    uint32_t blck;       /* elements per block (1 for plain types) */
    uint32_t bytes;      /* bytes per block */
    int supported;       /* 1: gguf_ggml_dequantize_row decodes it */
    uint32_t scale_cols; /* consecutive elements of a row that share one
                            scale (a legacy block, a K-quant sub-block), or
                            0 where the type is plain or not stated here */
} gguf_ggml_type_info;

/* The table row for `type`, or NULL when the id is unknown or was removed
 * upstream (4, 5, 31-33, 36-38, >= GGUF_GGML_TYPE_ID_END): a reader must
 * refuse such a tensor by its number. The returned pointer is static. */
const gguf_ggml_type_info *gguf_ggml_type_get(uint32_t type);

/* ggml's name of `type`, or NULL for an unknown/removed id. Static string. */
const char *gguf_ggml_type_name(uint32_t type);

/* 1 when gguf_ggml_dequantize_row can decode `type`, else 0 (unknown id,
 * removed id, or a known type without a decoder). */
int gguf_ggml_type_supported(uint32_t type);

/* Bytes used by `n_elems` consecutive elements of `type` (one row).
 * Returns 0 (QB_OK) and stores the size in *out; QB_E_UNSUPPORTED (-3) for an
 * unknown or removed id; QB_E_INVALID (-2) when n_elems is negative or not a
 * multiple of the block size; QB_E_RANGE (-11) when the size overflows
 * uint64_t. *out is untouched on failure. Works for every known id, also the
 * ones without a decoder (a reader can still skip over their bytes). */
int gguf_ggml_row_bytes(uint32_t type, int64_t n_elems, uint64_t *out);

/* Decodes `n` elements of `type` from `src` (n / blck whole blocks, exactly
 * gguf_ggml_row_bytes(type, n) bytes, no alignment needed) into dst[0..n).
 * Preconditions (asserted, caller's duty): gguf_ggml_type_supported(type),
 * n >= 0 and a multiple of the block size, src/dst non-NULL when n > 0 and
 * not overlapping. Output bits equal ggml's dequantize_row_<type>; integer
 * types (I8..I64) convert with a C cast, F64 with a C cast to float. */
void gguf_ggml_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* GGUF_GGML_TYPES_H */
