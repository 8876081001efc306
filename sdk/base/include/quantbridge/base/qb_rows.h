/*
 * quantbridge reader base library — dense float rows (qb_base.h).
 *
 * The dense float storage types a reader passes through unchanged (F32,
 * F16, BF16, little-endian as safetensors stores them), their conversion
 * to the float32 rows every reader serves, and releasing the pages of a
 * mapped tensor once its rows are read. Every function is pure or touches
 * only its arguments; all are thread-safe and none allocates.
 */
#ifndef QUANTBRIDGE_BASE_QB_ROWS_H
#define QUANTBRIDGE_BASE_QB_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes per element of a dense float storage type: 4 (F32), 2 (F16,
 * BF16), 0 for every other dtype (not a dense float type). */
size_t qb_rows_dense_size(qb_dtype dt);

/* Encoding text of a dense float type ("f32", "f16", "bf16"), static, or
 * NULL for any other dtype. */
const char *qb_rows_dense_encoding(qb_dtype dt);

/* Converts n elements of dense float type `dt` at `src` (little-endian,
 * any alignment) to float32 in dst (n floats, not overlapping src). Exact:
 * every F16 and BF16 value is a float (F16 uses the CPU's F16C
 * instructions when it has them, which agree bit for bit except that a
 * signaling NaN comes back quieted). Returns 0, or -1 for another dtype
 * (dst untouched). */
int qb_rows_to_f32(qb_dtype dt, const uint8_t *src, size_t n, float *dst);

/* Releases from this process the whole pages inside [p, p + n) of a
 * read-only file mapping, such as the host's safetensors mapping, so a
 * reader streaming a checkpoint keeps a flat resident set: the range is
 * rounded inward (a page shared with other bytes stays), the page cache
 * keeps the data and a later read maps it again. Never call it on
 * anonymous or written memory (its contents would be lost). p NULL or n 0
 * does nothing; a failure only leaves the pages resident. */
void qb_rows_drop_pages(const void *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_BASE_QB_ROWS_H */
