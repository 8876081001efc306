/*
 * qbk_alloc — see qbk_alloc.h for the contract.
 */
#include "qbk_alloc.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Written once by the entry function before the host starts any thread for
 * this plugin (qbk_alloc.h THREADING), read-only afterwards. */
static const qb_host *qbk_host;

typedef struct qbk_hdr {
    size_t n;            /* bytes the caller asked for */
    const qb_host *host; /* allocator of this block; NULL: malloc */
} qbk_hdr;

/* Keeps the caller's pointer as aligned as malloc's. */
#define QBK_HDR_SIZE \
    ((sizeof(qbk_hdr) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t))

static qbk_hdr *hdr_of(void *p)
{
    return (qbk_hdr *)(void *)((unsigned char *)p - QBK_HDR_SIZE);
}

void qbk_alloc_init(const qb_host *host)
{
    assert(host && host->alloc && host->free);
    qbk_host = host;
}

void *qbk_malloc(size_t n)
{
    const qb_host *h = qbk_host;
    unsigned char *base;
    if (n > SIZE_MAX - QBK_HDR_SIZE)
        return NULL;
    base = h ? h->alloc(h, QBK_HDR_SIZE + n) : malloc(QBK_HDR_SIZE + n);
    if (!base)
        return NULL;
    ((qbk_hdr *)(void *)base)->n = n;
    ((qbk_hdr *)(void *)base)->host = h;
    return base + QBK_HDR_SIZE;
}

void *qbk_calloc(size_t count, size_t size)
{
    void *p;
    if (size && count > SIZE_MAX / size)
        return NULL;
    p = qbk_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

char *qbk_strdup(const char *s)
{
    size_t n;
    char *d;
    assert(s);
    n = strlen(s) + 1;
    d = qbk_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *qbk_strndup(const char *s, size_t max)
{
    size_t n = 0;
    char *d;
    assert(s);
    while (n < max && s[n])
        n++;
    d = qbk_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void *qbk_realloc(void *p, size_t n)
{
    qbk_hdr *old;
    void *q;
    if (!p)
        return qbk_malloc(n);
    old = hdr_of(p);
    if (!old->host && !qbk_host) {
        /* both sides malloc: a real realloc keeps large buffers cheap */
        qbk_hdr *nb;
        if (n > SIZE_MAX - QBK_HDR_SIZE)
            return NULL;
        nb = realloc(old, QBK_HDR_SIZE + n);
        if (!nb)
            return NULL;
        nb->n = n;
        return (unsigned char *)nb + QBK_HDR_SIZE;
    }
    q = qbk_malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, old->n < n ? old->n : n);
    qbk_free(p);
    return q;
}

void qbk_free(void *p)
{
    qbk_hdr *h;
    if (!p)
        return;
    h = hdr_of(p);
    if (h->host)
        h->host->free(h->host, h);
    else
        free(h);
}
