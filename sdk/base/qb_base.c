/* libquantbridge-base: its version (qb_base.h) and the helpers its files
 * share (qb_base_internal.h). */
#include <string.h>

#include <quantbridge/base/qb_base.h>

#include "qb_base_internal.h"

uint32_t qb_base_version(void)
{
    return QB_BASE_VERSION;
}

char *qb_base_strdup(const qb_host *h, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = h->alloc(h, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *qb_base_join(const qb_host *h, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *d = h->alloc(h, na + nb + 2);
    if (!d)
        return NULL;
    memcpy(d, a, na);
    d[na] = '/';
    memcpy(d + na + 1, b, nb + 1);
    return d;
}
