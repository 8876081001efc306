/*
 * The planted-bug corpus of `quantbridge plugin-check` (issue 30): one
 * reader + writer built against the SDK alone, correct as written, and
 * built again with one -D flag per bug a vendor's plugin really had, so
 * that tests/plugin-check/test_plugin_check.c shows plugin-check failing
 * each with its reason (docs/plugin-design.md, "Conformance: plugin-check").
 *
 * The format, "pb": a directory holding model.pb (the line "PBMODEL", then
 * one line "t NAME NDIMS D0 D1" per tensor), config.json and one raw
 * little-endian float32 file t<i>.f32 per tensor, plus manifest.json
 * (written through the host's JSON service). The writer writes it; the
 * reader reads it back (the writer's verify reader is this plugin) and
 * also reads a sample file whose first line is "PBMODEL": three tensors
 * computed on the fly, one of them on a 4-bit symmetric grid in groups of
 * 16 columns, so the reader's grid path is checked too. The reader does
 * not declare concurrent reads.
 *
 * Bugs (one flag each):
 *   PB_ROW_OVERFLOW      read_rows writes one row more than asked
 *   PB_SCALES_OVERFLOW   read_grid writes one row of scales more than asked
 *   PB_READER_JSON_LEAK  open parses config.json through host->json, close
 *                        never frees the tree
 *   PB_WRITER_JSON_LEAK  finish builds manifest.json's tree and never frees it
 *   PB_LISTING_LEAK      begin lists the tokenizer directory and never frees
 *                        the listing
 *   PB_WRONG_VALUES      write_tensor stores one value of the third tensor wrong
 *   PB_IGNORE_CREATE     a failed sink create is taken as "skip this file"
 *   PB_IGNORE_CLOSE      a failed sink close is ignored
 *   PB_IGNORE_EMIT       a failed json->emit writes an empty manifest instead
 *   PB_PLAN_CRASH        plan touches memory it may not
 *   PB_PLAN_BYTES        plan promises twice the bytes it writes
 *   PB_PLAN_MISSING      plan leaves the last tensor out
 *   PB_PLAN_REFUSES      plan refuses the model begin then converts
 *
 * PB_CRASH_FROM_ENV builds the correct plugin with a fault on demand, for
 * the host's fault handler (host/fatal.c): the call named by $PB_CRASH_IN
 * ("open", "read_rows", "write_tensor", ... every reader and writer
 * vtable call) faults with $PB_CRASH_SIG (SEGV, the default: a real
 * invalid access; BUS, FPE, ILL, ABRT); $PB_FAIL_WRITE=1 makes
 * write_tensor fail, so that abort is called.
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(PB_PLAN_CRASH) || defined(PB_CRASH_FROM_ENV)
#include <sys/mman.h>
#endif
#if defined(PB_CRASH_FROM_ENV)
#include <signal.h>
#endif

#ifndef PB_NAME
#define PB_NAME "pb"
#endif
#define PB_MAX_TENSORS 64
#define PB_GROUP 16

static const qb_host *H;

#if defined(PB_CRASH_FROM_ENV)
/* Faults when $PB_CRASH_IN names this call. */
static void crash_point(const char *call)
{
    const char *in = getenv("PB_CRASH_IN"), *sig = getenv("PB_CRASH_SIG");
    if (!in || strcmp(in, call) != 0)
        return;
    if (!sig || strcmp(sig, "SEGV") == 0) {
        volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            *p = 1;
    } else if (strcmp(sig, "ILL") == 0) {
        __builtin_trap();
    } else if (strcmp(sig, "ABRT") == 0) {
        abort();
    }
    raise(strcmp(sig ? sig : "", "BUS") == 0 ? SIGBUS : strcmp(sig ? sig : "", "FPE") == 0
                                                            ? SIGFPE : SIGSEGV);
}
#else
#define crash_point(call) ((void)0)
#endif

/* ---- the reader ----------------------------------------------------------- */

typedef struct pb_tensor {
    char name[160];
    uint32_t n_dims;
    int64_t dims[2];
    int grid;    /* the sample's grid tensor: values computed */
    float *data; /* host->alloc'd rows (read from t<i>.f32), or NULL */
} pb_tensor;

