/*
 * mlx reader — an MLX affine-quantized checkpoint (mlx-lm's layout, mlx.h)
 * on the reader base library: every <m>.weight U32 with its <m>.scales and
 * <m>.biases becomes one canonical float32 <m>.weight [N, K]; every float
 * tensor passes through.
 *
 * Dense rows are what mlx.core.dequantize computes in float32:
 * fl(fl(scale * q) + bias) (docs/formats/mlx.md, "Dequantization"), or,
 * for a module with a grid, (q - z) * scale: the same value but for the
 * sign of a zero where the scale is negative (MLX gives +0). The
 * integer grid is offered for a module whose every group has an integer
 * zero point z with bias == -z * scale exactly and the same float32 values
 * as (q - z) * scale for every code (always so for F16/BF16 scales: both
 * products are exact in float32; checked code by code for F32 scales).
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mlx.h"
#include "qbk_alloc.h"
#include "qbk_fp8_decode.h"
#include "qbk_reader.h"

typedef struct mlx_qt {
    char *name;                 /* "<m>.weight" (owned) */
    const qb_st_tensor *w, *s, *b;
    int bits;
    int64_t rows, cols, gs, G;
    int has_grid, symmetric;
    char enc[96];
} mlx_qt;

typedef struct mlx_entry {
    const qb_st_tensor *dense;  /* or NULL: quantized q */
    mlx_qt *q;
} mlx_entry;

typedef struct mlx_model {
    qbk_reader_model b;         /* first (qbk_reader.h) */
    mlx_entry *e;
    mlx_qt *q;
    size_t n, nq;
} mlx_model;

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int json_int(const cJSON *o, const char *key, int64_t *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
        it->valuedouble < 1 || it->valuedouble > 1e9)
        return 0;
    *v = (int64_t)it->valuedouble;
    return 1;
}

/* The module's parameters: its own entry of `quantization`, else the
 * defaults. */
static qb_status module_params(const qb_host *h, const char *dir, const cJSON *qz,
                               const char *module, mlx_qparams *p)
{
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(qz, module);
    const cJSON *src = cJSON_IsObject(own) ? own : qz;
    int64_t bits = 0, gs = 0;
    if (!json_int(src, "bits", &bits) || !json_int(src, "group_size", &gs))
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: quantization%s%s: bits and "
                            "group_size must be positive integers", dir, src == own ? "." : "",
                            src == own ? module : "");
    {
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(src, "mode");
        if (mode && !(cJSON_IsString(mode) && strcmp(mode->valuestring, "affine") == 0))
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: %s: quantization mode "
                                "other than \"affine\" (mxfp4, nvfp4, mxfp8 are not read)", dir,
                                module);
    }
    if (bits != 2 && bits != 4 && bits != 8)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: %lld-bit MLX codes: the reader reads "
                            "2, 4 and 8 bits (3, 5 and 6 pack across words)", dir, module,
                            (long long)bits);
    p->bits = (int)bits;
    p->group_size = gs;
    return QB_OK;
}

/* Decides whether module q offers the integer grid (file comment). */
static void decide_grid(mlx_qt *q)
{
    size_t es = qbk_float_store_size(q->s->dtype);
    int64_t i, n = q->rows * q->G, half = 1 << (q->bits - 1), top = 1 << q->bits;
    q->has_grid = 1;
    q->symmetric = 1;
    for (i = 0; i < n && q->has_grid; i++) {
        float s, b;
        double z;
        qbk_float_store_to_f32(q->s->dtype, q->s->data + (size_t)i * es, 1, &s);
        qbk_float_store_to_f32(q->b->dtype, q->b->data + (size_t)i * es, 1, &b);
        if (s == 0.0f) {
            q->has_grid = b == 0.0f;
            continue;
        }
        if (!isfinite(s) || !isfinite(b)) {
            q->has_grid = 0;
            break;
        }
        z = nearbyint(-(double)b / (double)s);
        if (z < 0 || z > top || -(double)b != z * (double)s) {
            q->has_grid = 0;
            break;
        }
        if ((int64_t)z != half)
            q->symmetric = 0;
        if (q->s->dtype == QB_DT_F32) {
            int64_t c;
            for (c = 0; c < top; c++) {
                float p = s * (float)c, d = p + b;
                if (d != (float)(c - (int64_t)z) * s)
                    q->has_grid = 0;
            }
        }
    }
}

