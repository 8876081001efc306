/*
 * qbk_encode_check.c — see qbk_encode_check.h. The range test goes
 * through the same rounding the writers use (qb_half.h), so "overflows"
 * means exactly "the written value would be infinity".
 */
#include "qbk_encode_check.h"

#include <math.h>

#include <quantbridge/qb_half.h>

static int rounds_to_inf(qb_dtype dt, float x)
{
    switch (dt) {
    case QB_DT_F16: return (qb_f32_to_f16(x) & 0x7fffu) == 0x7c00u;
    case QB_DT_BF16: return (qb_f32_to_bf16(x) & 0x7fffu) == 0x7f80u;
    default: return 0;
    }
}

size_t qbk_encode_check(qb_dtype dt, const float *v, size_t n, int allow_nonfinite,
                        qbk_encode_bad *why)
{
    size_t i;
    *why = QBK_ENCODE_OK;
    for (i = 0; i < n; i++) {
        float x = v[i];
        if (!isfinite(x)) {
            if (allow_nonfinite)
                continue;
            *why = QBK_ENCODE_NONFINITE;
            return i;
        }
        if (rounds_to_inf(dt, x)) {
            *why = QBK_ENCODE_RANGE;
            return i;
        }
    }
    return n;
}

const char *qbk_encode_dtype_name(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_F16: return "f16";
    case QB_DT_BF16: return "bf16";
    case QB_DT_F32: return "f32";
    default: return "?";
    }
}
