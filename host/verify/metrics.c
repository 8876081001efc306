/*
 * quantbridge verify — the metrics: streaming accumulators over row
 * blocks (element errors) and the W·x probe. Everything is summed in
 * double so a 4-bit error of 1e-1 and a rounding error of 1e-8 are both
 * measured, whatever the tensor size.
 */
#include "verify.h"

#include <math.h>
#include <string.h>

void qbh_vm_acc_init(qbh_vm_acc *acc)
{
    memset(acc, 0, sizeof *acc);
}

void qbh_vm_acc_add(qbh_vm_acc *acc, const float *a, const float *b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t ba, bb;
        double x = a[i], y = b[i], d;
        memcpy(&ba, &a[i], 4);
        memcpy(&bb, &b[i], 4);
        /* A zero of the other sign is the same value: a format whose
         * reference decoder reads the code of -0 through an integer table
         * gives +0 for the source's -0 (docs/verify.md, the exact rule). */
        if (ba != bb && !(x == 0.0 && y == 0.0))
            acc->n_diff++;
        if (!isfinite(x) || !isfinite(y)) {
            /* A NaN or Inf that the conversion kept bit for bit is no error;
             * any other pairing would poison every sum, so it is counted
             * apart and fails the tensor (cmd_verify never hides it). */
            if (ba != bb)
                acc->n_bad_nonfinite++;
            continue;
        }
        d = y - x;
        if (fabs(d) > acc->max_abs)
            acc->max_abs = fabs(d);
        acc->ss_err += d * d;
        acc->ss_a += x * x;
        acc->ss_b += y * y;
        acc->dot += x * y;
    }
    acc->n += n;
}

double qbh_vm_cosine(double dot, double ss_a, double ss_b)
{
    double c;
    if (ss_a == 0.0 && ss_b == 0.0)
        return 1.0;
    if (ss_a == 0.0 || ss_b == 0.0)
        return 0.0;
    c = dot / (sqrt(ss_a) * sqrt(ss_b));
    /* Rounding can put an identical pair a hair above 1. */
    return c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
}

void qbh_vm_acc_metrics(const qbh_vm_acc *acc, double *rel_rmse, double *cosine, double *snr_db)
{
    if (acc->ss_a > 0.0)
        *rel_rmse = sqrt(acc->ss_err / acc->ss_a);
    else
        *rel_rmse = acc->ss_err == 0.0 ? 0.0 : INFINITY;
    *cosine = qbh_vm_cosine(acc->dot, acc->ss_a, acc->ss_b);
    if (acc->ss_err == 0.0)
        *snr_db = INFINITY;
    else if (acc->ss_a == 0.0)
        *snr_db = -INFINITY;
    else
        *snr_db = 10.0 * log10(acc->ss_a / acc->ss_err);
}

/* splitmix64 (Steele, Lea, Flood 2014): a fixed, portable generator, so
 * the probe vectors are the same on every machine and in every release. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

qb_status qbh_vm_wx_init(qbh_vm_wx *wx, int k, int64_t cols, uint64_t seed)
{
    int v;
    int64_t c;
    memset(wx, 0, sizeof *wx);
    if (k < 1 || k > 16 || cols < 1)
        return qbh_error_set(QB_E_INVALID, "verify: probe with %d vectors of %lld columns", k,
                             (long long)cols);
    wx->x = qbh_calloc((size_t)k * (size_t)cols, sizeof *wx->x);
    wx->sums = qbh_calloc(3 * (size_t)k, sizeof *wx->sums);
    if (!wx->x || !wx->sums) {
        qbh_vm_wx_free(wx);
        return qbh_error_set(QB_E_NOMEM, "verify: out of memory for %d probe vectors of %lld",
                             k, (long long)cols);
    }
    wx->k = k;
    wx->cols = cols;
    for (v = 0; v < k; v++) {
        uint64_t s = seed ^ (UINT64_C(0x100000001b3) * (uint64_t)(v + 1));
        for (c = 0; c < cols; c++) {
            /* 53 random bits -> [0, 1) -> [-1, 1) */
            double u = (double)(splitmix64(&s) >> 11) * (1.0 / 9007199254740992.0);
            wx->x[(size_t)v * (size_t)cols + (size_t)c] = 2.0 * u - 1.0;
        }
    }
    return QB_OK;
}

void qbh_vm_wx_add_rows(qbh_vm_wx *wx, const float *a, const float *b, int64_t n_rows)
{
    int64_t r, c;
    int v;
    for (r = 0; r < n_rows; r++) {
        const float *ra = a + (size_t)r * (size_t)wx->cols;
        const float *rb = b + (size_t)r * (size_t)wx->cols;
        for (v = 0; v < wx->k; v++) {
            const double *x = wx->x + (size_t)v * (size_t)wx->cols;
            double ya = 0.0, yb = 0.0;
            for (c = 0; c < wx->cols; c++) {
                if (!isfinite(ra[c]) || !isfinite(rb[c]))
                    continue;
                ya += (double)ra[c] * x[c];
                yb += (double)rb[c] * x[c];
            }
            wx->sums[3 * v] += ya * yb;
            wx->sums[3 * v + 1] += ya * ya;
            wx->sums[3 * v + 2] += yb * yb;
        }
    }
}

double qbh_vm_wx_cosine(const qbh_vm_wx *wx)
{
    double dot = 0.0, sa = 0.0, sb = 0.0;
    int v;
    /* Pooled over the vectors: one cosine over k * rows outputs. The
     * smallest per-vector value of a layer with few rows swings by about
     * 1/sqrt(rows) around it, which would make the threshold a dice roll. */
    for (v = 0; v < wx->k; v++) {
        dot += wx->sums[3 * v];
        sa += wx->sums[3 * v + 1];
        sb += wx->sums[3 * v + 2];
    }
    return qbh_vm_cosine(dot, sa, sb);
}

void qbh_vm_wx_free(qbh_vm_wx *wx)
{
    qbh_free(wx->x);
    qbh_free(wx->sums);
    memset(wx, 0, sizeof *wx);
}
