/*
 * compressed-tensors writer — one row's codes, scales and zero points:
 * the model dtype's rounding, round-to-nearest quantization as the
 * compressed-tensors library computes it, and pack_to_int32's bit order
 * (docs/formats/compressed-tensors.md, "pack-quantized", "Round to nearest").
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include <quantbridge/qb_half.h>

#include "ctw.h"
#include "qbk_fp8_decode.h"
#include "qbk_int4_rules.h"

/* torch.finfo(D).eps: the scale calculate_qparams puts in place of 0. */
static float ctw_eps(qb_dtype dt)
{
    return dt == QB_DT_F16 ? 0x1p-10f : dt == QB_DT_BF16 ? 0x1p-7f : FLT_EPSILON;
}

/* torch.round: to nearest, ties to even (rintf in the default mode). */
static float ctw_clamp_round(float v, float lo, float hi)
{
    v = v < lo ? lo : v > hi ? hi : v;
    return rintf(v);
}

void ctw_rtn_row(qb_dtype dt, const ctw_scheme *sc, int minmax, const float *x, int64_t cols,
                 int8_t *q,
                 float *s, int8_t *z, double *err2, double *ref2, double *err_max)
{
    int64_t gs = sc->group_size > 0 ? sc->group_size : cols, g0, k;
    float qmin = (float)-(1 << (sc->bits - 1)), qmax = (float)((1 << (sc->bits - 1)) - 1);
    float range = qmax - qmin;
    size_t g = 0;

    for (g0 = 0; g0 < cols; g0 += gs, g++) {
        int64_t end = g0 + gs < cols ? g0 + gs : cols;
        float mn = 0.0f, mx = 0.0f, sc_v, zf = 0.0f;
        /* calculate_qparams: 0 always representable (min <= 0 <= max) */
        for (k = g0; k < end; k++) {
            mn = x[k] < mn ? x[k] : mn;
            mx = x[k] > mx ? x[k] : mx;
        }
        if (sc->symmetric) {
            float amax = -mn > mx ? -mn : mx;
            /* minmax: max_val_pos / (bit_range / 2), one division in D */
            sc_v = qbk_out_dt_round(dt, amax / qbk_out_dt_round(dt, minmax ? range / 2.0f : qmax));
        } else {
            sc_v = qbk_out_dt_round(dt, qbk_out_dt_round(dt, mx - mn) / range);
        }
        if (sc_v == 0.0f)
            sc_v = ctw_eps(dt);
        if (!sc->symmetric)
            /* bit_min - min / scale, clamped, then an integer */
            zf = ctw_clamp_round(qbk_out_dt_round(dt, qmin - qbk_out_dt_round(dt, mn / sc_v)),
                                 qmin, qmax);
        s[g] = sc_v;
        z[g] = (int8_t)zf;
        for (k = g0; k < end; k++) {
            float v = qbk_out_dt_round(dt, x[k] / sc_v);
            float d, e;
            if (!sc->symmetric)
                v = qbk_out_dt_round(dt, v + zf);
            v = ctw_clamp_round(v, qmin, qmax);
            q[k] = (int8_t)v;
            d = (v - zf) * sc_v;
            e = fabsf(d - x[k]);
            *err2 += (double)e * e;
            *ref2 += (double)x[k] * x[k];
            if (e > *err_max)
                *err_max = e;
        }
    }
}

int ctw_int4_rule_row(qb_dtype dt, int rule, int64_t gs, const float *x, int64_t cols, int8_t *q,
                      float *s, double *err2, double *ref2, double *err_max)
{
    int64_t g0, k;
    size_t g = 0;
    if (gs <= 0)
        gs = cols;
    for (g0 = 0; g0 < cols; g0 += gs, g++) {
        int64_t n = g0 + gs < cols ? gs : cols - g0;
        double e2;
        int rc = qbk_int4_group(QBK_I4E_AUTO, dt, x + g0, (size_t)n, (qbk_int4_rule)rule, q + g0,
                                &s[g], &e2);
        if (rc != 0)
            return rc;
        /* all codes 0 decode to 0 whatever the scale: the library's eps */
        if (s[g] == 0.0f)
            s[g] = ctw_eps(dt);
        *err2 += e2;
        for (k = g0; k < g0 + n; k++) {
            float e = fabsf((float)q[k] * s[g] - x[k]); /* the fp32 decode the rules judge */
            *ref2 += (double)x[k] * x[k];
            if (e > *err_max)
                *err_max = e;
        }
    }
    return 0;
}

