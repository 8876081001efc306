/*
 * Example third-party quantbridge reader on the reader base library
 * (quantbridge/base/qb_streader.h): a Hugging Face safetensors directory
 * whose config.json says
 *
 *   "quantization_config": {"quant_method": "example-int8"}
 *
 * and whose linears are stored as `<m>.weight` I8 [N, K] (codes q) with
 * `<m>.weight_scale` F32 [N] (one scale per output row); every other tensor
 * is F32/F16/BF16 and passed through. Dense value: (float)q * scale, one
 * float32 product. The codes are an integer grid (8 bits, one group per
 * row), so the grid view is offered too: code u = q + 128, zero 128.
 *
 * The base library does the directory (config.json through the host's
 * strict JSON service, generation config, tokenizer files, the safetensors
 * set), the whole reader vtable but probe and open, dense rows and the
 * stored-tensor view; this file is only what the format itself decides.
 * Build it against an installed SDK (CMakeLists.txt: find_package and
 * QuantbridgeSDK::base; Makefile: pkg-config quantbridge-base).
 */
#include <stdlib.h>
#include <string.h>

#include <quantbridge/base/qb_streader.h>
#include <quantbridge/quantbridge.h>

static const qb_host *i8_host; /* valid for the process lifetime */

typedef struct i8_tensor {
    const qb_st_tensor *w;     /* the I8 codes, or the dense tensor */
    const qb_st_tensor *scale; /* F32 [N]; NULL: dense */
} i8_tensor;

typedef struct i8_model {
    i8_tensor *t;
    size_t n, n_quant;
} i8_model;

static int i8_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    return qb_stdir_probe_quant_method(i8_host, in, "example-int8");
}

static int ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a < b || strcmp(s + a - b, suffix) != 0)
        return 0;
    *stem = a - b;
    return 1;
}

/* The stored tensor `stem` bytes of `name` followed by `suffix`, or NULL. */
static const qb_st_tensor *partner(const qb_stdir *d, const char *name, size_t stem,
                                   const char *suffix)
{
    char key[512];
    if (stem + strlen(suffix) >= sizeof key)
        return NULL;
    memcpy(key, name, stem);
    strcpy(key + stem, suffix);
    return i8_host->safetensors->find(d->st, key);
}

/* Builds the table: every I8 weight with its scale, every other tensor
 * dense; a scale without its weight is an error. */
static qb_status i8_build(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    const qb_stdir *d = r->dir;
    size_t i, stem, n_st = api->count(d->st);
    i8_model *m = h->alloc(h, sizeof *m);

    (void)params;
    if (!m)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", d->dir);
    memset(m, 0, sizeof *m);
    r->model = m;
    m->t = h->alloc(h, (n_st ? n_st : 1) * sizeof *m->t);
    if (!m->t)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", d->dir);
    /* host->alloc does not zero: a dense tensor's scale must read NULL */
    memset(m->t, 0, (n_st ? n_st : 1) * sizeof *m->t);
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *x = api->tensor(d->st, i), *s, *w;
        i8_tensor *t = &m->t[m->n];
        if (ends_with(x->name, ".weight_scale", &stem)) {
            w = partner(d, x->name, stem, ".weight");
            if (!w || w->dtype != QB_DT_I8)
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: a scale without its I8 weight",
                                    x->file, x->name);
            continue; /* read with its weight */
        }
        if (x->dtype == QB_DT_I8) {
            if (!ends_with(x->name, ".weight", &stem) || x->n_dims != 2)
                return h->set_error(h, QB_E_FORMAT, "%s: %s: I8 tensor that is not a 2-D "
                                    "<module>.weight", x->file, x->name);
            s = partner(d, x->name, stem, ".weight_scale");
            if (!s || s->dtype != QB_DT_F32 || s->n_dims != 1 || s->dims[0] != x->dims[0])
                return h->set_error(h, QB_E_FORMAT, "%s: %s: needs an F32 weight_scale of %lld "
                                    "rows", x->file, x->name, (long long)x->dims[0]);
            t->w = x;
            t->scale = s;
            m->n_quant++;
        } else if (qb_streader_is_dense(x)) {
            t->w = x;
        } else {
            return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: dtype %s is neither I8 codes nor "
                                "a float tensor", x->file, x->name, x->dtype_name);
        }
        m->n++;
    }
    r->n_tensors = m->n;
    return qb_streader_set_summary(r, "example int8, one F32 scale per row: %zu quantized + %zu "
                                   "dense tensors", m->n_quant, m->n - m->n_quant);
}