static qb_status add_quant(qb_streader *r, mlx_model *m, const cJSON *qz, const qb_st_tensor *w,
                           const char *module)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    const char *dir = r->dir->dir;
    char key[600];
    mlx_qt *q = &m->q[m->nq];
    mlx_qparams p = {0, 0};
    qb_status st;

    memset(q, 0, sizeof *q);
    if ((st = module_params(h, dir, qz, module, &p)) != QB_OK)
        return st;
    snprintf(key, sizeof key, "%s.scales", module);
    q->s = api->find(r->dir->st, key);
    snprintf(key, sizeof key, "%s.biases", module);
    q->b = api->find(r->dir->st, key);
    if (!q->s || !q->b)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.weight: packed codes without %s", w->file,
                            module, q->s ? "biases (MLX affine needs both)" : "scales");
    if (w->n_dims != 2 || q->s->n_dims != 2 || q->b->n_dims != 2 ||
        !qbk_float_store_size(q->s->dtype) || q->s->dtype == QB_DT_F8_E4M3 ||
        q->s->dtype == QB_DT_F8_E5M2 || q->s->dtype != q->b->dtype)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: weight, scales and biases must be 2-D, "
                            "scales and biases one float dtype", w->file, module);
    q->w = w;
    q->bits = p.bits;
    q->gs = p.group_size;
    q->rows = w->dims[0];
    q->cols = w->dims[1] * 32 / p.bits;
    q->G = q->s->dims[1];
    if (q->s->dims[0] != q->rows || q->b->dims[0] != q->rows || q->b->dims[1] != q->G ||
        q->G * q->gs != q->cols)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: weight [%lld, %lld] holds %lld columns at "
                            "%d bits, but scales [%lld, %lld] / biases [%lld, %lld] with group "
                            "size %lld do not cover them", w->file, module,
                            (long long)w->dims[0], (long long)w->dims[1], (long long)q->cols,
                            p.bits, (long long)q->s->dims[0], (long long)q->s->dims[1],
                            (long long)q->b->dims[0], (long long)q->b->dims[1],
                            (long long)q->gs);
    q->name = qbk_malloc(strlen(module) + 8);
    if (!q->name)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    snprintf(q->name, strlen(module) + 8, "%s.weight", module);
    decide_grid(q);
    snprintf(q->enc, sizeof q->enc, "mlx affine int%d g%lld %s", q->bits, (long long)q->gs,
             q->s->dtype_name);
    m->e[m->n].q = q;
    m->e[m->n].dense = NULL;
    m->n++;
    m->nq++;
    return QB_OK;
}

static qb_status mlx_open_model(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    size_t n = api->count(r->dir->st), i;
    const cJSON *qz;
    mlx_model *m = NULL;
    qb_status st;

    (void)params;
    if ((st = qbk_reader_model_new(r, sizeof(*m), (void **)&m)) != QB_OK)
        return st;
    qz = cJSON_GetObjectItemCaseSensitive(m->b.config, "quantization");
    if (!cJSON_IsObject(qz))
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: no \"quantization\" object (not an "
                            "MLX quantized checkpoint)", r->dir->dir);
    m->e = qbk_calloc(n ? n : 1, sizeof *m->e);
    m->q = qbk_calloc(n ? n : 1, sizeof *m->q);
    if (!m->e || !m->q)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    for (i = 0; i < n; i++) {
        const qb_st_tensor *t = api->tensor(r->dir->st, i);
        char module[512];
        size_t nl = strlen(t->name);
        if (ends_with(t->name, ".scales") || ends_with(t->name, ".biases")) {
            char w[520];
            snprintf(w, sizeof w, "%.*s.weight", (int)(nl - 7), t->name);
            if (!api->find(r->dir->st, w))
                return h->set_error(h, QB_E_FORMAT, "%s: %s without its %s", t->file, t->name, w);
            continue; /* read with its weight */
        }
        if (t->dtype == QB_DT_U32 && ends_with(t->name, ".weight")) {
            if (nl - 7 >= sizeof module)
                return h->set_error(h, QB_E_FORMAT, "%s: %s: name too long", t->file, t->name);
            memcpy(module, t->name, nl - 7);
            module[nl - 7] = 0;
            if ((st = add_quant(r, m, qz, t, module)) != QB_OK)
                return st;
            continue;
        }
        if (!qb_streader_is_dense(t))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: dtype %s is neither a float tensor nor "
                                "MLX packed codes", t->file, t->name, t->dtype_name);
        m->e[m->n++].dense = t;
    }
    if (m->nq == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: no quantized module (no U32 .weight with "
                            ".scales and .biases)", r->dir->dir);
    r->n_tensors = m->n;
    return qb_streader_set_summary(r, "MLX affine, %zu quantized modules", m->nq);
}

static void mlx_close_model(qb_streader *r)
{
    mlx_model *m = r->model;
    size_t i;
    if (m) {
        for (i = 0; m->q && i < m->nq; i++)
            qbk_free(m->q[i].name);
        qbk_free(m->q);
        qbk_free(m->e);
    }
    qbk_reader_model_free(r);
}

