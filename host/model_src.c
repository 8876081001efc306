/*
 * quantbridge host — the qb_model_src a writer sees: the opened reader,
 * with its description validated once, name lookup, bounds checks, error
 * context, and data calls serialised unless the reader declares
 * QB_PLUGIN_CONCURRENT_READS (qb_reader.h THREADING).
 */
#include "qbh.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

static qbh_source *S(void *h)
{
    return h;
}

static qb_status src_tensor_info(void *h, size_t index, const qb_tensor_info **out)
{
    qbh_source *s = S(h);
    *out = NULL;
    if (index >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path, index,
                             s->info.n_tensors);
    *out = &s->tensors[index];
    return QB_OK;
}

static qb_status src_find(void *h, const char *name, size_t *index)
{
    qbh_source *s = S(h);
    gpointer v = name ? g_hash_table_lookup(s->by_name, name) : NULL;
    if (!v)
        return qbh_error_set(QB_E_NOT_FOUND, "%s: no tensor named %s", s->path,
                             name ? name : "(null)");
    *index = (size_t)GPOINTER_TO_SIZE(v) - 1;
    return QB_OK;
}

/* Checks index and row range; a reader gets only in-contract requests. */
static qb_status check_rows(qbh_source *s, size_t index, int64_t row0, int64_t n_rows)
{
    int64_t rows;
    if (index >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path, index,
                             s->info.n_tensors);
    rows = qb_tensor_rows(&s->tensors[index]);
    if (row0 < 0 || n_rows < 0 || row0 > rows || n_rows > rows - row0)
        return qbh_error_set(QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)", s->path,
                             s->tensors[index].name, (long long)row0, (long long)n_rows,
                             (long long)rows);
    return QB_OK;
}

/* Gives a failing reader call a message when the plugin set none. */
static qb_status context(qbh_source *s, size_t index, const char *call, qb_status rc)
{
    if (rc == QB_OK)
        return rc;
    if (!qbh_error_message()[0])
        qbh_error_set(rc, "%s: %s: reader %s: %s failed (%s)", s->path, s->tensors[index].name,
                      s->reader->name, call, qbh_status_name(rc));
    return rc;
}

static qb_status src_read_rows(void *h, size_t index, int64_t row0, int64_t n_rows, float *dst)
{
    qbh_source *s = S(h);
    qb_status rc = check_rows(s, index, row0, n_rows);
    if (rc)
        return rc;
    if (qbh_cancel_requested())
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    qbh_error_clear();
    if (s->serialise)
        pthread_mutex_lock(&s->reader->read_lock);
    QBH_CALL(s->reader, "read_rows", s->tensors[index].name,
             rc = s->reader->desc->reader->read_rows(s->handle, index, row0, n_rows, dst));
    if (s->serialise)
        pthread_mutex_unlock(&s->reader->read_lock);
    return context(s, index, "read_rows", rc);
}

/* The tensor offers a grid: an integer one, or a float-coded one
 * (qb_tensor_info.grid_codes, ABI 1.4) that the reader itself refuses to a
 * caller who does not accept its kind. */
static int offers_grid(const qb_tensor_info *t)
{
    return t->has_grid || (QB_HAS_FIELD(t, qb_tensor_info, grid_codes) && t->grid_codes);
}

static qb_status src_get_grid_info(void *h, size_t index, qb_grid_info *out)
{
    qbh_source *s = S(h);
    const qb_reader_vtable *r = s->reader->desc->reader;
    qb_status rc;
    if (index >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path, index,
                             s->info.n_tensors);
    if (!r->get_grid_info || !offers_grid(&s->tensors[index]))
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: %s: no integer grid", s->path,
                             s->tensors[index].name);
    qbh_error_clear();
    /* get_grid_info is instance class (qb_reader.h): never two at once on
     * one handle, though it may overlap data calls. */
    pthread_mutex_lock(&s->info_lock);
    QBH_CALL(s->reader, "get_grid_info", s->tensors[index].name,
             rc = r->get_grid_info(s->handle, index, out));
    pthread_mutex_unlock(&s->info_lock);
    return context(s, index, "get_grid_info", rc);
}

