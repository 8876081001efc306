/* Test fixtures: safetensors writer. See qbt_st_writer.h. */
#include "qbt_st_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct qbt_st_entry {
    char *name;
    char dtype[16];
    int n_dims;
    int64_t dims[8];
    void *data;
    size_t n_bytes;
} qbt_st_entry;

struct qbt_st_writer {
    qbt_st_entry *e;
    size_t n, cap;
    char **meta; /* key, value pairs */
    size_t n_meta;
};

qbt_st_writer *qbt_st_writer_new(void)
{
    return calloc(1, sizeof(qbt_st_writer));
}

void qbt_st_writer_free(qbt_st_writer *w)
{
    size_t i;
    if (!w)
        return;
    for (i = 0; i < w->n; i++) {
        free(w->e[i].name);
        free(w->e[i].data);
    }
    for (i = 0; i < 2 * w->n_meta; i++)
        free(w->meta[i]);
    free(w->meta);
    free(w->e);
    free(w);
}

int qbt_st_writer_add(qbt_st_writer *w, const char *name, const char *dtype, int n_dims,
                      const int64_t *dims, const void *data, size_t n_bytes)
{
    qbt_st_entry *e;
    if (n_dims < 0 || n_dims > 8 || strlen(dtype) >= sizeof(e->dtype))
        return -1;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        qbt_st_entry *ne = realloc(w->e, cap * sizeof(*ne));
        if (!ne)
            return -1;
        w->e = ne;
        w->cap = cap;
    }
    e = &w->e[w->n];
    memset(e, 0, sizeof(*e));
    e->name = strdup(name);
    e->data = malloc(n_bytes ? n_bytes : 1);
    if (!e->name || !e->data) {
        free(e->name);
        free(e->data);
        return -1;
    }
    strcpy(e->dtype, dtype);
    e->n_dims = n_dims;
    if (n_dims)
        memcpy(e->dims, dims, (size_t)n_dims * sizeof(int64_t));
    if (n_bytes)
        memcpy(e->data, data, n_bytes);
    e->n_bytes = n_bytes;
    w->n++;
    return 0;
}

int qbt_st_writer_add_meta(qbt_st_writer *w, const char *key, const char *value)
{
    char **nm = realloc(w->meta, (w->n_meta + 1) * 2 * sizeof(char *));
    if (!nm)
        return -1;
    w->meta = nm;
    nm[2 * w->n_meta] = strdup(key);
    nm[2 * w->n_meta + 1] = strdup(value);
    w->n_meta++;
    return 0;
}

size_t qbt_st_writer_count(const qbt_st_writer *w) { return w->n; }
const char *qbt_st_writer_name(const qbt_st_writer *w, size_t i) { return i < w->n ? w->e[i].name : NULL; }
size_t qbt_st_writer_total_bytes(const qbt_st_writer *w)
{
    size_t t = 0, i;
    for (i = 0; i < w->n; i++)
        t += w->e[i].n_bytes;
    return t;
}

/* Appends printf output to a growing buffer. */
static int qbt_buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#include <stdarg.h>
static int qbt_buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        {
            size_t nc = (*cap ? *cap * 2 : 4096) + (size_t)n;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return -1;
            *buf = nb;
            *cap = nc;
        }
    }
}

int qbt_st_writer_save(const qbt_st_writer *w, const char *path)
{
    char *h = NULL;
    size_t len = 0, cap = 0, off = 0, i;
    int j, rc = -1;
    FILE *f = NULL;
    uint64_t hl;
    unsigned char le[8];

    if (qbt_buf_printf(&h, &len, &cap, "{"))
        goto out;
    if (w->n_meta) {
        if (qbt_buf_printf(&h, &len, &cap, "\"__metadata__\":{"))
            goto out;
        for (i = 0; i < w->n_meta; i++)
            if (qbt_buf_printf(&h, &len, &cap, "%s\"%s\":\"%s\"", i ? "," : "", w->meta[2 * i],
                               w->meta[2 * i + 1]))
                goto out;
        if (qbt_buf_printf(&h, &len, &cap, "}%s", w->n ? "," : ""))
            goto out;
    }
    for (i = 0; i < w->n; i++) {
        const qbt_st_entry *e = &w->e[i];
        if (qbt_buf_printf(&h, &len, &cap, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "",
                           e->name, e->dtype))
            goto out;
        for (j = 0; j < e->n_dims; j++)
            if (qbt_buf_printf(&h, &len, &cap, "%s%lld", j ? "," : "", (long long)e->dims[j]))
                goto out;
        if (qbt_buf_printf(&h, &len, &cap, "],\"data_offsets\":[%zu,%zu]}", off, off + e->n_bytes))
            goto out;
        off += e->n_bytes;
    }
    if (qbt_buf_printf(&h, &len, &cap, "}"))
        goto out;
    /* The reference writer pads the header with spaces to a multiple of 8. */
    while (len % 8)
        if (qbt_buf_printf(&h, &len, &cap, " "))
            goto out;
    f = fopen(path, "wb");
    if (!f) {
        perror(path);
        goto out;
    }
    hl = len;
    for (j = 0; j < 8; j++)
        le[j] = (unsigned char)(hl >> (8 * j));
    if (fwrite(le, 1, 8, f) != 8 || fwrite(h, 1, len, f) != len)
        goto out;
    for (i = 0; i < w->n; i++)
        if (w->e[i].n_bytes && fwrite(w->e[i].data, 1, w->e[i].n_bytes, f) != w->e[i].n_bytes)
            goto out;
    rc = 0;
out:
    if (f && fclose(f))
        rc = -1;
    free(h);
    return rc;
}

int qbt_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    size_t n = strlen(text);
    int rc;
    if (!f) {
        perror(path);
        return -1;
    }
    rc = fwrite(text, 1, n, f) == n ? 0 : -1;
    if (fclose(f))
        rc = -1;
    return rc;
}

uint64_t qbt_rng_u64(qbt_rng *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014): constants from the paper. */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double qbt_rng_uniform(qbt_rng *r)
{
    return (double)(qbt_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

double qbt_rng_normal(qbt_rng *r)
{
    double u1 = qbt_rng_uniform(r), u2 = qbt_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
