/* Tests: FP4 reader vs ground truth. See qbt_fp4_check.h. */
#include "qbt_fp4_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bits_equal(float a, float b)
{
    return memcmp(&a, &b, sizeof(float)) == 0;
}

int qbt_fp4_check(const qb_plugin *p, const char *dir, const qbt_fp4_model *truth,
                  size_t *n_quant, char *why, size_t cap)
{
    qb_reader_handle h = NULL;
    qb_model_info mi;
    float *buf = NULL, *buf2 = NULL;
    size_t i, seen = 0;
    int rc = -1;
    qb_status st;

    *n_quant = 0;
    st = p->reader->open(p->ctx, dir, NULL, &h);
    if (st != QB_OK) {
        snprintf(why, cap, "open failed %d", st);
        return -1;
    }
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    if (p->reader->get_model_info(h, &mi) != QB_OK || strcmp(mi.architecture, "llama") != 0) {
        snprintf(why, cap, "model info incomplete");
        goto out;
    }
    for (i = 0; i < mi.n_tensors; i++) {
        qb_tensor_info ti;
        const qbt_fp4_lin *f;
        const qbt_cq_lin *d = NULL;
        int64_t rows, cols, e, r0, N, K;

        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        if (p->reader->get_tensor_info(h, i, &ti) != QB_OK) {
            snprintf(why, cap, "tensor info %zu failed", i);
            goto out;
        }
        f = qbt_fp4_find(truth, ti.name);
        if (!f && !(d = qbt_cq_find(truth->dense, ti.name))) {
            snprintf(why, cap, "unexpected tensor %s", ti.name);
            goto out;
        }
        seen++;
        N = f ? f->N : d->N;
        K = f ? f->K : d->K;
        rows = qb_tensor_rows(&ti);
        cols = qb_tensor_cols(&ti);
        if (rows != N || cols != K || (f && (ti.n_dims != 2 || ti.has_grid ||
                                             ti.source_dtype != QB_DT_QUANTIZED))) {
            snprintf(why, cap, "%s: shape %lldx%lld grid %d, want %lldx%lld", ti.name,
                     (long long)rows, (long long)cols, ti.has_grid, (long long)N, (long long)K);
            goto out;
        }
        free(buf);
        free(buf2);
        buf = malloc((size_t)(rows * cols) * sizeof(float));
        buf2 = malloc((size_t)(rows * cols) * sizeof(float));
        if (!buf || !buf2)
            goto out;
        if (p->reader->read_rows(h, i, 0, rows, buf) != QB_OK) {
            snprintf(why, cap, "%s: read_rows failed", ti.name);
            goto out;
        }
        for (e = 0; e < rows * cols; e++) {
            float want = f ? qbt_fp4_value(f, e / cols, e % cols)
                           : qbt_cq_value(d, e / cols, e % cols);
            if (!bits_equal(buf[e], want)) {
                snprintf(why, cap, "%s: value (%lld,%lld) = %.9g, want %.9g", ti.name,
                         (long long)(e / cols), (long long)(e % cols), (double)buf[e],
                         (double)want);
                goto out;
            }
        }
        for (r0 = 0; r0 < rows; r0 += 5) {
            int64_t n = rows - r0 < 5 ? rows - r0 : 5;
            if (p->reader->read_rows(h, i, r0, n, buf2 + r0 * cols) != QB_OK) {
                snprintf(why, cap, "%s: chunked read_rows failed", ti.name);
                goto out;
            }
        }
        if (memcmp(buf, buf2, (size_t)(rows * cols) * sizeof(float)) != 0) {
            snprintf(why, cap, "%s: chunked rows differ", ti.name);
            goto out;
        }
        if (f)
            (*n_quant)++;
    }
    if (seen != truth->n + truth->dense->n) {
        snprintf(why, cap, "reader has %zu of %zu truth tensors", seen,
                 truth->n + truth->dense->n);
        goto out;
    }
    if (p->reader->read_rows(h, 0, 0, 1 << 30, buf) != QB_E_RANGE) {
        snprintf(why, cap, "read_rows accepted an out-of-range request");
        goto out;
    }
    rc = 0;
out:
    free(buf);
    free(buf2);
    p->reader->close(h);
    return rc;
}
