/*
 * A fake quantbridge plugin, built from this one source into several
 * variants (-D flags) that each break one rule of the SDK contract, so the
 * host's loader can be shown to report each failure distinctly
 * (docs/plugin-design.md, "Testing plan", the Vulkan-Loader pattern).
 *
 * The good variant is a trivial reader + writer over an in-memory model so
 * `quantbridge convert` runs end to end without any real plugin:
 *   reader: a file whose first bytes are "FAKEMODEL" (probe 100), or a
 *           directory holding such a file named model.fake (whose
 *           tokenizer_dir is that directory when it holds tokenizer.json);
 *           three tensors whose values are a closed form of (tensor, row,
 *           col), plus the reader option `bias`;
 *   writer: one raw little-endian float32 file per tensor ("<name>.f32"),
 *           rows pulled through host->parallel_for, and "manifest.txt" with
 *           each file's size and the SHA-256 the sink reported; "note.txt"
 *           holds the raw config value option.note when its section has one;
 *           "facts.txt" the model facts begin() saw (qb_model_info.facts),
 *           one "field value" line each, or "no facts".
 *           abort logs "fake writer: abort called" (info level).
 * Writer options script failures for the host's tests.
 *
 * Variant flags: FAKE_NAME="..." (default "fake"), FAKE_OLD_ABI,
 * FAKE_NEEDS_NEWER, FAKE_FUTURE_ABI, FAKE_NO_ENTRY, FAKE_INIT_FAILS,
 * FAKE_ABI_REFUSAL, FAKE_INIT_INTERNAL, FAKE_INIT_SILENT, FAKE_SMALL_STRUCT,
 * FAKE_BAD_VTABLE, FAKE_PROBE_SCORE=N; writer
 * capabilities: FAKE_CAPS_HOST (the host writes the side files; llama and
 * mistral; its output, with a model.fake, is read back by this plugin),
 * FAKE_CAPS_ARCH (only qwen2 and mistral), FAKE_CAPS_FACTS (requires
 * QB_FACT_HEADS, which its reader's config then does not state), FAKE_BAD_CAPS
 * (both side-file bits: refused). Writers that
 * `quantbridge plugin-check` must fail (tests/plugin-check):
 * FAKE_LEAK_FINISH (finish keeps a host allocation, always),
 * FAKE_LEAK_FAILED_FINISH (a failed finish keeps its handle, as if abort
 * followed), FAKE_SINK_CRASH (crashes when the sink reports an error).
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(FAKE_SINK_CRASH)
#include <sys/mman.h>
#endif

#ifndef FAKE_NAME
#define FAKE_NAME "fake"
#endif
#ifndef FAKE_PROBE_SCORE
#define FAKE_PROBE_SCORE 100
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
    char *path; /* the source directory when it holds tokenizer.json, else NULL */
} fake_reader;

static int fake_probe(void *ctx, const qb_probe_input *in)
{
    size_t i;
    (void)ctx;
    if (in->head && in->head_len >= 9 && memcmp(in->head, "FAKEMODEL", 9) == 0)
        return FAKE_PROBE_SCORE;
    /* A directory holding model.fake is the same model. */
    for (i = 0; in->is_dir && in->siblings && in->siblings[i]; i++)
        if (strcmp(in->siblings[i], "model.fake") == 0)
            return FAKE_PROBE_SCORE;
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
    int is_dir = 0;
    snprintf(file, sizeof file, "%s", path);
    if (H->read_small_file(H, path, 4096, &data, &len) == QB_E_IO) {
        /* Not a regular file: a directory holding model.fake. */
        snprintf(file, sizeof file, "%s/model.fake", path);
        is_dir = 1;
    } else {
        H->free(H, data);
    }
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
    r->path = NULL;
    if (is_dir) {
        char tok[4096];
        snprintf(tok, sizeof tok, "%s/tokenizer.json", path);
        if (H->read_small_file(H, tok, 1 << 20, &data, &len) == QB_OK) {
            H->free(H, data);
            r->path = H->alloc(H, strlen(path) + 1);
            if (!r->path) {
                H->free(H, r);
                return H->set_error(H, QB_E_NOMEM, "%s: out of memory", path);
            }
            memcpy(r->path, path, strlen(path) + 1);
        }
    }
    *out = r;
    return QB_OK;
}

