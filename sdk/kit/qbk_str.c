/* Small string helpers. See qbk_str.h. */
#include "qbk_str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

char *qbk_strdupf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    s = qbk_malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int qbk_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int qbk_split_suffix(const char *s, const char *suffix, size_t *stem)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a <= b || memcmp(s + a - b, suffix, b) != 0)
        return 0;
    *stem = a - b;
    return 1;
}

char *qbk_stem_cat(const char *s, size_t n, const char *suffix)
{
    size_t b = suffix ? strlen(suffix) : 0;
    char *p = qbk_malloc(n + b + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    if (b)
        memcpy(p + n, suffix, b);
    p[n + b] = '\0';
    return p;
}