static void i8_close(qb_streader *r)
{
    i8_model *m = r->model;
    if (!m)
        return;
    r->host->free(r->host, m->t);
    r->host->free(r->host, m);
}

static void i8_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const i8_tensor *t = &((const i8_model *)r->model)->t[i];
    qb_streader_describe_dense(t->w, out); /* name, shape, stored[0] */
    if (!t->scale)
        return;
    out->source_dtype = QB_DT_QUANTIZED;
    out->encoding = "example int8 row-scale";
    out->has_grid = 1;
    out->stored[1] = t->scale;
}

static float scale_of(const qb_st_tensor *s, int64_t row)
{
    float v;
    memcpy(&v, s->data + 4 * row, 4); /* mapped bytes may be unaligned */
    return v;
}

static qb_status i8_read_rows(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                              float *dst)
{
    const i8_tensor *t = &((const i8_model *)r->model)->t[i];
    int64_t N, K, row, k;
    if (!t->scale)
        return qb_streader_dense_rows(r->host, t->w, row0, n_rows, dst);
    N = t->w->dims[0];
    K = t->w->dims[1];
    if (row0 < 0 || n_rows < 0 || row0 > N || n_rows > N - row0)
        return r->host->set_error(r->host, QB_E_RANGE, "%s: rows [%lld, +%lld) outside [0, %lld)",
                                  t->w->name, (long long)row0, (long long)n_rows, (long long)N);
    for (row = row0; row < row0 + n_rows; row++) {
        const int8_t *q = (const int8_t *)(const void *)(t->w->data + row * K);
        float s = scale_of(t->scale, row);
        for (k = 0; k < K; k++)
            dst[(row - row0) * K + k] = (float)q[k] * s;
    }
    return QB_OK;
}

static qb_status i8_grid_info(const qb_streader *r, size_t i, qb_grid_info *out)
{
    const i8_tensor *t = &((const i8_model *)r->model)->t[i];
    out->bits = 8;
    out->n_groups = 1;
    out->group_size = t->w->dims[1];
    out->col_group = NULL;
    out->symmetric = 1;
    out->scale_dtype = QB_DT_F32;
    return QB_OK;
}

static qb_status i8_read_grid(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                              qb_grid_rows *out)
{
    const i8_tensor *t = &((const i8_model *)r->model)->t[i];
    int64_t N = t->w->dims[0], K = t->w->dims[1], row, k;
    if (row0 < 0 || n_rows < 0 || row0 > N || n_rows > N - row0)
        return r->host->set_error(r->host, QB_E_RANGE, "%s: rows [%lld, +%lld) outside [0, %lld)",
                                  t->w->name, (long long)row0, (long long)n_rows, (long long)N);
    for (row = row0; row < row0 + n_rows; row++) {
        const int8_t *q = (const int8_t *)(const void *)(t->w->data + row * K);
        for (k = 0; k < K; k++)
            out->codes[(row - row0) * K + k] = (uint8_t)(q[k] + 128);
        out->scales[row - row0] = scale_of(t->scale, row);
        out->zeros[row - row0] = 128;
    }
    return QB_OK;
}

static const qb_streader_class i8_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "example-int8",
    .open = i8_build,
    .close = i8_close,
    .describe = i8_describe,
    .read_rows = i8_read_rows,
    .grid_info = i8_grid_info,
    .read_grid = i8_read_grid,
};

static qb_status i8_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    (void)ctx;
    return qb_streader_open(i8_host, &i8_class, path, params, out);
}

static const qb_reader_vtable i8_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = i8_probe,
    .open = i8_open,
    QB_STREADER_VT_ENTRIES,
    QB_STREADER_VT_GRID_ENTRIES,
};

static qb_plugin i8_plugin = { /* not const: .abi is set at entry */
    .struct_size = sizeof(qb_plugin),
    .name = "int8-example",
    .version = "1.0.0",
    .description = "Example reader on the reader base library (I8 codes, F32 row scales)",
    .vendor = "example",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &i8_reader,
};

/* The base reads config.json through host->json, added in ABI 1.1, and
 * the vtable has the stored-tensor view of 1.2. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 2));
    if (rc)
        return rc;
    i8_plugin.abi = neg->plugin_abi;
    i8_host = host;
    *out = &i8_plugin;
    return QB_OK;
}