static void fake_close(qb_reader_handle h)
{
    fake_reader *r = h;
    H->free(H, r->path);
    H->free(H, r);
}

static qb_status fake_model_info(qb_reader_handle h, qb_model_info *mi)
{
    fake_reader *r = h;
    mi->architecture = "llama";
    /* no num_hidden_layers: the host counts the layers from tensor names */
#if defined(FAKE_CAPS_FACTS)
    /* The fact this variant's writer requires (heads) is not stated. */
    mi->config_json = "{\"model_type\": \"llama\", \"num_key_value_heads\": 1, "
                      "\"head_dim\": 4, \"intermediate_size\": 16}";
#else
    mi->config_json = "{\"model_type\": \"llama\", \"num_attention_heads\": 2, "
                      "\"num_key_value_heads\": 1, \"head_dim\": 4, \"intermediate_size\": 16}";
#endif
    mi->generation_config_json = NULL;
    mi->n_tensors = FAKE_N_TENSORS;
    mi->source_format = FAKE_NAME;
    mi->source_summary = "fake in-memory model";
    mi->tokenizer_dir = r->path;
    mi->chat_template = NULL;
    return QB_OK;
}

static qb_status fake_tensor_info(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    (void)h;
    if (i >= FAKE_N_TENSORS)
        return H->set_error(H, QB_E_RANGE, "fake: tensor %zu", i);
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
    int64_t cols = fake_tensors[i].dims[fake_tensors[i].n_dims - 1], rr, c;
    for (rr = 0; rr < n_rows; rr++)
        for (c = 0; c < cols; c++)
            dst[rr * cols + c] = fake_value(i, row0 + rr, c) + (float)r->bias;
    return QB_OK;
}

static const qb_reader_vtable fake_reader_vt = {
#ifdef FAKE_BAD_VTABLE
    offsetof(qb_reader_vtable, read_rows),
#else
    sizeof(qb_reader_vtable),
#endif
    fake_probe, fake_open, fake_close, fake_model_info, fake_tensor_info, fake_read_rows,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

/* ---- the writer ---------------------------------------------------------- */

typedef struct fake_writer {
    const qb_sink *sink;
    const qb_model_src *src;
    int64_t fail_after;
    int wait_cancel;
    const char *fail_in;
    size_t written;
    char manifest[4096];
    size_t mlen;
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
    if (strcmp(mi->architecture, "llama") != 0) {
        H->set_error(H, QB_E_UNSUPPORTED, "fake writer knows only llama, not %s",
                     mi->architecture);
        return 0;
    }
    return 50;
}

static qb_status fake_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                            const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_param *fa = qb_param_find(params, "fail_after");
    const qb_param *wc = qb_param_find(params, "wait_cancel");
    const qb_param *fi = qb_param_find(params, "fail_in");
    fake_writer *w;
    size_t i, n = src->info->n_tensors;
    (void)ctx;
    *out = NULL;
    if (fi && strcmp(fi->v.s, "begin") == 0)
        return H->set_error(H, QB_E_UNSUPPORTED, "fake writer: asked to fail in begin");
    w = H->alloc(H, sizeof *w);
    if (!w)
        return H->set_error(H, QB_E_NOMEM, "fake writer: out of memory");
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->src = src;
    w->fail_after = fa ? fa->v.i : -1;
    w->wait_cancel = wc ? wc->v.b : 0;
    w->fail_in = fi ? fi->v.s : "none";
    record_facts(w, src->info);
    /* Reverse order: the host must follow the writer's order, not its own. */
    for (i = 0; i < n; i++)
        order[i] = n - 1 - i;
    *out = w;
    return QB_OK;
}

/* A sink call failed with rc. FAKE_SINK_CRASH: the writer that never
 * expected it, dereferencing what it did not check (a real invalid
 * access, not NULL, which UBSan would report first). */