static qb_status src_read_grid(void *h, size_t index, int64_t row0, int64_t n_rows,
                               qb_grid_rows *out)
{
    qbh_source *s = S(h);
    const qb_reader_vtable *r = s->reader->desc->reader;
    qb_status rc = check_rows(s, index, row0, n_rows);
    if (rc)
        return rc;
    if (!r->read_grid || !offers_grid(&s->tensors[index]))
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: %s: no integer grid", s->path,
                             s->tensors[index].name);
    if (qbh_cancel_requested())
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    qbh_error_clear();
    if (s->serialise)
        pthread_mutex_lock(&s->reader->read_lock);
    QBH_CALL(s->reader, "read_grid", s->tensors[index].name,
             rc = r->read_grid(s->handle, index, row0, n_rows, out));
    if (s->serialise)
        pthread_mutex_unlock(&s->reader->read_lock);
    return context(s, index, "read_grid", rc);
}

/* ABI 1.4 stored rows: present only in a reader vtable that has them. */
static int has_stored(const qbh_source *s)
{
    const qb_reader_vtable *r = s->reader->desc->reader;
    return QB_HAS_FIELD(r, qb_reader_vtable, read_stored_rows) && r->get_stored_rows &&
           r->read_stored_rows;
}

/* The view's shape as its layout defines it from the tensor's dims
 * (qb_reader.h qb_stored_layout); 0 for an unknown layout. */
static int stored_shape(const qb_tensor_info *t, uint32_t layout, int64_t *rows, int64_t *cols)
{
    int64_t lead = 1;
    uint32_t d;
    if (layout == QB_STORED_ROWS) {
        *rows = qb_tensor_rows(t);
        *cols = qb_tensor_cols(t);
        return 1;
    }
    if (layout != QB_STORED_TRANSPOSED || t->n_dims < 2)
        return 0;
    for (d = 0; d + 2 < t->n_dims; d++)
        lead *= t->dims[d];
    *rows = lead * t->dims[t->n_dims - 1];
    *cols = t->dims[t->n_dims - 2];
    return 1;
}

static qb_status src_stored_info(void *h, size_t index, qb_stored_rows_info *out)
{
    qbh_source *s = S(h);
    const qb_reader_vtable *r = s->reader->desc->reader;
    const qb_tensor_info *t;
    int64_t rows, cols;
    uint32_t size = out->struct_size;
    qb_status rc;
    if (index >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path, index,
                             s->info.n_tensors);
    t = &s->tensors[index];
    if (!has_stored(s))
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: %s: reader %s offers no stored rows", s->path,
                             t->name, s->reader->name);
    if (size < QB_STORED_ROWS_INFO_SIZE_1_4)
        return qbh_error_set(QB_E_INVALID, "%s: %s: stored rows info of %u bytes (< %u)", s->path,
                             t->name, size, (unsigned)QB_STORED_ROWS_INFO_SIZE_1_4);
    memset(out, 0, sizeof *out);
    out->struct_size = size;
    qbh_error_clear();
    pthread_mutex_lock(&s->info_lock);
    QBH_CALL(s->reader, "get_stored_rows", t->name, rc = r->get_stored_rows(s->handle, index, out));
    pthread_mutex_unlock(&s->info_lock);
    if (rc == QB_E_UNSUPPORTED) {
        if (!qbh_error_message()[0])
            qbh_error_set(rc, "%s: %s: no stored rows", s->path, t->name);
        return rc;
    }
    if (rc)
        return context(s, index, "get_stored_rows", rc);
    /* a writer copies bytes on the strength of this: hold it to its contract */
    if (!out->encoding || !*out->encoding || !stored_shape(t, out->layout, &rows, &cols) ||
        out->rows != rows || out->cols != cols || out->row_bytes == 0)
        return qbh_error_set(QB_E_INTERNAL, "%s: %s: reader %s: stored rows %s layout %u [%lld x %lld, "
                             "%llu bytes a row] do not fit the tensor (out of contract)", s->path,
                             t->name, s->reader->name, out->encoding ? out->encoding : "(null)",
                             out->layout, (long long)out->rows, (long long)out->cols,
                             (unsigned long long)out->row_bytes);
    return QB_OK;
}

