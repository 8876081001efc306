/* Tests: FP4 reader vs ground truth. See qbt_fp4_check.h. */
#include "qbt_fp4_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bits_equal(float a, float b)
{
    return memcmp(&a, &b, sizeof(float)) == 0;
}

/* The e2m1 grid of an NVFP4 tensor (ABI 1.5): refused to a caller that
 * does not accept e2m1 codes; to one that does, the truth's codes, its e4m3
 * group scales, its second-level scale with the producer's operation, and
 * the promise e2m1(c) * (scale op tensor_scale) == dense, bit for bit.
 * MXFP4 tensors offer no grid. Returns 0 or -1 with why set. */
static int check_e2m1_grid(const qb_plugin *p, qb_reader_handle h, size_t i,
                           const qb_tensor_info *ti, const qbt_fp4_lin *f, const float *dense,
                           char *why, size_t cap)
{
    int nv = f->form != QBT_FP4_CT_MXFP4;
    uint32_t want_op = f->form == QBT_FP4_MODELOPT ? QB_TENSOR_SCALE_MUL : QB_TENSOR_SCALE_DIV;
    qb_grid_info gi;
    qb_grid_rows gr;
    uint8_t *codes = NULL;
    float *sc = NULL;
    int32_t *z = NULL;
    int64_t G = f->K / 16, e;
    int rc = -1;

    if (ti->grid_codes != (nv ? QB_CODES_BIT(QB_CODE_F4_E2M1) : 0u)) {
        snprintf(why, cap, "%s: grid_codes %#x", ti->name, ti->grid_codes);
        return -1;
    }
    if (!nv)
        return 0;
    memset(&gi, 0, sizeof gi);
    gi.struct_size = sizeof gi;
    if (p->reader->get_grid_info(h, i, &gi) != QB_E_UNSUPPORTED) {
        snprintf(why, cap, "%s: e2m1 grid given to a caller that accepts no float codes",
                 ti->name);
        return -1;
    }
    gi.accept_codes = QB_CODES_BIT(QB_CODE_F4_E2M1);
    if (p->reader->get_grid_info(h, i, &gi) != QB_OK || gi.code_kind != QB_CODE_F4_E2M1 ||
        gi.bits != 4 || gi.group_size != 16 || gi.n_groups != (uint32_t)G || gi.col_group ||
        gi.scale_dtype != QB_DT_F8_E4M3 || gi.scale_rows != 1 || gi.tensor_scale_op != want_op ||
        !bits_equal(gi.tensor_scale, f->second)) {
        snprintf(why, cap, "%s: e2m1 grid info: kind %u bits %u groups %u of %lld, op %u "
                 "scale %.9g (want op %u scale %.9g)", ti->name, gi.code_kind, gi.bits,
                 gi.n_groups, (long long)gi.group_size, gi.tensor_scale_op,
                 (double)gi.tensor_scale, want_op, (double)f->second);
        return -1;
    }
    codes = malloc((size_t)(f->N * f->K));
    sc = malloc((size_t)(f->N * G) * sizeof(float));
    z = malloc((size_t)(f->N * G) * sizeof(int32_t));
    if (!codes || !sc || !z)
        goto out;
    memset(&gr, 0, sizeof gr);
    gr.struct_size = sizeof gr;
    gr.codes = codes;
    gr.scales = sc;
    gr.zeros = z;
    if (p->reader->read_grid(h, i, 0, f->N, &gr) != QB_OK) {
        snprintf(why, cap, "%s: read_grid failed", ti->name);
        goto out;
    }
    for (e = 0; e < f->N * f->K; e++) {
        int64_t n = e / f->K, k = e % f->K;
        uint8_t want_c = (uint8_t)((f->packed[e / 2] >> (4 * (k & 1))) & 0xF);
        float s = sc[n * G + k / 16], v;
        if (codes[e] != want_c || !bits_equal(s, (float)qbt_fp8_value(f->scale[n * G + k / 16], 0))) {
            snprintf(why, cap, "%s: grid (%lld,%lld): code %u scale %.9g, want %u and e4m3 "
                     "byte %#x", ti->name, (long long)n, (long long)k, codes[e], (double)s,
                     want_c, f->scale[n * G + k / 16]);
            goto out;
        }
        s = want_op == QB_TENSOR_SCALE_MUL ? s * gi.tensor_scale : s / gi.tensor_scale;
        v = (float)qbt_e2m1_value(codes[e]) * s;
        if (!bits_equal(v, dense[e])) {
            snprintf(why, cap, "%s: grid promise (%lld,%lld): %.9g, dense %.9g", ti->name,
                     (long long)n, (long long)k, (double)v, (double)dense[e]);
            goto out;
        }
    }
    rc = 0;
out:
    free(codes);
    free(sc);
    free(z);
    return rc;
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
        if (f && check_e2m1_grid(p, h, i, &ti, f, buf, why, cap) != 0)
            goto out;
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
