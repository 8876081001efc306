/*
 * quantbridge host — the strict safetensors parser (public side).
 *
 * Implements sdk/include/quantbridge/qb_safetensors.h. The host puts the
 * returned table into qb_host.safetensors; tests may call it directly with
 * any qb_host whose set_error works.
 */
#ifndef QBK_SAFETENSORS_H
#define QBK_SAFETENSORS_H

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_safetensors.h>

/* Returns the parser's function table: a static object, valid for the life
 * of the process, never NULL. Thread-safe. Every function in it reports
 * failures through h->set_error (h must be non-NULL) and allocates with
 * plain malloc (the set never crosses an allocator boundary: the host that
 * opened it closes it). */
const qb_st_api *qbk_safetensors_api(void);

#endif /* QBK_SAFETENSORS_H */
