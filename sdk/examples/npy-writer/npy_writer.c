/*
 * Example third-party quantbridge writer: a directory of NumPy .npy files.
 *
 * Output: one "<canonical tensor name>.npy" per tensor (float32
 * little-endian '<f4', C order, .npy format 1.0), the model's config.json,
 * and manifest.json, built with the host's JSON service. The example npy
 * reader (sdk/examples/npy-reader) reads this directory back, so the writer
 * names it as its verify_reader.
 *
 * What it shows, with ABI 1.3 (so it negotiates 1.3 and needs a 1.3 host):
 * declared writer capabilities (the host copies the tokenizer files; the
 * host guarantees n_layers and hidden_size), model facts read from
 * src->info->facts, the JSON service (the manifest), the plan (1.2: what
 * begin would write, with its bytes), the 1.3 services (the host's
 * config.json clean-up, whole files through sink->write_file), an option
 * of the writer role. And the writer contract of qb_writer.h: every tensor
 * checked in begin before a byte is written, rows streamed in bounded
 * blocks, abort closing the sink file left open by a failed write_tensor,
 * finish releasing everything whatever it returns. Memory comes from
 * host->alloc so the host's fault injection reaches it; nothing is linked
 * from the host.
 *
 * Build against an installed SDK (or see CMakeLists.txt and Makefile):
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -shared -fPIC -fvisibility=hidden \
 *      $(pkg-config --cflags quantbridge-sdk) \
 *      -Wl,--version-script=$(pkg-config --variable=version_script quantbridge-sdk) \
 *      npy_writer.c -o libqb_npy_writer.so
 *
 * Format facts: numpy/lib/format.py (NEP 1): magic "\x93NUMPY", version
 * 1.0, u16 LE header length, a Python dict literal padded with spaces and
 * ended by '\n' so the data starts at a multiple of 64; data follows.
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <string.h>

#define NPW_NAME "npy-writer"
#define NPW_VERSION "1.0.0"
#define NPW_BLOCK_ROWS_DEFAULT 256

static const qb_host *npw_host;      /* valid for the process lifetime */
static const qb_json_api *npw_json;  /* npw_host->json */

typedef struct npw_writer {
    const qb_sink *sink;
    const qb_model_src *src;
    int64_t block_rows;       /* the block_rows option */
    qb_sink_file *open_file;  /* file being written, or NULL; abort closes it */
    float *block;             /* row block buffer, block_cap floats */
    size_t block_cap;
    char *config_text;        /* config.json to write (host->alloc) */
    qb_json *manifest;        /* manifest.json root, without "tensors" */
    qb_json *tensors;         /* its "tensors" array, a root of its own until finish */
} npw_writer;

static void *npw_alloc(size_t n)
{
    void *p = npw_host->alloc(npw_host, n ? n : 1);
    if (!p)
        npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory");
    return p;
}

/* Releases everything a writer handle owns, the handle too; closes the sink
 * file still open (a write_tensor that failed midway). Both abort and finish
 * end here. */
static void npw_free(npw_writer *w)
{
    if (!w)
        return;
    if (w->open_file)
        w->sink->close(w->open_file, NULL, NULL); /* discarded output: status moot */
    npw_host->free(npw_host, w->block);
    npw_host->free(npw_host, w->config_text);
    npw_json->free(w->manifest);
    npw_json->free(w->tensors);
    npw_host->free(npw_host, w);
}

/* ---- JSON helpers -------------------------------------------------------- */

/* Adds `item` (a new root, NULL when its constructor ran out of memory) to
 * object `obj` under `key`. add() takes the item in every case. */
static qb_status npw_put(qb_json *obj, const char *key, qb_json *item)
{
    qb_status rc;
    if (!item)
        return npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory building JSON");
    rc = npw_json->add(obj, key, item);
    if (rc != QB_OK)
        return npw_host->set_error(npw_host, rc, NPW_NAME ": cannot add \"%s\" to a JSON object", key);
    return QB_OK;
}

static qb_status npw_push(qb_json *arr, qb_json *item)
{
    qb_status rc;
    if (!item)
        return npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory building JSON");
    rc = npw_json->append(arr, item);
    if (rc != QB_OK)
        return npw_host->set_error(npw_host, rc, NPW_NAME ": cannot append to a JSON array");
    return QB_OK;
}

/* The config.json of the output: the source's, without the keys that would
 * call the float32 tensors quantized, torch_dtype set to what was written:
 * the host's clean-up (qb_host.hf_config_clean, ABI 1.3), which keeps every
 * other member's text as the source wrote it. */
