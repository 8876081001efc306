/* See qbt_run.h. */
#define _GNU_SOURCE
#include "qbt_run.h"

#include "qbt_args.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An anonymous temporary file for one captured stream. */
static int capture_fd(void)
{
    FILE *f = tmpfile();
    int fd;
    ck_assert_msg(f != NULL, "tmpfile: %s", strerror(errno));
    fd = dup(fileno(f));
    fclose(f);
    ck_assert(fd >= 0);
    return fd;
}

static char *slurp_fd(int fd)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    ssize_t r;
    ck_assert_ptr_nonnull(b);
    lseek(fd, 0, SEEK_SET);
    while ((r = read(fd, b + n, cap - n - 1)) > 0) {
        n += (size_t)r;
        if (cap - n < 2) {
            cap *= 2;
            b = realloc(b, cap);
            ck_assert_ptr_nonnull(b);
        }
    }
    b[n] = '\0';
    return b;
}

static const char *prog_of(const qbt_run_opts *o)
{
    const char *bin = o && o->prog ? o->prog : getenv("QB_TEST_BIN");
    if (!bin || !*bin)
        ck_abort_msg("QB_TEST_BIN not set (run through ctest)");
    return bin;
}

/* Forks and execs; the child writes stdout to fd_out and stderr to fd_err. */
static pid_t start(const qbt_run_opts *o, const char *const *argv, int fd_out, int fd_err)
{
    const char *bin = prog_of(o);
    size_t n = 0;
    const char **av;
    pid_t pid;
    while (argv[n])
        n++;
    av = calloc(n + 2, sizeof *av);
    ck_assert_ptr_nonnull(av);
    av[0] = bin;
    memcpy(av + 1, argv, n * sizeof *av);
    fflush(NULL);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        size_t i;
        dup2(fd_out, 1);
        dup2(fd_err, 2);
        for (i = 0; o && o->env && o->env[i]; i++)
            putenv((char *)o->env[i]);
        if (o && o->cwd && chdir(o->cwd) != 0)
            _exit(126);
        if (o && o->fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)o->fsize_limit, (rlim_t)o->fsize_limit};
            signal(SIGXFSZ, SIG_IGN); /* stays ignored across exec */
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(bin, (char *const *)av);
        _exit(127);
    }
    free(av);
    return pid;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for pid, continuing it (after on_stop) whenever it stops itself and
 * killing it at the deadline; returns the wait status. */
static int wait_child(const qbt_run_opts *o, pid_t pid, int *timed_out)
{
    double deadline = o && o->timeout_s ? now_s() + o->timeout_s : 0;
    int st = 0;
    *timed_out = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WUNTRACED | (deadline > 0 ? WNOHANG : 0));
        if (w < 0 && errno == EINTR)
            continue;
        ck_assert_int_ge(w, 0);
        if (w == 0) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            if (now_s() > deadline && !*timed_out) {
                *timed_out = 1;
                kill(pid, SIGKILL);
            }
            nanosleep(&ts, NULL);
            continue;
        }
        if (WIFSTOPPED(st)) {
            if (o && o->on_stop)
                o->on_stop(pid, o->on_stop_arg);
            kill(pid, SIGCONT);
            continue;
        }
        return st;
    }
}

void qbt_run_ex(qbt_result *r, const qbt_run_opts *o, const char *const *argv)
{
    int merge = o && o->merge_err;
    int fo = capture_fd(), fe = merge ? fo : capture_fd(), st;
    pid_t pid = start(o, argv, fo, fe);
    memset(r, 0, sizeof *r);
    st = wait_child(o, pid, &r->timed_out);
    r->pid = pid;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = slurp_fd(fo);
    r->err = merge ? strdup("") : slurp_fd(fe);
    ck_assert_ptr_nonnull(r->err);
    close(fo);
    if (!merge)
        close(fe);
}

void qbt_run(qbt_result *r, const char *const *argv)
{
    qbt_run_ex(r, NULL, argv);
}

int qbt_run_line(const char *args, char **out)
{
    char **av = qbt_args_split(args);
    qbt_run_opts o = {0};
    qbt_result r;
    int status;
    o.merge_err = 1;
    qbt_run_ex(&r, &o, (const char *const *)av);
    qbt_args_free(av);
    status = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    qbt_result_free(&r);
    return status;
}

int qbt_run_cmd(const char *cmdline, char **out)
{
    char **av = qbt_args_split(cmdline);
    qbt_run_opts o = {0};
    qbt_result r;
    int status;
    ck_assert_msg(av[0] != NULL, "empty command line");
    o.prog = av[0];
    o.merge_err = 1;
    qbt_run_ex(&r, &o, (const char *const *)av + 1);
    qbt_args_free(av);
    status = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    qbt_result_free(&r);
    return status;
}

pid_t qbt_spawn(const char *const *argv)
{
    int fd = open("/dev/null", O_WRONLY);
    pid_t pid;
    ck_assert(fd >= 0);
    pid = start(NULL, argv, fd, fd);
    close(fd);
    return pid;
}

void qbt_result_free(qbt_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

int qbt_count_lines(const char *text, const char *needle)
{
    int n = 0;
    const char *l = text;
    size_t nl = strlen(needle);
    while (l && *l) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *q = memmem(l, len, needle, nl);
        if (q)
            n++;
        l = e ? e + 1 : NULL;
    }
    return n;
}