typedef struct pb_reader {
    pb_tensor t[PB_MAX_TENSORS];
    size_t n;
    char *config;    /* host->alloc'd */
    qb_json *config_tree;
} pb_reader;

static const char pb_sample_config[] =
    "{\"model_type\": \"llama\", \"hidden_size\": 32, \"num_attention_heads\": 2, "
    "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 64, "
    "\"num_hidden_layers\": 1, \"vocab_size\": 16}";

static int64_t rows_of(const pb_tensor *t)
{
    return t->n_dims == 1 ? 1 : t->dims[0];
}

static int64_t cols_of(const pb_tensor *t)
{
    return t->dims[t->n_dims - 1];
}

/* The sample's grid: codes, scales and the dense value they make. */
static uint8_t grid_code(int64_t r, int64_t c)
{
    return (uint8_t)((r * 7 + c * 3) % 16);
}

static float grid_scale(int64_t r, int64_t g)
{
    return 0.0625f * (float)(1 + (r + g) % 4);
}

static float sample_value(size_t i, const pb_tensor *t, int64_t r, int64_t c)
{
    if (t->grid)
        return (float)((int32_t)grid_code(r, c) - 8) * grid_scale(r, c / PB_GROUP);
    return (float)(i + 1) * 0.5f + (float)r * 0.25f - (float)c * 0.125f;
}

static int pb_probe(void *ctx, const qb_probe_input *in)
{
    size_t i;
    (void)ctx;
    crash_point("probe");
    if (in->head && in->head_len >= 7 && memcmp(in->head, "PBMODEL", 7) == 0)
        return 100;
    for (i = 0; in->is_dir && in->siblings && in->siblings[i]; i++)
        if (strcmp(in->siblings[i], "model.pb") == 0)
            return 100;
    return 0;
}

static void pb_close(qb_reader_handle h)
{
    pb_reader *r = h;
    size_t i;
    crash_point("close");
    for (i = 0; i < r->n; i++)
        H->free(H, r->t[i].data);
    H->free(H, r->config);
#if !defined(PB_READER_JSON_LEAK)
    H->json->free(r->config_tree);
#endif
    H->free(H, r);
}

static void sample_tensors(pb_reader *r)
{
    static const struct {
        const char *name;
        uint32_t n_dims;
        int64_t d0, d1;
        int grid;
    } s[3] = {
        {"model.embed_tokens.weight", 2, 16, 32, 0},
        {"model.layers.0.self_attn.q_proj.weight", 2, 32, 32, 1},
        {"model.norm.weight", 1, 32, 0, 0},
    };
    size_t i;
    for (i = 0; i < 3; i++) {
        snprintf(r->t[i].name, sizeof r->t[i].name, "%s", s[i].name);
        r->t[i].n_dims = s[i].n_dims;
        r->t[i].dims[0] = s[i].d0;
        r->t[i].dims[1] = s[i].d1;
        r->t[i].grid = s[i].grid;
    }
    r->n = 3;
}

/* model.pb of a written directory: its tensors, each file read whole. */
static qb_status dir_tensors(pb_reader *r, const char *dir, const char *text)
{
    const char *line = strchr(text, '\n');
    char path[4096];
    while (line && line[1]) {
        pb_tensor *t = &r->t[r->n];
        long long d0 = 0, d1 = 0;
        unsigned nd = 0;
        void *data = NULL;
        size_t len = 0, want;
        qb_status rc;
        line++;
        if (r->n == PB_MAX_TENSORS)
            return H->set_error(H, QB_E_FORMAT, "%s/model.pb: more than %d tensors", dir,
                                PB_MAX_TENSORS);
        if (sscanf(line, "t %159s %u %lld %lld", t->name, &nd, &d0, &d1) != 4 || nd < 1 ||
            nd > 2 || d0 < 1 || (nd == 2 && d1 < 1))
            return H->set_error(H, QB_E_FORMAT, "%s/model.pb: malformed tensor line", dir);
        t->n_dims = nd;
        t->dims[0] = d0;
        t->dims[1] = nd == 2 ? d1 : 0;
        snprintf(path, sizeof path, "%s/t%zu.f32", dir, r->n);
        want = (size_t)(rows_of(t) * cols_of(t)) * sizeof(float);
        rc = H->read_small_file(H, path, want + 1, &data, &len);
        if (rc)
            return rc;
        if (len != want) {
            H->free(H, data);
            return H->set_error(H, QB_E_FORMAT, "%s: %zu bytes, %s needs %zu", path, len,
                                t->name, want);
        }
        t->data = data;
        r->n++;
        line = strchr(line, '\n');
    }
    return QB_OK;
}