static qb_status sink_failed(qb_status rc)
{
#if defined(FAKE_SINK_CRASH)
    volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED)
        *p = rc;
#endif
    return rc;
}

typedef struct row_job {
    const qb_model_src *src;
    size_t index;
    int64_t cols;
    float *buf;
} row_job;

static qb_status read_one_row(void *arg, size_t r)
{
    row_job *j = arg;
    return j->src->read_rows(j->src->handle, j->index, (int64_t)r, 1, j->buf + (int64_t)r * j->cols);
}

static qb_status wait_for_cancel(fake_writer *w)
{
    qb_sink_file *f = NULL;
    struct timespec ts = {0, 10 * 1000 * 1000};
    int i;
    qb_status rc = w->sink->create(w->sink->handle, "waiting", &f);
    if (rc)
        return rc;
    w->sink->close(f, NULL, NULL);
    /* Bounded (60 s) so a broken cancel path fails the test, never hangs it. */
    for (i = 0; i < 6000; i++) {
        if (H->cancelled(H))
            return H->set_error(H, QB_E_CANCELLED, "fake writer: cancelled");
        nanosleep(&ts, NULL);
    }
    return H->set_error(H, QB_E_INTERNAL, "fake writer: no cancellation within 60 s");
}

static qb_status fake_write_tensor(qb_writer_handle h, size_t index)
{
    fake_writer *w = h;
    const qb_tensor_info *ti;
    qb_sink_file *f = NULL;
    row_job j;
    char fname[256];
    uint8_t sha[32];
    uint64_t bytes = 0;
    int64_t rows;
    qb_status rc;
    int k;

    if (w->wait_cancel)
        return wait_for_cancel(w);
    if (w->fail_after >= 0 && (int64_t)w->written >= w->fail_after)
        return H->set_error(H, QB_E_IO, "fake writer: scripted failure after %zu tensors",
                            w->written);
    rc = w->src->tensor_info(w->src->handle, index, &ti);
    if (rc)
        return rc;
    rows = qb_tensor_rows(ti);
    j.src = w->src;
    j.index = index;
    j.cols = qb_tensor_cols(ti);
    j.buf = H->alloc(H, (size_t)(rows * j.cols) * sizeof(float));
    if (!j.buf)
        return H->set_error(H, QB_E_NOMEM, "fake writer: out of memory");
    rc = H->parallel_for(H, (size_t)rows, read_one_row, &j);
    if (rc)
        goto out;
    snprintf(fname, sizeof fname, "%s.f32", ti->name);
    rc = w->sink->create(w->sink->handle, fname, &f);
    if (rc)
        goto out;
    rc = w->sink->write(f, j.buf, (size_t)(rows * j.cols) * sizeof(float));
    if (rc) {
        w->sink->close(f, NULL, NULL);
        rc = sink_failed(rc);
        goto out;
    }
    rc = w->sink->close(f, &bytes, sha);
    if (rc) {
        rc = sink_failed(rc);
        goto out;
    }
    w->mlen += (size_t)snprintf(w->manifest + w->mlen, sizeof w->manifest - w->mlen, "%s %llu ",
                                fname, (unsigned long long)bytes);
    for (k = 0; k < 32; k++)
        w->mlen += (size_t)snprintf(w->manifest + w->mlen, sizeof w->manifest - w->mlen, "%02x",
                                    sha[k]);
    w->mlen += (size_t)snprintf(w->manifest + w->mlen, sizeof w->manifest - w->mlen, "\n");
    w->written++;
out:
    H->free(H, j.buf);
    return rc;
}

