/* Tests of sm86-w4a16: the model source and helpers of w4t_fake.h. */
#define _GNU_SOURCE
#include "w4t_fake.h"

#include "qbk_sha256.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "w4w.h"

/* set_error through the real host (qbt_host_last_error reads it). */
static qb_status m_err(qb_status code, const char *fmt, size_t index)
{
    const qb_host *h = qbt_host();
    return h->set_error(h, code, fmt, index);
}

/* ---- model source -------------------------------------------------------- */

static qb_status m_tensor_info(void *handle, size_t index, const qb_tensor_info **out)
{
    w4t_model *m = handle;
    w4t_tensor *t;
    qb_tensor_info *ti;
    if (index >= m->n)
        return m_err(QB_E_RANGE, "index %zu", index);
    t = &m->t[index];
    ti = &m->ti[index];
    memset(ti, 0, sizeof *ti);
    ti->struct_size = sizeof *ti;
    ti->name = t->name;
    ti->n_dims = t->n_dims;
    ti->dims[0] = t->dims[0];
    ti->dims[1] = t->dims[1];
    ti->source_dtype = t->has_grid ? QB_DT_QUANTIZED : QB_DT_F32;
    ti->source_encoding = t->has_grid ? "test int4 grid" : "f32";
    ti->has_grid = t->has_grid;
    *out = ti;
    return QB_OK;
}

static qb_status m_find(void *handle, const char *name, size_t *index)
{
    w4t_model *m = handle;
    size_t i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0) {
            *index = i;
            return QB_OK;
        }
    return QB_E_NOT_FOUND;
}

static int64_t t_rows(const w4t_tensor *t)
{
    return t->n_dims == 1 ? 1 : t->dims[0];
}
static int64_t t_cols(const w4t_tensor *t)
{
    return t->n_dims == 1 ? t->dims[0] : t->dims[1];
}

static qb_status m_read_rows(void *handle, size_t index, int64_t row0, int64_t n, float *dst)
{
    w4t_model *m = handle;
    w4t_tensor *t = &m->t[index];
    if (index >= m->n || row0 < 0 || n < 0 || row0 + n > t_rows(t))
        return m_err(QB_E_RANGE, "read_rows range (tensor %zu)", index);
    memcpy(dst, t->data + row0 * t_cols(t), (size_t)(n * t_cols(t)) * sizeof(float));
    return QB_OK;
}

static qb_status m_grid_info(void *handle, size_t index, qb_grid_info *out)
{
    w4t_model *m = handle;
    w4t_tensor *t = &m->t[index];
    if (!t->has_grid)
        return QB_E_UNSUPPORTED;
    out->bits = t->bits;
    out->n_groups = t->n_groups;
    out->group_size = t->col_group ? 0 : t->group_size;
    out->col_group = t->col_group;
    out->symmetric = t->symmetric;
    out->scale_dtype = QB_DT_F16;
    return QB_OK;
}

static qb_status m_read_grid(void *handle, size_t index, int64_t row0, int64_t n, qb_grid_rows *out)
{
    w4t_model *m = handle;
    w4t_tensor *t = &m->t[index];
    int64_t cols = t_cols(t);
    if (!t->has_grid || row0 + n > t_rows(t))
        return m_err(QB_E_RANGE, "read_grid range (tensor %zu)", index);
    memcpy(out->codes, t->codes + row0 * cols, (size_t)(n * cols));
    memcpy(out->scales, t->scales + row0 * t->n_groups, (size_t)n * t->n_groups * sizeof(float));
    memcpy(out->zeros, t->zeros + row0 * t->n_groups, (size_t)n * t->n_groups * sizeof(int32_t));
    return QB_OK;
}

void w4t_model_init(w4t_model *m, const char *arch, const char *config)
{
    memset(m, 0, sizeof *m);
    snprintf(m->config, sizeof m->config, "%s", config);
    m->info.struct_size = sizeof m->info;
    m->info.architecture = arch;
    m->info.config_json = m->config;
    m->info.source_format = "test";
    m->info.source_summary = "in-memory test model";
    m->src.struct_size = sizeof m->src;
    m->src.handle = m;
    m->src.info = &m->info;
    m->src.source_path = "/tmp/models/tiny-model/";
    m->src.reader_name = "fake";
    m->src.reader_version = "9.9";
    m->src.host_version = "0.1.0-test";
    m->src.tensor_info = m_tensor_info;
    m->src.find = m_find;
    m->src.read_rows = m_read_rows;
    m->src.get_grid_info = m_grid_info;
    m->src.read_grid = m_read_grid;
}

