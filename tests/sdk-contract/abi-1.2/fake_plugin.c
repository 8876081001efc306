/*
 * The frozen ABI 1.2 test plugin (README.md here): a reader and a writer
 * written against the ABI 1.2 SDK headers in include/, using what 1.2
 * added (the writer's plan; the reader's views of the source as stored,
 * get_raw_tensor_info and get_metadata) and what 1.1 added before it, so
 * every later host is held to them:
 *   - the plan (qb_writer_vtable.plan): one entry per tensor, action COPY
 *     for a float32 source and CONVERT otherwise, target "<name>.f32",
 *     bytes_out the bytes of that file, plus the settings "group_size"
 *     (0: nothing quantized) and "scale";
 *   - the stored view: each tensor as the fake format "stores" it (name
 *     "fake.<i>", type "F32", shape in reverse order), and one stored
 *     tensor that feeds none ("fake.checksum", canonical -1);
 *   - metadata: three entries (a string, a u32 and an f64 that is the
 *     reader's bias), each written into the caller's buffer, cut to fit;
 *   - per-role options: `bias` is the reader's (QB_OPTION_ROLE_READER),
 *     `scale` the writer's (QB_OPTION_ROLE_WRITER);
 *   - writer capabilities (qb_writer_caps): an architecture list
 *     ({"llama"}) and required facts (layers, hidden size, vocabulary);
 *   - model facts (qb_model_info.facts, filled by the host): the writer
 *     records every field it sees in "facts.txt";
 *   - the failed-finish rule: finish releases the handle, success or not.
 *
 * reader: a file whose first bytes are "FAKEMODEL", or a directory holding
 *         model.fake (the fake format of ../fake_plugin.c); three tensors
 *         whose values are (t+1)/2 + r/4 - c/8, plus `bias`;
 * writer: one little-endian float32 file "<name>.f32" per tensor (each
 *         value times `scale`), read in blocks of rows, then "facts.txt"
 *         and "config.json" (the source's config through the host's JSON
 *         service, 1.1, with "quantbridge_writer" added).
 *
 * FAKE_NAME="..." names the plugin (the test builds set it).
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <string.h>

#ifndef FAKE_NAME
#define FAKE_NAME "fake-abi12"
#endif

static const qb_host *H;

/* ---- the model ----------------------------------------------------------- */

#define FAKE_N_TENSORS 3
static const struct {
    const char *name;
    uint32_t n_dims;
    int64_t dims[2];
} fake_tensors[FAKE_N_TENSORS] = {
    {"model.embed_tokens.weight", 2, {6, 8}},
    {"model.layers.0.self_attn.q_proj.weight", 2, {8, 8}},
    {"model.norm.weight", 1, {8, 0}},
};

/* Exactly representable in float32, so tests compare with ==. */
static float fake_value(size_t t, int64_t r, int64_t c)
{
    return (float)(t + 1) * 0.5f + (float)r * 0.25f - (float)c * 0.125f;
}

typedef struct fake_reader {
    double bias;
} fake_reader;

static int fake_probe(void *ctx, const qb_probe_input *in)
{
    size_t i;
    (void)ctx;
    if (in->head && in->head_len >= 9 && memcmp(in->head, "FAKEMODEL", 9) == 0)
        return 100;
    for (i = 0; in->is_dir && in->siblings && in->siblings[i]; i++)
        if (strcmp(in->siblings[i], "model.fake") == 0)
            return 100;
    return 0;
}

