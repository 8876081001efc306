/*
 * sm86-w4a16 — GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training
 * Quantization for Generative Pre-trained Transformers", Algorithm 1):
 * quantize a linear's columns one at a time and push each column's error
 * onto the columns not yet quantized, through the inverse of the input's
 * Hessian H = X^T X (qb_stats_api.hessian), so that ||W X - Q X|| rather
 * than ||W - Q|| is what stays small. docs/fidelity.md, "GPTQ".
 *
 * As published (and as its reference code does):
 *   - a column j no input ever used (H_jj = 0) is "dead": H_jj = 1 and its
 *     weights are set to 0 before quantization;
 *   - dampening: H += percdamp * mean(diag H) * I, percdamp = 0.01;
 *   - U = the upper Cholesky factor of H^-1 (H^-1 = U^T U); the error of
 *     column i, err = (w_i - q_i) / U_ii, is subtracted as err * U[i, k]
 *     from every later column k;
 *   - lazy batches: the update inside a block of columns right away, onto
 *     the columns after the block once per block;
 *   - groups: a group's scale is fixed when its first column comes up,
 *     from the weights as they are then (already updated). Ours is the
 *     format's symmetric int4 scale, absmax / 7 in fp16 (quantize.c's
 *     ABSMAX), q = clamp(round(w / s), -8, 7).
 * The block is a multiple of the group size (128 columns when the group
 * divides 128), so a group never straddles a block and every column's
 * scale sees all earlier updates: the result is that of the plain
 * column-by-column algorithm, only the order of float operations differs.
 *
 * U is computed in double: the Cholesky factor L of the index-reversed
 * matrix J H J, then U = J L^-1 J (U^T U = J L^-T L^-1 J = (J L L^T J)^-1
 * = H^-1, and J (lower) J is upper): the unique factor with a positive
 * diagonal, in n^3/3 + n^3/6 multiply-adds instead of the three
 * factorizations of the reference code.
 */
#include "w4w.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"

int64_t w4w_gptq_block(int64_t gs)
{
    int64_t k = gs >= W4W_GPTQ_BLOCK ? 1 : W4W_GPTQ_BLOCK / gs;
    return gs * k;
}

int w4w_gptq_prepare(float *H, int64_t n, double percdamp, float *U, uint8_t *dead,
                     int64_t *n_dead)
{
    double *L = NULL, *X = NULL, mean = 0.0, damp;
    int64_t i, j, k, nd = 0;
    int rc = 0;

    for (i = 0; i < n; i++) {
        float d = H[i * n + i];
        if (!isfinite(d))
            return W4W_EQUANT_NONFINITE;
        dead[i] = d == 0.0f;
        if (dead[i]) {
            H[i * n + i] = 1.0f;
            nd++;
        }
        mean += (double)H[i * n + i];
    }
    *n_dead = nd;
    damp = percdamp * mean / (double)n;
    L = qbk_malloc((size_t)(n * n) * sizeof *L);
    X = qbk_calloc((size_t)(n * n), sizeof *X);
    if (!L || !X) {
        rc = W4W_GPTQ_NOMEM;
        goto out;
    }
    /* L L^T = J (H + damp I) J, row by row (Cholesky-Banachiewicz) */
    for (i = 0; i < n; i++) {
        double *li = L + i * n;
        for (j = 0; j <= i; j++) {
            const double *lj = L + j * n;
            double s = (double)H[(n - 1 - i) * n + (n - 1 - j)] + (i == j ? damp : 0.0);
            for (k = 0; k < j; k++)
                s -= li[k] * lj[k];
            if (i == j) {
                if (!(s > 0.0) || !isfinite(s)) {
                    rc = W4W_GPTQ_NOT_PD;
                    goto out;
                }
                li[i] = sqrt(s);
            } else {
                li[j] = s / lj[j];
            }
        }
    }
    /* X = L^-1, row by row: row i = (e_i - sum_{k<i} L[i][k] row k) / L[i][i] */
    for (i = 0; i < n; i++) {
        double *xi = X + i * n, inv = 1.0 / L[i * n + i];
        for (k = 0; k < i; k++) {
            double f = L[i * n + k];
            const double *xk = X + k * n;
            if (f == 0.0)
                continue;
            for (j = 0; j <= k; j++)
                xi[j] -= f * xk[j];
        }
        for (j = 0; j < i; j++)
            xi[j] *= inv;
        xi[i] = inv;
    }
    /* U = J X J */
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            U[i * n + j] = j >= i ? (float)X[(n - 1 - i) * n + (n - 1 - j)] : 0.0f;
out:
    qbk_free(L);
    qbk_free(X);
    return rc;
}