static qb_status npw_make_config(const qb_model_info *mi, char **text)
{
    static const char *const keys[] = {"torch_dtype", NULL};
    static const char *const values[] = {"\"float32\"", NULL};
    return npw_host->hf_config_clean(npw_host, "config.json", mi->config_json, keys, values, text,
                                     NULL);
}

/* The manifest's fixed part: who wrote it, from what, and the model facts
 * the writer relied on (its required_facts). "tensors" is added by finish. */
static qb_status npw_make_manifest(const qb_model_src *src, qb_json **out)
{
    const qb_json_api *J = npw_json;
    const qb_model_info *mi = src->info;
    const qb_model_facts *f = mi->facts;
    qb_json *m = J->new_object(), *writer = J->new_object(), *source = J->new_object(),
            *facts = J->new_object();
    qb_status rc = QB_OK;

    *out = NULL;
    if (!m || !writer || !source || !facts)
        rc = npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory building JSON");
    if (rc == QB_OK)
        rc = npw_put(writer, "name", J->new_string(NPW_NAME));
    if (rc == QB_OK)
        rc = npw_put(writer, "version", J->new_string(NPW_VERSION));
    if (rc == QB_OK)
        rc = npw_put(source, "path", J->new_string(src->source_path ? src->source_path : ""));
    if (rc == QB_OK)
        rc = npw_put(source, "reader", J->new_string(src->reader_name ? src->reader_name : ""));
    if (rc == QB_OK)
        rc = npw_put(source, "reader_version", J->new_string(src->reader_version ? src->reader_version : ""));
    if (rc == QB_OK)
        rc = npw_put(source, "architecture", J->new_string(mi->architecture ? mi->architecture : ""));
    if (rc == QB_OK)
        rc = npw_put(facts, "n_layers", J->new_number((double)f->n_layers));
    if (rc == QB_OK)
        rc = npw_put(facts, "hidden_size", J->new_number((double)f->hidden_size));
    if (rc == QB_OK)
        rc = npw_put(m, "format", J->new_string("npy-dir"));
    if (rc == QB_OK)
        rc = npw_put(m, "format_version", J->new_number(1));
    if (rc == QB_OK)
        rc = npw_put(m, "quantbridge_version", J->new_string(src->host_version ? src->host_version : ""));
    /* add() takes each sub-object into m whatever it returns. */
    if (rc == QB_OK) {
        rc = npw_put(m, "writer", writer);
        writer = NULL;
    }
    if (rc == QB_OK) {
        rc = npw_put(m, "source", source);
        source = NULL;
    }
    if (rc == QB_OK) {
        rc = npw_put(m, "facts", facts);
        facts = NULL;
    }
    J->free(writer);
    J->free(source);
    J->free(facts);
    if (rc != QB_OK) {
        J->free(m);
        return rc;
    }
    *out = m;
    return QB_OK;
}

/* ---- the writer ---------------------------------------------------------- */

/* 1 when NAME.npy is a file name the sink accepts (qb_sink.create). */
static int npw_name_ok(const char *name)
{
    size_t n = strlen(name), i;
    if (n == 0 || n > 250 || name[0] == '.')
        return 0;
    for (i = 0; i < n; i++)
        if (name[i] == '/' || (unsigned char)name[i] < 0x20)
            return 0;
    return 1;
}

static int npw_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    if (!mi->config_json) {
        npw_host->set_error(npw_host, QB_E_UNSUPPORTED, NPW_NAME ": the model has no config.json");
        return 0;
    }
    return 50; /* any architecture: the tensors are written as they are */
}