uint8_t ctw_f32_to_e4m3(float v)
{
    uint8_t sign = signbit(v) ? 0x80 : 0;
    float a = fabsf(v), q;
    int e;

    if (a == 0.0f)
        return sign;
    if (a < 0x1p-6f) {
        /* subnormals step 2^-9; q = 8 is the smallest normal, code 0x08 */
        return (uint8_t)(sign | (uint8_t)rintf(a * 0x1p9f));
    }
    frexpf(a, &e); /* a in [2^(e-1), 2^e) */
    e -= 1;
    q = rintf(ldexpf(a, 3 - e)); /* 8 .. 16: 1.mmm in eighths, ties to even */
    if (q >= 16.0f) {
        q = 8.0f;
        e++;
    }
    if (e > 8 || (e == 8 && q > 14.0f))
        return (uint8_t)(sign | 0x7e); /* 448: callers clamp, this only guards */
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)((int)q - 8));
}

void ctw_fp8_row(qb_dtype dt, const float *x, int64_t cols, uint8_t *q, float *s, double *err2,
                 double *ref2, double *err_max)
{
    float mn = 0.0f, mx = 0.0f, amax, sc;
    int64_t k;

    for (k = 0; k < cols; k++) {
        mn = x[k] < mn ? x[k] : mn;
        mx = x[k] > mx ? x[k] : mx;
    }
    amax = -mn > mx ? -mn : mx;
    /* calculate_qparams: max_val_pos / (bit_range / 2), bit_range 896 for
     * float8_e4m3fn's -448 .. 448 */
    sc = qbk_out_dt_round(dt, amax / 448.0f);
    if (sc == 0.0f)
        sc = ctw_eps(dt);
    *s = sc;
    for (k = 0; k < cols; k++) {
        float v = qbk_out_dt_round(dt, x[k] / sc), d, e;
        v = v < -448.0f ? -448.0f : v > 448.0f ? 448.0f : v;
        q[k] = ctw_f32_to_e4m3(v);
        d = qbk_fp8_e4m3fn_to_f32(q[k]) * sc;
        e = fabsf(d - x[k]);
        *err2 += (double)e * e;
        *ref2 += (double)x[k] * x[k];
        if (e > *err_max)
            *err_max = e;
    }
}

uint8_t ctw_f32_to_e2m1(float v)
{
    uint8_t sign = v < 0.0f ? 0x8 : 0;
    float a = fabsf(v);
    uint8_t m;
    /* cast_to_fp4's buckets: ties go to the even code (0.25 -> 0, 0.75 -> 1,
     * 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4) */
    m = a <= 0.25f ? 0 : a < 0.75f ? 1 : a <= 1.25f ? 2 : a < 1.75f ? 3 : a <= 2.5f ? 4
        : a < 3.5f ? 5 : a <= 5.0f ? 6 : 7;
    return (uint8_t)(sign | m);
}

void ctw_pack_e2m1_row(const uint8_t *codes, int64_t cols, uint8_t *out)
{
    int64_t k;
    for (k = 0; k + 1 < cols; k += 2)
        out[k / 2] = (uint8_t)((codes[k] & 0xF) | ((codes[k + 1] & 0xF) << 4));
}

float ctw_nvfp4_global(qb_dtype dt, float amax)
{
    float tiny = dt == QB_DT_F16 ? 0x1p-14f : FLT_MIN, g;
    amax = amax < tiny ? tiny : amax;
    /* scale_data.max * quant_data.max / max_val_pos: a Python number over a
     * tensor in D, which torch's Tensor.__rtruediv__ computes as
     * reciprocal() * 2688, two roundings in D */
    g = qbk_out_dt_round(dt, qbk_out_dt_round(dt, 1.0f / amax) * 2688.0f);
    return isfinite(g) ? g : 1.0f;
}

void ctw_nvfp4_row(qb_dtype dt, float gs, const float *x, int64_t cols, uint8_t *q, uint8_t *s,
                   double *err2, double *ref2, double *err_max)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    int64_t g0, k;
    for (g0 = 0; g0 + 16 <= cols; g0 += 16) {
        float amax = 0.0f, t, sc;
        uint8_t b;
        for (k = g0; k < g0 + 16; k++)
            amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
        /* max_val_pos / (bit_range / 2) in D, bit_range 12; times the
         * float32 global scale (a 1-element tensor: float32 product) */
        t = gs * qbk_out_dt_round(dt, amax / 6.0f);
        t = t > 448.0f ? 448.0f : t;
        b = ctw_f32_to_e4m3(t);
        if ((b & 0x7f) == 0)
            b = 0x20; /* eps of float8_e4m3fn in calculate_qparams: 0.125 */
        s[g0 / 16] = b;
        /* _quantize: scale / global_scale, then x / scale, both float32 */
        sc = qbk_fp8_e4m3fn_to_f32(b) / gs;
        for (k = g0; k < g0 + 16; k++) {
            float v = x[k] / sc, d, e;
            v = v < -6.0f ? -6.0f : v > 6.0f ? 6.0f : v;
            q[k] = ctw_f32_to_e2m1(v);
            d = (q[k] & 8 ? -mag[q[k] & 7] : mag[q[k] & 7]) * sc;
            e = fabsf(d - x[k]);
            *err2 += (double)e * e;
            *ref2 += (double)x[k] * x[k];
            if (e > *err_max)
                *err_max = e;
        }
    }
}
