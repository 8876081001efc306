/*
 * hf-dense writer: one safetensors file written front to back through the
 * host sink.
 *
 * Layout (huggingface/safetensors README, "Format"): u64 little-endian
 * header size N, N bytes of JSON header, then the data of every tensor at
 * its data_offsets with no holes. The header is padded with spaces to a
 * multiple of 8 so the data starts aligned (safetensors' own serializer
 * does the same). "__metadata__": {"format": "pt"} is written because
 * transformers' load_state_dict refuses a file whose metadata format is not
 * pt/tf/flax/mlx. The plan fixes every size beforehand, so the header goes
 * first and the data is streamed after it; the file is never revisited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hfw.h"

struct hfw_st {
    const qb_host *h;
    const qb_sink *sink;
    qb_sink_file *sf;
    char name[64];
    uint64_t total, written;
};

qb_status hfw_st_open(const qb_host *h, const qb_sink *sink, const char *name, const hfw_plan *p,
                      size_t first, size_t last, hfw_dtype dt, hfw_st **out)
{
    hfw_text b = {0};
    hfw_st *f = NULL;
    uint64_t off = 0;
    uint8_t len_le[8];
    qb_status st = QB_OK;
    size_t i;
    uint32_t d;

    *out = NULL;
    hfw_text_str(&b, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = first; i < last; i++) {
        const hfw_tensor *t = &p->t[i];
        hfw_text_put(&b, ",", 1);
        hfw_text_json_str(&b, t->name);
        hfw_text_str(&b, ":{\"dtype\":\"");
        hfw_text_str(&b, hfw_dtype_st_name(dt));
        hfw_text_str(&b, "\",\"shape\":[");
        for (d = 0; d < t->n_dims; d++) {
            if (d)
                hfw_text_put(&b, ",", 1);
            hfw_text_u64(&b, (uint64_t)t->dims[d]);
        }
        hfw_text_str(&b, "],\"data_offsets\":[");
        hfw_text_u64(&b, off);
        hfw_text_put(&b, ",", 1);
        off += t->n_bytes;
        hfw_text_u64(&b, off);
        hfw_text_str(&b, "]}");
    }
    hfw_text_put(&b, "}", 1);
    while (!b.oom && b.n % 8 != 0)
        hfw_text_put(&b, " ", 1);
    if (b.oom) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory building the header", name);
        goto out;
    }
    f = calloc(1, sizeof(*f));
    if (!f) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
        goto out;
    }
    f->h = h;
    f->sink = sink;
    f->total = off;
    snprintf(f->name, sizeof(f->name), "%s", name);
    st = sink->create(sink->handle, name, &f->sf);
    if (st != QB_OK) {
        f->sf = NULL;
        goto out;
    }
    for (i = 0; i < 8; i++)
        len_le[i] = (uint8_t)((uint64_t)b.n >> (8 * i));
    st = sink->write(f->sf, len_le, sizeof(len_le));
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
        free(f);
    }
    hfw_text_free(&b);
    return st;
}

qb_status hfw_st_write(hfw_st *f, const void *buf, size_t len)
{
    if (len > f->total - f->written)
        return f->h->set_error(f->h, QB_E_INTERNAL, "%s: %zu bytes more than its header declares",
                               f->name, len);
    f->written += len;
    return f->sink->write(f->sf, buf, len);
}

qb_status hfw_st_close(hfw_st *f)
{
    qb_status st;
    if (!f)
        return QB_OK;
    st = f->sink->close(f->sf, NULL, NULL);
    if (st == QB_OK && f->written != f->total)
        st = f->h->set_error(f->h, QB_E_INTERNAL, "%s: %llu data bytes written of %llu declared",
                             f->name, (unsigned long long)f->written,
                             (unsigned long long)f->total);
    free(f);
    return st;
}