static qb_status fake_open(void *ctx, const char *path, const qb_param *params,
                           qb_reader_handle *out)
{
    const qb_param *b = qb_param_find(params, "bias");
    void *data = NULL;
    size_t len = 0;
    fake_reader *r;
    qb_status rc;
    char file[4096];
    (void)ctx;
    *out = NULL;
    snprintf(file, sizeof file, "%s", path);
    if (H->read_small_file(H, path, 4096, &data, &len) == QB_E_IO)
        snprintf(file, sizeof file, "%s/model.fake", path); /* a directory */
    else
        H->free(H, data);
    data = NULL;
    rc = H->read_small_file(H, file, 4096, &data, &len);
    if (rc)
        return rc;
    if (len < 9 || memcmp(data, "FAKEMODEL", 9) != 0) {
        H->free(H, data);
        return H->set_error(H, QB_E_FORMAT, "%s: not a FAKEMODEL file", path);
    }
    H->free(H, data);
    r = H->alloc(H, sizeof *r);
    if (!r)
        return H->set_error(H, QB_E_NOMEM, "%s: out of memory", path);
    r->bias = (b && b->is_set) ? b->v.d : 0.0;
    *out = r;
    return QB_OK;
}

static void fake_close(qb_reader_handle h)
{
    H->free(H, h);
}

static qb_status fake_model_info(qb_reader_handle h, qb_model_info *mi)
{
    (void)h;
    mi->architecture = "llama";
    /* no num_hidden_layers: the host counts the layers from tensor names */
    mi->config_json = "{\"model_type\": \"llama\", \"num_attention_heads\": 2, "
                      "\"num_key_value_heads\": 1, \"head_dim\": 4, \"intermediate_size\": 16}";
    mi->generation_config_json = NULL;
    mi->n_tensors = FAKE_N_TENSORS;
    mi->source_format = FAKE_NAME;
    mi->source_summary = "fake in-memory model (ABI 1.2 build)";
    mi->tokenizer_dir = NULL;
    mi->chat_template = NULL;
    /* facts are the host's: a reader leaves them NULL */
    if (QB_HAS_FIELD(mi, qb_model_info, facts))
        mi->facts = NULL;
    return QB_OK;
}

static qb_status fake_tensor_info(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    (void)h;
    if (i >= FAKE_N_TENSORS)
        return H->set_error(H, QB_E_RANGE, "%s: no tensor %zu", FAKE_NAME, i);
    ti->name = fake_tensors[i].name;
    ti->n_dims = fake_tensors[i].n_dims;
    memset(ti->dims, 0, sizeof ti->dims);
    memcpy(ti->dims, fake_tensors[i].dims, sizeof fake_tensors[i].dims);
    ti->source_dtype = QB_DT_F32;
    ti->source_encoding = "f32 (fake)";
    ti->has_grid = 0;
    return QB_OK;
}

static qb_status fake_read_rows(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows,
                                float *dst)
{
    fake_reader *r = h;
    int64_t rows, cols, rr, c;
    if (i >= FAKE_N_TENSORS)
        return H->set_error(H, QB_E_RANGE, "%s: no tensor %zu", FAKE_NAME, i);
    rows = fake_tensors[i].n_dims == 2 ? fake_tensors[i].dims[0] : 1;
    cols = fake_tensors[i].dims[fake_tensors[i].n_dims - 1];
    if (row0 < 0 || n_rows < 0 || row0 + n_rows > rows)
        return H->set_error(H, QB_E_RANGE, "%s: rows [%lld, +%lld) of %s", FAKE_NAME,
                            (long long)row0, (long long)n_rows, fake_tensors[i].name);
    for (rr = 0; rr < n_rows; rr++)
        for (c = 0; c < cols; c++)
            dst[rr * cols + c] = fake_value(i, row0 + rr, c) + (float)r->bias;
    return QB_OK;
}

/* The stored view: tensor i as "fake.<i>", shape reversed (the format's
 * own order), then the one stored tensor that feeds no canonical one. */
static const char *const raw_names[FAKE_N_TENSORS + 1] = {"fake.0", "fake.1", "fake.2",
                                                          "fake.checksum"};

