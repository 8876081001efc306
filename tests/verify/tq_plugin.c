/*
 * "tq": a third-party writer and reader pair, built against the SDK alone
 * (like sdk/examples), for the test that verify judges a non-native
 * format as it judges the native one (test_verify_thirdparty.c).
 *
 * The format: a directory with one raw little-endian float32 file per
 * tensor (tNNNN.bin, the rows in order), config.json, and tq.json listing
 * {name, dims, file, quantized} per tensor. A decoder layer's 2-D weight
 * is "quantized" in tq's sense: the reader serves it as QB_DT_QUANTIZED
 * ("tq-code") without a grid view, so verify knows no plain rule for it and
 * learns from the plugins that its values are exact: the writer's plan says
 * QB_PLAN_EXACT for it, and the reader's metadata view serves
 * "quantbridge.exact:NAME" = true (docs/plugin-design.md, "Declarations for
 * verify") unless the writer was asked for no declarations (option
 * declare=false, recorded in tq.json), so that only the plan declares.
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TQ_NAME "tq"
#define TQ_ROWS 64

static const qb_host *H;

/* 1 for a decoder layer's 2-D weight: what tq stores "quantized". */
static int tq_quantized(const qb_tensor_info *t)
{
    size_t n = strlen(t->name);
    return t->n_dims == 2 && strncmp(t->name, "model.layers.", 13) == 0 && n > 7 &&
           strcmp(t->name + n - 7, ".weight") == 0;
}

static uint64_t tq_elems(const qb_tensor_info *t)
{
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < t->n_dims; d++)
        n *= (uint64_t)t->dims[d];
    return n;
}

/* ---- writer ---------------------------------------------------------- */

typedef struct tq_writer {
    const qb_sink *sink;
    const qb_model_src *src;
    int declare;
    qb_sink_file *open;
    float *block;
} tq_writer;

static int tq_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    (void)mi;
    return 50;
}

static int param_declare(const qb_param *params)
{
    const qb_param *p = qb_param_find(params, "declare");
    return !p || p->v.b != 0;
}

static qb_status tq_plan(void *ctx, const qb_model_src *src, const qb_param *params,
                         const qb_plan_sink *out)
{
    size_t i;
    (void)ctx;
    (void)params;
    for (i = 0; i < src->info->n_tensors; i++) {
        const qb_tensor_info *t = NULL;
        qb_plan_entry e;
        qb_status rc = src->tensor_info(src->handle, i, &t);
        if (rc)
            return rc;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        e.tensor = i;
        e.action = tq_quantized(t) ? QB_PLAN_EXACT : QB_PLAN_CONVERT;
        e.reason = tq_quantized(t) ? "tq codes hold the values as they are" : "float32";
        e.bytes_out = tq_elems(t) * 4;
        if ((rc = out->tensor(out->handle, &e)))
            return rc;
    }
    return QB_OK;
}

static void tq_free(tq_writer *w)
{
    if (!w)
        return;
    if (w->open)
        w->sink->close(w->open, NULL, NULL);
    H->free(H, w->block);
    H->free(H, w);
}

static qb_status tq_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                          const qb_param *params, size_t *order, qb_writer_handle *out)
{
    tq_writer *w;
    size_t i;
    (void)ctx;
    *out = NULL;
    w = H->alloc(H, sizeof *w);
    if (!w)
        return H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->src = src;
    w->declare = param_declare(params);
    for (i = 0; i < src->info->n_tensors; i++)
        order[i] = i;
    *out = w;
    return QB_OK;
}