static void mlx_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const mlx_model *m = r->model;
    const mlx_qt *q = m->e[i].q;
    if (!q) {
        qb_streader_describe_dense(m->e[i].dense, out);
        return;
    }
    out->name = q->name;
    out->n_dims = 2;
    out->dims[0] = q->rows;
    out->dims[1] = q->cols;
    out->source_dtype = QB_DT_QUANTIZED;
    out->encoding = q->enc;
    out->has_grid = q->has_grid;
    out->stored[0] = q->w;
    out->stored[1] = q->s;
    out->stored[2] = q->b;
}

static uint32_t u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static uint32_t code_at(const mlx_qt *q, int64_t r, int64_t k)
{
    int64_t pf = 32 / q->bits;
    const uint8_t *row = q->w->data + (size_t)(r * q->w->dims[1]) * 4;
    return (u32le(row + 4 * (size_t)(k / pf)) >> (q->bits * (k % pf))) & ((1u << q->bits) - 1u);
}

static void group_sb(const mlx_qt *q, int64_t r, int64_t g, float *s, float *b)
{
    size_t es = qbk_float_store_size(q->s->dtype), off = (size_t)(r * q->G + g) * es;
    qbk_float_store_to_f32(q->s->dtype, q->s->data + off, 1, s);
    qbk_float_store_to_f32(q->b->dtype, q->b->data + off, 1, b);
}

static qb_status mlx_read_rows(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                               float *dst)
{
    const mlx_model *m = r->model;
    const mlx_qt *q = m->e[i].q;
    int64_t rr, g, k;
    if (!q)
        return qb_streader_dense_rows(r->host, m->e[i].dense, row0, n_rows, dst);
    if (row0 < 0 || n_rows < 0 || row0 > q->rows || n_rows > q->rows - row0)
        return r->host->set_error(r->host, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside "
                                  "[0, %lld)", q->w->file, q->name, (long long)row0,
                                  (long long)n_rows, (long long)q->rows);
    for (rr = 0; rr < n_rows; rr++)
        for (g = 0; g < q->G; g++) {
            float s, b;
            group_sb(q, row0 + rr, g, &s, &b);
            if (q->has_grid) {
                /* bias == -z * scale exactly: scale * q + bias is the exact
                 * (q - z) * scale except for the sign of a zero (x + -x is
                 * +0), so the grid's value serves; it keeps the grid
                 * promise (qb_tensor.h) bit for bit */
                int32_t z = s == 0.0f ? 1 << (q->bits - 1)
                                      : (int32_t)nearbyint(-(double)b / (double)s);
                for (k = g * q->gs; k < (g + 1) * q->gs; k++)
                    dst[rr * q->cols + k] = (float)((int32_t)code_at(q, row0 + rr, k) - z) * s;
                continue;
            }
            for (k = g * q->gs; k < (g + 1) * q->gs; k++) {
                /* mlx dequantize: scale * q rounded, then + bias rounded */
                float p = s * (float)code_at(q, row0 + rr, k);
                dst[rr * q->cols + k] = p + b;
            }
        }
    return QB_OK;
}

static qb_status mlx_grid_info(const qb_streader *r, size_t i, qb_grid_info *out)
{
    const mlx_qt *q = ((const mlx_model *)r->model)->e[i].q;
    out->bits = (uint32_t)q->bits;
    out->n_groups = (uint32_t)q->G;
    out->group_size = q->gs;
    out->col_group = NULL;
    out->symmetric = q->symmetric;
    out->scale_dtype = q->s->dtype;
    return QB_OK;
}

static qb_status mlx_read_grid(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                               qb_grid_rows *out)
{
    const mlx_qt *q = ((const mlx_model *)r->model)->e[i].q;
    int64_t rr, g, k;
    if (row0 < 0 || n_rows < 0 || row0 > q->rows || n_rows > q->rows - row0)
        return r->host->set_error(r->host, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside "
                                  "[0, %lld)", q->w->file, q->name, (long long)row0,
                                  (long long)n_rows, (long long)q->rows);
    for (rr = 0; rr < n_rows; rr++) {
        for (g = 0; g < q->G; g++) {
            float s, b;
            size_t o = (size_t)(rr * q->G + g);
            group_sb(q, row0 + rr, g, &s, &b);
            out->scales[o] = s;
            out->zeros[o] = s == 0.0f ? 1 << (q->bits - 1)
                                      : (int32_t)nearbyint(-(double)b / (double)s);
        }
        for (k = 0; k < q->cols; k++)
            out->codes[rr * q->cols + k] = (uint8_t)code_at(q, row0 + rr, k);
    }
    return QB_OK;
}

const qb_streader_class mlx_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "mlx",
    .open = mlx_open_model,
    .close = mlx_close_model,
    .describe = mlx_describe,
    .read_rows = mlx_read_rows,
    .grid_info = mlx_grid_info,
    .read_grid = mlx_read_grid,
};
