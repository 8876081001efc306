/*
 * mxfp4 reader — configuration, pairing and row decoding. See mxfp4_model.h.
 *
 * Conventions and where they come from (docs/formats/mxfp4.md):
 *   - `_blocks` [E, R, G, 16] / `_scales` [E, R, G], element value
 *     FP4_VALUES[nibble] * 2^(scale - 127), low nibble first: transformers
 *     integrations/mxfp4.py _convert_moe_packed_tensors (lut[blk & 0x0F]
 *     for the even column, lut[blk >> 4] for the odd one, ldexp by
 *     scales - 127); element decoding is the kit's (docs/formats/fp4.md);
 *   - presented [E, G*32, R]: the same function ends with
 *     out.transpose(1, 2), the layout of GptOssExperts.gate_up_proj
 *     [E, hidden, 2 * intermediate] and down_proj [E, intermediate, hidden]
 *     in models/gpt_oss/modeling_gpt_oss.py, i.e. what a BF16 gpt-oss
 *     checkpoint stores under the name without `_blocks`.
 */
#include "mxfp4_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"
#include "qbk_reader.h"
#include "qbk_str.h"
#include <quantbridge/base/qb_rows.h>

#define MX_BLOCK 32       /* elements per E8M0 scale (OCP MX block) */
#define MX_BLOCK_BYTES 16 /* two E2M1 elements per byte */

int mx_config_probe(const char *config_json)
{
    return qbk_reader_probe_quant_method(config_json, "mxfp4", NULL);
}

static qb_status mx_parse_config(const qb_host *h, mx_model *m)
{
    /* Mxfp4Config.to_dict writes quant_method and modules_to_not_convert;
     * dequantize is a load-time choice that does not change the files. */
    static const char *const known[] = {"quant_method", "modules_to_not_convert", "dequantize",
                                        NULL};
    const char *dir = m->b.d->dir;
    const cJSON *q = m->b.qcfg, *it, *e;
    size_t i;

    if (!q)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: no quantization_config", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, "mxfp4") != 0)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: quant_method is not \"mxfp4\"", dir);
    cJSON_ArrayForEach(e, q) {
        for (i = 0; known[i] && strcmp(known[i], e->string); i++)
            ;
        if (!known[i])
            h->log(h, QB_LOG_WARN, "%s/config.json: quantization_config.%s not known to the mxfp4 "
                   "reader; it does not change how weights are read here", dir, e->string);
    }
    return QB_OK;
}

/* A positive integer config key, or -1 when absent or not one. */
static int64_t mx_cfg_int(const cJSON *cfg, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1e12 ||
        (double)(int64_t)it->valuedouble != it->valuedouble)
        return -1;
    return (int64_t)it->valuedouble;
}

/* The gpt-oss widths of a known expert tensor (GptOssExperts): stored rows
 * R and input width K = G * 32 against the config. */
static qb_status mx_check_widths(const qb_host *h, const mx_model *m, const mx_tensor *t)
{
    const cJSON *cfg = m->b.config;
    int64_t hs = mx_cfg_int(cfg, "hidden_size"), is = mx_cfg_int(cfg, "intermediate_size");
    int64_t ne = mx_cfg_int(cfg, "num_local_experts"), want_r = -1, want_k = -1;
    const qb_st_tensor *b = t->w;
    size_t stem;

    if (qbk_split_suffix(t->name, "mlp.experts.gate_up_proj", &stem)) {
        want_r = is > 0 ? 2 * is : -1;
        want_k = hs;
    } else if (qbk_split_suffix(t->name, "mlp.experts.down_proj", &stem)) {
        want_r = hs;
        want_k = is;
    } else {
        return QB_OK;
    }
    if (ne > 0 && t->E != ne)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: %lld experts but config num_local_experts "
                            "is %lld", b->file, b->name, (long long)t->E, (long long)ne);
    if (want_r > 0 && t->R != want_r)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: %lld rows per expert but the config's "
                            "widths give %lld", b->file, b->name, (long long)t->R,
                            (long long)want_r);
    if (want_k > 0 && t->G * MX_BLOCK != want_k)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: %lld blocks of 32 per row (%lld inputs) "
                            "but the config's width is %lld", b->file, b->name, (long long)t->G,
                            (long long)(t->G * MX_BLOCK), (long long)want_k);
    return QB_OK;
}

