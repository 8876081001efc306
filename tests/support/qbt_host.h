/*
 * The real host services for unit tests: the qb_host table the host serves
 * to plugins (host/services.c, qbh_core), without a plugin behind it.
 * set_error goes to the host's per-thread error slot; read_small_file,
 * list_dir, parallel_for (serial until a pool is started with
 * qbh_pool_start), alloc (with the host's failure injection) and the
 * safetensors API are the host's own.
 */
#ifndef QBT_HOST_H
#define QBT_HOST_H

#include <quantbridge/qb_host.h>

/* The host's anonymous services table; static, never NULL, thread-safe. */
const qb_host *qbt_host(void);
/* The calling thread's last set_error message ("" when none); valid until
 * the next error call on this thread. */
const char *qbt_host_last_error(void);
/* The calling thread's last set_error code (QB_OK when none). */
qb_status qbt_host_last_code(void);
/* Clears the calling thread's error slot. */
void qbt_host_clear_error(void);

#endif
