/*
 * quantbridge host — the one allocator. Every host allocation and every
 * qb_host.alloc goes through here so a test can make the n-th allocation
 * fail (SQLite's fault-injection idea) and check that each failure path
 * cleans up.
 */
#include "qbh.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* < 0: injection off; otherwise allocations left before failing. */
static atomic_long fail_countdown = -1;
static atomic_long refused;
/* Blocks handed out and not yet freed, and all ever handed out: what
 * `plugin-check` compares around a plugin call (host/check). */
static atomic_long live;
static atomic_long made;

static int should_fail(void)
{
    long v = atomic_load(&fail_countdown);
    while (v >= 0) {
        if (v == 0) {
            atomic_fetch_add(&refused, 1);
            return 1;
        }
        if (atomic_compare_exchange_weak(&fail_countdown, &v, v - 1))
            return 0;
    }
    return 0;
}

void qbh_alloc_fail_after(long n)
{
    atomic_store(&fail_countdown, n < 0 ? -1 : n);
}

long qbh_alloc_refused(void)
{
    return atomic_load(&refused);
}

int qbh_alloc_admit(void)
{
    return !should_fail();
}

long qbh_alloc_live(void)
{
    return atomic_load(&live);
}

long qbh_alloc_made(void)
{
    return atomic_load(&made);
}

/* Counts a block that malloc/calloc returned (NULL is not a block). */
static void *counted(void *p)
{
    if (p) {
        atomic_fetch_add(&live, 1);
        atomic_fetch_add(&made, 1);
    }
    return p;
}

void *qbh_alloc(size_t n)
{
    if (should_fail())
        return NULL;
    return counted(malloc(n ? n : 1));
}

void *qbh_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    return counted(calloc(n ? n : 1, size ? size : 1));
}

void qbh_free(void *p)
{
    if (p)
        atomic_fetch_sub(&live, 1);
    free(p);
}

char *qbh_strdup(const char *s)
{
    size_t n;
    char *d;
    if (!s)
        return NULL;
    n = strlen(s) + 1;
    d = qbh_alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
