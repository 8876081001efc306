/*
 * The host's log lines as tests see them: qbt_host() installs a hook in the
 * host's log (qbh_log_hook_set, host/services.c) that counts lines per level
 * and keeps the last one; the lines still go to stderr as in a real run.
 * Counts are process-wide (check runs each test in its own process) and
 * thread-safe (plugins log from parallel_for items).
 */
#ifndef QBT_HOST_LOG_H
#define QBT_HOST_LOG_H

#include <quantbridge/qb_host.h>

/* Installs the counting hook; idempotent. qbt_host() calls it. */
void qbt_host_log_install(void);
/* Lines logged at exactly `level` since the last reset. */
int qbt_host_log_count(qb_log_level level);
/* Warnings logged since the last reset (qbt_host_log_count(QB_LOG_WARN)). */
int qbt_host_warn_count(void);
/* The last line logged at any level ("" when none since the reset); valid
 * until the next log line or reset. */
const char *qbt_host_log_last(void);
/* Zeroes the counts and forgets the last line. */
void qbt_host_log_reset(void);

#endif
