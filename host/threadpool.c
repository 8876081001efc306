/*
 * quantbridge host — the fixed thread pool behind qb_host.parallel_for.
 *
 * n-1 workers plus the calling thread share one job at a time: items are
 * handed out by an atomic counter; the first failure stops new items and
 * its status and message travel back to the caller. A call made from
 * inside an item (nested) runs serially on that thread, so a writer that
 * parallelises over tensors and a reader that parallelises over rows can
 * never deadlock the pool.
 */
#include "qbh.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

typedef struct qbh_job {
    size_t n;
    qb_parallel_fn fn;
    void *arg;
    atomic_size_t next;
    atomic_int failed;
    qb_status rc;      /* guarded by pool.mu */
    char *msg;         /* first failure's message, guarded by pool.mu */
} qbh_job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work;    /* a job was posted, or stop */
    pthread_cond_t idle;    /* busy dropped to zero */
    pthread_mutex_t turn;   /* one top-level job at a time */
    pthread_t *th;
    uint32_t n_th;          /* workers */
    int started;
    int stop;
    uint64_t gen;
    qbh_job *job;           /* open job, or NULL */
    uint32_t busy;          /* workers inside the open job */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, NULL, 0};

/* Set on pool workers and on a caller while it runs items: a nested
 * parallel_for from such a thread runs serially. */
static _Thread_local int in_item;

static void run_items(qbh_job *j)
{
    int saved = in_item;
    in_item = 1;
    while (!atomic_load(&j->failed)) {
        size_t i = atomic_fetch_add(&j->next, 1);
        qb_status rc;
        if (i >= j->n)
            break;
        qbh_error_clear();
        rc = j->fn(j->arg, i);
        if (rc != QB_OK) {
            pthread_mutex_lock(&pool.mu);
            if (!atomic_load(&j->failed)) {
                atomic_store(&j->failed, 1);
                j->rc = rc;
                j->msg = qbh_strdup(qbh_error_message()[0] ? qbh_error_message()
                                                          : qbh_status_name(rc));
            }
            pthread_mutex_unlock(&pool.mu);
        }
    }
    in_item = saved;
}

static void *worker(void *unused)
{
    uint64_t seen = 0;
    (void)unused;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        qbh_job *j;
        while (!pool.stop && (pool.gen == seen || !pool.job))
            pthread_cond_wait(&pool.work, &pool.mu);
        if (pool.stop)
            break;
        seen = pool.gen;
        j = pool.job;
        pool.busy++;
        pthread_mutex_unlock(&pool.mu);
        run_items(j);
        pthread_mutex_lock(&pool.mu);
        if (--pool.busy == 0)
            pthread_cond_broadcast(&pool.idle);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

qb_status qbh_pool_start(uint32_t n_threads)
{
    uint32_t i;
    if (pool.started)
        return QB_OK;
    if (n_threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (uint32_t)c : 1;
    }
    pool.started = 1;
    pool.stop = 0;
    if (n_threads <= 1)
        return QB_OK;
    pool.th = qbh_calloc(n_threads - 1, sizeof *pool.th);
    if (!pool.th)
        return qbh_error_set(QB_E_NOMEM, "thread pool: out of memory");
    for (i = 0; i + 1 < n_threads; i++) {
        if (pthread_create(&pool.th[i], NULL, worker, NULL) != 0) {
            /* Fewer workers than asked still gives correct results. */
            qbh_log(QB_LOG_WARN, NULL, "thread pool: started %u of %u threads", i + 1, n_threads);
            break;
        }
        pool.n_th++;
    }
    return QB_OK;
}

void qbh_pool_stop(void)
{
    uint32_t i;
    pthread_mutex_lock(&pool.mu);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    for (i = 0; i < pool.n_th; i++)
        pthread_join(pool.th[i], NULL);
    qbh_free(pool.th);
    pool.th = NULL;
    pool.n_th = 0;
    pool.started = 0;
    pool.stop = 0;
}

uint32_t qbh_pool_threads(void)
{
    return pool.n_th + 1;
}

static qb_status run_serial(size_t n, qb_parallel_fn fn, void *arg)
{
    size_t i;
    for (i = 0; i < n; i++) {
        qb_status rc = fn(arg, i);
        if (rc != QB_OK)
            return rc;
    }
    return QB_OK;
}

qb_status qbh_parallel_for(size_t n, qb_parallel_fn fn, void *arg)
{
    qbh_job j;
    qb_status rc;

    if (n == 0)
        return QB_OK;
    if (in_item || pool.n_th == 0 || n == 1) {
        int saved = in_item;
        in_item = 1;
        rc = run_serial(n, fn, arg);
        in_item = saved;
        return rc;
    }
    memset(&j, 0, sizeof j);
    j.n = n;
    j.fn = fn;
    j.arg = arg;
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);

    pthread_mutex_lock(&pool.turn);
    pthread_mutex_lock(&pool.mu);
    pool.job = &j;
    pool.gen++;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);

    run_items(&j);

    /* Close the job before waiting: a worker that wakes late sees no job
     * and cannot touch `j` after we return. */
    pthread_mutex_lock(&pool.mu);
    pool.job = NULL;
    while (pool.busy > 0)
        pthread_cond_wait(&pool.idle, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.turn);

    rc = j.rc;
    if (rc != QB_OK) {
        qbh_error_set(rc, "%s", j.msg ? j.msg : qbh_status_name(rc));
        qbh_free(j.msg);
    }
    return rc;
}
