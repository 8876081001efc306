/* Tests: reader vs ground truth. See qbt_cq_check.h. */
#include "qbt_cq_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bits_equal(float a, float b)
{
    return memcmp(&a, &b, sizeof(float)) == 0;
}

static int check_grid(const qb_plugin *p, qb_reader_handle h, size_t idx, const qbt_cq_lin *l,
                      const float *dense, char *why, size_t cap)
{
    qb_grid_info gi;
    qb_grid_rows gr;
    int64_t r, k, g, G = l->G, half = 1 << (l->bits - 1);
    int sym = 1, rc = -1;
    qb_status st;

    memset(&gi, 0, sizeof(gi));
    gi.struct_size = sizeof(gi);
    st = p->reader->get_grid_info(h, idx, &gi);
    if (st != QB_OK) {
        snprintf(why, cap, "%s: get_grid_info failed %d", l->name, st);
        return -1;
    }
    if (l->zq)
        for (g = 0; g < l->SR * l->G; g++)
            if (l->zq[g] != 0)
                sym = 0;
    if ((int)gi.bits != l->bits || (int64_t)gi.n_groups != G || gi.symmetric != sym) {
        snprintf(why, cap, "%s: grid bits %u groups %u sym %d, want %d %lld %d", l->name, gi.bits,
                 gi.n_groups, gi.symmetric, l->bits, (long long)G, sym);
        return -1;
    }
    if (l->g_idx) {
        if (!gi.col_group || gi.group_size != 0 ||
            memcmp(gi.col_group, l->g_idx, (size_t)l->K * sizeof(int32_t)) != 0) {
            snprintf(why, cap, "%s: col_group differs from g_idx", l->name);
            return -1;
        }
    } else if (gi.col_group ||
               gi.group_size != (l->strategy == QBT_CQ_GROUP ? l->gs : l->K)) {
        snprintf(why, cap, "%s: group_size %lld", l->name, (long long)gi.group_size);
        return -1;
    }
    memset(&gr, 0, sizeof(gr));
    gr.struct_size = sizeof(gr);
    gr.codes = malloc((size_t)(l->N * l->K));
    gr.scales = malloc((size_t)(l->N * G) * sizeof(float));
    gr.zeros = malloc((size_t)(l->N * G) * sizeof(int32_t));
    if (!gr.codes || !gr.scales || !gr.zeros)
        goto out;
    st = p->reader->read_grid(h, idx, 0, l->N, &gr);
    if (st != QB_OK) {
        snprintf(why, cap, "%s: read_grid failed %d", l->name, st);
        goto out;
    }
    for (r = 0; r < l->N; r++) {
        int64_t sr = l->strategy == QBT_CQ_TENSOR ? 0 : r;
        for (g = 0; g < G; g++) {
            int32_t z = (int32_t)((l->zq ? l->zq[sr * G + g] : 0) + half);
            if (gr.zeros[r * G + g] != z || !bits_equal(gr.scales[r * G + g], l->scale[sr * G + g])) {
                snprintf(why, cap, "%s: row %lld group %lld zero %d scale %g, want %d %g", l->name,
                         (long long)r, (long long)g, gr.zeros[r * G + g],
                         (double)gr.scales[r * G + g], z, (double)l->scale[sr * G + g]);
                goto out;
            }
        }
        for (k = 0; k < l->K; k++) {
            int64_t gg = gi.col_group ? gi.col_group[k] : k / gi.group_size;
            float v;
            if (gr.codes[r * l->K + k] != (uint8_t)(l->q[r * l->K + k] + half)) {
                snprintf(why, cap, "%s: code (%lld,%lld) = %u, want %d", l->name, (long long)r,
                         (long long)k, gr.codes[r * l->K + k], l->q[r * l->K + k] + (int)half);
                goto out;
            }
            /* the promise of qb_tensor.h */
            v = (float)((int32_t)gr.codes[r * l->K + k] - gr.zeros[r * G + gg]) *
                gr.scales[r * G + gg];
            if (!bits_equal(v, dense[r * l->K + k])) {
                snprintf(why, cap, "%s: grid promise broken at (%lld,%lld)", l->name,
                         (long long)r, (long long)k);
                goto out;
            }
        }
    }
    rc = 0;
out:
    free(gr.codes);
    free(gr.scales);
    free(gr.zeros);
    return rc;
}