static qb_status pb_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    pb_reader *r;
    void *data = NULL;
    size_t len = 0;
    char file[4096];
    int is_dir = 0;
    qb_status rc;
    (void)ctx;
    (void)params;
    *out = NULL;
    crash_point("open");
    snprintf(file, sizeof file, "%s", path);
    rc = H->read_small_file(H, file, 1 << 20, &data, &len);
    if (rc == QB_E_IO) {
        snprintf(file, sizeof file, "%s/model.pb", path);
        is_dir = 1;
        rc = H->read_small_file(H, file, 1 << 20, &data, &len);
    }
    if (rc)
        return rc;
    if (len < 8 || memcmp(data, "PBMODEL\n", 8) != 0) {
        H->free(H, data);
        return H->set_error(H, QB_E_FORMAT, "%s: not a pb model", file);
    }
    r = H->alloc(H, sizeof *r);
    if (!r) {
        H->free(H, data);
        return H->set_error(H, QB_E_NOMEM, "%s: out of memory", path);
    }
    memset(r, 0, sizeof *r);
    if (is_dir) {
        void *cfg = NULL;
        size_t clen = 0;
        rc = dir_tensors(r, path, data);
        snprintf(file, sizeof file, "%s/config.json", path);
        if (rc == QB_OK && (rc = H->read_small_file(H, file, 1 << 20, &cfg, &clen)) == QB_OK)
            r->config = cfg;
    } else {
        sample_tensors(r);
        r->config = H->alloc(H, sizeof pb_sample_config);
        if (r->config)
            memcpy(r->config, pb_sample_config, sizeof pb_sample_config);
        else
            rc = H->set_error(H, QB_E_NOMEM, "%s: out of memory", path);
    }
    H->free(H, data);
    /* config.json must be strict JSON: the host's parser says so */
    if (rc == QB_OK)
        rc = H->json->parse(H, "config.json", r->config, strlen(r->config), &r->config_tree);
    if (rc) {
        pb_close(r);
        return rc;
    }
    *out = r;
    return QB_OK;
}

static qb_status pb_model_info(qb_reader_handle h, qb_model_info *mi)
{
    pb_reader *r = h;
    crash_point("get_model_info");
    mi->architecture = "llama";
    mi->config_json = r->config;
    mi->generation_config_json = NULL;
    mi->n_tensors = r->n;
    mi->source_format = PB_NAME;
    mi->source_summary = "pb model (planted-bug corpus)";
    mi->tokenizer_dir = NULL;
    mi->chat_template = NULL;
    return QB_OK;
}

static qb_status pb_tensor_info(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    pb_reader *r = h;
    crash_point("get_tensor_info");
    if (i >= r->n)
        return H->set_error(H, QB_E_RANGE, "pb: tensor %zu", i);
    ti->name = r->t[i].name;
    ti->n_dims = r->t[i].n_dims;
    memset(ti->dims, 0, sizeof ti->dims);
    ti->dims[0] = r->t[i].dims[0];
    ti->dims[1] = r->t[i].dims[1];
    ti->source_dtype = r->t[i].grid ? QB_DT_QUANTIZED : QB_DT_F32;
    ti->source_encoding = r->t[i].grid ? "pb int4 g16 sym" : "f32";
    ti->has_grid = r->t[i].grid;
    return QB_OK;
}