/* Pairs blocks b with its scales (found by name) and fills t. */
static qb_status mx_pair(const qb_host *h, const mx_model *m, const qb_st_tensor *b,
                         size_t stem, mx_tensor *t)
{
    const qb_st_api *api = h->safetensors;
    const qb_st_tensor *s, *bias;
    char *sn = NULL, *bn = NULL;
    qb_status st = QB_OK;

    if (b->n_dims != 4 || b->dims[0] < 1 || b->dims[1] < 1 || b->dims[2] < 1)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: MXFP4 blocks are not 4-D [experts, "
                            "rows, blocks, 16]", b->file, b->name);
    if (b->dims[3] != MX_BLOCK_BYTES)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: last dimension is %lld bytes, not 16 (one "
                            "block of 32 E2M1 elements)", b->file, b->name,
                            (long long)b->dims[3]);
    sn = qbk_stem_cat(b->name, stem, "_scales");
    bn = qbk_stem_cat(b->name, stem, "_bias");
    t->name = qbk_stem_cat(b->name, stem, NULL);
    if (!sn || !bn || !t->name) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", b->name);
        goto out;
    }
    s = api->find(m->b.d->st, sn);
    if (!s) {
        st = h->set_error(h, QB_E_NOT_FOUND, "%s: %s: its scales %s are missing", b->file, b->name,
                          sn);
        goto out;
    }
    if (s->dtype != QB_DT_U8) {
        st = h->set_error(h, QB_E_FORMAT, "%s: %s: dtype %s, not U8 (E8M0 exponents)", s->file,
                          s->name, s->dtype_name);
        goto out;
    }
    if (s->n_dims != 3 || s->dims[0] != b->dims[0] || s->dims[1] != b->dims[1] ||
        s->dims[2] != b->dims[2]) {
        st = h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld, %lld, %lld], the leading "
                          "dimensions of %s", s->file, s->name, (long long)b->dims[0],
                          (long long)b->dims[1], (long long)b->dims[2], b->name);
        goto out;
    }
    t->kind = MX_K_EXPERTS;
    t->w = b;
    t->scale = s;
    t->E = b->dims[0];
    t->R = b->dims[1];
    t->G = b->dims[2];
    t->n_dims = 3;
    t->dims[0] = t->E;
    t->dims[1] = t->G * MX_BLOCK;
    t->dims[2] = t->R;
    t->rows = t->E * t->G * MX_BLOCK;
    t->cols = t->R;
    bias = api->find(m->b.d->st, bn);
    if (bias && (bias->n_dims != 2 || bias->dims[0] != t->E || bias->dims[1] != t->R)) {
        st = h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld, %lld] (experts, rows of "
                          "%s)", bias->file, bias->name, (long long)t->E, (long long)t->R,
                          b->name);
        goto out;
    }
    st = mx_check_widths(h, m, t);
out:
    qbk_free(sn);
    qbk_free(bn);
    return st;
}

