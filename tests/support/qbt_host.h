/*
 * The real host services for unit tests: the qb_host table the host serves
 * to plugins (host/services.c, qbh_core), without a plugin behind it.
 * set_error goes to the host's per-thread error slot; read_small_file,
 * list_dir, parallel_for (serial until qbt_host_threads starts a pool),
 * alloc (with the host's failure injection) and the safetensors API are the
 * host's own. Log lines still go to stderr (warnings and errors always) and
 * are also counted by qbt_host_log (installed by the first qbt_host call).
 * get_config answers NULL; progress and cancelled report "not cancelled"
 * unless a signal handler of the host was installed (tests install none).
 */
#ifndef QBT_HOST_H
#define QBT_HOST_H

#include <stdint.h>

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
/* Clears the error slot and the log counts (qbt_host_log_reset): a fresh
 * start for the next step of a test. */
void qbt_host_reset(void);
/* Starts the host's thread pool with n threads (caller included), so
 * parallel_for runs items concurrently in any order and thread_count
 * answers n. Once per process (a later call keeps the first pool); call it
 * inside the test (check forks each test; threads do not survive fork).
 * Aborts the test when the pool cannot start. */
void qbt_host_threads(uint32_t n);
/* After n more successful host allocations (host->alloc, qbk_malloc once a
 * plugin entry ran, read_small_file, list_dir) every one fails until
 * n < 0 switches injection off again (host/alloc.c). */
void qbt_host_alloc_fail_after(long n);

#endif
