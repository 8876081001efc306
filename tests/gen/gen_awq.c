/*
 * Test fixtures: AWQ checkpoints from known codes (see gen_gptq.h), packed
 * as casper-hansen/AutoAWQ does (facts, no code copied):
 *   - gemm (awq/modules/linear/gemm.py WQLinear_GEMM.from_linear):
 *     intweight transposed to [K, N]; word c of a row holds columns 8c..8c+7
 *     with nibble i = column 8c + order_map[i], order_map [0,2,4,6,1,3,5,7];
 *     qzeros [K/gs, N/8] packed with the same order; scales [K/gs, N] F16;
 *   - gemv (awq/modules/linear/gemv.py WQLinear_GEMV.from_linear):
 *     qweight [N, K/8] with sequential nibbles; scales padded to
 *     [N, 8*calculate_zeros_width(K, gs)] (zeros after the real K/gs);
 *     qzeros [N, calculate_zeros_width] packed sequentially, fields past
 *     K/gs left 0;
 *   - zeros stored as computed, no -1 (AwqQuantizer.pseudo_quantize_tensor);
 *     zero_point false: every zero is 8 (the signed [-8, 7] codes + 8 of
 *     WQLinear_Marlin), written as a qzeros of 8s (GPTQModel-style) or omitted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/qb_half.h>

#include "gen_gptq.h"
#include "qbt_st_writer.h"

static const int awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7};

static int64_t zeros_width(int64_t K, int64_t gs)
{
    int64_t m = gs >= 128 ? 1 : gs == 64 ? 2 : 4;
    int64_t base = (K / gs + 7) / 8;
    return (base + m - 1) / m * m;
}

static int awq_write_lin(qbt_st_writer *w, const qbt_qlin *l, const qbt_awq_spec *sp)
{
    int64_t N = l->N, K = l->K, G = l->G, n, k, g, c;
    int i, rc = -1;
    char name[192];
    int64_t dims[2], wz = sp->gemv ? zeros_width(K, l->gs) : 0;
    size_t qw_n = (size_t)(N * K / 8), qz_n = sp->gemv ? (size_t)(N * wz) : (size_t)(G * N / 8);
    size_t sc_n = sp->gemv ? (size_t)(N * wz * 8) : (size_t)(G * N);
    uint32_t *qw = calloc(qw_n, 4), *qz = calloc(qz_n, 4);
    uint16_t *sc = calloc(sc_n, 2);
    if (!qw || !qz || !sc)
        goto out;
    if (!sp->gemv) {
        for (k = 0; k < K; k++)
            for (c = 0; c < N / 8; c++)
                for (i = 0; i < 8; i++)
                    qw[k * (N / 8) + c] |= (uint32_t)l->codes[(c * 8 + awq_order[i]) * K + k] << (4 * i);
        for (g = 0; g < G; g++) {
            for (c = 0; c < N / 8; c++)
                for (i = 0; i < 8; i++)
                    qz[g * (N / 8) + c] |= (uint32_t)l->zeros[(c * 8 + awq_order[i]) * G + g] << (4 * i);
            for (n = 0; n < N; n++)
                sc[g * N + n] = l->scales[n * G + g];
        }
    } else {
        for (n = 0; n < N; n++) {
            for (c = 0; c < K / 8; c++)
                for (i = 0; i < 8; i++)
                    qw[n * (K / 8) + c] |= (uint32_t)l->codes[n * K + c * 8 + i] << (4 * i);
            for (g = 0; g < G; g++) {
                qz[n * wz + g / 8] |= (uint32_t)l->zeros[n * G + g] << (4 * (g % 8));
                sc[n * wz * 8 + g] = l->scales[n * G + g];
            }
        }
    }
    snprintf(name, sizeof(name), "%s.qweight", l->name);
    dims[0] = sp->gemv ? N : K;
    dims[1] = sp->gemv ? K / 8 : N / 8;
    if (qbt_st_writer_add(w, name, "I32", 2, dims, qw, qw_n * 4))
        goto out;
    if (!sp->omit_qzeros) {
        snprintf(name, sizeof(name), "%s.qzeros", l->name);
        dims[0] = sp->gemv ? N : G;
        dims[1] = sp->gemv ? wz : N / 8;
        if (qbt_st_writer_add(w, name, "I32", 2, dims, qz, qz_n * 4))
            goto out;
    }
    snprintf(name, sizeof(name), "%s.scales", l->name);
    dims[0] = sp->gemv ? N : G;
    dims[1] = sp->gemv ? wz * 8 : N;
    if (qbt_st_writer_add(w, name, "F16", 2, dims, sc, sc_n * 2))
        goto out;
    rc = 0;
out:
    free(qw);
    free(qz);
    free(sc);
    return rc;
}

int qbt_awq_write(const char *dir, const qbt_awq_spec *sp, qbt_qmodel **truth)
{
    qbt_qmodel *m = qbt_qmodel_build(sp->seed, 4, sp->group_size, !sp->zero_point, 0, 0);
    qbt_st_writer *w[2] = {qbt_st_writer_new(), qbt_st_writer_new()};
    char qc[1024], path[1024], *idx = NULL;
    const char *ver = sp->version ? sp->version : sp->gemv ? "gemv" : "gemm";
    size_t i;
    int rc = -1, s, two = sp->n_shards > 1;
    if (!m || !w[0] || !w[1])
        goto out;
    snprintf(qc, sizeof(qc),
             "{\n    \"quant_method\": \"awq\",\n    \"zero_point\": %s,\n    \"group_size\": %lld,\n"
             "    \"bits\": 4,\n    \"version\": \"%s\",\n    \"modules_to_not_convert\": %s%s%s\n  }",
             sp->zero_point ? "true" : "false", (long long)sp->group_size, ver, sp->skip ? "[\"" : "null",
             sp->skip ? sp->skip : "", sp->skip ? "\"]" : "");
    if (qbt_write_llama_config(dir, qc))
        goto out;
    for (i = 0; i < m->n_dense; i++) {
        const qbt_qdense *d = &m->dense[i];
        if (qbt_st_writer_add(w[two && strstr(d->name, "layers.1.") ? 1 : 0], d->name, d->dtype, d->n_dims,
                              d->dims, d->data, d->n_bytes))
            goto out;
    }
    for (i = 0; i < m->n_lin; i++) {
        qbt_qlin *l = &m->lin[i];
        qbt_st_writer *ws = w[two && strstr(l->name, "layers.1.") ? 1 : 0];
        if (sp->skip && strstr(l->name, sp->skip)) {
            /* modules_to_not_convert: the linear stays an fp16 weight */
            char name[160];
            int64_t dims[2] = {l->N, l->K}, e;
            qbt_rng r = {sp->seed + i};
            l->quantized = 0;
            l->dense = malloc((size_t)(l->N * l->K) * 2);
            if (!l->dense)
                goto out;
            for (e = 0; e < l->N * l->K; e++)
                l->dense[e] = qb_f32_to_f16((float)(0.02 * qbt_rng_normal(&r)));
            snprintf(name, sizeof(name), "%s.weight", l->name);
            if (qbt_st_writer_add(ws, name, "F16", 2, dims, l->dense, (size_t)(l->N * l->K) * 2))
                goto out;
            continue;
        }
        if (awq_write_lin(ws, l, sp))
            goto out;
    }
    if (!two) {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        rc = qbt_st_writer_save(w[0], path);
        goto out;
    }
    {
        size_t cap = 1 << 20, len = 0, j;
        int first = 1;
        idx = malloc(cap);
        if (!idx)
            goto out;
        len += (size_t)snprintf(idx, cap, "{\"metadata\": {\"total_size\": %zu}, \"weight_map\": {",
                                qbt_st_writer_total_bytes(w[0]) + qbt_st_writer_total_bytes(w[1]));
        for (s = 0; s < 2; s++) {
            char fname[64];
            snprintf(fname, sizeof(fname), "model-%05d-of-00002.safetensors", s + 1);
            snprintf(path, sizeof(path), "%s/%s", dir, fname);
            if (qbt_st_writer_save(w[s], path))
                goto out;
            for (j = 0; j < qbt_st_writer_count(w[s]); j++) {
                len += (size_t)snprintf(idx + len, cap - len, "%s\"%s\": \"%s\"", first ? "" : ", ",
                                        qbt_st_writer_name(w[s], j), fname);
                first = 0;
            }
        }
        snprintf(idx + len, cap - len, "}}\n");
        snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
        rc = qbt_write_text(path, idx);
    }
out:
    free(idx);
    qbt_st_writer_free(w[0]);
    qbt_st_writer_free(w[1]);
    if (rc == 0 && truth)
        *truth = m;
    else
        qbt_qmodel_free(m);
    return rc;
}
