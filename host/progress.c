/*
 * quantbridge host — progress display on stderr. On a terminal one line is
 * rewritten in place; elsewhere nothing is shown unless --verbose, which
 * prints one line per tensor (logs stay greppable, CI output stays quiet).
 */
#include "qbh.h"

#include <string.h>
#include <time.h>

static pthread_mutex_t prog_lock = PTHREAD_MUTEX_INITIALIZER;
static int line_open;

static void human(uint64_t b, char *out, size_t n)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024.0 && i < 4) {
        v /= 1024.0;
        i++;
    }
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

void qbh_progress_tensor(size_t i, size_t n, const char *name, uint64_t bytes)
{
    char hb[32];
    if (!qbh_rt.progress_tty && qbh_rt.verbose < 1)
        return;
    human(bytes, hb, sizeof hb);
    pthread_mutex_lock(&prog_lock);
    if (qbh_rt.progress_tty) {
        fprintf(stderr, "\r\033[K[%zu/%zu] %s (%s written)", i, n, name, hb);
        line_open = 1;
    } else {
        fprintf(stderr, "quantbridge: [%zu/%zu] %s (%s written)\n", i, n, name, hb);
    }
    fflush(stderr);
    pthread_mutex_unlock(&prog_lock);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void qbh_progress_stage(const char *who, uint64_t done, uint64_t total, const char *stage)
{
    static uint64_t last_ms;
    uint64_t t;
    if (!qbh_rt.progress_tty && qbh_rt.verbose < 2)
        return;
    /* Plugins may report per row block: redraw at most ten times a second
     * (display only; the cancel answer never depends on it). */
    t = now_ms();
    pthread_mutex_lock(&prog_lock);
    if (done != total && t - last_ms < 100) {
        pthread_mutex_unlock(&prog_lock);
        return;
    }
    last_ms = t;
    if (qbh_rt.progress_tty) {
        fprintf(stderr, "\r\033[K%s: %s %llu/%llu", who ? who : "quantbridge",
                stage ? stage : "", (unsigned long long)done, (unsigned long long)total);
        line_open = 1;
    } else {
        fprintf(stderr, "quantbridge: %s: %s %llu/%llu\n", who ? who : "", stage ? stage : "",
                (unsigned long long)done, (unsigned long long)total);
    }
    fflush(stderr);
    pthread_mutex_unlock(&prog_lock);
}

void qbh_progress_done(void)
{
    pthread_mutex_lock(&prog_lock);
    if (line_open) {
        fputs("\r\033[K", stderr);
        line_open = 0;
    }
    pthread_mutex_unlock(&prog_lock);
}
