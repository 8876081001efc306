/* Tests: the fake qb_host. See qbt_fake_host.h. */
#define _XOPEN_SOURCE 700
#include "qbt_fake_host.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbk_safetensors.h"

static _Thread_local char fh_msg[4096];
static _Thread_local qb_status fh_code;

static void fh_log(const qb_host *h, qb_log_level level, const char *fmt, ...)
{
    (void)h;
    (void)level;
    (void)fmt;
}

static qb_status fh_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, fmt);
    vsnprintf(fh_msg, sizeof(fh_msg), fmt, ap);
    va_end(ap);
    fh_code = code;
    return code;
}

static void *fh_alloc(const qb_host *h, size_t n)
{
    (void)h;
    return malloc(n ? n : 1);
}

static void fh_free(const qb_host *h, void *p)
{
    (void)h;
    free(p);
}

static qb_status fh_read_small_file(const qb_host *h, const char *path, size_t max_len, void **data,
                                    size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    *data = NULL;
    *len = 0;
    if (!f)
        return fh_set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot open", path);
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fh_set_error(h, QB_E_IO, "%s: cannot size", path);
    }
    if ((size_t)n > max_len) {
        fclose(f);
        return fh_set_error(h, QB_E_RANGE, "%s: too large", path);
    }
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return fh_set_error(h, QB_E_IO, "%s: read failed", path);
    }
    fclose(f);
    buf[n] = '\0';
    *data = buf;
    *len = (size_t)n;
    return QB_OK;
}

static int fh_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static qb_status fh_list_dir(const qb_host *h, const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;
    *names = NULL;
    if (!d)
        return fh_set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot list", dir);
    while ((de = readdir(d)) != NULL) {
        char **nv;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        nv = realloc(v, (n + 2) * sizeof(*v));
        if (!nv)
            abort();
        v = nv;
        v[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (!v)
        v = calloc(1, sizeof(*v));
    v[n] = NULL;
    qsort(v, n, sizeof(*v), fh_cmp);
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

static const char *fh_get_config(const qb_host *h, const char *key)
{
    (void)h;
    (void)key;
    return NULL;
}

static int fh_progress(const qb_host *h, uint64_t done, uint64_t total, const char *stage)
{
    (void)h;
    (void)done;
    (void)total;
    (void)stage;
    return 0;
}

static int fh_cancelled(const qb_host *h)
{
    (void)h;
    return 0;
}

static qb_status fh_parallel_for(const qb_host *h, size_t n, qb_parallel_fn fn, void *arg)
{
    size_t i;
    (void)h;
    for (i = 0; i < n; i++) {
        qb_status st = fn(arg, i);
        if (st != QB_OK)
            return st;
    }
    return QB_OK;
}

static uint32_t fh_thread_count(const qb_host *h)
{
    (void)h;
    return 1;
}

static void *fh_get_proc(const qb_host *h, const char *name)
{
    (void)h;
    (void)name;
    return NULL;
}

const qb_host *qbt_fake_host(void)
{
    static qb_host host;
    if (!host.struct_size) {
        host.abi = QB_ABI_CURRENT;
        host.log = fh_log;
        host.set_error = fh_set_error;
        host.alloc = fh_alloc;
        host.free = fh_free;
        host.read_small_file = fh_read_small_file;
        host.list_dir = fh_list_dir;
        host.free_list = fh_free_list;
        host.get_config = fh_get_config;
        host.progress = fh_progress;
        host.cancelled = fh_cancelled;
        host.parallel_for = fh_parallel_for;
        host.thread_count = fh_thread_count;
        host.safetensors = qbk_safetensors_api();
        host.get_proc = fh_get_proc;
        host.struct_size = sizeof(host);
    }
    return &host;
}

const char *qbt_fake_last_error(void)
{
    return fh_msg;
}

qb_status qbt_fake_last_code(void)
{
    return fh_code;
}

void qbt_fake_clear_error(void)
{
    fh_msg[0] = '\0';
    fh_code = QB_OK;
}
