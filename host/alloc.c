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

void *qbh_alloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *qbh_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void qbh_free(void *p)
{
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
