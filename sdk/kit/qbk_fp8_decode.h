/*
 * Exact decoding of the two 8-bit float formats found in checkpoints, and
 * of the float storage types that scales and dense tensors use (fp8 and
 * compressed-tensors readers).
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI): each
 * plugin links its own copy. Nothing here allocates, fails or keeps state:
 * every function is pure and thread-safe.
 */
#ifndef QBK_FP8_DECODE_H
#define QBK_FP8_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_safetensors.h>
#include <quantbridge/qb_tensor.h>

/* Value of an FP8 E4M3FN byte (OCP 8-bit FP spec / torch.float8_e4m3fn:
 * sign 1, exponent 4 with bias 7, mantissa 3, no infinities, S.1111.111 is
 * NaN, largest finite 448, subnormals m/8 * 2^-6). Exact: every value is a
 * float. Pure, thread-safe. */
float qbk_fp8_e4m3fn_to_f32(uint8_t b);

/* Value of an FP8 E5M2 byte (torch.float8_e5m2 = IEEE-style binary8: sign
 * 1, exponent 5 with bias 15, mantissa 2, S.11111.00 infinity, S.11111.xx
 * (xx != 0) NaN, subnormals m/4 * 2^-14). Exact. Pure, thread-safe. */
float qbk_fp8_e5m2_to_f32(uint8_t b);

/* Nonzero when `dt` is a float storage type qbk_float_store_to_f32 converts
 * (F32, F16, BF16, F8_E4M3, F8_E5M2), else 0. Pure, thread-safe. */
int qbk_float_store_ok(qb_dtype dt);

/* Bytes per element of a float storage type above (0 for others: callers
 * treat 0 as "not a float storage type"). Pure, thread-safe. */
size_t qbk_float_store_size(qb_dtype dt);

/* Converts n elements of float storage type `dt` at `src` (little-endian,
 * possibly unaligned) to float32 in dst. Every conversion is exact. The
 * caller guarantees qbk_float_store_ok(dt) and the buffer sizes. Pure,
 * thread-safe. */
void qbk_float_store_to_f32(qb_dtype dt, const uint8_t *src, size_t n, float *dst);

#endif /* QBK_FP8_DECODE_H */