double w4t_normal(uint64_t *s)
{
    /* splitmix64 + Box-Muller */
    double u1, u2;
    uint64_t z;
    *s += 0x9e3779b97f4a7c15ull;
    z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    u1 = ((double)(z >> 11) + 1.0) / 9007199254740993.0;
    *s += 0x9e3779b97f4a7c15ull;
    z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    u2 = (double)(z >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static w4t_tensor *add_tensor(w4t_model *m, const char *name, uint32_t nd, int64_t rows,
                              int64_t cols, uint64_t seed, float scale)
{
    w4t_tensor *t = &m->t[m->n++];
    int64_t i;
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = nd;
    t->dims[0] = nd == 1 ? cols : rows;
    t->dims[1] = cols;
    t->data = malloc((size_t)(rows * cols) * sizeof(float));
    for (i = 0; i < rows * cols; i++)
        t->data[i] = (float)(w4t_normal(&seed) * scale);
    m->info.n_tensors = m->n;
    return t;
}

w4t_tensor *w4t_add(w4t_model *m, const char *name, int64_t rows, int64_t cols, uint64_t seed,
                    float scale)
{
    return add_tensor(m, name, 2, rows, cols, seed, scale);
}

w4t_tensor *w4t_add_1d(w4t_model *m, const char *name, int64_t n, uint64_t seed)
{
    w4t_tensor *t = add_tensor(m, name, 1, 1, n, seed, 0.1f);
    int64_t i;
    for (i = 0; i < n; i++)
        t->data[i] += 1.0f;
    return t;
}

static void tensor_free(w4t_tensor *t)
{
    free(t->data);
    free(t->codes);
    free(t->scales);
    free(t->zeros);
    free(t->col_group);
}

int w4t_remove(w4t_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0) {
            tensor_free(&m->t[i]);
            memmove(&m->t[i], &m->t[i + 1], (m->n - i - 1) * sizeof m->t[0]);
            m->n--;
            m->info.n_tensors = m->n;
            return 1;
        }
    return 0;
}

w4t_tensor *w4t_find(w4t_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0)
            return &m->t[i];
    return NULL;
}

void w4t_model_dense(w4t_model *m, const char *arch, int L, int64_t hidden, int64_t inter,
                     int64_t vocab, int tied, int qwen2_bias, int gemma2_norms, int qk_norm)
{
    char cfg[1024], n[160];
    uint64_t seed = 1000;
    int l;
    snprintf(cfg, sizeof cfg,
             "{\"model_type\":\"%s\",\"hidden_size\":%lld,\"intermediate_size\":%lld,"
             "\"num_hidden_layers\":%d,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
             "\"vocab_size\":%lld,\"tie_word_embeddings\":%s,\"rms_norm_eps\":1e-6,"
             "\"bos_token_id\":1,\"eos_token_id\":2,\"torch_dtype\":\"bfloat16\","
             "\"quantization_config\":{\"quant_method\":\"none\"}}",
             arch, (long long)hidden, (long long)inter, L, (long long)vocab,
             tied ? "true" : "false");
    w4t_model_init(m, arch, cfg);
    w4t_add(m, "model.embed_tokens.weight", vocab, hidden, seed++, 0.02f);
    for (l = 0; l < L; l++) {
        static const char *const lin[] = {
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
        int k;
        for (k = 0; k < 7; k++) {
            int64_t rows = k >= 4 && k < 6 ? inter : hidden, cols = k == 6 ? inter : hidden;
            if (k == 1 || k == 2)
                rows = hidden / 2;
            snprintf(n, sizeof n, "model.layers.%d.%s.weight", l, lin[k]);
            w4t_add(m, n, rows, cols, seed++, 0.05f);
            if (qwen2_bias && k < 3) {
                snprintf(n, sizeof n, "model.layers.%d.%s.bias", l, lin[k]);
                w4t_add_1d(m, n, rows, seed++);
            }
        }
        snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", l);
        w4t_add_1d(m, n, hidden, seed++);
        snprintf(n, sizeof n, "model.layers.%d.post_attention_layernorm.weight", l);
        w4t_add_1d(m, n, hidden, seed++);
        if (gemma2_norms) {
            snprintf(n, sizeof n, "model.layers.%d.pre_feedforward_layernorm.weight", l);
            w4t_add_1d(m, n, hidden, seed++);
            snprintf(n, sizeof n, "model.layers.%d.post_feedforward_layernorm.weight", l);
            w4t_add_1d(m, n, hidden, seed++);
        }
        if (qk_norm) {
            snprintf(n, sizeof n, "model.layers.%d.self_attn.q_norm.weight", l);
            w4t_add_1d(m, n, 16, seed++);
            snprintf(n, sizeof n, "model.layers.%d.self_attn.k_norm.weight", l);
            w4t_add_1d(m, n, 16, seed++);
        }
    }
    w4t_add_1d(m, "model.norm.weight", hidden, seed++);
    if (!tied)
        w4t_add(m, "lm_head.weight", vocab, hidden, seed++, 0.02f);
}

void w4t_make_grid(w4t_tensor *t, int64_t gs, uint64_t seed)
{
    int64_t rows = t->dims[0], cols = t->dims[1], r, c, g;
    uint32_t ng = (uint32_t)((cols + gs - 1) / gs);
    free(t->codes);
    free(t->scales);
    free(t->zeros);
    t->has_grid = 1;
    t->bits = 4;
    t->symmetric = 1;
    t->group_size = gs;
    t->n_groups = ng;
    t->codes = malloc((size_t)(rows * cols));
    t->scales = malloc((size_t)rows * ng * sizeof(float));
    t->zeros = malloc((size_t)rows * ng * sizeof(int32_t));
    for (r = 0; r < rows; r++) {
        for (g = 0; g < ng; g++) {
            /* an fp16-exact scale: a random fp16 value in about [1e-3, 4e-3] */
            double v = 0.001 * (1.0 + fabs(w4t_normal(&seed)));
            t->scales[r * ng + g] = qb_f16_to_f32(qb_f32_to_f16((float)v));
            t->zeros[r * ng + g] = 8;
        }
        for (c = 0; c < cols; c++) {
            uint64_t z = (uint64_t)(fabs(w4t_normal(&seed)) * 1e6);
            uint8_t code = (uint8_t)(z % 16);
            t->codes[r * cols + c] = code;
            t->data[r * cols + c] = (float)((int32_t)code - 8) * t->scales[r * ng + c / gs];
        }
    }
}

void w4t_model_free(w4t_model *m)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        tensor_free(&m->t[i]);
    m->n = 0;
}

