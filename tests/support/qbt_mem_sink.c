/* See qbt_mem_sink.h. A qb_sink_file handed to the writer is a
 * qbt_mem_file (cast both ways); files are separate allocations so the
 * pointers stay valid while more are created. */
#include "qbt_mem_sink.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_sha256.h"
#include "qbt_host.h"

static qb_status sink_error(qb_status code, const char *fmt, const char *name)
{
    const qb_host *h = qbt_host();
    return h->set_error(h, code, fmt, name);
}

static qb_status ms_create(void *handle, const char *name, qb_sink_file **out)
{
    qbt_mem_sink *ms = handle;
    qbt_mem_file *f;
    *out = NULL;
    if (!name[0] || strchr(name, '/') || name[0] == '.')
        return sink_error(QB_E_INVALID, "%s: bad output file name", name);
    if (strlen(name) >= sizeof f->name)
        return sink_error(QB_E_INVALID, "%s: name too long", name);
    if (qbt_mem_sink_find(ms, name))
        return sink_error(QB_E_INVALID, "%s: created twice", name);
    if (ms->n == ms->cap_files) {
        size_t cap = ms->cap_files ? 2 * ms->cap_files : 16;
        qbt_mem_file **v = realloc(ms->files, cap * sizeof *v);
        ck_assert_ptr_nonnull(v);
        ms->files = v;
        ms->cap_files = cap;
    }
    f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->owner = ms;
    ms->files[ms->n++] = f;
    *out = (qb_sink_file *)f;
    return QB_OK;
}

static qb_status ms_write(qb_sink_file *sf, const void *buf, size_t len)
{
    qbt_mem_file *f = (qbt_mem_file *)sf;
    qbt_mem_sink *ms = f->owner;
    if (f->closed)
        return sink_error(QB_E_IO, "%s: write after close", f->name);
    if (ms && ms->write_left >= 0) {
        if ((unsigned long long)ms->write_left < len) {
            ms->write_left = 0;
            return sink_error(QB_E_IO, "%s: no space left on device (injected)", f->name);
        }
        ms->write_left -= (long long)len;
    }
    if (f->len + len > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        uint8_t *d;
        while (cap < f->len + len)
            cap *= 2;
        d = realloc(f->data, cap);
        ck_assert_ptr_nonnull(d);
        f->data = d;
        f->cap = cap;
    }
    if (len)
        memcpy(f->data + f->len, buf, len);
    f->len += len;
    return QB_OK;
}

static qb_status ms_close(qb_sink_file *sf, uint64_t *bytes, uint8_t sha[32])
{
    qbt_mem_file *f = (qbt_mem_file *)sf;
    f->closed = 1;
    if (bytes)
        *bytes = f->len;
    if (sha) {
        qbk_sha256 c;
        qbk_sha256_init(&c);
        qbk_sha256_update(&c, f->data, f->len);
        qbk_sha256_final(&c, sha);
    }
    return QB_OK;
}

void qbt_mem_sink_init(qbt_mem_sink *ms)
{
    memset(ms, 0, sizeof *ms);
    ms->sink.struct_size = sizeof ms->sink;
    ms->sink.handle = ms;
    ms->sink.create = ms_create;
    ms->sink.write = ms_write;
    ms->sink.close = ms_close;
    ms->write_left = -1;
}

void qbt_mem_sink_free(qbt_mem_sink *ms)
{
    size_t i;
    for (i = 0; i < ms->n; i++) {
        free(ms->files[i]->data);
        free(ms->files[i]);
    }
    free(ms->files);
    ms->files = NULL;
    ms->n = ms->cap_files = 0;
}

qbt_mem_file *qbt_mem_sink_find(const qbt_mem_sink *ms, const char *name)
{
    size_t i;
    for (i = 0; i < ms->n; i++)
        if (strcmp(ms->files[i]->name, name) == 0)
            return ms->files[i];
    return NULL;
}

void qbt_mem_sink_fail_after(qbt_mem_sink *ms, long long n)
{
    ms->write_left = n < 0 ? -1 : n;
}

size_t qbt_mem_sink_bytes(const qbt_mem_sink *ms)
{
    size_t i, total = 0;
    for (i = 0; i < ms->n; i++)
        total += ms->files[i]->len;
    return total;
}