static qb_status pb_read_rows(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows,
                              float *dst)
{
    pb_reader *r = h;
    const pb_tensor *t = &r->t[i];
    int64_t cols = cols_of(t), rows = rows_of(t), rr, c, last = n_rows;
    crash_point("read_rows");
#if defined(PB_ROW_OVERFLOW)
    last = n_rows + 1; /* the bug: one row too many, into memory past dst */
#endif
    for (rr = 0; rr < last; rr++) {
        int64_t row = row0 + rr < rows ? row0 + rr : rows - 1;
        for (c = 0; c < cols; c++)
            dst[rr * cols + c] = t->data ? t->data[row * cols + c] : sample_value(i, t, row, c);
    }
    return QB_OK;
}

static qb_status pb_grid_info(qb_reader_handle h, size_t i, qb_grid_info *gi)
{
    pb_reader *r = h;
    crash_point("get_grid_info");
    if (i >= r->n || !r->t[i].grid)
        return H->set_error(H, QB_E_UNSUPPORTED, "pb: tensor %zu has no grid", i);
    gi->bits = 4;
    gi->n_groups = (uint32_t)((cols_of(&r->t[i]) + PB_GROUP - 1) / PB_GROUP);
    gi->group_size = PB_GROUP;
    gi->col_group = NULL;
    gi->symmetric = 1;
    gi->scale_dtype = QB_DT_F32;
    return QB_OK;
}

static qb_status pb_read_grid(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows,
                              qb_grid_rows *out)
{
    pb_reader *r = h;
    int64_t cols = cols_of(&r->t[i]), ng = (cols + PB_GROUP - 1) / PB_GROUP, rr, c, g;
    int64_t scale_rows = n_rows;
    crash_point("read_grid");
#if defined(PB_SCALES_OVERFLOW)
    scale_rows = n_rows + 1; /* the bug: one row of scales too many */
#endif
    for (rr = 0; rr < n_rows; rr++)
        for (c = 0; c < cols; c++)
            out->codes[rr * cols + c] = grid_code(row0 + rr, c);
    for (rr = 0; rr < scale_rows; rr++)
        for (g = 0; g < ng; g++)
            out->scales[rr * ng + g] = grid_scale(row0 + rr, g);
    for (rr = 0; rr < n_rows; rr++)
        for (g = 0; g < ng; g++)
            out->zeros[rr * ng + g] = 8;
    return QB_OK;
}

/* The stored view: each tensor as stored (float32 files, or the sample's
 * computed values). */
static qb_status pb_raw_info(qb_reader_handle h, size_t i, qb_raw_tensor_info *out)
{
    pb_reader *r = h;
    crash_point("get_raw_tensor_info");
    if (i >= r->n)
        return QB_E_RANGE;
    out->name = r->t[i].name;
    out->type = r->t[i].grid ? "int4" : "f32";
    out->n_dims = r->t[i].n_dims;
    out->dims[0] = r->t[i].dims[0];
    out->dims[1] = r->t[i].dims[1];
    out->n_bytes = (uint64_t)(rows_of(&r->t[i]) * cols_of(&r->t[i])) * (r->t[i].grid ? 1 : 4);
    out->canonical = (int64_t)i;
    return QB_OK;
}

static qb_status pb_metadata(qb_reader_handle h, size_t i, qb_meta_entry *out)
{
    (void)h;
    crash_point("get_metadata");
    if (i > 0)
        return QB_E_RANGE;
    out->key = "pb.version";
    out->type = "string";
    snprintf(out->value, out->value_cap, "1");
    return QB_OK;
}

static const qb_reader_vtable pb_reader_vt = {
    sizeof(qb_reader_vtable), pb_probe,    pb_open,      pb_close,    pb_model_info, pb_tensor_info,
    pb_read_rows,             pb_grid_info, pb_read_grid, pb_raw_info, pb_metadata, NULL, NULL,
};

/* ---- the writer ----------------------------------------------------------- */

typedef struct pb_writer {
    const qb_sink *sink;
    const qb_model_src *src;
    char index[16384]; /* model.pb */
    size_t used;
} pb_writer;

static int pb_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    crash_point("supports");
    if (strcmp(mi->architecture, "llama") != 0) {
        H->set_error(H, QB_E_UNSUPPORTED, "pb writer knows only llama");
        return 0;
    }
    return 50;
}

