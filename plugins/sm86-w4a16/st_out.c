/*
 * sm86-w4a16 — writing one safetensors file through the host sink.
 *
 * Layout (huggingface/safetensors README, "Format"): u64 little-endian
 * header length N, N bytes of JSON header (padded with spaces so data starts
 * 8-byte aligned), then the tensor data in the declared order with no holes.
 * The whole header is known up front (the plan computed every size), so
 * data can be streamed after it and the file is never revisited.
 */
#include "w4w.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct w4w_st_file {
    const qb_host *h;
    const qb_sink *sink;
    qb_sink_file *sf;
    char name[256];
    uint64_t total, written;
};

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        char *np;
        while (cap < b->n + len + 1)
            cap *= 2;
        np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* JSON string with the escapes RFC 8259 requires. */
static void sb_json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char tmp[8];
        if (c == '"' || c == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            sb_put(b, tmp, 2);
        } else if (c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            sb_put(b, tmp, 6);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_u64(sbuf *b, uint64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    sb_str(b, tmp);
}

qb_status w4w_st_open(const qb_host *h, const qb_sink *sink, const char *name,
                      const w4w_st_tensor *tensors, size_t n, w4w_st_file **out)
{
    sbuf b = {0};
    w4w_st_file *f = NULL;
    uint64_t off = 0;
    uint8_t len_le[8];
    qb_status rc = QB_OK;
    size_t i, hdr_len;
    uint32_t d;

    *out = NULL;
    sb_str(&b, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = 0; i < n; i++) {
        const w4w_st_tensor *t = &tensors[i];
        sb_put(&b, ",", 1);
        sb_json_str(&b, t->name);
        sb_str(&b, ":{\"dtype\":");
        sb_json_str(&b, t->dtype);
        sb_str(&b, ",\"shape\":[");
        for (d = 0; d < t->n_dims; d++) {
            if (d)
                sb_put(&b, ",", 1);
            sb_u64(&b, (uint64_t)t->dims[d]);
        }
        sb_str(&b, "],\"data_offsets\":[");
        sb_u64(&b, off);
        sb_put(&b, ",", 1);
        off += t->n_bytes;
        sb_u64(&b, off);
        sb_str(&b, "]}");
    }
    sb_put(&b, "}", 1);
    while (!b.oom && (b.n % 8) != 0)
        sb_put(&b, " ", 1);
    if (b.oom) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory building the header", name);
        goto out;
    }
    f = calloc(1, sizeof *f);
    if (!f) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
        goto out;
    }
    f->h = h;
    f->sink = sink;
    f->total = off;
    snprintf(f->name, sizeof f->name, "%s", name);
    rc = sink->create(sink->handle, name, &f->sf);
    if (rc != QB_OK)
        goto out;
    hdr_len = b.n;
    for (i = 0; i < 8; i++)
        len_le[i] = (uint8_t)((uint64_t)hdr_len >> (8 * i));
    rc = sink->write(f->sf, len_le, sizeof len_le);
    if (rc == QB_OK)
        rc = sink->write(f->sf, b.p, hdr_len);
    if (rc != QB_OK)
        goto out;
    *out = f;
    f = NULL;
out:
    if (f) {
        if (f->sf)
            sink->close(f->sf, NULL, NULL);
        free(f);
    }
    free(b.p);
    return rc;
}

qb_status w4w_st_write(w4w_st_file *f, const void *buf, size_t len)
{
    if (len > f->total - f->written)
        return f->h->set_error(f->h, QB_E_INTERNAL,
                               "%s: writer bug: %zu bytes beyond the declared %" PRIu64, f->name,
                               len, f->total);
    f->written += len;
    return f->sink->write(f->sf, buf, len);
}

uint64_t w4w_st_remaining(const w4w_st_file *f)
{
    return f->total - f->written;
}

qb_status w4w_st_close(w4w_st_file *f, uint64_t *bytes, uint8_t sha256[32])
{
    qb_status rc;
    if (!f)
        return QB_OK;
    rc = f->sink->close(f->sf, bytes, sha256);
    if (rc == QB_OK && f->written != f->total)
        rc = f->h->set_error(f->h, QB_E_INTERNAL,
                             "%s: writer bug: closed after %" PRIu64 " of %" PRIu64 " data bytes",
                             f->name, f->written, f->total);
    free(f);
    return rc;
}

void w4w_st_discard(w4w_st_file *f)
{
    if (!f)
        return;
    (void)f->sink->close(f->sf, NULL, NULL);
    free(f);
}