static qb_status src_read_stored(void *h, size_t index, int64_t row0, int64_t n_rows, void *dst)
{
    qbh_source *s = S(h);
    const qb_reader_vtable *r = s->reader->desc->reader;
    qb_stored_rows_info si;
    qb_status rc;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    if ((rc = src_stored_info(h, index, &si)))
        return rc;
    if (row0 < 0 || n_rows < 0 || row0 > si.rows || n_rows > si.rows - row0)
        return qbh_error_set(QB_E_RANGE, "%s: %s: stored rows [%lld, +%lld) outside [0, %lld)",
                             s->path, s->tensors[index].name, (long long)row0, (long long)n_rows,
                             (long long)si.rows);
    if (qbh_cancel_requested())
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    qbh_error_clear();
    if (s->serialise)
        pthread_mutex_lock(&s->reader->read_lock);
    QBH_CALL(s->reader, "read_stored_rows", s->tensors[index].name,
             rc = r->read_stored_rows(s->handle, index, row0, n_rows, dst));
    if (s->serialise)
        pthread_mutex_unlock(&s->reader->read_lock);
    return context(s, index, "read_stored_rows", rc);
}

static qb_status validate_tensor(qbh_source *s, size_t i)
{
    const qb_tensor_info *t = &s->tensors[i];
    uint32_t d;
    if (!t->name || !*t->name)
        return qbh_error_set(QB_E_FORMAT, "%s: reader %s: tensor %zu has no name", s->path,
                             s->reader->name, i);
    if (t->n_dims < 1 || t->n_dims > QB_MAX_DIMS)
        return qbh_error_set(QB_E_FORMAT, "%s: %s: reader %s reports %u dims", s->path, t->name,
                             s->reader->name, t->n_dims);
    for (d = 0; d < t->n_dims; d++)
        if (t->dims[d] < 1)
            return qbh_error_set(QB_E_FORMAT, "%s: %s: reader %s reports dim %u = %lld", s->path,
                                 t->name, s->reader->name, d, (long long)t->dims[d]);
    if (!t->source_encoding)
        return qbh_error_set(QB_E_FORMAT, "%s: %s: reader %s gives no source encoding", s->path,
                             t->name, s->reader->name);
    if (g_hash_table_contains(s->by_name, t->name))
        return qbh_error_set(QB_E_FORMAT, "%s: reader %s lists tensor %s twice", s->path,
                             s->reader->name, t->name);
    g_hash_table_insert(s->by_name, (gpointer)t->name, GSIZE_TO_POINTER(i + 1));
    return QB_OK;
}

/* ABI 1.3 tokenizer state: a reader of an older ABI has left both fields
 * zero (the host zeroed its struct), one that set a struct_size without
 * them is read as stating nothing. An unknown state is refused, not
 * guessed at (qb_abi.h); a state contradicting tokenizer_dir too. */
