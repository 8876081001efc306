/*
 * Exact decoding of the 4-bit float formats of MXFP4 and NVFP4 checkpoints
 * and of their block scales: E2M1 elements (OCP Microscaling spec v1.0,
 * "FP4 E2M1"), E8M0 shared exponents (OCP MX "E8M0", MXFP4 block scale) and
 * the nibble order both pack in. docs/formats/fp4.md states the facts.
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI). Nothing
 * here allocates, fails or keeps state: every function is pure and
 * thread-safe. NVFP4's E4M3 group scales decode with qbk_fp8_e4m3fn_to_f32.
 */
#ifndef QBK_FP4_DECODE_H
#define QBK_FP4_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Value of the low 4 bits of `nib` as an E2M1 float: sign 1, exponent 2
 * with bias 1, mantissa 1, no infinity or NaN; magnitudes 0, 0.5, 1, 1.5,
 * 2, 3, 4, 6. Bits above the fourth are ignored. Exact. Pure, thread-safe. */
float qbk_fp4_e2m1_to_f32(uint8_t nib);

/* Value of an E8M0 byte: 2^(e - 127) for e in 0..254 (2^-127 is a float
 * subnormal, still exact); e = 255 is NaN (OCP MX). Pure, thread-safe. */
float qbk_e8m0_to_f32(uint8_t e);

/* Decodes n E2M1 elements packed two per byte, element 2i in the low
 * nibble of src[i] and 2i+1 in the high nibble (the order of both
 * compressed-tensors' pack_fp4_to_uint8 and gpt-oss's `_blocks`), each
 * multiplied by `scale`, into dst. A product is exact whenever `scale` is a
 * power of two in range; otherwise it is the correctly rounded float
 * product. n may be odd (the last high nibble is then unused). The caller
 * guarantees ceil(n/2) readable bytes and n writable floats. Pure,
 * thread-safe. */
void qbk_fp4_e2m1_row_to_f32(const uint8_t *src, size_t n, float scale, float *dst);

#endif /* QBK_FP4_DECODE_H */