static qb_status fake_finish(qb_writer_handle h)
{
    fake_writer *w = h;
    qb_sink_file *f = NULL;
    const char *note;
    qb_status rc;
#if defined(FAKE_LEAK_FINISH)
    (void)H->alloc(H, 64); /* never freed */
#endif
    if (strcmp(w->fail_in, "finish") == 0) {
        rc = H->set_error(H, QB_E_IO, "fake writer: asked to fail in finish");
        goto out;
    }
    rc = w->sink->create(w->sink->handle, "manifest.txt", &f);
    if (rc)
        goto out;
    rc = w->sink->write(f, w->manifest, w->mlen);
    if (rc) {
        w->sink->close(f, NULL, NULL);
        goto out;
    }
    rc = w->sink->close(f, NULL, NULL);
    if (rc)
        goto out;
    rc = w->sink->create(w->sink->handle, "facts.txt", &f);
    if (rc)
        goto out;
    rc = w->sink->write(f, w->facts, strlen(w->facts));
    if (rc) {
        w->sink->close(f, NULL, NULL);
        goto out;
    }
    rc = w->sink->close(f, NULL, NULL);
    if (rc)
        goto out;
#ifdef FAKE_CAPS_HOST
    /* Makes the output a fake model again, for its verify_reader. */
    rc = w->sink->create(w->sink->handle, "model.fake", &f);
    if (rc)
        goto out;
    rc = w->sink->write(f, "FAKEMODEL\n", 10);
    if (rc) {
        w->sink->close(f, NULL, NULL);
        goto out;
    }
    rc = w->sink->close(f, NULL, NULL);
    if (rc)
        goto out;
#endif
    /* Raw config access: this plugin's own section only. */
    note = H->get_config(H, "note");
    if (note) {
        rc = w->sink->create(w->sink->handle, "note.txt", &f);
        if (rc)
            goto out;
        rc = w->sink->write(f, note, strlen(note));
        if (rc) {
            w->sink->close(f, NULL, NULL);
            goto out;
        }
        rc = w->sink->close(f, NULL, NULL);
    }
out:
#if defined(FAKE_LEAK_FAILED_FINISH)
    if (rc != QB_OK)
        return rc; /* wrongly leaves the handle to an abort that never comes */
#endif
    H->free(H, w);
    return rc;
}

static void fake_abort(qb_writer_handle h)
{
    /* Tests check the host never calls this after finish (qb_writer.h). */
    H->log(H, QB_LOG_INFO, "fake writer: abort called");
    H->free(H, h);
}

static const qb_writer_vtable fake_writer_vt = {
    sizeof(qb_writer_vtable), fake_supports, fake_begin, fake_write_tensor, fake_finish,
    fake_abort, NULL, /* no plan (ABI 1.2): dry-run lists tensors without actions */
};

/* ---- descriptor ---------------------------------------------------------- */

#define FAKE_R QB_OPTION_ROLE_READER
#define FAKE_W QB_OPTION_ROLE_WRITER
static const qb_option_decl opt_bias = {sizeof(qb_option_decl), "bias", QB_PARAM_DOUBLE, "0",
                                        "added to every value the reader returns", NULL, 0, -1,
                                        FAKE_R};
static const qb_option_decl opt_group = {sizeof(qb_option_decl), "group_size", QB_PARAM_INT,
                                         "128", "accepted and ignored", NULL, 1, 4096, FAKE_W};
static const qb_option_decl opt_fail_after = {sizeof(qb_option_decl), "fail_after", QB_PARAM_INT,
                                              "-1", "fail write_tensor after N tensors (-1 never)",
                                              NULL, -1, 1000, FAKE_W};
static const qb_option_decl opt_fail_in = {sizeof(qb_option_decl), "fail_in", QB_PARAM_STRING,
                                           "none", "fail in this writer call", "none|begin|finish",
                                           0, -1, FAKE_W};
static const qb_option_decl opt_wait = {sizeof(qb_option_decl), "wait_cancel", QB_PARAM_BOOL,
                                        "false", "block in write_tensor until cancelled", NULL, 0,
                                        -1, FAKE_W};
static const qb_option_decl opt_limit = {sizeof(qb_option_decl), "buffer", QB_PARAM_SIZE,
                                         "1MiB", "a size option (unused)", NULL, 1, 1LL << 40,
                                         FAKE_W};
static const qb_option_decl *const fake_options[] = {
    &opt_bias, &opt_group, &opt_fail_after, &opt_fail_in, &opt_wait, &opt_limit, NULL,
};

