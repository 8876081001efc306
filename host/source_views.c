/*
 * quantbridge host — the reader's ABI 1.2 views of an open source: the
 * tensors as stored (get_raw_tensor_info: `inspect --raw`, inspect's
 * sizes) and the metadata entries (get_metadata: `inspect --metadata`, the
 * declarations verify reads: docs/plugin-design.md, "Declarations for
 * verify"), each answer checked against the view's contract.
 */
#include "qbh.h"

#include <assert.h>
#include <string.h>

int qbh_source_has_raw(const qbh_source *s)
{
    const qb_reader_vtable *vt = s->reader->desc->reader;
    return QB_HAS_FIELD(vt, qb_reader_vtable, get_raw_tensor_info) && vt->get_raw_tensor_info;
}

int qbh_source_has_meta(const qbh_source *s)
{
    const qb_reader_vtable *vt = s->reader->desc->reader;
    return QB_HAS_FIELD(vt, qb_reader_vtable, get_metadata) && vt->get_metadata;
}

/* A reader's failure other than QB_E_RANGE: make sure the message names it. */
static qb_status view_failed(const qbh_source *s, const char *view, qb_status rc)
{
    const char *m = qbh_error_message();
    if (!m[0])
        return qbh_error_set(rc, "reader %s: %s failed (%s)", s->reader->name, view,
                             qbh_status_name(rc));
    return rc;
}

qb_status qbh_source_raw(const qbh_source *s, size_t i, qb_raw_tensor_info *out)
{
    qb_status rc;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    qbh_error_clear();
    QBH_CALL(s->reader, "get_raw_tensor_info", s->path,
             rc = s->reader->desc->reader->get_raw_tensor_info(s->handle, i, out));
    if (rc == QB_OK && (!out->name || !out->type || out->n_dims > QB_MAX_DIMS))
        return qbh_error_set(QB_E_INTERNAL, "reader %s: stored tensor %zu: no name or type, or "
                             "%u dims (out of contract)", s->reader->name, i, out->n_dims);
    if (rc == QB_OK && (out->canonical < -1 || out->canonical >= (int64_t)s->info.n_tensors))
        return qbh_error_set(QB_E_INTERNAL, "reader %s: stored tensor '%s': canonical index %lld "
                             "outside the %zu tensors", s->reader->name, out->name,
                             (long long)out->canonical, s->info.n_tensors);
    return rc == QB_OK || rc == QB_E_RANGE ? rc : view_failed(s, "get_raw_tensor_info", rc);
}

qb_status qbh_source_meta(const qbh_source *s, size_t i, qb_meta_entry *out, char *buf, size_t cap)
{
    qb_status rc;
    assert(cap >= 1);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->value = buf;
    out->value_cap = cap;
    buf[0] = '\0';
    qbh_error_clear();
    QBH_CALL(s->reader, "get_metadata", s->path,
             rc = s->reader->desc->reader->get_metadata(s->handle, i, out));
    buf[cap - 1] = '\0';
    if (rc == QB_OK && (!out->key || !out->type))
        return qbh_error_set(QB_E_INTERNAL, "reader %s: metadata entry %zu: no key or type (out of "
                             "contract)", s->reader->name, i);
    return rc == QB_OK || rc == QB_E_RANGE ? rc : view_failed(s, "get_metadata", rc);
}
