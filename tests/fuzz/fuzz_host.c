/* quantbridge fuzzing — the qb_host of the fuzz targets (kept apart from
 * tests/support qbt_host on purpose: see fuzz_host.h). */
#include "fuzz_host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qbk_safetensors.h"

#define FH_MAX_VFILES 8

static struct {
    const char *path;
    const void *data;
    size_t len;
} fh_vf[FH_MAX_VFILES];
static size_t fh_n_vf;
static char fh_msg[4096];
static qb_status fh_code;
static int fh_msg_set;
static char fh_dir[256];
static char fh_path[512];

static void fh_log(const qb_host *h, qb_log_level lvl, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    (void)h;
    (void)lvl;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
}

static qb_status fh_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, fmt);
    vsnprintf(fh_msg, sizeof(fh_msg), fmt, ap);
    va_end(ap);
    fh_code = code;
    fh_msg_set = 1;
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

static qb_status fh_read_small_file(const qb_host *h, const char *path, size_t max_len, void **data,
                                    size_t *len)
{
    size_t i;
    FILE *f;
    char *buf;
    long sz;
    for (i = 0; i < fh_n_vf; i++) {
        if (strcmp(fh_vf[i].path, path) != 0)
            continue;
        if (fh_vf[i].len > max_len)
            return fh_set_error(h, QB_E_RANGE, "%s: larger than %zu bytes", path, max_len);
        if (!(buf = malloc(fh_vf[i].len + 1)))
            return fh_set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        if (fh_vf[i].len)
            memcpy(buf, fh_vf[i].data, fh_vf[i].len);
        buf[fh_vf[i].len] = 0;
        *data = buf;
        if (len)
            *len = fh_vf[i].len;
        return QB_OK;
    }
    if (!(f = fopen(path, "rb")))
        return fh_set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                            strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fh_set_error(h, QB_E_IO, "%s: not seekable", path);
    }
    if ((size_t)sz > max_len) {
        fclose(f);
        return fh_set_error(h, QB_E_RANGE, "%s: larger than %zu bytes", path, max_len);
    }
    if (!(buf = malloc((size_t)sz + 1))) {
        fclose(f);
        return fh_set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        fclose(f);
        return fh_set_error(h, QB_E_IO, "%s: short read", path);
    }
    fclose(f);
    buf[sz] = 0;
    *data = buf;
    if (len)
        *len = (size_t)sz;
    return QB_OK;
}

static int fh_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fh_free_list(const qb_host *h, char **names)
{
    size_t i;
    (void)h;
    for (i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static qb_status fh_list_dir(const qb_host *h, const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, cap = 16;
    char **v, **nv;
    if (!d)
        return fh_set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", dir,
                            strerror(errno));
    v = calloc(cap, sizeof(*v));
    while (v && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 2 > cap) {
            cap *= 2;
            if (!(nv = realloc(v, cap * sizeof(*v)))) {
                v[n] = NULL;
                fh_free_list(h, v);
                v = NULL;
                break;
            }
            v = nv;
        }
        if (!(v[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (!v)
        return fh_set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    v[n] = NULL;
    qsort(v, n, sizeof(*v), fh_cmp);
    *names = v;
    return QB_OK;
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
    qb_status st;
    (void)h;
    for (i = 0; i < n; i++)
        if ((st = fn(arg, i)) != QB_OK)
            return st;
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

static qb_host fh_host = {
    .struct_size = sizeof(qb_host),
    .abi = QB_ABI_CURRENT,
    .log = fh_log,
    .set_error = fh_set_error,
    .alloc = fh_alloc,
    .free = fh_free,
    .read_small_file = fh_read_small_file,
    .list_dir = fh_list_dir,
    .free_list = fh_free_list,
    .get_config = fh_get_config,
    .progress = fh_progress,
    .cancelled = fh_cancelled,
    .parallel_for = fh_parallel_for,
    .thread_count = fh_thread_count,
    .get_proc = fh_get_proc,
};

const qb_host *qbt_fuzz_host(void)
{
    if (!fh_host.safetensors)
        fh_host.safetensors = qbk_safetensors_api();
    return &fh_host;
}

void qbt_fuzz_reset(void)
{
    fh_n_vf = 0;
    fh_msg[0] = 0;
    fh_msg_set = 0;
    fh_code = QB_OK;
}

int qbt_fuzz_vfile(const char *path, const void *data, size_t len)
{
    if (fh_n_vf == FH_MAX_VFILES)
        return -1;
    fh_vf[fh_n_vf].path = path;
    fh_vf[fh_n_vf].data = data;
    fh_vf[fh_n_vf].len = len;
    fh_n_vf++;
    return 0;
}

void qbt_fuzz_check_status(qb_status st, const char *what)
{
    if (st == QB_OK)
        return;
    if (st > 0 || !fh_msg_set || !fh_msg[0] || fh_code != st) {
        fprintf(stderr, "%s: status %d without its message (last message %d: '%s')\n", what, (int)st,
                (int)fh_code, fh_msg);
        abort();
    }
}

static void fh_rm_tmpdir(void)
{
    DIR *d;
    struct dirent *e;
    char p[768];
    if (!fh_dir[0] || !(d = opendir(fh_dir)))
        return;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", fh_dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(fh_dir);
}

const char *qbt_fuzz_tmpdir(void)
{
    const char *base;
    if (fh_dir[0])
        return fh_dir;
    base = getenv("TMPDIR");
    if (!base || !*base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fh_dir, sizeof(fh_dir), "%s/qbfuzz.XXXXXX", base);
    if (!mkdtemp(fh_dir)) {
        fh_dir[0] = 0;
        return NULL;
    }
    atexit(fh_rm_tmpdir);
    return fh_dir;
}

const char *qbt_fuzz_write_tmp(const char *name, const void *data, size_t len)
{
    const char *dir = qbt_fuzz_tmpdir();
    int fd;
    const char *p = data;
    ssize_t w;
    if (!dir)
        return NULL;
    snprintf(fh_path, sizeof(fh_path), "%s/%s", dir, name);
    if ((fd = open(fh_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
        return NULL;
    while (len) {
        if ((w = write(fd, p, len)) <= 0) {
            close(fd);
            return NULL;
        }
        p += w;
        len -= (size_t)w;
    }
    close(fd);
    return fh_path;
}
