/* Tests: model vs ground truth. See qlr_check.h. */
#include "qlr_check.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/qb_half.h>

int qlr_check_find(const qlinear_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0)
            return (int)i;
    return -1;
}

static void check_bits_equal(const float *got, const float *want, int64_t n, const char *name)
{
    int64_t e;
    for (e = 0; e < n; e++)
        if (memcmp(&got[e], &want[e], sizeof(float)) != 0)
            ck_abort_msg("%s: element %lld: got %.9g want %.9g", name, (long long)e, (double)got[e],
                         (double)want[e]);
}

static void check_lin(const qlinear_model *m, size_t i, const qbt_qlin *l)
{
    qb_tensor_info ti;
    qb_grid_info gi;
    int64_t N = l->N, K = l->K, n, k, r0 = 3, nr = 5;
    float *got = malloc((size_t)(N * K) * 4), *want = malloc((size_t)(N * K) * 4);
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(want);
    memset(&ti, 0, sizeof(ti));
    memset(&gi, 0, sizeof(gi));
    ti.struct_size = sizeof(ti);
    gi.struct_size = sizeof(gi);
    ck_assert_int_eq(qlinear_tensor_info(m, i, &ti), QB_OK);
    ck_assert_uint_eq(ti.n_dims, 2);
    ck_assert_int_eq(ti.dims[0], N);
    ck_assert_int_eq(ti.dims[1], K);
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++)
            want[n * K + k] = qbt_qlin_value(l, n, k);
    ck_assert_int_eq(qlinear_read_rows(m, i, 0, N, got), QB_OK);
    check_bits_equal(got, want, N * K, ti.name);
    /* a row range in the middle lands at the same values */
    ck_assert_int_eq(qlinear_read_rows(m, i, r0, nr, got), QB_OK);
    check_bits_equal(got, want + r0 * K, nr * K, ti.name);
    ck_assert_int_eq(qlinear_read_rows(m, i, N - 1, 2, got), QB_E_RANGE);
    if (!l->quantized) {
        ck_assert_int_eq(ti.has_grid, 0);
        ck_assert_int_eq(qlinear_grid_info(m, i, &gi), QB_E_UNSUPPORTED);
        goto out;
    }
    ck_assert_int_eq(ti.has_grid, 1);
    ck_assert_int_eq(ti.source_dtype, QB_DT_QUANTIZED);
    ck_assert_int_eq(qlinear_grid_info(m, i, &gi), QB_OK);
    ck_assert_uint_eq(gi.bits, (uint32_t)l->bits);
    ck_assert_uint_eq(gi.n_groups, l->G);
    {
        int trivial = 1, sym = 1;
        uint8_t *codes = malloc((size_t)(N * K));
        float *sc = malloc((size_t)N * l->G * 4);
        int32_t *zr = malloc((size_t)N * l->G * 4);
        qb_grid_rows gr = {sizeof(gr), codes, sc, zr};
        uint32_t g;
        for (k = 0; k < K; k++)
            trivial &= l->g_idx[k] == k / l->gs;
        for (n = 0; n < N * (int64_t)l->G; n++)
            sym &= l->zeros[n] == (1 << (l->bits - 1));
        ck_assert_int_eq(gi.symmetric, sym);
        if (trivial) {
            ck_assert_ptr_null(gi.col_group);
            ck_assert_int_eq(gi.group_size, l->gs);
        } else {
            ck_assert_ptr_nonnull(gi.col_group);
            ck_assert_int_eq(gi.group_size, 0);
            ck_assert_mem_eq(gi.col_group, l->g_idx, (size_t)K * 4);
        }
        ck_assert_ptr_nonnull(strstr(ti.source_encoding, trivial ? "" : "act-order"));
        ck_assert_int_eq(qlinear_read_grid(m, i, 0, N, &gr), QB_OK);
        ck_assert_mem_eq(codes, l->codes, (size_t)(N * K));
        ck_assert_mem_eq(zr, l->zeros, (size_t)N * l->G * 4);
        for (n = 0; n < N; n++)
            for (g = 0; g < l->G; g++)
                if (sc[n * l->G + g] != qb_f16_to_f32(l->scales[n * l->G + g]))
                    ck_abort_msg("%s: scale (%lld, %u) differs", ti.name, (long long)n, g);
        free(codes);
        free(sc);
        free(zr);
    }
out:
    free(got);
    free(want);
}

static void check_dense(const qlinear_model *m, size_t i, const qbt_qdense *d)
{
    qb_tensor_info ti;
    int64_t n = d->n_dims == 1 ? d->dims[0] : d->dims[0] * d->dims[1], e;
    float *got = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
    memset(&ti, 0, sizeof(ti));
    ti.struct_size = sizeof(ti);
    ck_assert_int_eq(qlinear_tensor_info(m, i, &ti), QB_OK);
    ck_assert_int_eq(ti.has_grid, 0);
    ck_assert_uint_eq(ti.n_dims, (uint32_t)d->n_dims);
    for (e = 0; e < n; e++)
        want[e] = strcmp(d->dtype, "F32") == 0 ? ((const float *)d->data)[e]
                                               : qb_f16_to_f32(((const uint16_t *)d->data)[e]);
    ck_assert_int_eq(qlinear_read_rows(m, i, 0, d->n_dims == 1 ? 1 : d->dims[0], got), QB_OK);
    check_bits_equal(got, want, n, d->name);
    free(got);
    free(want);
}

int qlr_check_against_truth(const qlinear_model *m, const qbt_qmodel *truth)
{
    size_t i;
    int nq = 0;
    ck_assert_uint_eq(m->n, truth->n_lin + truth->n_dense);
    for (i = 0; i < truth->n_lin; i++) {
        char name[160];
        int idx;
        snprintf(name, sizeof(name), "%s.weight", truth->lin[i].name);
        idx = qlr_check_find(m, name);
        ck_assert_msg(idx >= 0, "%s missing", name);
        check_lin(m, (size_t)idx, &truth->lin[i]);
        nq += truth->lin[i].quantized;
    }
    for (i = 0; i < truth->n_dense; i++) {
        int idx = qlr_check_find(m, truth->dense[i].name);
        ck_assert_msg(idx >= 0, "%s missing", truth->dense[i].name);
        check_dense(m, (size_t)idx, &truth->dense[i]);
    }
    return nq;
}
