/*
 * quantbridge host — progress display on stderr. On a terminal one line is
 * rewritten in place; `--progress=plain` (or --verbose off a terminal)
 * prints one line per tensor (logs stay greppable); elsewhere, and with
 * `--progress=none` or -q, nothing (CI output stays quiet).
 */
#include "qbh.h"

#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

static pthread_mutex_t prog_lock = PTHREAD_MUTEX_INITIALIZER;
static int line_open;
static qbh_progress_mode cfg_mode = QBH_PROGRESS_AUTO;
static double t_start; /* monotonic seconds, 0: not started */
static uint64_t tot_units, tot_weights;
static int stage_tenth = -1;
static char stage_key[256];

void qbh_human_bytes(uint64_t b, char *out, size_t n)
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static qbh_progress_mode mode(void)
{
    if (cfg_mode != QBH_PROGRESS_AUTO)
        return cfg_mode;
    if (qbh_rt.progress_tty)
        return QBH_PROGRESS_TTY;
    return qbh_rt.verbose >= 1 ? QBH_PROGRESS_PLAIN : QBH_PROGRESS_NONE;
}

void qbh_progress_configure(qbh_progress_mode m)
{
    cfg_mode = m;
}

qb_status qbh_progress_parse(const char *s, qbh_progress_mode *out)
{
    static const char *const names[] = {"auto", "tty", "plain", "none"};
    int i;
    for (i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (qbh_progress_mode)i;
            return QB_OK;
        }
    return qbh_error_set(QB_E_INVALID, "--progress %s: expected auto, tty, plain or none", s);
}

void qbh_progress_start(uint64_t total_units, uint64_t total_weights)
{
    pthread_mutex_lock(&prog_lock);
    t_start = now_s();
    tot_units = total_units;
    tot_weights = total_weights;
    pthread_mutex_unlock(&prog_lock);
}

double qbh_progress_elapsed(void)
{
    return t_start > 0 ? now_s() - t_start : 0.0;
}

/* "1:02:03" / "2:03" / "7.4s" */
static void clock_text(double s, char *out, size_t n)
{
    long t = (long)(s + 0.5);
    if (s < 60)
        snprintf(out, n, "%.1fs", s);
    else if (t < 3600)
        snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
    else
        snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* Columns of the terminal on stderr; 80 when it does not say. */
static size_t term_cols(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

void qbh_progress_tensor(size_t i, size_t n, const char *name, uint64_t bytes, uint64_t units,
                         uint64_t weights)
{
    char hb[32], el[32], eta[32];
    double t, frac, mbs, mws;
    qbh_progress_mode m = mode();
    if (m == QBH_PROGRESS_NONE)
        return;
    pthread_mutex_lock(&prog_lock);
    t = t_start > 0 ? now_s() - t_start : 0.0;
    frac = tot_units ? (double)units / (double)tot_units : (n ? (double)i / (double)n : 1.0);
    if (frac > 1.0)
        frac = 1.0;
    /* MB/s in decimal megabytes of output written, as disks and dd report */
    mbs = t > 0 ? (double)bytes / t / 1e6 : 0.0;
    mws = t > 0 ? (double)weights / t / 1e6 : 0.0;
    qbh_human_bytes(bytes, hb, sizeof hb);
    clock_text(t, el, sizeof el);
    if (frac > 0 && frac < 1.0)
        clock_text(t / frac - t, eta, sizeof eta);
    else
        snprintf(eta, sizeof eta, frac >= 1.0 ? "0.0s" : "?");
    if (m == QBH_PROGRESS_TTY) {
        /* one line: wider than the terminal it would wrap, and \r would
         * then rewrite only its last row */
        char line[512];
        int w = snprintf(line, sizeof line, "%5.1f%% [%zu/%zu] %s, %.1f MB/s, %.2f M weights/s, "
                         "%s, ETA %s  %s", 100.0 * frac, i, n, hb, mbs, mws, el, eta, name);
        size_t cols = term_cols();
        if (w > 0 && (size_t)w >= cols && cols > 1 && cols <= sizeof line)
            line[cols - 1] = '\0';
        fprintf(stderr, "\r\033[K%s", line);
        line_open = 1;
    } else {
        fprintf(stderr, "quantbridge: [%zu/%zu] %.1f%% %s (%s written, %.1f MB/s, %.2f M weights/s, "
                "elapsed %s, ETA %s)\n", i, n, 100.0 * frac, name, hb, mbs, mws, el, eta);
    }
    (void)tot_weights;
    fflush(stderr);
    pthread_mutex_unlock(&prog_lock);
}

static uint64_t now_ms(void)
{
    return (uint64_t)(now_s() * 1000.0);
}

void qbh_progress_stage(const char *who, uint64_t done, uint64_t total, const char *stage)
{
    static uint64_t last_ms;
    uint64_t t;
    qbh_progress_mode m = mode();
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    if (m == QBH_PROGRESS_NONE || (m == QBH_PROGRESS_PLAIN && cfg_mode == QBH_PROGRESS_AUTO &&
                                   qbh_rt.verbose < 2))
        return;
    /* Plugins may report per row block: redraw at most ten times a second
     * (display only; the cancel answer never depends on it). */
    t = now_ms();
    pthread_mutex_lock(&prog_lock);
    if (m == QBH_PROGRESS_TTY) {
        if (done != total && t - last_ms < 100) {
            pthread_mutex_unlock(&prog_lock);
            return;
        }
        last_ms = t;
        fprintf(stderr, "\r\033[K%s: %s %llu/%llu (%.0f%%)", who ? who : "quantbridge",
                stage ? stage : "", (unsigned long long)done, (unsigned long long)total, pct);
        line_open = 1;
    } else {
        /* a log gets one line per tenth reached, the last included; workers
         * report out of order, so only a higher tenth of the same stage
         * prints (a new who/stage/total starts over) */
        int tenth = done == total ? 10 : (int)(pct / 10.0);
        char key[256];
        snprintf(key, sizeof key, "%s\n%s\n%llu", who ? who : "", stage ? stage : "",
                 (unsigned long long)total);
        if (strcmp(key, stage_key) != 0) {
            snprintf(stage_key, sizeof stage_key, "%s", key);
            stage_tenth = -1;
        }
        if (tenth <= stage_tenth) {
            pthread_mutex_unlock(&prog_lock);
            return;
        }
        stage_tenth = tenth;
        fprintf(stderr, "quantbridge: %s: %s %llu/%llu (%.0f%%)\n", who ? who : "",
                stage ? stage : "", (unsigned long long)done, (unsigned long long)total, pct);
    }
    fflush(stderr);
    pthread_mutex_unlock(&prog_lock);
}

void qbh_progress_done(void)
{
    pthread_mutex_lock(&prog_lock);
    if (line_open) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        line_open = 0;
    }
    pthread_mutex_unlock(&prog_lock);
}

uint64_t qbh_peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}
