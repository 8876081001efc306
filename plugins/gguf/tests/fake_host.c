/* Minimal qb_host for unit tests (see fake_host.h). */
#include "fake_host.h"

#include "qbt_fs.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char last_msg[2048];
static qb_status last_code;

static void fh_log(const qb_host *h, qb_log_level lvl, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    (void)lvl;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static qb_status fh_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

static void *fh_alloc(const qb_host *h, size_t n)
{
    (void)h;
    return malloc(n);
}

static void fh_free(const qb_host *h, void *p)
{
    (void)h;
    free(p);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static qb_status fh_list_dir(const qb_host *h, const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, cap = 16;
    char **v;
    if (!d)
        return fh_set_error(h, QB_E_NOT_FOUND, "%s: %s", dir, strerror(errno));
    v = malloc(cap * sizeof(*v));
    while (v && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 2 > cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof(*v));
            if (!v)
                break;
        }
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (!v)
        return QB_E_NOMEM;
    qsort(v, n, sizeof(*v), cmp);
    v[n] = NULL;
    *names = v;
    return QB_OK;
}

static void fh_free_list(const qb_host *h, char **names)
{
    size_t i;
    (void)h;
    for (i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static int fh_cancelled(const qb_host *h)
{
    (void)h;
    return 0;
}

static const qb_host host = {
    .struct_size = sizeof(qb_host),
    .abi = QB_ABI_CURRENT,
    .log = fh_log,
    .set_error = fh_set_error,
    .alloc = fh_alloc,
    .free = fh_free,
    .list_dir = fh_list_dir,
    .free_list = fh_free_list,
    .cancelled = fh_cancelled,
};

const qb_host *fake_host(void)
{
    return &host;
}

const char *fake_last_error(void)
{
    return last_msg;
}

qb_status fake_last_code(void)
{
    return last_code;
}

const char *fake_tmpdir(const char *tag)
{
    static char path[1024];
    const char *base = getenv("QB_TEST_TMPDIR");
    if (!base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(path, sizeof(path), "%s/gguf-%s-%d", base, tag, (int)getpid());
    qbt_rmtree(path);
    mkdir(path, 0755);
    return path;
}
