/*
 * quantbridge fuzzing — the three host services host/config.c calls besides
 * error.c and alloc.c (qbh_log, qbh_list_dir, qbh_free_list), so the config
 * target links config.c alone instead of the whole host (services.c pulls
 * in the thread pool, progress and signals). Same contracts as qbh.h.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"

void qbh_log(qb_log_level level, const char *who, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    (void)level;
    (void)who;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
}

static int stub_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void qbh_free_list(char **names)
{
    size_t i;
    for (i = 0; names && names[i]; i++)
        qbh_free(names[i]);
    qbh_free(names);
}

qb_status qbh_list_dir(const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v, **g;
    size_t n = 0, cap = 16;

    *names = NULL;
    if (!d)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", dir,
                             strerror(errno));
    v = qbh_calloc(cap, sizeof *v);
    while (v && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 2 > cap) {
            if (!(g = qbh_calloc(cap * 2, sizeof *g))) {
                qbh_free_list(v);
                v = NULL;
                break;
            }
            memcpy(g, v, n * sizeof *g);
            qbh_free(v);
            v = g;
            cap *= 2;
        }
        if (!(v[n] = qbh_strdup(e->d_name))) {
            qbh_free_list(v);
            v = NULL;
            break;
        }
        n++;
    }
    closedir(d);
    if (!v)
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory", dir);
    qsort(v, n, sizeof *v, stub_cmp);
    *names = v;
    return QB_OK;
}