static qb_status check_tokenizer_state(qbh_source *s, const qbh_plugin *p)
{
    if (!QB_HAS_FIELD(&s->info, qb_model_info, tokenizer_note)) {
        s->info.tokenizer_state = QB_TOKENIZER_UNSTATED;
        s->info.tokenizer_note = NULL;
        return QB_OK;
    }
    switch (s->info.tokenizer_state) {
    case QB_TOKENIZER_UNSTATED:
        s->info.tokenizer_note = NULL;
        return QB_OK;
    case QB_TOKENIZER_SKIPPED:
    case QB_TOKENIZER_REFUSED:
        if (s->info.tokenizer_dir)
            return qbh_error_set(QB_E_FORMAT, "%s: reader %s states its tokenizer %s and yet "
                                 "gives the tokenizer directory %s", s->path, p->name,
                                 qbh_source_tokenizer_state(s), s->info.tokenizer_dir);
        if (!s->info.tokenizer_note || !*s->info.tokenizer_note)
            s->info.tokenizer_note = "the reader gives no reason";
        return QB_OK;
    default:
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: reader %s states tokenizer_state %d, which "
                             "this host (ABI %d.%d) does not know", s->path, p->name,
                             (int)s->info.tokenizer_state, QB_ABI_MAJOR, QB_ABI_MINOR);
    }
}

const char *qbh_source_tokenizer_state(const qbh_source *s)
{
    switch (s->info.tokenizer_state) {
    case QB_TOKENIZER_SKIPPED:
        return "skipped";
    case QB_TOKENIZER_REFUSED:
        return "refused";
    default:
        return NULL;
    }
}

const char *qbh_source_tokenizer_json_dir(const qbh_source *s)
{
    char *p;
    int ok;
    if (!s->info.tokenizer_dir)
        return NULL;
    p = g_build_filename(s->info.tokenizer_dir, "tokenizer.json", NULL);
    ok = g_file_test(p, G_FILE_TEST_IS_REGULAR);
    g_free(p);
    return ok ? s->info.tokenizer_dir : NULL;
}

qb_status qbh_source_tokenizer_refused(const qbh_source *s)
{
    assert(s->info.tokenizer_state == QB_TOKENIZER_REFUSED && s->info.tokenizer_note);
    return qbh_error_set(QB_E_UNSUPPORTED, "%s; or give the tokenizer files with --tokenizer DIR",
                         s->info.tokenizer_note);
}