/* name <- buf[0..len) through the sink, a failed call returned as it is. */
static qb_status put_file(const qb_sink *sink, const char *name, const void *buf, size_t len)
{
    qb_sink_file *f = NULL;
    qb_status rc = sink->create(sink->handle, name, &f);
    if (rc) {
#if defined(PB_IGNORE_CREATE)
        return QB_OK; /* the bug: "could not create it, carry on without it" */
#else
        return rc;
#endif
    }
    rc = sink->write(f, buf, len);
    if (rc) {
        sink->close(f, NULL, NULL);
        return rc;
    }
    rc = sink->close(f, NULL, NULL);
#if defined(PB_IGNORE_CLOSE)
    rc = QB_OK; /* the bug: the data may never have reached the disk */
#endif
    return rc;
}

static qb_status pb_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                          const qb_param *params, size_t *order, qb_writer_handle *out)
{
    pb_writer *w;
    size_t i;
    (void)ctx;
    (void)params;
    *out = NULL;
    crash_point("begin");
    w = H->alloc(H, sizeof *w);
    if (!w)
        return H->set_error(H, QB_E_NOMEM, "pb writer: out of memory");
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->src = src;
    w->used = (size_t)snprintf(w->index, sizeof w->index, "PBMODEL\n");
#if defined(PB_LISTING_LEAK)
    if (src->info->tokenizer_dir) {
        char **names = NULL;
        /* the bug: looks at the tokenizer files, forgets the listing */
        (void)H->list_dir(H, src->info->tokenizer_dir, &names);
    }
#endif
    for (i = 0; i < src->info->n_tensors; i++)
        order[i] = i;
    *out = w;
    return QB_OK;
}

static qb_status pb_write_tensor(qb_writer_handle h, size_t index)
{
    pb_writer *w = h;
    const qb_tensor_info *ti;
    float *buf;
    int64_t rows, cols;
    char name[32];
    qb_status rc = w->src->tensor_info(w->src->handle, index, &ti);
    crash_point("write_tensor");
#if defined(PB_CRASH_FROM_ENV)
    if (getenv("PB_FAIL_WRITE"))
        return H->set_error(H, QB_E_IO, "pb writer: asked to fail ($PB_FAIL_WRITE)");
#endif
    if (rc)
        return rc;
    rows = qb_tensor_rows(ti);
    cols = qb_tensor_cols(ti);
    buf = H->alloc(H, (size_t)(rows * cols) * sizeof(float));
    if (!buf)
        return H->set_error(H, QB_E_NOMEM, "pb writer: out of memory");
    rc = w->src->read_rows(w->src->handle, index, 0, rows, buf);
#if defined(PB_WRONG_VALUES)
    if (rc == QB_OK && index == 2)
        buf[0] += 0.5f; /* the bug: an off-by-something in the packing */
#endif
    if (rc == QB_OK && ti->has_grid) {
        /* the grid is read too (and checked against the rows nowhere: this
         * writer stores floats), so that a source's grid calls are made */
        qb_grid_info gi;
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        rc = w->src->get_grid_info(w->src->handle, index, &gi);
        if (rc == QB_OK) {
            size_t ng = gi.n_groups;
            qb_grid_rows gr = {sizeof gr, H->alloc(H, (size_t)cols), H->alloc(H, ng * 4),
                               H->alloc(H, ng * 4)};
            if (!gr.codes || !gr.scales || !gr.zeros)
                rc = H->set_error(H, QB_E_NOMEM, "pb writer: out of memory");
            else
                rc = w->src->read_grid(w->src->handle, index, 0, 1, &gr);
            H->free(H, gr.codes);
            H->free(H, gr.scales);
            H->free(H, gr.zeros);
        }
    }
    snprintf(name, sizeof name, "t%zu.f32", index);
    if (rc == QB_OK)
        rc = put_file(w->sink, name, buf, (size_t)(rows * cols) * sizeof(float));
    H->free(H, buf);
    if (rc)
        return rc;
    w->used += (size_t)snprintf(w->index + w->used, sizeof w->index - w->used,
                                "t %s %u %lld %lld\n", ti->name, ti->n_dims,
                                (long long)ti->dims[0], (long long)ti->dims[1]);
    return QB_OK;
}

