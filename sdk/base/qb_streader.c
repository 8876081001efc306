/* libquantbridge-base: the reader of a safetensors directory format
 * around the format's own tensor table (qb_streader.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/base/qb_rows.h>
#include <quantbridge/base/qb_streader.h>

#include "qb_base_internal.h"

/* The stored-tensor view's index, built once at open: every stored tensor
 * a canonical tensor names, sorted by address, and the canonical names
 * sorted, for "<module>.<part>" -> "<module>.weight". */
typedef struct raw_ref {
    const qb_st_tensor *st;
    size_t canonical;
} raw_ref;

typedef struct raw_name {
    const char *name;
    size_t canonical;
} raw_name;

typedef struct raw_index {
    raw_ref *refs;
    size_t n_refs;
    raw_name *names;
    size_t n_names;
} raw_index;

static int ref_cmp(const void *a, const void *b)
{
    const raw_ref *x = a, *y = b;
    if (x->st != y->st)
        return (uintptr_t)x->st < (uintptr_t)y->st ? -1 : 1;
    return x->canonical < y->canonical ? -1 : x->canonical > y->canonical;
}

static int name_cmp(const void *a, const void *b)
{
    const raw_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->canonical < y->canonical ? -1 : x->canonical > y->canonical;
}

static void describe(const qb_streader *r, size_t i, qb_streader_tensor *t)
{
    memset(t, 0, sizeof *t);
    r->klass->describe(r, i, t);
}

static qb_status raw_index_build(qb_streader *r)
{
    const qb_host *h = r->host;
    raw_index *x = h->alloc(h, sizeof *x);
    size_t i, k;

    if (!x)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    memset(x, 0, sizeof *x);
    r->base_private = x;
    x->refs = h->alloc(h, (r->n_tensors ? r->n_tensors : 1) * QB_STREADER_MAX_STORED *
                              sizeof *x->refs);
    x->names = h->alloc(h, (r->n_tensors ? r->n_tensors : 1) * sizeof *x->names);
    if (!x->refs || !x->names)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    for (i = 0; i < r->n_tensors; i++) {
        qb_streader_tensor t;
        describe(r, i, &t);
        for (k = 0; k < QB_STREADER_MAX_STORED && t.stored[k]; k++) {
            x->refs[x->n_refs].st = t.stored[k];
            x->refs[x->n_refs++].canonical = i;
        }
        x->names[x->n_names].name = t.name;
        x->names[x->n_names++].canonical = i;
    }
    /* first in order wins: the lowest canonical index for a stored tensor
     * two tensors name, and for a name given twice */
    qsort(x->refs, x->n_refs, sizeof *x->refs, ref_cmp);
    qsort(x->names, x->n_names, sizeof *x->names, name_cmp);
    return QB_OK;
}

static void raw_index_free(const qb_host *h, raw_index *x)
{
    if (!x)
        return;
    h->free(h, x->refs);
    h->free(h, x->names);
    h->free(h, x);
}

/* The canonical tensor stored tensor st feeds, or -1. */
static int64_t raw_canonical(const raw_index *x, const qb_st_tensor *st)
{
    size_t lo = 0, hi = x->n_refs;
    const char *dot;
    char key[1024];
    size_t plen;

    while (lo < hi) { /* first ref with address >= st */
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)x->refs[mid].st < (uintptr_t)st)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->n_refs && x->refs[lo].st == st)
        return (int64_t)x->refs[lo].canonical;
    dot = strrchr(st->name, '.');
    if (!dot)
        return -1;
    plen = (size_t)(dot - st->name);
    if (plen + sizeof ".weight" > sizeof key)
        return -1;
    memcpy(key, st->name, plen);
    memcpy(key + plen, ".weight", sizeof ".weight");
    for (lo = 0, hi = x->n_names; lo < hi;) { /* first name >= key */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(x->names[mid].name, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->n_names && strcmp(x->names[lo].name, key) == 0)
        return (int64_t)x->names[lo].canonical;
    return -1;
}

static void streader_free(qb_streader *r)
{
    const qb_host *h = r->host;
    if (r->klass->close)
        r->klass->close(r);
    raw_index_free(h, r->base_private);
    qb_stdir_close(r->dir);
    h->free(h, r->summary);
    h->free(h, r);
}