qb_status qbh_source_open(qbh_plugin *p, const char *path, const qb_param *params,
                          qbh_source *s)
{
    const qb_reader_vtable *r = p->desc->reader;
    qb_status rc;
    size_t i;

    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->info_lock, NULL);
    s->reader = p;
    s->serialise = !(p->desc->flags & QB_PLUGIN_CONCURRENT_READS);
    s->path = qbh_strdup(path);
    s->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    if (!s->path) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    qbh_error_clear();
    QBH_CALL(p, "open", path, rc = r->open(p->desc->ctx, path, params, &s->handle));
    if (rc) {
        if (!qbh_error_message()[0])
            qbh_error_set(rc, "%s: reader %s could not open it (%s)", path, p->name,
                          qbh_status_name(rc));
        s->handle = NULL;
        goto out;
    }
    s->info.struct_size = sizeof s->info;
    QBH_CALL(p, "get_model_info", path, rc = r->get_model_info(s->handle, &s->info));
    if (rc) {
        if (!qbh_error_message()[0])
            qbh_error_set(rc, "%s: reader %s: get_model_info failed (%s)", path, p->name,
                          qbh_status_name(rc));
        goto out;
    }
    /* The reader fills a struct the host sized; one that rewrote
     * struct_size below ABI 1.0 broke the contract (qb_abi.h). Fields
     * after 1.0 are read only under QB_HAS_FIELD. */
    if (s->info.struct_size < QB_MODEL_INFO_SIZE_1_0) {
        rc = qbh_error_set(QB_E_INTERNAL, "%s: reader %s: model info struct_size %u below ABI 1.0",
                           path, p->name, s->info.struct_size);
        goto out;
    }
    if ((rc = check_tokenizer_state(s, p)))
        goto out;
    if (!s->info.architecture || !s->info.source_format) {
        rc = qbh_error_set(QB_E_FORMAT, "%s: reader %s gives no %s", path, p->name,
                           !s->info.architecture ? "architecture" : "source format");
        goto out;
    }
    s->tensors = qbh_calloc(s->info.n_tensors ? s->info.n_tensors : 1, sizeof *s->tensors);
    if (!s->tensors) {
        rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory for %zu tensor infos", path,
                           s->info.n_tensors);
        goto out;
    }
    for (i = 0; i < s->info.n_tensors; i++) {
        s->tensors[i].struct_size = sizeof s->tensors[i];
        QBH_CALL(p, "get_tensor_info", path, rc = r->get_tensor_info(s->handle, i, &s->tensors[i]));
        if (rc) {
            if (!qbh_error_message()[0])
                qbh_error_set(rc, "%s: reader %s: get_tensor_info(%zu) failed (%s)", path,
                              p->name, i, qbh_status_name(rc));
            goto out;
        }
        if (s->tensors[i].struct_size < QB_TENSOR_INFO_SIZE_1_0) {
            rc = qbh_error_set(QB_E_INTERNAL,
                               "%s: reader %s: tensor %zu info struct_size %u below ABI 1.0", path,
                               p->name, i, s->tensors[i].struct_size);
            goto out;
        }
        rc = validate_tensor(s, i);
        if (rc)
            goto out;
    }
    {
        /* The writer sees the host's facts, never a reader's (qb_tensor.h):
         * the info is the host's own 1.1 struct, zeroed before the reader
         * (1.0 or newer) filled its fields, so every field after those is
         * the host's to set. */
        char what[512];
        snprintf(what, sizeof what, "%s: config.json of reader %s", path, p->name);
        rc = qbh_model_facts_compute(what, s->info.config_json, s->tensors, s->info.n_tensors,
                                     &s->facts);
        if (rc == QB_E_FORMAT) {
            qbh_log(QB_LOG_WARN, NULL, "%s; model facts from the config are unknown",
                    qbh_error_message());
            qbh_error_clear();
            rc = QB_OK;
        }
        if (rc)
            goto out;
        s->info.struct_size = sizeof s->info;
        s->info.facts = &s->facts;
    }
    s->src.struct_size = sizeof s->src;
    s->src.handle = s;
    s->src.info = &s->info;
    s->src.source_path = s->path;
    s->src.reader_name = p->desc->name;
    s->src.reader_version = p->desc->version;
    s->src.host_version = QBH_VERSION_STRING;
    s->src.tensor_info = src_tensor_info;
    s->src.find = src_find;
    s->src.read_rows = src_read_rows;
    s->src.get_grid_info = src_get_grid_info;
    s->src.read_grid = src_read_grid;
    s->src.stored_rows_info = src_stored_info;
    s->src.read_stored_rows = src_read_stored;
out:
    if (rc)
        qbh_source_close(s);
    return rc;
}

qbh_source *qbh_source_of(const qb_model_src *src)
{
    qbh_source *s;
    /* only a view this file made calls back into src_tensor_info: another
     * qb_model_src (a test's, a plugin-check fake) is not a qbh_source */
    if (!src || src->struct_size < QB_MODEL_SRC_SIZE_1_0 || src->tensor_info != src_tensor_info ||
        !src->handle)
        return NULL;
    s = src->handle;
    return &s->src == src ? s : NULL;
}

void qbh_source_close(qbh_source *s)
{
    /* reader is set first by qbh_source_open and cleared here, so a zeroed
     * or already closed source is a no-op. */
    if (!s || !s->reader)
        return;
    if (s->handle)
        QBH_CALL(s->reader, "close", s->path, s->reader->desc->reader->close(s->handle));
    if (s->by_name)
        g_hash_table_destroy(s->by_name);
    pthread_mutex_destroy(&s->info_lock);
    qbh_free(s->tensors);
    qbh_free(s->path);
    qbh_free(s->blocks);
    memset(s, 0, sizeof *s);
}