/* ---- safetensors view ---------------------------------------------------- */

static int st_header(const qbt_mem_file *f, cJSON **hdr, size_t *base)
{
    uint64_t n = 0;
    int i;
    char *text;
    if (!f || f->len < 8)
        return -1;
    for (i = 0; i < 8; i++)
        n |= (uint64_t)f->data[i] << (8 * i);
    if (n > f->len - 8)
        return -1;
    text = malloc(n + 1);
    memcpy(text, f->data + 8, n);
    text[n] = '\0';
    *hdr = cJSON_Parse(text);
    free(text);
    *base = 8 + n;
    return *hdr ? 0 : -1;
}

int w4t_st_get(const qbt_mem_file *f, const char *name, w4t_st_view *v)
{
    cJSON *hdr = NULL, *t, *sh, *off, *e;
    size_t base;
    int rc = -1, i = 0;
    if (st_header(f, &hdr, &base) != 0)
        return -1;
    t = cJSON_GetObjectItemCaseSensitive(hdr, name);
    if (!t)
        goto out;
    memset(v, 0, sizeof *v);
    snprintf(v->dtype, sizeof v->dtype, "%s", cJSON_GetObjectItem(t, "dtype")->valuestring);
    sh = cJSON_GetObjectItem(t, "shape");
    cJSON_ArrayForEach(e, sh) v->dims[i++] = (int64_t)e->valuedouble;
    v->n_dims = i;
    off = cJSON_GetObjectItem(t, "data_offsets");
    {
        size_t a = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        size_t b = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        if (b < a || base + b > f->len)
            goto out;
        v->data = f->data + base + a;
        v->n_bytes = b - a;
    }
    rc = 0;
out:
    cJSON_Delete(hdr);
    return rc;
}

int w4t_st_count(const qbt_mem_file *f)
{
    cJSON *hdr = NULL, *e;
    size_t base;
    int n = 0;
    if (st_header(f, &hdr, &base) != 0)
        return -1;
    cJSON_ArrayForEach(e, hdr) if (strcmp(e->string, "__metadata__") != 0) n++;
    cJSON_Delete(hdr);
    return n;
}

/* ---- SHA-256 ------------------------------------------------------------ */

/* The kit's SHA-256 (its known-answer vectors: tests/host/test_sha256.c). */
void w4t_sha256(const uint8_t *data, size_t len, uint8_t out[32])
{
    qbk_sha256 c;
    qbk_sha256_init(&c);
    qbk_sha256_update(&c, data, len);
    qbk_sha256_final(&c, out);
}

/* ---- driving the writer -------------------------------------------------- */

qb_status w4t_convert(w4t_model *m, qbt_mem_sink *s, const qb_param *params)
{
    w4w_ctx ctx = {qbt_host()};
    const qb_writer_vtable *vt = &w4w_writer_vtable;
    qb_writer_handle w = NULL;
    size_t *order = calloc(m->n ? m->n : 1, sizeof *order), i;
    qb_status rc;
    qb_param none[1];
    memset(none, 0, sizeof none);
    qbt_host_threads(W4T_THREADS);
    rc = vt->begin(&ctx, &s->sink, &m->src, params ? params : none, order, &w);
    if (rc != QB_OK)
        goto out;
    for (i = 0; i < m->n; i++) {
        rc = vt->write_tensor(w, order[i]);
        if (rc != QB_OK) {
            vt->abort(w);
            goto out;
        }
    }
    rc = vt->finish(w);
out:
    free(order);
    return rc;
}
