/* Test helpers that drive the built quantbridge binary; see qbt_cli.h. */
#define _GNU_SOURCE
#include "qbt_cli.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        ck_abort_msg("environment variable %s not set (run through ctest)", name);
    return v;
}

static void mkdir_p(const char *path)
{
    char buf[4096];
    size_t i, n = strlen(path);
    ck_assert_msg(n < sizeof buf, "path too long");
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                ck_abort_msg("mkdir %s: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
}

char *qbt_path(const char *a, const char *b)
{
    char *p = NULL;
    ck_assert(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

char *qbt_mkdtemp(const char *tag)
{
    const char *base = env_or_die("QB_TEST_TMPDIR");
    char *tmpl = NULL;
    mkdir_p(base);
    ck_assert(asprintf(&tmpl, "%s/%s-XXXXXX", base, tag) > 0);
    ck_assert_msg(mkdtemp(tmpl) != NULL, "mkdtemp %s: %s", tmpl, strerror(errno));
    return tmpl;
}

void qbt_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert(fclose(f) == 0);
}

char *qbt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert(buf != NULL);
    ck_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

int qbt_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int qbt_count_entries(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, needle))
            n++;
    closedir(d);
    return n;
}

static pid_t spawn(const char *const *argv, int fd_out, int fd_err)
{
    const char *bin = env_or_die("QB_TEST_BIN");
    size_t n = 0, i;
    char **av;
    pid_t pid;
    while (argv[n])
        n++;
    av = calloc(n + 2, sizeof *av);
    ck_assert(av != NULL);
    av[0] = (char *)bin;
    for (i = 0; i < n; i++)
        av[i + 1] = (char *)argv[i];
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(fd_out, 1);
        dup2(fd_err, 2);
        execv(bin, av);
        _exit(127);
    }
    free(av);
    return pid;
}

void qbt_run(qbt_result *r, const char *const *argv)
{
    char *dir = qbt_mkdtemp("run");
    char *po = qbt_path(dir, "out"), *pe = qbt_path(dir, "err");
    int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int st = 0;
    pid_t pid;
    ck_assert(fo >= 0 && fe >= 0);
    pid = spawn(argv, fo, fe);
    close(fo);
    close(fe);
    ck_assert(waitpid(pid, &st, 0) == pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = qbt_read_file(po, NULL);
    r->err = qbt_read_file(pe, NULL);
    unlink(po);
    unlink(pe);
    rmdir(dir);
    free(po);
    free(pe);
    free(dir);
}

pid_t qbt_spawn(const char *const *argv)
{
    int fd = open("/dev/null", O_WRONLY);
    pid_t pid;
    ck_assert(fd >= 0);
    pid = spawn(argv, fd, fd);
    close(fd);
    return pid;
}

void qbt_result_free(qbt_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}