#if defined(FAKE_CAPS_HOST) || defined(FAKE_CAPS_ARCH) || defined(FAKE_CAPS_FACTS) || \
    defined(FAKE_BAD_CAPS)
#define FAKE_HAS_CAPS 1
#if defined(FAKE_CAPS_ARCH)
static const char *const fake_archs[] = {"qwen2", "mistral", NULL};
#else
static const char *const fake_archs[] = {"llama", "mistral", NULL};
#endif
static const qb_writer_caps fake_caps = {
    sizeof(qb_writer_caps),
#if defined(FAKE_BAD_CAPS)
    QB_WRITER_SIDE_FILES_SELF | QB_WRITER_SIDE_FILES_HOST,
#else
    QB_WRITER_SIDE_FILES_HOST,
#endif
    fake_archs,
#if defined(FAKE_CAPS_FACTS)
    QB_FACT_HEADS,
#else
    0,
#endif
    FAKE_NAME,
};
#endif

static qb_plugin fake_desc = {
#ifdef FAKE_SMALL_STRUCT
    offsetof(qb_plugin, reader),
#else
    sizeof(qb_plugin),
#endif
    QB_ABI_CURRENT,
    FAKE_NAME,
    "1.0.0",
    "fake plugin for SDK contract tests",
    "quantbridge tests",
    "MIT",
    0,
    NULL,
    NULL,
    &fake_reader_vt,
    &fake_writer_vt,
    fake_options,
    NULL,
#ifdef FAKE_HAS_CAPS
    &fake_caps,
#else
    NULL,
#endif
};

static qb_status entry(qb_negotiation *neg, const qb_host *host, const qb_plugin **out)
{
    H = host;
#if defined(FAKE_OLD_ABI)
    /* Answers an ABI below the host's range instead of refusing itself. */
    neg->plugin_abi = QB_MAKE_ABI(0, 9);
    *out = &fake_desc;
    return QB_OK;
#elif defined(FAKE_NEEDS_NEWER)
    /* Needs services of a minor the host does not have: refuses. */
    (void)out;
    (void)fake_desc;
    neg->plugin_abi = QB_MAKE_ABI(1, 7);
    return QB_E_ABI;
#elif defined(FAKE_ABI_REFUSAL)
    /* Refuses with its own reason and names no ABI. */
    (void)neg;
    (void)out;
    (void)fake_desc;
    return host->set_error(host, QB_E_ABI, "needs the frobnicator 2.0");
#elif defined(FAKE_INIT_INTERNAL)
    (void)neg;
    (void)out;
    (void)fake_desc;
    return host->set_error(host, QB_E_INTERNAL, "self-test of the packer failed");
#elif defined(FAKE_INIT_SILENT)
    /* Fails with a status no host knows and says nothing. */
    (void)neg;
    (void)out;
    (void)fake_desc;
    return -1000;
#elif defined(FAKE_INIT_FAILS)
    (void)neg;
    (void)out;
    (void)fake_desc;
    return host->set_error(host, QB_E_IO, "fake-init-fails: license file /nonexistent missing");
#else
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 0));
    if (rc)
        return rc;
    fake_desc.abi = neg->plugin_abi;
    *out = &fake_desc;
    return QB_OK;
#endif
}

#if defined(FAKE_FUTURE_ABI)
/* Built for an ABI major 2 that does not exist: only the v2 name exported. */
QB_EXPORT qb_status qb_plugin_entry_v2(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out);
QB_EXPORT qb_status qb_plugin_entry_v2(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    return entry(neg, host, out);
}
#elif defined(FAKE_NO_ENTRY)
QB_EXPORT int fake_not_an_entry(void);
QB_EXPORT int fake_not_an_entry(void)
{
    qb_negotiation neg;
    const qb_plugin *out = NULL;
    memset(&neg, 0, sizeof neg);
    (void)entry; /* kept referenced; the host must never find it */
    (void)out;
    return (int)sizeof neg;
}
#else
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    return entry(neg, host, out);
}
#endif