static qb_status fake_raw_info(qb_reader_handle h, size_t i, qb_raw_tensor_info *ri)
{
    uint32_t d;
    (void)h;
    if (i > FAKE_N_TENSORS)
        return QB_E_RANGE;
    ri->name = raw_names[i];
    memset(ri->dims, 0, sizeof ri->dims);
    ri->file = NULL;
    if (i == FAKE_N_TENSORS) {
        ri->type = "U32";
        ri->n_dims = 1;
        ri->dims[0] = 1;
        ri->n_bytes = 4;
        ri->canonical = -1;
        return QB_OK;
    }
    ri->type = "F32";
    ri->n_dims = fake_tensors[i].n_dims;
    ri->n_bytes = 4;
    for (d = 0; d < ri->n_dims; d++) {
        ri->dims[d] = fake_tensors[i].dims[ri->n_dims - 1 - d];
        ri->n_bytes *= (uint64_t)ri->dims[d];
    }
    ri->canonical = (int64_t)i;
    return QB_OK;
}

static qb_status fake_metadata(qb_reader_handle h, size_t i, qb_meta_entry *e)
{
    fake_reader *r = h;
    if (e->value_cap < 1)
        return H->set_error(H, QB_E_INVALID, "%s: metadata buffer of 0 bytes", FAKE_NAME);
    switch (i) {
    case 0:
        e->key = "general.architecture";
        e->type = "string";
        snprintf(e->value, e->value_cap, "llama");
        return QB_OK;
    case 1:
        e->key = "fake.tensor_count";
        e->type = "u32";
        snprintf(e->value, e->value_cap, "%d", FAKE_N_TENSORS);
        return QB_OK;
    case 2:
        e->key = "fake.bias";
        e->type = "f64";
        snprintf(e->value, e->value_cap, "%g", r->bias);
        return QB_OK;
    default:
        return QB_E_RANGE;
    }
}

static const qb_reader_vtable fake_reader_vt = {
    sizeof(qb_reader_vtable), fake_probe, fake_open, fake_close, fake_model_info,
    fake_tensor_info, fake_read_rows, NULL, NULL, fake_raw_info, fake_metadata,
};

/* ---- the writer ---------------------------------------------------------- */

#define FAKE_BLOCK_ROWS 64

typedef struct fake_writer {
    const qb_sink *sink;
    const qb_model_src *src;
    double scale;
    char facts[512];
} fake_writer;

/* The facts the host computed, as the writer sees them. */
static void record_facts(fake_writer *w, const qb_model_info *mi)
{
    const qb_model_facts *f;
    if (!QB_HAS_FIELD(mi, qb_model_info, facts) || !mi->facts) {
        snprintf(w->facts, sizeof w->facts, "no facts\n");
        return;
    }
    f = mi->facts;
    snprintf(w->facts, sizeof w->facts,
             "known 0x%x\nn_layers %lld\nhidden_size %lld\nvocab_size %lld\nn_heads %lld\n"
             "n_kv_heads %lld\nhead_dim %lld\nintermediate_size %lld\nn_experts %lld\n"
             "n_experts_used %lld\ntied_embeddings %d\n",
             f->known, (long long)f->n_layers, (long long)f->hidden_size,
             (long long)f->vocab_size, (long long)f->n_heads, (long long)f->n_kv_heads,
             (long long)f->head_dim, (long long)f->intermediate_size, (long long)f->n_experts,
             (long long)f->n_experts_used, f->tied_embeddings);
}

static int fake_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    (void)mi; /* the architecture list in the caps already said llama */
    return 50;
}

static qb_status fake_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                            const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_param *s = qb_param_find(params, "scale");
    fake_writer *w;
    size_t i;
    (void)ctx;
    *out = NULL;
    w = H->alloc(H, sizeof *w);
    if (!w)
        return H->set_error(H, QB_E_NOMEM, "%s writer: out of memory", FAKE_NAME);
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->src = src;
    w->scale = (s && s->is_set) ? s->v.d : 1.0;
    record_facts(w, src->info);
    for (i = 0; i < src->info->n_tensors; i++)
        order[i] = i;
    *out = w;
    return QB_OK;
}