static qb_status tq_write_tensor(qb_writer_handle hw, size_t index)
{
    tq_writer *w = hw;
    const qb_tensor_info *t = NULL;
    char name[32];
    int64_t rows, cols, r0, n;
    qb_status rc = w->src->tensor_info(w->src->handle, index, &t);
    if (rc)
        return rc;
    rows = qb_tensor_rows(t);
    cols = qb_tensor_cols(t);
    H->free(H, w->block);
    w->block = H->alloc(H, (size_t)(TQ_ROWS * cols) * sizeof *w->block + 1);
    if (!w->block)
        return H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
    snprintf(name, sizeof name, "t%04zu.bin", index);
    if ((rc = w->sink->create(w->sink->handle, name, &w->open)))
        return rc;
    for (r0 = 0; r0 < rows; r0 += n) {
        n = rows - r0 < TQ_ROWS ? rows - r0 : TQ_ROWS;
        if ((rc = w->src->read_rows(w->src->handle, index, r0, n, w->block)) ||
            (rc = w->sink->write(w->open, w->block, (size_t)(n * cols) * sizeof *w->block)))
            return rc;
    }
    rc = w->sink->close(w->open, NULL, NULL);
    w->open = NULL;
    return rc;
}

static qb_status put(const qb_sink *sink, const char *name, const char *text, size_t len)
{
    qb_sink_file *f;
    qb_status rc = sink->create(sink->handle, name, &f);
    if (rc)
        return rc;
    rc = sink->write(f, text, len);
    if (rc) {
        sink->close(f, NULL, NULL);
        return rc;
    }
    return sink->close(f, NULL, NULL);
}

static qb_status tq_finish(qb_writer_handle hw)
{
    tq_writer *w = hw;
    const qb_json_api *J = H->json;
    const qb_model_src *src = w->src;
    qb_json *root = J->new_object(), *list = J->new_array();
    char *text = NULL, file[32];
    size_t i, len = 0;
    uint32_t d;
    qb_status rc = root && list ? QB_OK : QB_E_NOMEM;

    for (i = 0; rc == QB_OK && i < src->info->n_tensors; i++) {
        const qb_tensor_info *t = NULL;
        qb_json *e = J->new_object(), *dims = J->new_array();
        if (!e || !dims) {
            J->free(e);
            J->free(dims);
            rc = QB_E_NOMEM;
            break;
        }
        src->tensor_info(src->handle, i, &t);
        for (d = 0; d < t->n_dims; d++)
            J->append(dims, J->new_number((double)t->dims[d]));
        snprintf(file, sizeof file, "t%04zu.bin", i);
        J->add(e, "name", J->new_string(t->name));
        J->add(e, "dims", dims);
        J->add(e, "file", J->new_string(file));
        J->add(e, "quantized", J->new_bool(tq_quantized(t)));
        rc = J->append(list, e);
    }
    if (rc == QB_OK)
        rc = J->add(root, "format", J->new_string(TQ_NAME));
    if (rc == QB_OK)
        rc = J->add(root, "declare", J->new_bool(w->declare));
    if (rc == QB_OK) {
        rc = J->add(root, "tensors", list);
        list = NULL;
    }
    if (rc == QB_OK)
        rc = J->emit(H, root, 1, &text, &len);
    if (rc == QB_OK)
        rc = put(w->sink, "tq.json", text, len);
    if (rc == QB_OK && src->info->config_json)
        rc = put(w->sink, "config.json", src->info->config_json, strlen(src->info->config_json));
    if (rc == QB_E_NOMEM)
        H->set_error(H, rc, TQ_NAME ": out of memory");
    H->free(H, text);
    J->free(list);
    J->free(root);
    tq_free(w);
    return rc;
}

static void tq_abort(qb_writer_handle hw)
{
    tq_free(hw);
}

/* ---- reader ---------------------------------------------------------- */

typedef struct tq_tensor {
    char *name;
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    int quantized;
    char *path;
} tq_tensor;

typedef struct tq_reader {
    char *dir;
    char *config;
    char arch[64];
    int declare;
    tq_tensor *t;
    size_t n;
    char **keys; /* "quantbridge.exact:NAME" of the quantized tensors */
    size_t n_keys;
} tq_reader;

static int tq_probe(void *ctx, const qb_probe_input *in)
{
    const char *const *s;
    (void)ctx;
    for (s = in->siblings; in->is_dir && s && *s; s++)
        if (strcmp(*s, "tq.json") == 0)
            return QB_PROBE_CERTAIN;
    return QB_PROBE_NONE;
}