/* manifest.json through the host's JSON service. */
static qb_status write_manifest(pb_writer *w)
{
    const qb_json_api *J = H->json;
    qb_json *root = J->new_object();
    char *text = NULL;
    size_t len = 0;
    qb_status rc;
    if (!root)
        return H->set_error(H, QB_E_NOMEM, "pb writer: out of memory");
    rc = J->add(root, "format", J->new_string(PB_NAME));
    if (rc == QB_OK)
        rc = J->add(root, "tensors", J->new_number((double)w->src->info->n_tensors));
    if (rc == QB_OK) {
        rc = J->emit(H, root, 0, &text, &len);
#if defined(PB_IGNORE_EMIT)
        if (rc) { /* the bug: an empty manifest rather than a failure */
            rc = put_file(w->sink, "manifest.json", "{}", 2);
            goto out;
        }
#endif
    }
    if (rc == QB_OK)
        rc = put_file(w->sink, "manifest.json", text, len);
#if defined(PB_IGNORE_EMIT)
out:
#endif
    H->free(H, text);
#if !defined(PB_WRITER_JSON_LEAK)
    J->free(root);
#endif
    return rc;
}

static qb_status pb_finish(qb_writer_handle h)
{
    pb_writer *w = h;
    const char *cfg = w->src->info->config_json;
    crash_point("finish");
    qb_status rc = put_file(w->sink, "model.pb", w->index, w->used);
    if (rc == QB_OK)
        rc = put_file(w->sink, "config.json", cfg, strlen(cfg));
    if (rc == QB_OK)
        rc = write_manifest(w);
    H->free(H, w); /* finish releases the handle whatever it returns */
    return rc;
}

static void pb_abort(qb_writer_handle h)
{
    crash_point("abort");
    H->free(H, h);
}

static qb_status pb_plan(void *ctx, const qb_model_src *src, const qb_param *params,
                         const qb_plan_sink *out)
{
    size_t i, n = src->info->n_tensors;
    (void)ctx;
    (void)params;
    crash_point("plan");
#if defined(PB_PLAN_CRASH)
    {
        /* the bug: a table it never allocated (a real invalid access) */
        volatile size_t *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            n = p[0];
    }
#endif
#if defined(PB_PLAN_REFUSES)
    return H->set_error(H, QB_E_UNSUPPORTED, "pb writer: plan: llama is not supported");
#endif
#if defined(PB_PLAN_MISSING)
    n--; /* the bug: an off-by-one in the plan's loop */
#endif
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti;
        qb_plan_entry e;
        qb_status rc = src->tensor_info(src->handle, i, &ti);
        if (rc)
            return rc;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        e.action = ti->has_grid ? QB_PLAN_CONVERT : QB_PLAN_COPY;
        e.tensor = i;
        e.reason = ti->has_grid ? "dequantized to float32" : "stored as float32";
        e.bytes_out = (uint64_t)(qb_tensor_rows(ti) * qb_tensor_cols(ti)) * sizeof(float);
#if defined(PB_PLAN_BYTES)
        e.bytes_out *= 2; /* the bug: counts a buffer twice */
#endif
        if ((rc = out->tensor(out->handle, &e)))
            return rc;
    }
    return QB_OK;
}

static const qb_writer_vtable pb_writer_vt = {
    sizeof(qb_writer_vtable), pb_supports, pb_begin, pb_write_tensor, pb_finish, pb_abort,
    pb_plan,
};

/* ---- descriptor ----------------------------------------------------------- */

static const qb_writer_caps pb_caps = {
    sizeof(qb_writer_caps), 0, NULL, 0, PB_NAME,
};

static qb_plugin pb_desc = {
    sizeof(qb_plugin),
    QB_ABI_CURRENT,
    PB_NAME,
    "1.0.0",
    "planted-bug corpus plugin for plugin-check's tests",
    "quantbridge tests",
    "MIT",
    0,
    NULL,
    NULL,
    &pb_reader_vt,
    &pb_writer_vt,
    NULL,
    NULL,
    &pb_caps,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 2));
    if (rc)
        return rc;
    H = host;
    pb_desc.abi = neg->plugin_abi;
    *out = &pb_desc;
    return QB_OK;
}