static qb_status write_file(fake_writer *w, const char *name, const void *data, size_t len)
{
    qb_sink_file *f = NULL;
    qb_status rc = w->sink->create(w->sink->handle, name, &f);
    if (rc)
        return rc;
    rc = w->sink->write(f, data, len);
    if (rc) {
        w->sink->close(f, NULL, NULL);
        return rc;
    }
    return w->sink->close(f, NULL, NULL);
}

static qb_status fake_write_tensor(qb_writer_handle h, size_t index)
{
    fake_writer *w = h;
    const qb_tensor_info *ti;
    qb_sink_file *f = NULL;
    char fname[512];
    float *buf;
    int64_t rows, cols, r0, n, k;
    qb_status rc = w->src->tensor_info(w->src->handle, index, &ti);
    if (rc)
        return rc;
    rows = qb_tensor_rows(ti);
    cols = qb_tensor_cols(ti);
    buf = H->alloc(H, (size_t)(FAKE_BLOCK_ROWS * cols) * sizeof(float) + 1);
    if (!buf)
        return H->set_error(H, QB_E_NOMEM, "%s writer: out of memory for %s", FAKE_NAME,
                            ti->name);
    snprintf(fname, sizeof fname, "%s.f32", ti->name);
    rc = w->sink->create(w->sink->handle, fname, &f);
    for (r0 = 0; rc == QB_OK && r0 < rows; r0 += n) {
        n = rows - r0 < FAKE_BLOCK_ROWS ? rows - r0 : FAKE_BLOCK_ROWS;
        rc = w->src->read_rows(w->src->handle, index, r0, n, buf);
        for (k = 0; rc == QB_OK && k < n * cols; k++)
            buf[k] = (float)((double)buf[k] * w->scale);
        if (rc == QB_OK)
            rc = w->sink->write(f, buf, (size_t)(n * cols) * sizeof(float));
    }
    if (f) {
        if (rc == QB_OK)
            rc = w->sink->close(f, NULL, NULL);
        else
            w->sink->close(f, NULL, NULL);
    }
    H->free(H, buf);
    return rc;
}

/* config.json: the source's config through the host's JSON service
 * (1.1), with the writer's name added. */
static qb_status write_config(fake_writer *w)
{
    const qb_json_api *J = QB_HAS_FIELD(H, qb_host, json) ? H->json : NULL;
    const char *cfg = w->src->info->config_json;
    qb_json *root = NULL, *name;
    char *text = NULL;
    size_t len = 0;
    qb_status rc;
    if (!J)
        return H->set_error(H, QB_E_UNSUPPORTED, "%s writer: the host has no JSON service",
                            FAKE_NAME);
    rc = J->parse(H, "config.json", cfg, strlen(cfg), &root);
    if (rc)
        return rc;
    name = J->new_string(FAKE_NAME);
    if (!name) {
        J->free(root);
        return H->set_error(H, QB_E_NOMEM, "%s writer: out of memory", FAKE_NAME);
    }
    rc = J->add(root, "quantbridge_writer", name);
    if (rc == QB_OK)
        rc = J->emit(H, root, 2, &text, &len);
    J->free(root);
    if (rc)
        return H->set_error(H, rc, "%s writer: config.json: cannot build it", FAKE_NAME);
    rc = write_file(w, "config.json", text, len);
    H->free(H, text);
    return rc;
}

static qb_status fake_finish(qb_writer_handle h)
{
    fake_writer *w = h;
    /* success or failure, the handle is gone (1.1's failed-finish rule) */
    qb_status rc = write_file(w, "facts.txt", w->facts, strlen(w->facts));
    if (rc == QB_OK)
        rc = write_config(w);
    H->free(H, w);
    return rc;
}

static void fake_abort(qb_writer_handle h)
{
    H->free(H, h);
}

/* What begin and write_tensor will do, without a sink: the same order
 * (source order), one file of rows * cols float32 per tensor. */
