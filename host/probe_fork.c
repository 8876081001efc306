/*
 * quantbridge host — probing an untrusted plugin in a forked child.
 *
 * probe() is the one plugin call made on every input, recognised or not,
 * so it is where a third-party plugin meets hostile bytes first. For a
 * plugin that is not trusted (plugin_load.c decides) the host forks, the
 * child runs the probe and writes the score down a pipe, and the parent
 * waits at most the configured time. A crash or hang costs the child, not
 * the conversion: the plugin is reported and skipped for this run. Later
 * calls of a plugin that won the probe run in-process, as for any plugin.
 */
#include "qbh.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads the child's 4-byte answer within deadline; 1 when all arrived,
 * 0 on EOF without it, -1 on timeout. */
static int read_answer(int fd, int32_t *score, long long deadline)
{
    unsigned char *p = (unsigned char *)score;
    size_t got = 0;
    while (got < sizeof *score) {
        struct pollfd pf = {fd, POLLIN, 0};
        long long left = deadline - now_ms();
        int r;
        ssize_t n;
        if (left <= 0)
            return -1;
        r = poll(&pf, 1, (int)(left > 1000000 ? 1000000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* timeout re-checked at the top */
        n = read(fd, p + got, sizeof *score - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

int qbh_probe_contained(qbh_plugin *p, const qb_probe_input *in, int timeout_s)
{
    const qb_plugin *d = p->desc;
    int fds[2], status = 0, got;
    int32_t score = 0;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        qbh_log(QB_LOG_WARN, p->name, "cannot probe in a child (pipe: %s); plugin skipped",
                strerror(errno));
        return -1;
    }
    fflush(NULL); /* the child must not flush the parent's buffered output */
    pid = fork();
    if (pid < 0) {
        qbh_log(QB_LOG_WARN, p->name, "cannot probe in a child (fork: %s); plugin skipped",
                strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        ssize_t w;
        close(fds[0]);
        /* the parent names a crash by the child's signal: the default
         * actions, not the host's fault handler (fatal.c) */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        score = d->reader->probe(d->ctx, in);
        w = write(fds[1], &score, sizeof score);
        /* _exit: no atexit handlers or stdio flushes of the parent's state */
        _exit(w == (ssize_t)sizeof score ? 0 : 3);
    }
    close(fds[1]);
    got = read_answer(fds[0], &score, now_ms() + (long long)timeout_s * 1000);
    close(fds[0]);
    if (got < 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got < 0) {
        qbh_log(QB_LOG_WARN, NULL, "plugin %s timed out in probe (no answer within %d s); "
                "skipped for this run", p->name, timeout_s);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        qbh_log(QB_LOG_WARN, NULL, "plugin %s crashed (signal %d, %s) in probe; skipped for "
                "this run", p->name, WTERMSIG(status), strsignal(WTERMSIG(status)));
        return -1;
    }
    if (got == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        qbh_log(QB_LOG_WARN, NULL, "plugin %s exited (status %d) in probe without answering; "
                "skipped for this run", p->name,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return (int)score;
}