static char *dup(const char *a)
{
    char *s = H->alloc(H, strlen(a) + 1);
    if (s)
        strcpy(s, a);
    return s;
}

static char *dup_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = H->alloc(H, n);
    if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

static void tq_close(qb_reader_handle hr)
{
    tq_reader *r = hr;
    size_t i;
    if (!r)
        return;
    for (i = 0; i < r->n; i++) {
        H->free(H, r->t[i].name);
        H->free(H, r->t[i].path);
    }
    for (i = 0; i < r->n_keys; i++)
        H->free(H, r->keys[i]);
    H->free(H, r->keys);
    H->free(H, r->t);
    H->free(H, r->config);
    H->free(H, r->dir);
    H->free(H, r);
}

static qb_status tq_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    const qb_json_api *J = H->json;
    tq_reader *r = NULL;
    char *p = NULL;
    void *text = NULL;
    size_t len = 0, i;
    qb_json *root = NULL, *cfg = NULL;
    const qb_json *list;
    int32_t b = 1;
    qb_status rc;

    (void)ctx;
    (void)params;
    *out = NULL;
    r = H->alloc(H, sizeof *r);
    if (!r)
        return H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
    memset(r, 0, sizeof *r);
    r->dir = dup(path);
    p = dup_join(path, "tq.json");
    if (!r->dir || !p) {
        rc = H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
        goto out;
    }
    if ((rc = H->read_small_file(H, p, 1 << 24, &text, &len)) ||
        (rc = J->parse(H, p, text, len, &root)))
        goto out;
    list = J->get(root, "tensors");
    r->n = J->count(list);
    r->t = H->alloc(H, (r->n + 1) * sizeof *r->t);
    r->keys = H->alloc(H, (r->n + 1) * sizeof *r->keys);
    if (!r->t || !r->keys) {
        rc = H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
        goto out;
    }
    memset(r->t, 0, (r->n + 1) * sizeof *r->t);
    r->declare = !J->get_bool(J->get(root, "declare"), &b) || b;
    for (i = 0; i < r->n; i++) {
        const qb_json *e = J->at(list, i, NULL), *dims = J->get(e, "dims");
        const char *name = J->get_string(J->get(e, "name"));
        const char *file = J->get_string(J->get(e, "file"));
        tq_tensor *t = &r->t[i];
        size_t d;
        int32_t q = 0;
        if (!name || !file || J->count(dims) < 1 || J->count(dims) > QB_MAX_DIMS) {
            rc = H->set_error(H, QB_E_FORMAT, "%s: tensors[%zu] is malformed", p, i);
            goto out;
        }
        t->n_dims = (uint32_t)J->count(dims);
        for (d = 0; d < t->n_dims; d++)
            J->get_int(J->at(dims, d, NULL), &t->dims[d]);
        J->get_bool(J->get(e, "quantized"), &q);
        t->quantized = q != 0;
        t->name = dup(name);
        t->path = dup_join(path, file);
        if (!t->name || !t->path) {
            rc = H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
            goto out;
        }
        if (t->quantized && r->declare) {
            char *k = H->alloc(H, strlen(name) + 32);
            if (!k) {
                rc = H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
                goto out;
            }
            sprintf(k, "quantbridge.exact:%s", name);
            r->keys[r->n_keys++] = k;
        }
    }
    H->free(H, p);
    p = dup_join(path, "config.json");
    if (!p) {
        rc = H->set_error(H, QB_E_NOMEM, TQ_NAME ": out of memory");
        goto out;
    }
    if ((rc = H->read_small_file(H, p, 1 << 22, (void **)&r->config, &len)) ||
        (rc = J->parse(H, p, r->config, len, &cfg)))
        goto out;
    snprintf(r->arch, sizeof r->arch, "%s",
             J->get_string(J->get(cfg, "model_type")) ? J->get_string(J->get(cfg, "model_type"))
                                                      : "?");
    *out = r;
    r = NULL;
