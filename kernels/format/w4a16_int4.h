/*
 * w4a16_int4 — the int4 code layout of a W4A16 packed linear
 * (docs/w4a16-format.md, "Encoding of a packed linear"): codes q in
 * [-8, 7]; byte c / 2 of a row holds column c in its low nibble when c is
 * even, in its high nibble when c is odd; a nibble stores q + 8; with an
 * odd column count the unused last high nibble is 8 (q = 0); decoded value
 * q * scales[c / group_size] in fp32.
 *
 * One definition for every writer and reader of the layout: the
 * sm86-w4a16 plugin (writer and reader) and libquantbridge-w4a16's CPU
 * GEMM and loader. Tuned kernels that decode many nibbles per instruction
 * (w4a16_gemm_avx2.c) keep their own vector loop and use this file for the
 * constants, counts and the scalar tail.
 *
 * Every function is pure and thread-safe; none allocates. Sizes are
 * int64_t and the counts never overflow for cols, group_size >= 1.
 */
#ifndef W4A16_INT4_H
#define W4A16_INT4_H

#include <stdint.h>

/* Range of a code and the nibble bias: nibble = q + W4A16_INT4_BIAS. The
 * bias is also the grid's zero point when codes are handed out as
 * unsigned nibbles (qb_grid_rows: dense = (code - zero) * scale). */
#define W4A16_INT4_QMIN (-8)
#define W4A16_INT4_QMAX 7
#define W4A16_INT4_BIAS 8

/* Bytes of one packed row of `cols` codes: ceil(cols / 2). cols >= 0. */
static inline int64_t w4a16_int4_packed_bytes(int64_t cols)
{
    return cols / 2 + (cols & 1);
}

/* Scale groups of one row: ceil(cols / group_size); the last group may be
 * shorter. cols >= 0, group_size >= 1. */
static inline int64_t w4a16_int4_n_groups(int64_t cols, int64_t group_size)
{
    return cols / group_size + (cols % group_size != 0);
}

/* The stored nibble (q + 8, 0..15) of column c of a packed row. */
static inline unsigned w4a16_int4_nibble(const uint8_t *row, int64_t c)
{
    unsigned b = row[c >> 1];
    return (c & 1) ? b >> 4 : b & 0x0fu;
}

/* The code q (-8..7) of column c of a packed row. */
static inline int w4a16_int4_code(const uint8_t *row, int64_t c)
{
    return (int)w4a16_int4_nibble(row, c) - W4A16_INT4_BIAS;
}

/* Packs codes q[0 .. cols) (each in [-8, 7]; others give an unspecified
 * byte) into out[0 .. w4a16_int4_packed_bytes(cols)), odd tail nibble 8.
 * SSE2 where the target has it (every x86-64), same bytes as scalar. */
void w4a16_int4_pack_row(const int8_t *q, int64_t cols, uint8_t *out);

/* Inverse of w4a16_int4_pack_row: q[c] = nibble - 8 for c in [0, cols). */
void w4a16_int4_unpack_row(const uint8_t *in, int64_t cols, int8_t *q);

/* The codes of a packed row as fp32 (exact: small integers):
 * codes[c] = q[c] for c in [0, cols). */
void w4a16_int4_codes_f32(const uint8_t *in, int64_t cols, float *codes);

/* Decodes one packed row: the value of stored column c,
 * q[c] * f16(scales[c / group_size]) in fp32, goes to out[perm[c]], or to
 * out[c] when perm is NULL (feature input_permutation: stored column c is
 * input column perm[c]; the caller has checked perm is a permutation of
 * 0 .. cols-1). `scales` holds w4a16_int4_n_groups(cols, group_size)
 * little-endian fp16 values at any alignment (a mapped file's bytes).
 * group_size >= 1. */
void w4a16_int4_decode_row(const uint8_t *packed, const void *scales, int64_t cols,
                         int64_t group_size, const int32_t *perm, float *out);

#endif /* W4A16_INT4_H */
