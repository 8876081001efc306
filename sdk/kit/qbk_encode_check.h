/*
 * qbk_encode_check.h — the writer-side check that keeps a float output
 * from being silently wrong: a source value that is NaN or infinite, or a
 * finite value that the output dtype cannot hold (rounding it would give
 * infinity), is found before anything is encoded, so the writer can name
 * the tensor, the element and the value. Internal kit code, never ABI.
 */
#ifndef QBK_ENCODE_CHECK_H
#define QBK_ENCODE_CHECK_H

#include <stddef.h>

#include <quantbridge/qb_tensor.h>

/* Why an element was refused. */
typedef enum qbk_encode_bad {
    QBK_ENCODE_OK = 0,
    QBK_ENCODE_NONFINITE = 1, /* NaN or +-infinity in the source */
    QBK_ENCODE_RANGE = 2      /* finite, but rounds to infinity in dt */
} qbk_encode_bad;

/* Scans v[0..n) for the first element that encoding to dt (QB_DT_F16,
 * QB_DT_BF16 or QB_DT_F32; round to nearest even) would make wrong: a
 * non-finite value unless allow_nonfinite, or a finite value beyond dt's
 * range (f16: |v| rounds above 65504; bf16: above ~3.39e38). Returns the
 * index (and *why) of the first such element, or n with *why
 * QBK_ENCODE_OK. Pure; thread-safe. */
size_t qbk_encode_check(qb_dtype dt, const float *v, size_t n, int allow_nonfinite,
                        qbk_encode_bad *why);

/* "f16", "bf16" or "f32" for those dtypes, else "?". Pure. */
const char *qbk_encode_dtype_name(qb_dtype dt);

#endif /* QBK_ENCODE_CHECK_H */
