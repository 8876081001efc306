/* Tests of sm86-w4a16: the fakes of w4t_fake.h. */
#define _GNU_SOURCE
#include "w4t_fake.h"

#include "qbk_sha256.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "w4w.h"

/* ---- host ---------------------------------------------------------------- */

static _Thread_local char g_msg[4096];
static int g_warns;

static void h_log(const qb_host *h, qb_log_level level, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    if (level == QB_LOG_WARN)
        g_warns++;
    if (getenv("W4T_VERBOSE") || level <= QB_LOG_WARN) {
        va_start(ap, fmt);
        fprintf(stderr, "[log %d] ", (int)level);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static qb_status h_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return code;
}

static void *h_alloc(const qb_host *h, size_t n)
{
    (void)h;
    return malloc(n ? n : 1);
}

static void h_free(const qb_host *h, void *p)
{
    (void)h;
    free(p);
}

static qb_status h_read_small_file(const qb_host *h, const char *path, size_t max_len, void **data,
                                   size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return h_set_error(h, QB_E_NOT_FOUND, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || (size_t)n > max_len) {
        fclose(f);
        return h_set_error(h, QB_E_RANGE, "%s: too large", path);
    }
    buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return h_set_error(h, QB_E_IO, "%s: read", path);
    }
    fclose(f);
    buf[n] = '\0';
    *data = buf;
    *len = (size_t)n;
    return QB_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static qb_status h_list_dir(const qb_host *h, const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v = calloc(256, sizeof *v);
    size_t n = 0;
    if (!d) {
        free(v);
        return h_set_error(h, QB_E_NOT_FOUND, "%s: cannot open", dir);
    }
    while ((e = readdir(d)) && n < 255)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            v[n++] = strdup(e->d_name);
    closedir(d);
    qsort(v, n, sizeof *v, cmp_str);
    *names = v;
    return QB_OK;
}

static void h_free_list(const qb_host *h, char **names)
{
    size_t i;
    (void)h;
    for (i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static const char *h_get_config(const qb_host *h, const char *key)
{
    (void)h;
    (void)key;
    return NULL;
}

static int h_progress(const qb_host *h, uint64_t done, uint64_t total, const char *stage)
{
    (void)h;
    (void)done;
    (void)total;
    (void)stage;
    return 0;
}

static int h_cancelled(const qb_host *h)
{
    (void)h;
    return 0;
}

/* Serial, in reverse order, so the writer cannot depend on item order. */
static qb_status h_parallel_for(const qb_host *h, size_t n, qb_parallel_fn fn, void *arg)
{
    size_t i;
    (void)h;
    for (i = n; i-- > 0;) {
        qb_status rc = fn(arg, i);
        if (rc != QB_OK)
            return rc;
    }
    return QB_OK;
}

static uint32_t h_thread_count(const qb_host *h)
{
    (void)h;
    return 3;
}

static void *h_get_proc(const qb_host *h, const char *name)
{
    (void)h;
    (void)name;
    return NULL;
}

const qb_host *w4t_host(void)
{
    static qb_host host;
    if (!host.struct_size) {
        host.struct_size = sizeof host;
        host.abi = QB_ABI_CURRENT;
        host.log = h_log;
        host.set_error = h_set_error;
        host.alloc = h_alloc;
        host.free = h_free;
        host.read_small_file = h_read_small_file;
        host.list_dir = h_list_dir;
        host.free_list = h_free_list;
        host.get_config = h_get_config;
        host.progress = h_progress;
        host.cancelled = h_cancelled;
        host.parallel_for = h_parallel_for;
        host.thread_count = h_thread_count;
        host.get_proc = h_get_proc;
    }
    return &host;
}

const char *w4t_last_error(void)
{
    return g_msg;
}

int w4t_warn_count(void)
{
    return g_warns;
}

void w4t_reset(void)
{
    g_msg[0] = '\0';
    g_warns = 0;
}

/* ---- sink ---------------------------------------------------------------- */

static qb_status s_create(void *handle, const char *name, qb_sink_file **out)
{
    w4t_sink *s = handle;
    size_t i;
    if (!name[0] || strchr(name, '/') || name[0] == '.')
        return h_set_error(NULL, QB_E_INVALID, "%s: bad name", name);
    for (i = 0; i < s->n; i++)
        if (strcmp(s->files[i].name, name) == 0)
            return h_set_error(NULL, QB_E_INVALID, "%s: created twice", name);
    if (s->n == sizeof s->files / sizeof s->files[0])
        return h_set_error(NULL, QB_E_IO, "too many files");
    memset(&s->files[s->n], 0, sizeof s->files[0]);
    snprintf(s->files[s->n].name, sizeof s->files[0].name, "%s", name);
    *out = (qb_sink_file *)&s->files[s->n++];
    return QB_OK;
}

static qb_status s_write(qb_sink_file *f, const void *buf, size_t len)
{
    w4t_file *wf = (w4t_file *)f;
    if (wf->closed)
        return h_set_error(NULL, QB_E_IO, "%s: write after close", wf->name);
    if (wf->len + len > wf->cap) {
        size_t cap = wf->cap ? wf->cap : 4096;
        while (cap < wf->len + len)
            cap *= 2;
        wf->data = realloc(wf->data, cap);
        wf->cap = cap;
    }
    memcpy(wf->data + wf->len, buf, len);
    wf->len += len;
    return QB_OK;
}

static qb_status s_close(qb_sink_file *f, uint64_t *bytes, uint8_t sha[32])
{
    w4t_file *wf = (w4t_file *)f;
    wf->closed = 1;
    if (bytes)
        *bytes = wf->len;
    if (sha)
        w4t_sha256(wf->data, wf->len, sha);
    return QB_OK;
}

void w4t_sink_init(w4t_sink *s)
{
    memset(s, 0, sizeof *s);
    s->sink.struct_size = sizeof s->sink;
    s->sink.handle = s;
    s->sink.create = s_create;
    s->sink.write = s_write;
    s->sink.close = s_close;
}

void w4t_sink_free(w4t_sink *s)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        free(s->files[i].data);
    s->n = 0;
}

const w4t_file *w4t_sink_find(const w4t_sink *s, const char *name)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        if (strcmp(s->files[i].name, name) == 0)
            return &s->files[i];
    return NULL;
}

/* ---- model source -------------------------------------------------------- */

static qb_status m_tensor_info(void *handle, size_t index, const qb_tensor_info **out)
{
    w4t_model *m = handle;
    w4t_tensor *t;
    qb_tensor_info *ti;
    if (index >= m->n)
        return h_set_error(NULL, QB_E_RANGE, "index %zu", index);
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
        return h_set_error(NULL, QB_E_RANGE, "read_rows range");
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
        return h_set_error(NULL, QB_E_RANGE, "read_grid");
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

static int st_header(const w4t_file *f, cJSON **hdr, size_t *base)
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

int w4t_st_get(const w4t_file *f, const char *name, w4t_st_view *v)
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

int w4t_st_count(const w4t_file *f)
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

qb_status w4t_convert(w4t_model *m, w4t_sink *s, const qb_param *params)
{
    w4w_ctx ctx = {w4t_host()};
    const qb_writer_vtable *vt = &w4w_writer_vtable;
    qb_writer_handle w = NULL;
    size_t *order = calloc(m->n ? m->n : 1, sizeof *order), i;
    qb_status rc;
    qb_param none[1];
    memset(none, 0, sizeof none);
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
