/* One safetensors file through the host sink. See qbk_st_writer.h. */
#include "qbk_st_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_text.h"
#include "qbk_alloc.h"

struct qbk_st_writer {
    const qb_host *h;
    const qb_sink *sink;
    qb_sink_file *sf;
    char name[256];
    uint64_t total, written;
};

/* The header JSON, space-padded to a multiple of 8; *total gets the data size. */
static void st_header(qbk_text *b, const qbk_st_out_tensor *tensors, size_t n, uint64_t *total)
{
    uint64_t off = 0;
    size_t i;
    uint32_t d;

    qbk_text_str(b, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = 0; i < n; i++) {
        const qbk_st_out_tensor *t = &tensors[i];
        qbk_text_put(b, ",", 1);
        qbk_text_json_str(b, t->name);
        qbk_text_str(b, ":{\"dtype\":");
        qbk_text_json_str(b, t->dtype);
        qbk_text_str(b, ",\"shape\":[");
        for (d = 0; d < t->n_dims; d++) {
            if (d)
                qbk_text_put(b, ",", 1);
            qbk_text_u64(b, (uint64_t)t->dims[d]);
        }
        qbk_text_str(b, "],\"data_offsets\":[");
        qbk_text_u64(b, off);
        qbk_text_put(b, ",", 1);
        off += t->n_bytes;
        qbk_text_u64(b, off);
        qbk_text_str(b, "]}");
    }
    qbk_text_put(b, "}", 1);
    while (!b->oom && b->n % 8 != 0)
        qbk_text_put(b, " ", 1);
    *total = off;
}

qb_status qbk_st_writer_open(const qb_host *h, const qb_sink *sink, const char *name,
                             const qbk_st_out_tensor *tensors, size_t n, qbk_st_writer **out)
{
    qbk_text b = {0};
    qbk_st_writer *f = NULL;
    uint64_t total = 0;
    uint8_t len_le[8];
    qb_status st = QB_OK;
    size_t i;

    *out = NULL;
    st_header(&b, tensors, n, &total);
    if (b.oom) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory building the header", name);
        goto out;
    }
    f = qbk_calloc(1, sizeof *f);
    if (!f) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
        goto out;
    }
    f->h = h;
    f->sink = sink;
    f->total = total;
    snprintf(f->name, sizeof f->name, "%s", name);
    st = sink->create(sink->handle, name, &f->sf);
    if (st != QB_OK) {
        f->sf = NULL;
        goto out;
    }
    for (i = 0; i < 8; i++)
        len_le[i] = (uint8_t)((uint64_t)b.n >> (8 * i));
    st = sink->write(f->sf, len_le, sizeof len_le);
    if (st == QB_OK)
        st = sink->write(f->sf, b.p, b.n);
    if (st != QB_OK)
        goto out;
    *out = f;
    f = NULL;
out:
    if (f) {
        if (f->sf)
            sink->close(f->sf, NULL, NULL);
        qbk_free(f);
    }
    qbk_text_free(&b);
    return st;
}

qb_status qbk_st_writer_write(qbk_st_writer *f, const void *buf, size_t len)
{
    if (len > f->total - f->written)
        return f->h->set_error(f->h, QB_E_INTERNAL,
                               "%s: writer bug: %zu bytes beyond the declared %" PRIu64, f->name,
                               len, f->total);
    f->written += len;
    return f->sink->write(f->sf, buf, len);
}

uint64_t qbk_st_writer_remaining(const qbk_st_writer *f)
{
    return f->total - f->written;
}

qb_status qbk_st_writer_close(qbk_st_writer *f, uint64_t *bytes, uint8_t sha256[32])
{
    qb_status st;
    if (!f)
        return QB_OK;
    st = f->sink->close(f->sf, bytes, sha256);
    if (st == QB_OK && f->written != f->total)
        st = f->h->set_error(f->h, QB_E_INTERNAL,
                             "%s: writer bug: closed after %" PRIu64 " of %" PRIu64 " data bytes",
                             f->name, f->written, f->total);
    qbk_free(f);
    return st;
}

void qbk_st_writer_discard(qbk_st_writer *f)
{
    if (!f)
        return;
    (void)f->sink->close(f->sf, NULL, NULL);
    qbk_free(f);
}
