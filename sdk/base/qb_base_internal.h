/*
 * libquantbridge-base — helpers its own files share (not installed, not
 * part of the library's contract).
 */
#ifndef QB_BASE_INTERNAL_H
#define QB_BASE_INTERNAL_H

#include <stddef.h>

#include <quantbridge/qb_host.h>

/* A host->alloc'd copy of s, or NULL when out of memory. */
char *qb_base_strdup(const qb_host *h, const char *s);

/* A host->alloc'd "a/b", or NULL when out of memory. */
char *qb_base_join(const qb_host *h, const char *a, const char *b);

#endif /* QB_BASE_INTERNAL_H */