static qb_status npw_begin(void *ctx, const qb_sink *sink, const qb_model_src *src, const qb_param *params,
                           size_t *order, qb_writer_handle *out)
{
    const qb_model_info *mi = src->info;
    const qb_param *p = qb_param_find(params, "block_rows");
    npw_writer *w;
    qb_status rc = QB_OK;
    size_t i;
    uint32_t d;
    (void)ctx;

    *out = NULL;
    /* required_facts makes the host refuse a model without these facts; a
     * writer still never reads a field its host did not fill. */
    if (!QB_HAS_FIELD(mi, qb_model_info, facts) || !mi->facts ||
        mi->facts->struct_size < QB_MODEL_FACTS_SIZE_1_1 ||
        (mi->facts->known & (QB_FACT_LAYERS | QB_FACT_HIDDEN)) != (QB_FACT_LAYERS | QB_FACT_HIDDEN))
        return npw_host->set_error(npw_host, QB_E_UNSUPPORTED,
                                   NPW_NAME ": the host gave no n_layers and hidden_size facts for %s",
                                   src->source_path ? src->source_path : "the model");
    if (!mi->config_json)
        return npw_host->set_error(npw_host, QB_E_UNSUPPORTED, NPW_NAME ": the model has no config.json");
    for (i = 0; i < mi->n_tensors; i++) {
        const qb_tensor_info *ti;
        rc = src->tensor_info(src->handle, i, &ti);
        if (rc != QB_OK)
            return rc;
        if (!npw_name_ok(ti->name))
            return npw_host->set_error(npw_host, QB_E_UNSUPPORTED,
                                       NPW_NAME ": tensor name \"%s\" cannot be a file name", ti->name);
        if (ti->n_dims < 1 || ti->n_dims > QB_MAX_DIMS)
            return npw_host->set_error(npw_host, QB_E_UNSUPPORTED, NPW_NAME ": %s has %u dimensions",
                                       ti->name, (unsigned)ti->n_dims);
        for (d = 0; d < ti->n_dims; d++)
            if (ti->dims[d] < 1)
                return npw_host->set_error(npw_host, QB_E_FORMAT, NPW_NAME ": %s: dimension %u is %lld",
                                           ti->name, (unsigned)d, (long long)ti->dims[d]);
        order[i] = i;
    }

    w = npw_alloc(sizeof *w);
    if (!w)
        return QB_E_NOMEM;
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->src = src;
    w->block_rows = NPW_BLOCK_ROWS_DEFAULT;
    if (p && p->is_set) {
        if (p->type != QB_PARAM_INT || p->v.i < 1)
            rc = npw_host->set_error(npw_host, QB_E_INVALID, NPW_NAME ": block_rows must be an integer >= 1");
        else
            w->block_rows = p->v.i;
    }
    if (rc == QB_OK)
        rc = npw_make_config(mi, &w->config_text);
    if (rc == QB_OK)
        rc = npw_make_manifest(src, &w->manifest);
    if (rc == QB_OK && !(w->tensors = npw_json->new_array()))
        rc = npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory building JSON");
    if (rc != QB_OK) {
        npw_free(w);
        return rc;
    }
    *out = w;
    return QB_OK;
}

/* The .npy 1.0 header of a float32 C-order array of shape ti->dims into
 * hdr (512 bytes), padded so that the data starts at a multiple of 64
 * bytes; returns its length. */
