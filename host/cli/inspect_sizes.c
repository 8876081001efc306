/*
 * quantbridge host — sizes of an opened source for `inspect`: parameters,
 * bytes and bits per weight of each tensor and encoding, and the reader's
 * stored-tensor and metadata views (inspect.h).
 */
#include "inspect.h"

#include <assert.h>
#include <string.h>

double qbh_bits_per_weight(int64_t bytes, int64_t params)
{
    if (bytes < 0 || params <= 0)
        return -1.0;
    return (double)bytes * 8.0 / (double)params;
}

/* Bytes per element of a plain storage dtype, 0 for anything else. */
static int64_t dtype_bytes(qb_dtype d)
{
    switch (d) {
    case QB_DT_F64: case QB_DT_I64: case QB_DT_U64: return 8;
    case QB_DT_F32: case QB_DT_I32: case QB_DT_U32: return 4;
    case QB_DT_F16: case QB_DT_BF16: case QB_DT_I16: case QB_DT_U16: return 2;
    case QB_DT_F8_E4M3: case QB_DT_F8_E5M2: case QB_DT_F8_E8M0: case QB_DT_I8: case QB_DT_U8:
    case QB_DT_BOOL: return 1;
    default: return 0;
    }
}

static qb_status bytes_from_raw(const qbh_source *s, qbh_sizes *z)
{
    size_t i, n = s->info.n_tensors;
    qb_raw_tensor_info ri;
    qb_status rc;
    for (i = 0; i < n; i++)
        z->t[i].bytes = 0;
    for (i = 0;; i++) {
        rc = qbh_source_raw(s, i, &ri);
        if (rc == QB_E_RANGE)
            break;
        if (rc)
            return rc;
        if (ri.canonical >= 0)
            z->t[ri.canonical].bytes += (int64_t)ri.n_bytes;
        else
            z->other_bytes += (int64_t)ri.n_bytes;
    }
    /* A canonical tensor no stored tensor is attributed to alone (a slice
     * of a fused one) has unknown bytes, not zero. */
    for (i = 0; i < n; i++)
        if (z->t[i].bytes == 0)
            z->t[i].bytes = -1;
    return QB_OK;
}

qb_status qbh_sizes_compute(const qbh_source *s, qbh_sizes *out)
{
    size_t i, j, n = s->info.n_tensors;
    qb_status rc = QB_OK;

    memset(out, 0, sizeof *out);
    out->t = qbh_calloc(n ? n : 1, sizeof *out->t);
    out->enc = qbh_calloc(n ? n : 1, sizeof *out->enc);
    if (!out->t || !out->enc) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < n; i++) {
        const qb_tensor_info *t = &s->tensors[i];
        int64_t p = 1, eb = dtype_bytes(t->source_dtype);
        uint32_t d;
        for (d = 0; d < t->n_dims; d++)
            p *= t->dims[d]; /* bounded: qbh_source_open checked the shape */
        out->t[i].params = p;
        out->t[i].bytes = eb ? p * eb : -1;
    }
    if (qbh_source_has_raw(s)) {
        out->from_raw = 1;
        if ((rc = bytes_from_raw(s, out)))
            goto done;
    }
    out->bytes_known = 1;
    for (i = 0; i < n; i++) {
        const char *e = s->tensors[i].source_encoding;
        const qbh_tensor_size *ts = &out->t[i];
        for (j = 0; j < out->n_enc && strcmp(out->enc[j].encoding, e) != 0; j++)
            ;
        if (j == out->n_enc) {
            out->enc[j].encoding = e;
            out->enc[j].bytes_known = 1;
            out->n_enc++;
        }
        out->enc[j].n_tensors++;
        out->enc[j].params += ts->params;
        out->params += ts->params;
        if (ts->bytes >= 0) {
            out->enc[j].bytes += ts->bytes;
            out->bytes += ts->bytes;
        } else {
            out->enc[j].bytes_known = 0;
            out->bytes_known = 0;
        }
    }
done:
    if (rc)
        qbh_sizes_free(out);
    return rc;
}

void qbh_sizes_free(qbh_sizes *z)
{
    qbh_free(z->t);
    qbh_free(z->enc);
    memset(z, 0, sizeof *z);
}