/* fp16 rounding of absmax / 7: 0 and *s, or W4W_EQUANT_OVERFLOW. */
static int group_scale(const float *w, int64_t n, uint16_t *bits, float *s)
{
    float amax = 0.0f;
    uint16_t h;
    int64_t i;
    for (i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        if (!isfinite(w[i]))
            return W4W_EQUANT_NONFINITE;
        if (a > amax)
            amax = a;
    }
    h = qb_f32_to_f16(amax / 7.0f);
    if ((h & 0x7c00u) == 0x7c00u)
        return W4W_EQUANT_OVERFLOW;
    *bits = h;
    *s = qb_f16_to_f32(h);
    return 0;
}

int w4w_gptq_rows(float *W, int64_t rows, int64_t cols, const float *U, const uint8_t *dead,
                  int64_t gs, const float *imp, int8_t *q, uint16_t *scales, float *err)
{
    const int64_t B = w4w_gptq_block(gs), ng = (cols + gs - 1) / gs;
    int64_t r, c, i, i1, k;

    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++)
            if (dead[c])
                W[r * cols + c] = 0.0f;
    for (i1 = 0; i1 < cols; i1 += B) {
        int64_t i2 = i1 + B < cols ? i1 + B : cols;
        for (r = 0; r < rows; r++) {
            float *w = W + r * cols, *e = err + r * B, s = 0.0f;
            int8_t *qr = q + r * cols;
            for (i = i1; i < i2; i++) {
                const float *u = U + i * cols;
                float rq, d, ei;
                int v = 0;
                if (i % gs == 0) {
                    int64_t n = i + gs < cols ? gs : cols - i;
                    double ge;
                    /* the weighted search writes codes for the group into
                     * qr, overwritten column by column below */
                    int grc = imp ? w4w_quant_group_weighted(w + i, imp + i, (size_t)n, qr + i,
                                                             &scales[r * ng + i / gs], &ge)
                                  : group_scale(w + i, n, &scales[r * ng + i / gs], &s);
                    if (grc)
                        return grc;
                    s = qb_f16_to_f32(scales[r * ng + i / gs]);
                } else if (i == i1) {
                    s = qb_f16_to_f32(scales[r * ng + i / gs]);
                }
                if (s != 0.0f) {
                    rq = rintf(w[i] / s);
                    v = rq < (float)W4A16_INT4_QMIN   ? W4A16_INT4_QMIN
                        : rq > (float)W4A16_INT4_QMAX ? W4A16_INT4_QMAX
                                                      : (int)rq;
                }
                qr[i] = (int8_t)v;
                d = (float)v * s;
                ei = (w[i] - d) / u[i];
                e[i - i1] = ei;
                if (ei != 0.0f)
                    for (k = i + 1; k < i2; k++)
                        w[k] -= ei * u[k];
            }
            /* the block's errors onto the columns after it */
            for (k = 0; k < i2 - i1; k++) {
                const float *u = U + (i1 + k) * cols;
                float ek = e[k];
                if (ek == 0.0f)
                    continue;
                for (c = i2; c < cols; c++)
                    w[c] -= ek * u[c];
            }
        }
    }
    return 0;
}