qb_status qb_streader_open(const qb_host *h, const qb_streader_class *klass, const char *path,
                           const qb_param *params, qb_reader_handle *out)
{
    qb_streader *r;
    qb_status st;

    if (!out || !h)
        return h ? h->set_error(h, QB_E_INVALID, "qb_streader_open: out is NULL") : QB_E_INVALID;
    *out = NULL;
    if (!klass || !klass->open || !klass->describe || !path ||
        !klass->grid_info != !klass->read_grid)
        return h->set_error(h, QB_E_INVALID, "%s: qb_streader_open: incomplete format class",
                            path ? path : "(no path)");
    r = h->alloc(h, sizeof *r);
    if (!r)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    memset(r, 0, sizeof *r);
    r->klass = klass;
    r->host = h;
    st = qb_stdir_open(h, path, klass->dir_flags, &r->dir);
    if (st == QB_OK)
        st = klass->open(r, params);
    if (st == QB_OK && !r->dir->st)
        st = h->set_error(h, QB_E_INVALID, "%s: format %s left the safetensors set unopened",
                          r->dir->dir, klass->format);
    if (st == QB_OK && !r->summary)
        st = h->set_error(h, QB_E_INVALID, "%s: format %s set no summary", r->dir->dir,
                          klass->format);
    if (st == QB_OK)
        st = raw_index_build(r);
    if (st != QB_OK) {
        streader_free(r);
        return st;
    }
    *out = r;
    return QB_OK;
}

qb_status qb_streader_set_summary(qb_streader *r, const char *fmt, ...)
{
    const qb_host *h = r->host;
    va_list ap;
    char *s;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(s = h->alloc(h, (size_t)n + 1)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    h->free(h, r->summary);
    r->summary = s;
    return QB_OK;
}

qb_status qb_streader_check_index(const qb_streader *r, size_t i)
{
    if (i < r->n_tensors)
        return QB_OK;
    return r->host->set_error(r->host, QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)",
                              r->dir->dir, i, r->n_tensors);
}

void qb_streader_matrix(uint32_t n_dims, const int64_t *dims, int64_t *rows, int64_t *cols)
{
    uint32_t d;
    *cols = n_dims ? dims[n_dims - 1] : 1;
    *rows = 1;
    for (d = 0; d + 1 < n_dims; d++)
        *rows *= dims[d]; /* cannot overflow: the parser bounded the product */
}

int qb_streader_is_dense(const qb_st_tensor *st)
{
    return qb_rows_dense_size(st->dtype) != 0;
}

void qb_streader_describe_dense(const qb_st_tensor *st, qb_streader_tensor *out)
{
    uint32_t d;
    out->name = st->name;
    /* a scalar is served as one element (qb_tensor_info needs n_dims >= 1) */
    out->n_dims = st->n_dims ? st->n_dims : 1;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < st->n_dims ? st->dims[d] : (d == 0 ? 1 : 0);
    out->source_dtype = st->dtype;
    out->encoding = qb_rows_dense_encoding(st->dtype);
    out->has_grid = 0;
    out->stored[0] = st;
}

qb_status qb_streader_dense_rows(const qb_host *h, const qb_st_tensor *st, int64_t row0,
                                 int64_t n_rows, float *dst)
{
    size_t es = qb_rows_dense_size(st->dtype), row_bytes;
    int64_t rows, cols;

    if (!es)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: dtype %s is not a dense float type",
                            st->file, st->name, st->dtype_name);
    qb_streader_matrix(st->n_dims, st->dims, &rows, &cols);
    if (row0 < 0 || n_rows < 0 || row0 > rows || n_rows > rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)",
                            st->file, st->name, (long long)row0, (long long)n_rows,
                            (long long)rows);
    if (n_rows == 0)
        return QB_OK;
    row_bytes = (size_t)cols * es;
    qb_rows_to_f32(st->dtype, st->data + (size_t)row0 * row_bytes, (size_t)n_rows * (size_t)cols,
                   dst);
    qb_rows_drop_pages(st->data + (size_t)row0 * row_bytes, (size_t)n_rows * row_bytes);
    return QB_OK;
}