static qb_status fake_plan(void *ctx, const qb_model_src *src, const qb_param *params,
                           const qb_plan_sink *out)
{
    const qb_param *s = qb_param_find(params, "scale");
    char scale[64], target[512];
    size_t i;
    qb_status rc;
    (void)ctx;
    snprintf(scale, sizeof scale, "%g", (s && s->is_set) ? s->v.d : 1.0);
    rc = out->setting(out->handle, "group_size", "0", "not quantized: float32 files");
    if (rc == QB_OK)
        rc = out->setting(out->handle, "scale", scale, "the writer option scale (default 1)");
    for (i = 0; rc == QB_OK && i < src->info->n_tensors; i++) {
        const qb_tensor_info *ti;
        qb_plan_entry e;
        rc = src->tensor_info(src->handle, i, &ti);
        if (rc)
            break;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        e.tensor = i;
        snprintf(target, sizeof target, "%s.f32", ti->name);
        e.target = target;
        if (ti->source_dtype == QB_DT_F32) {
            e.action = QB_PLAN_COPY;
            e.reason = "float32 rows stored as float32";
        } else {
            e.action = QB_PLAN_CONVERT;
            e.reason = "stored as float32";
        }
        e.group_size = 0;
        e.bytes_out = (uint64_t)(qb_tensor_rows(ti) * qb_tensor_cols(ti)) * sizeof(float);
        rc = out->tensor(out->handle, &e);
    }
    return rc;
}

static const qb_writer_vtable fake_writer_vt = {
    sizeof(qb_writer_vtable), fake_supports, fake_begin, fake_write_tensor, fake_finish,
    fake_abort, fake_plan,
};

static const char *const fake_archs[] = {"llama", NULL};
static const qb_writer_caps fake_caps = {
    sizeof(qb_writer_caps), 0, fake_archs, QB_FACT_LAYERS | QB_FACT_HIDDEN | QB_FACT_VOCAB,
    NULL,
};

/* ---- descriptor ---------------------------------------------------------- */

static const qb_option_decl opt_bias = {sizeof(qb_option_decl), "bias", QB_PARAM_DOUBLE, "0",
                                        "added to every value the reader returns", NULL, 0, -1,
                                        QB_OPTION_ROLE_READER};
static const qb_option_decl opt_scale = {sizeof(qb_option_decl), "scale", QB_PARAM_DOUBLE, "1",
                                         "every value the writer stores is multiplied by it",
                                         NULL, 0, -1, QB_OPTION_ROLE_WRITER};
static const qb_option_decl *const fake_options[] = {&opt_bias, &opt_scale, NULL};

static qb_plugin fake_desc = {
    sizeof(qb_plugin),
    QB_ABI_CURRENT,
    FAKE_NAME,
    "1.2.0",
    "fake plugin built against the frozen ABI 1.2 headers",
    "quantbridge tests",
    "MIT",
    0,
    NULL,
    NULL,
    &fake_reader_vt,
    &fake_writer_vt,
    fake_options,
    NULL,
    &fake_caps,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    H = host;
    /* needs 1.2 (its vtables carry plan and the views; a 1.1 host would
     * not read them): an older host is refused, saying so through
     * plugin_abi (qb_plugin.h) */
    if (neg->host_abi_max < QB_MAKE_ABI(1, 2) || neg->host_abi_min > QB_ABI_CURRENT) {
        neg->plugin_abi = QB_ABI_CURRENT;
        return host->set_error(host, QB_E_ABI, "%s needs ABI 1.2 (the writer's plan, the "
                               "reader's stored views)", FAKE_NAME);
    }
    neg->plugin_abi = neg->host_abi_max < QB_ABI_CURRENT ? neg->host_abi_max : QB_ABI_CURRENT;
    fake_desc.abi = neg->plugin_abi;
    *out = &fake_desc;
    return QB_OK;
}