out:
    J->free(cfg);
    J->free(root);
    H->free(H, text);
    H->free(H, p);
    tq_close(r);
    return rc;
}

static qb_status tq_model_info(qb_reader_handle hr, qb_model_info *out)
{
    tq_reader *r = hr;
    out->architecture = r->arch;
    out->config_json = r->config;
    out->n_tensors = r->n;
    out->source_format = TQ_NAME;
    out->source_summary = "tq test format";
    return QB_OK;
}

static qb_status tq_tensor_info(qb_reader_handle hr, size_t i, qb_tensor_info *out)
{
    tq_reader *r = hr;
    if (i >= r->n)
        return H->set_error(H, QB_E_RANGE, TQ_NAME ": tensor %zu", i);
    out->name = r->t[i].name;
    out->n_dims = r->t[i].n_dims;
    memcpy(out->dims, r->t[i].dims, sizeof out->dims);
    out->source_dtype = r->t[i].quantized ? QB_DT_QUANTIZED : QB_DT_F32;
    out->source_encoding = r->t[i].quantized ? "tq-code" : "f32";
    out->has_grid = 0;
    return QB_OK;
}

static qb_status tq_read_rows(qb_reader_handle hr, size_t i, int64_t row0, int64_t n, float *dst)
{
    tq_reader *r = hr;
    int64_t cols = r->t[i].n_dims > 1 ? r->t[i].dims[r->t[i].n_dims - 1] : r->t[i].dims[0];
    FILE *f = fopen(r->t[i].path, "rb");
    size_t want = (size_t)(n * cols), got;
    if (!f)
        return H->set_error(H, QB_E_IO, "%s: cannot open", r->t[i].path);
    got = fseek(f, (long)(row0 * cols) * 4, SEEK_SET) == 0 ? fread(dst, 4, want, f) : 0;
    fclose(f);
    if (got != want)
        return H->set_error(H, QB_E_IO, "%s: short read", r->t[i].path);
    return QB_OK;
}

static qb_status tq_metadata(qb_reader_handle hr, size_t i, qb_meta_entry *out)
{
    tq_reader *r = hr;
    if (i >= r->n_keys)
        return QB_E_RANGE;
    out->key = r->keys[i];
    out->type = "bool";
    snprintf(out->value, out->value_cap, "true");
    return QB_OK;
}

/* ---- descriptor ------------------------------------------------------ */

static const qb_reader_vtable tq_reader_vt = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = tq_probe,
    .open = tq_open,
    .close = tq_close,
    .get_model_info = tq_model_info,
    .get_tensor_info = tq_tensor_info,
    .read_rows = tq_read_rows,
    .get_metadata = tq_metadata,
};

static const qb_writer_vtable tq_writer_vt = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = tq_supports,
    .begin = tq_begin,
    .write_tensor = tq_write_tensor,
    .finish = tq_finish,
    .abort = tq_abort,
    .plan = tq_plan,
};

static const qb_writer_caps tq_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_HOST,
    .verify_reader = TQ_NAME,
};

static const qb_option_decl tq_opt_declare = {
    .struct_size = sizeof(qb_option_decl),
    .name = "declare",
    .type = QB_PARAM_BOOL,
    .default_value = "true",
    .help = "tq: the output's reader declares its exact tensors (false: only the plan does)",
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl *const tq_options[] = {&tq_opt_declare, NULL};

static qb_plugin tq_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = TQ_NAME,
    .version = "1.0.0",
    .description = "test: a third-party writer and reader (raw float32, declared exact)",
    .reader = &tq_reader_vt,
    .writer = &tq_writer_vt,
    .options = tq_options,
    .writer_caps = &tq_caps,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 2));
    if (rc != QB_OK)
        return rc;
    if (!host || !out || !QB_HAS_FIELD(host, qb_host, json) || !host->json)
        return QB_E_INVALID;
    tq_plugin.abi = neg->plugin_abi;
    H = host;
    *out = &tq_plugin;
    return QB_OK;
}