void qb_streader_vt_close(qb_reader_handle handle)
{
    if (handle)
        streader_free(handle);
}

qb_status qb_streader_vt_model_info(qb_reader_handle handle, qb_model_info *out)
{
    const qb_streader *r = handle;
    qb_stdir_model_info(r->dir, r->n_tensors, r->klass->format, r->summary, out);
    return QB_OK;
}

qb_status qb_streader_vt_tensor_info(qb_reader_handle handle, size_t i, qb_tensor_info *out)
{
    const qb_streader *r = handle;
    qb_streader_tensor t;
    qb_status st = qb_streader_check_index(r, i);
    uint32_t d;

    if (st != QB_OK)
        return st;
    describe(r, i, &t);
    out->name = t.name;
    out->n_dims = t.n_dims;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < t.n_dims ? t.dims[d] : 0;
    out->source_dtype = t.source_dtype;
    out->source_encoding = t.encoding;
    out->has_grid = t.has_grid;
    if (QB_HAS_FIELD(out, qb_tensor_info, grid_codes)) {
        out->pad_1_3 = 0;
        out->grid_codes = t.grid_codes;
    }
    return QB_OK;
}

qb_status qb_streader_vt_read_rows(qb_reader_handle handle, size_t i, int64_t row0,
                                   int64_t n_rows, float *dst)
{
    const qb_streader *r = handle;
    qb_streader_tensor t;
    qb_status st = qb_streader_check_index(r, i);

    if (st != QB_OK)
        return st;
    if (r->klass->read_rows)
        return r->klass->read_rows(r, i, row0, n_rows, dst);
    describe(r, i, &t);
    return qb_streader_dense_rows(r->host, t.stored[0], row0, n_rows, dst);
}

/* The grid call's checks: index, a format with a grid, a tensor with one
 * (integer or float-coded: the format refuses a kind the caller does not
 * accept). */
static qb_status grid_check(const qb_streader *r, size_t i)
{
    qb_streader_tensor t;
    qb_status st = qb_streader_check_index(r, i);
    if (st != QB_OK)
        return st;
    describe(r, i, &t);
    if (!r->klass->grid_info || (!t.has_grid && !t.grid_codes))
        return r->host->set_error(r->host, QB_E_UNSUPPORTED, "%s: %s: %s has no integer grid",
                                  r->dir->dir, t.name, t.encoding ? t.encoding : "the tensor");
    return QB_OK;
}

qb_status qb_streader_vt_grid_info(qb_reader_handle handle, size_t i, qb_grid_info *out)
{
    const qb_streader *r = handle;
    qb_status st = grid_check(r, i);
    return st != QB_OK ? st : r->klass->grid_info(r, i, out);
}

qb_status qb_streader_vt_read_grid(qb_reader_handle handle, size_t i, int64_t row0,
                                   int64_t n_rows, qb_grid_rows *out)
{
    const qb_streader *r = handle;
    qb_status st = grid_check(r, i);
    if (st != QB_OK)
        return st;
    if (!out || !out->codes || !out->scales || !out->zeros)
        return r->host->set_error(r->host, QB_E_INVALID, "%s: tensor %zu: read_grid without "
                                  "buffers", r->dir->dir, i);
    return r->klass->read_grid(r, i, row0, n_rows, out);
}

qb_status qb_streader_vt_raw_tensor(qb_reader_handle handle, size_t i, qb_raw_tensor_info *out)
{
    const qb_streader *r = handle;
    const qb_st_api *api = r->host->safetensors;
    const qb_st_tensor *st;

    if (i >= api->count(r->dir->st))
        return QB_E_RANGE;
    st = api->tensor(r->dir->st, i);
    qb_streader_raw_info(st, raw_canonical(r->base_private, st), out);
    return QB_OK;
}

void qb_streader_raw_info(const qb_st_tensor *st, int64_t canonical, qb_raw_tensor_info *out)
{
    uint32_t d;
    out->name = st->name;
    out->type = st->dtype_name;
    out->n_dims = st->n_dims;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < st->n_dims ? st->dims[d] : 0;
    out->n_bytes = st->n_bytes;
    out->file = st->file;
    out->canonical = canonical;
}