int qbt_cq_check(const qb_plugin *p, const char *dir, const qbt_cq_model *truth,
                 qbt_cq_stats *stats, char *why, size_t cap)
{
    qb_reader_handle h = NULL;
    qb_model_info mi;
    float *buf = NULL, *buf2 = NULL;
    size_t i, seen = 0;
    int rc = -1;
    qb_status st;

    memset(stats, 0, sizeof(*stats));
    st = p->reader->open(p->ctx, dir, NULL, &h);
    if (st != QB_OK) {
        snprintf(why, cap, "open failed %d", st);
        return -1;
    }
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    if (p->reader->get_model_info(h, &mi) != QB_OK || strcmp(mi.architecture, "llama") != 0 ||
        !mi.config_json || !mi.generation_config_json || !mi.tokenizer_dir) {
        snprintf(why, cap, "model info incomplete");
        goto out;
    }
    for (i = 0; i < mi.n_tensors; i++) {
        qb_tensor_info ti;
        const qbt_cq_lin *l;
        int64_t rows, cols, e, r0;

        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        if (p->reader->get_tensor_info(h, i, &ti) != QB_OK) {
            snprintf(why, cap, "tensor info %zu failed", i);
            goto out;
        }
        l = qbt_cq_find(truth, ti.name);
        if (!l) {
            snprintf(why, cap, "unexpected tensor %s", ti.name);
            goto out;
        }
        seen++;
        rows = qb_tensor_rows(&ti);
        cols = qb_tensor_cols(&ti);
        if ((int)ti.n_dims != l->n_dims || rows != l->N || cols != l->K) {
            snprintf(why, cap, "%s: shape %lldx%lld dims %u, want %lldx%lld", ti.name,
                     (long long)rows, (long long)cols, ti.n_dims, (long long)l->N,
                     (long long)l->K);
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
            float want = qbt_cq_value(l, e / cols, e % cols);
            if (!bits_equal(buf[e], want)) {
                snprintf(why, cap, "%s: value (%lld,%lld) = %.9g, want %.9g", ti.name,
                         (long long)(e / cols), (long long)(e % cols), (double)buf[e],
                         (double)want);
                goto out;
            }
        }
        /* uneven chunks give the same rows */
        for (r0 = 0; r0 < rows; r0 += 7) {
            int64_t n = rows - r0 < 7 ? rows - r0 : 7;
            if (p->reader->read_rows(h, i, r0, n, buf2 + r0 * cols) != QB_OK) {
                snprintf(why, cap, "%s: chunked read_rows failed", ti.name);
                goto out;
            }
        }
        if (memcmp(buf, buf2, (size_t)(rows * cols) * sizeof(float)) != 0) {
            snprintf(why, cap, "%s: chunked rows differ", ti.name);
            goto out;
        }
        stats->n_values += (size_t)(rows * cols);
        if (l->quant != QBT_CQ_DENSE)
            stats->n_quant++;
        if (ti.has_grid) {
            if (l->quant != QBT_CQ_INT || l->strategy == QBT_CQ_BLOCK) {
                snprintf(why, cap, "%s: grid offered for a non-integer tensor", ti.name);
                goto out;
            }
            if (check_grid(p, h, i, l, buf, why, cap) != 0)
                goto out;
            stats->n_grid++;
        } else if (l->quant == QBT_CQ_INT && l->strategy != QBT_CQ_BLOCK) {
            snprintf(why, cap, "%s: integer tensor without grid", ti.name);
            goto out;
        }
    }
    if (seen != truth->n) {
        snprintf(why, cap, "reader has %zu of %zu truth tensors", seen, truth->n);
        goto out;
    }
    /* out of range rows are refused */
    if (p->reader->read_rows(h, 0, 0, 1 << 30, buf) != QB_E_RANGE) {
        snprintf(why, cap, "read_rows accepted an out-of-range request");
        goto out;
    }
    stats->n_tensors = mi.n_tensors;
    rc = 0;
out:
    free(buf);
    free(buf2);
    p->reader->close(h);
    return rc;
}

int qbt_cq_encoding(const qb_plugin *p, const char *dir, const char *name, char *out, size_t cap)
{
    qb_reader_handle h = NULL;
    qb_model_info mi;
    size_t i;
    int rc = -1;

    if (p->reader->open(p->ctx, dir, NULL, &h) != QB_OK)
        return -1;
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    p->reader->get_model_info(h, &mi);
    for (i = 0; i < mi.n_tensors; i++) {
        qb_tensor_info ti;
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        if (p->reader->get_tensor_info(h, i, &ti) == QB_OK && !strcmp(ti.name, name)) {
            snprintf(out, cap, "%s", ti.source_encoding);
            rc = 0;
        }
    }
    p->reader->close(h);
    return rc;
}
