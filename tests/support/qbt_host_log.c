/* See qbt_host_log.h. The hook runs under the host's log lock, which also
 * orders it against qbt_host_log_last; counts are atomics so reading them
 * needs no lock. */
#include "qbt_host_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "qbh.h"

#define N_LEVELS 5 /* QB_LOG_ERROR .. QB_LOG_DEBUG are 1..4 */

static atomic_int counts[N_LEVELS];
static char last[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void hook(qb_log_level level, const char *who, const char *line)
{
    int i = (int)level;
    if (i < 0 || i >= N_LEVELS)
        i = 0;
    atomic_fetch_add(&counts[i], 1);
    snprintf(last, sizeof last, "%s%s%s", who ? who : "", who ? ": " : "", line);
}

static void install(void)
{
    qbh_log_hook_set(hook);
}

void qbt_host_log_install(void)
{
    pthread_once(&once, install);
}

int qbt_host_log_count(qb_log_level level)
{
    int i = (int)level;
    return i >= 0 && i < N_LEVELS ? atomic_load(&counts[i]) : 0;
}

int qbt_host_warn_count(void)
{
    return qbt_host_log_count(QB_LOG_WARN);
}

const char *qbt_host_log_last(void)
{
    return last;
}

void qbt_host_log_reset(void)
{
    int i;
    for (i = 0; i < N_LEVELS; i++)
        atomic_store(&counts[i], 0);
    last[0] = '\0';
}