static qb_status mx_model_open(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    const char *path = r->dir->dir;
    mx_model *m;
    unsigned char *used = NULL; /* 1 quantized, 2 scales, 3 dense */
    size_t n_st, i, j, stem;
    qb_status st;

    (void)params;
    st = qbk_reader_model_new(r, sizeof(*m), (void **)&m);
    if (st != QB_OK)
        goto out;
    st = mx_parse_config(h, m);
    if (st != QB_OK)
        goto out;
    n_st = api->count(m->b.d->st);
    used = qbk_calloc(n_st ? n_st : 1, 1);
    m->t = qbk_calloc(n_st ? n_st : 1, sizeof(*m->t));
    if (!used || !m->t) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    /* Pass 1: every `_blocks` takes its `_scales`. */
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *b = api->tensor(m->b.d->st, i);
        if (!qbk_split_suffix(b->name, "_blocks", &stem))
            continue;
        if (b->dtype != QB_DT_U8) {
            st = h->set_error(h, QB_E_FORMAT, "%s: %s: dtype %s, not U8 (packed E2M1 pairs)",
                              b->file, b->name, b->dtype_name);
            goto out;
        }
        st = mx_pair(h, m, b, stem, &m->t[i]);
        if (st != QB_OK)
            goto out;
        used[i] = 1;
    }
    /* Pass 2: scales already paired, dense tensors, or an error. */
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *x = api->tensor(m->b.d->st, i);
        mx_tensor *t = &m->t[i];
        if (used[i])
            continue;
        if (qbk_split_suffix(x->name, "_scales", &stem)) {
            for (j = 0; j < n_st; j++)
                if (used[j] == 1 && m->t[j].scale == x)
                    break;
            if (j < n_st) {
                used[i] = 2;
                continue;
            }
            st = h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover scales: no `_blocks` tensor "
                              "uses them", x->file, x->name);
            goto out;
        }
        if (!qb_streader_is_dense(x)) {
            st = h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: dtype %s is neither MXFP4 blocks/scales "
                              "nor a float dense tensor", x->file, x->name, x->dtype_name);
            goto out;
        }
        t->kind = MX_K_DENSE;
        t->w = x;
        t->n_dims = x->n_dims ? x->n_dims : 1;
        for (j = 0; j < x->n_dims && j < 4; j++)
            t->dims[j] = x->dims[j];
        if (!x->n_dims)
            t->dims[0] = 1;
        if (x->n_dims > 4) {
            st = h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: %u dimensions (at most 4 are read)",
                              x->file, x->name, (unsigned)x->n_dims);
            goto out;
        }
        qb_streader_matrix(x->n_dims, x->dims, &t->rows, &t->cols);
        used[i] = 3;
    }
    /* Compact to the canonical list (source order, scales removed). */
    for (i = 0, j = 0; i < n_st; i++) {
        if (used[i] == 1 || used[i] == 3) {
            mx_tensor tmp = m->t[i];
            m->n_quant += used[i] == 1;
            memset(&m->t[i], 0, sizeof(m->t[i]));
            m->t[j++] = tmp;
        }
    }
    m->n = j;
    if (m->n_quant == 0) {
        st = h->set_error(h, QB_E_FORMAT, "%s: config says mxfp4 but no `_blocks` tensor was "
                          "found", m->b.d->dir);
        goto out;
    }
    r->n_tensors = m->n;
    st = qb_streader_set_summary(r, "MXFP4 (E2M1, E8M0 per 32), %zu expert tensors + %zu dense",
                                 m->n_quant, m->n - m->n_quant);
out:
    qbk_free(used);
    return st;
}

static void mx_model_close(qb_streader *r)
{
    mx_model *m = r->model;
    size_t i, cap;
    if (!m)
        return;
    if (m->t) {
        /* entries past n were zeroed by compaction or never filled */
        cap = m->b.d->st ? r->host->safetensors->count(m->b.d->st) : m->n;
        for (i = 0; i < cap; i++)
            qbk_free(m->t[i].name);
    }
    qbk_free(m->t);
    qbk_reader_model_free(r);
}

static void mx_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const mx_tensor *t = &((const mx_model *)r->model)->t[i];
    uint32_t d;
    if (t->kind == MX_K_DENSE) {
        qb_streader_describe_dense(t->w, out);
        return;
    }
    out->name = t->name;
    out->n_dims = t->n_dims;
    for (d = 0; d < t->n_dims; d++)
        out->dims[d] = t->dims[d];
    out->source_dtype = QB_DT_QUANTIZED;
    out->encoding = "mxfp4 e2m1 block32 e8m0";
    out->stored[0] = t->w;
    out->stored[1] = t->scale;
}