static size_t npw_header(const qb_tensor_info *ti, char hdr[512])
{
    char shape[8 * 24 + 8];
    size_t len = 0, hlen, total;
    uint32_t d;

    shape[0] = '\0';
    for (d = 0; d < ti->n_dims; d++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? ", " : "",
                                (long long)ti->dims[d]);
    if (ti->n_dims == 1)
        snprintf(shape + len, sizeof shape - len, ",");
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hlen = (size_t)snprintf(hdr + 10, 512 - 10,
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
    total = (10 + hlen + 1 + 63) / 64 * 64; /* + the final '\n' */
    memset(hdr + 10 + hlen, ' ', total - 10 - hlen - 1);
    hdr[total - 1] = '\n';
    hlen = total - 10;
    hdr[8] = (char)(hlen & 0xff);
    hdr[9] = (char)(hlen >> 8);
    return total;
}

static qb_status npw_write_header(npw_writer *w, const qb_tensor_info *ti)
{
    char hdr[512];
    size_t total = npw_header(ti, hdr);
    return w->sink->write(w->open_file, hdr, total);
}

/* Float32 to little-endian bytes, in place: .npy '<f4' is little-endian
 * whatever the machine. */
static void npw_to_le(float *v, size_t n)
{
    const uint16_t one = 1;
    size_t i;
    if (*(const uint8_t *)&one == 1)
        return;
    for (i = 0; i < n; i++) {
        uint8_t *b = (uint8_t *)&v[i];
        uint8_t t = b[0];
        b[0] = b[3];
        b[3] = t;
        t = b[1];
        b[1] = b[2];
        b[2] = t;
    }
}

/* Records a written tensor in the manifest's "tensors" array. */
static qb_status npw_record(npw_writer *w, const qb_tensor_info *ti, const char *file, uint64_t bytes,
                            const uint8_t sha[32])
{
    const qb_json_api *J = npw_json;
    qb_json *t = J->new_object(), *shape = J->new_array();
    char hex[65];
    qb_status rc = QB_OK;
    uint32_t d;
    int i;

    if (!t || !shape) {
        J->free(t);
        J->free(shape);
        return npw_host->set_error(npw_host, QB_E_NOMEM, NPW_NAME ": out of memory building JSON");
    }
    for (i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", sha[i]);
    for (d = 0; rc == QB_OK && d < ti->n_dims; d++)
        rc = npw_push(shape, J->new_number((double)ti->dims[d]));
    if (rc == QB_OK)
        rc = npw_put(t, "name", J->new_string(ti->name));
    if (rc == QB_OK)
        rc = npw_put(t, "file", J->new_string(file));
    if (rc == QB_OK) {
        rc = npw_put(t, "shape", shape);
        shape = NULL;
    }
    if (rc == QB_OK)
        rc = npw_put(t, "dtype", J->new_string("<f4"));
    if (rc == QB_OK)
        rc = npw_put(t, "bytes", J->new_number((double)bytes));
    if (rc == QB_OK)
        rc = npw_put(t, "sha256", J->new_string(hex));
    J->free(shape);
    if (rc != QB_OK) {
        J->free(t);
        return rc;
    }
    return npw_push(w->tensors, t);
}

static qb_status npw_write_tensor(qb_writer_handle h, size_t index)
{
    npw_writer *w = h;
    const qb_model_src *src = w->src;
    const qb_tensor_info *ti;
    int64_t rows, cols, row0, n;
    uint64_t bytes = 0;
    uint8_t sha[32];
    char *file = NULL;
    size_t need, file_len;
    qb_sink_file *f;
    qb_status rc;

    rc = src->tensor_info(src->handle, index, &ti);
    if (rc != QB_OK)
        return rc;
    rows = qb_tensor_rows(ti);
    cols = qb_tensor_cols(ti);
    n = rows < w->block_rows ? rows : w->block_rows;
    if (cols < 1 || (uint64_t)cols > SIZE_MAX / sizeof(float) / (uint64_t)n)
        return npw_host->set_error(npw_host, QB_E_RANGE,
                                   NPW_NAME ": %s: a block of %lld rows does not fit in memory", ti->name,
                                   (long long)n);
    need = (size_t)n * (size_t)cols;
    if (need > w->block_cap) { /* grows to the largest block, kept across tensors */
        npw_host->free(npw_host, w->block);
        w->block_cap = 0;
        w->block = npw_alloc(need * sizeof(float));
        if (!w->block)
            return QB_E_NOMEM;
        w->block_cap = need;
    }
    file_len = strlen(ti->name) + sizeof ".npy";
    file = npw_alloc(file_len);
    if (!file)
        return QB_E_NOMEM;
    snprintf(file, file_len, "%s.npy", ti->name);

    /* From here a failure leaves w->open_file for abort to close. */
    rc = w->sink->create(w->sink->handle, file, &w->open_file);
    if (rc == QB_OK)
        rc = npw_write_header(w, ti);
    for (row0 = 0; rc == QB_OK && row0 < rows; row0 += n) {
        if (n > rows - row0)
            n = rows - row0;
        if (npw_host->cancelled(npw_host)) {
            rc = npw_host->set_error(npw_host, QB_E_CANCELLED, NPW_NAME ": cancelled");
            break;
        }
        rc = src->read_rows(src->handle, index, row0, n, w->block);
        if (rc == QB_OK) {
            npw_to_le(w->block, (size_t)n * (size_t)cols);
            rc = w->sink->write(w->open_file, w->block, (size_t)n * (size_t)cols * sizeof(float));
        }
    }
    if (rc == QB_OK) {
        f = w->open_file;
        w->open_file = NULL;
        rc = w->sink->close(f, &bytes, sha); /* releases f even on error */
    }
    if (rc == QB_OK)
        rc = npw_record(w, ti, file, bytes, sha);
    npw_host->free(npw_host, file);
    return rc;
}

/* Writes one whole file through the sink (qb_sink.write_file, ABI 1.3). */
static qb_status npw_write_file(npw_writer *w, const char *name, const char *text, size_t len)
{
    return w->sink->write_file(w->sink->handle, name, text, len, NULL);
}

/* Finish releases the handle whatever it returns: the host never calls
 * abort after it (qb_writer.h). */
static qb_status npw_finish(qb_writer_handle h)
{
    npw_writer *w = h;
    char *text = NULL;
    size_t len = 0;
    qb_json *tensors = w->tensors;
    qb_status rc;

    rc = npw_write_file(w, "config.json", w->config_text, strlen(w->config_text));
    w->tensors = NULL; /* add() takes it whatever it returns */
    if (rc == QB_OK)
        rc = npw_put(w->manifest, "tensors", tensors);
    else
        npw_json->free(tensors);
    if (rc == QB_OK)
        rc = npw_json->emit(npw_host, w->manifest, 2, &text, &len);
    if (rc == QB_OK)
        rc = npw_write_file(w, "manifest.json", text, len);
    npw_host->free(npw_host, text);
    npw_free(w);
    return rc;
}

static void npw_abort(qb_writer_handle h)
{
    npw_free(h);
}

/* The plan (ABI 1.2): what begin would do, without a sink and without
 * reading data: every tensor converted to float32 as NAME.npy, its bytes
 * the header and the data. begin's refusals are the plan's too. */
static qb_status npw_plan(void *ctx, const qb_model_src *src, const qb_param *params,
                          const qb_plan_sink *out)
{
    size_t i;
    (void)ctx;
    (void)params;
    for (i = 0; i < src->info->n_tensors; i++) {
        const qb_tensor_info *ti;
        qb_plan_entry e;
        char hdr[512], target[300];
        uint64_t n = 1;
        uint32_t d;
        qb_status rc = src->tensor_info(src->handle, i, &ti);
        if (rc != QB_OK)
            return rc;
        if (!npw_name_ok(ti->name) || ti->n_dims < 1 || ti->n_dims > QB_MAX_DIMS)
            return npw_host->set_error(npw_host, QB_E_UNSUPPORTED,
                                       NPW_NAME ": tensor \"%s\" cannot be written", ti->name);
        for (d = 0; d < ti->n_dims; d++)
            n *= (uint64_t)ti->dims[d];
        snprintf(target, sizeof target, "%s.npy", ti->name);
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        e.action = ti->source_dtype == QB_DT_F32 ? QB_PLAN_COPY : QB_PLAN_CONVERT;
        e.tensor = i;
        e.target = target;
        e.reason = ti->source_dtype == QB_DT_F32 ? "float32 as it is" : "decoded to float32";
        e.bytes_out = (uint64_t)npw_header(ti, hdr) + n * sizeof(float);
        if ((rc = out->tensor(out->handle, &e)) != QB_OK)
            return rc;
    }
    return QB_OK;
}

/* ---- descriptor ---------------------------------------------------------- */

/* Designated initializers: fields appended in a later minor stay zero. */
static const qb_writer_vtable npw_writer_vt = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = npw_supports,
    .begin = npw_begin,
    .write_tensor = npw_write_tensor,
    .finish = npw_finish,
    .abort = npw_abort,
    .plan = npw_plan,
};

static const qb_writer_caps npw_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_HOST,            /* tokenizer files, generation_config.json */
    .architectures = NULL,                         /* any model_type */
    .required_facts = QB_FACT_LAYERS | QB_FACT_HIDDEN, /* written to manifest.json */
    .verify_reader = "npy",                        /* sdk/examples/npy-reader */
};

