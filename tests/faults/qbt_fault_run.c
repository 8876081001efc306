/* See qbt_fault_run.h. */
#define _GNU_SOURCE
#include "qbt_fault_run.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

void qbt_frun_run(qbt_frun *r, const char *const *argv, const char *const *env,
                  long fsize_limit, const char *cwd, qbt_on_stop on_stop, void *arg)
{
    const char *bin = getenv("QB_TEST_BIN");
    char tout[] = "/tmp/qbt-frun-out-XXXXXX", terr[] = "/tmp/qbt-frun-err-XXXXXX";
    int fo = mkstemp(tout), fe = mkstemp(terr), st = 0;
    size_t n = 0;
    const char **av;
    pid_t pid;

    ck_assert_ptr_nonnull(bin);
    ck_assert(fo >= 0 && fe >= 0);
    unlink(tout);
    unlink(terr);
    while (argv[n])
        n++;
    av = calloc(n + 2, sizeof *av);
    ck_assert_ptr_nonnull(av);
    av[0] = bin;
    memcpy(av + 1, argv, n * sizeof *av);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        size_t i;
        dup2(fo, 1);
        dup2(fe, 2);
        for (i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        if (fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
            signal(SIGXFSZ, SIG_IGN); /* stays ignored across exec */
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(bin, (char *const *)av);
        _exit(127);
    }
    free(av);
    for (;;) {
        pid_t w = waitpid(pid, &st, WUNTRACED);
        ck_assert_int_eq(w, pid);
        if (WIFSTOPPED(st)) {
            if (on_stop)
                on_stop(pid, arg);
            kill(pid, SIGCONT);
            continue;
        }
        break;
    }
    r->pid = pid;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = slurp_fd(fo);
    r->err = slurp_fd(fe);
    close(fo);
    close(fe);
}

void qbt_frun_free(qbt_frun *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

int qbt_count_lines(const char *text, const char *needle)
{
    int n = 0;
    const char *l = text;
    while (l && *l) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char *line = strndup(l, len);
        if (strstr(line, needle))
            n++;
        free(line);
        l = e ? e + 1 : NULL;
    }
    return n;
}