/* Rows [k0, k1) of expert e's presented [K, R] matrix into dst. Each stored
 * block (row j, block g) decodes once into 32 floats, then lands in column
 * j of the rows it covers. */
static qb_status mx_read_expert(const qb_host *h, const mx_tensor *t, int64_t e, int64_t k0,
                                int64_t k1, float *dst)
{
    const int64_t R = t->R, G = t->G, g0 = k0 / MX_BLOCK, g1 = (k1 - 1) / MX_BLOCK;
    float v[MX_BLOCK];
    int64_t j, g, k;

    for (j = 0; j < R; j++) {
        size_t blk = (size_t)((e * R + j) * G);
        for (g = g0; g <= g1; g++) {
            uint8_t sc = t->scale->data[blk + (size_t)g];
            int64_t lo = g * MX_BLOCK > k0 ? g * MX_BLOCK : k0;
            int64_t hi = (g + 1) * MX_BLOCK < k1 ? (g + 1) * MX_BLOCK : k1;
            if (sc == 255)
                return h->set_error(h, QB_E_FORMAT, "%s: %s: E8M0 scale 255 (NaN) at [%lld, %lld, "
                                    "%lld]", t->scale->file, t->scale->name, (long long)e,
                                    (long long)j, (long long)g);
            /* E2M1 * 2^(sc - 127): a power-of-two product, exact in float32
             * (ldexp in _convert_moe_packed_tensors gives the same value) */
            qbk_fp4_e2m1_row_to_f32(t->w->data + (blk + (size_t)g) * MX_BLOCK_BYTES, MX_BLOCK,
                                    qbk_e8m0_to_f32(sc), v);
            for (k = lo; k < hi; k++)
                dst[(size_t)(k - k0) * (size_t)R + (size_t)j] = v[k - g * MX_BLOCK];
        }
    }
    if (k1 == G * MX_BLOCK) { /* the expert's last rows: its bytes are not needed again */
        size_t nblk = (size_t)(R * G);
        qb_rows_drop_pages(t->w->data + (size_t)e * nblk * MX_BLOCK_BYTES, nblk * MX_BLOCK_BYTES);
        qb_rows_drop_pages(t->scale->data + (size_t)e * nblk, nblk);
    }
    return QB_OK;
}

static qb_status mx_read_rows(const qb_streader *rd, size_t i, int64_t row0, int64_t n_rows,
                              float *dst)
{
    const qb_host *h = rd->host;
    const mx_tensor *t = &((const mx_model *)rd->model)->t[i];
    const qb_st_tensor *w = t->w;
    int64_t K, r;
    qb_status st = QB_OK;

    if (t->kind == MX_K_DENSE)
        return qb_streader_dense_rows(h, w, row0, n_rows, dst);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)", w->file,
                            t->name, (long long)row0, (long long)n_rows, (long long)t->rows);
    if (n_rows == 0)
        return QB_OK;
    /* presented row r is expert r / K, input k = r % K */
    K = t->G * MX_BLOCK;
    for (r = row0; r < row0 + n_rows && st == QB_OK;) {
        int64_t e = r / K, k0 = r % K, k1 = K;
        if (k1 - k0 > row0 + n_rows - r)
            k1 = k0 + (row0 + n_rows - r);
        st = mx_read_expert(h, t, e, k0, k1, dst + (size_t)(r - row0) * (size_t)t->cols);
        r += k1 - k0;
    }
    return st;
}

const qb_streader_class mx_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "mxfp4",
    .open = mx_model_open,
    .close = mx_model_close,
    .describe = mx_describe,
    .read_rows = mx_read_rows,
    /* no grid: E2M1 values are not a uniform integer grid */
};