static const qb_option_decl npw_opt_block_rows = {
    .struct_size = sizeof(qb_option_decl),
    .name = "block_rows",
    .type = QB_PARAM_INT,
    .default_value = "256",
    .help = "npy-writer: rows read and written per block (memory: block_rows x columns x 4 bytes)",
    .min_int = 1,
    .max_int = 1 << 20,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl *const npw_options[] = {&npw_opt_block_rows, NULL};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin npw_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = NPW_NAME,
    .version = NPW_VERSION,
    .description = "Example: every tensor as float32 NAME.npy, config.json and a JSON manifest",
    .vendor = "quantbridge examples",
    .license = "MIT",
    .writer = &npw_writer_vt,
    .options = npw_options,
    .writer_caps = &npw_caps,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host, const qb_plugin **out)
{
    /* Uses ABI 1.3 unconditionally (the JSON service, model facts, caps,
     * the plan, hf_config_clean, the sink's write_file): an older host
     * refuses it, with this message. */
    qb_status rc = qb_negotiate(neg, QB_MAKE_ABI(1, 3));
    if (rc != QB_OK) {
        if (rc == QB_E_ABI && host)
            host->set_error(host, rc, NPW_NAME " needs a host speaking ABI 1.3 or later 1.x");
        return rc;
    }
    if (!host || !out)
        return QB_E_INVALID;
    if (!QB_HAS_FIELD(host, qb_host, hf_config_clean) || !host->json ||
        host->json->struct_size < QB_JSON_API_SIZE_1_1)
        return host->set_error(host, QB_E_ABI, NPW_NAME ": the host offers no 1.3 services");
    npw_plugin.abi = neg->plugin_abi;
    npw_host = host;
    npw_json = host->json;
    *out = &npw_plugin;
    return QB_OK;
}
