/*
 * quantbridge host — the services table (qb_host) handed to each plugin.
 *
 * One table per plugin: host_private points at the plugin's qbh_plugin so
 * get_config answers that plugin's section and log lines carry its name.
 * Every function here is thread-safe (qb_host.h THREADING).
 */
#include "qbh.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qbk_safetensors.h"

qbh_runtime qbh_rt = {0, 0, 1};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static qbh_log_hook_fn log_hook; /* tests only; read and written under log_lock */

void qbh_log_hook_set(qbh_log_hook_fn fn)
{
    pthread_mutex_lock(&log_lock);
    log_hook = fn;
    pthread_mutex_unlock(&log_lock);
}

/* Hands the formatted line to the test hook, if one is set. */
static void log_to_hook(qb_log_level level, const char *who, const char *fmt, va_list ap)
{
    char line[1024];
    pthread_mutex_lock(&log_lock);
    if (log_hook) {
        vsnprintf(line, sizeof line, fmt, ap);
        log_hook(level, who, line);
    }
    pthread_mutex_unlock(&log_lock);
}

static void log_v(qb_log_level level, const char *who, const char *fmt, va_list ap)
{
    static const char *const names[] = {"", "error", "warning", "info", "debug"};
    va_list hook_ap;
    va_copy(hook_ap, ap);
    log_to_hook(level, who, fmt, hook_ap);
    va_end(hook_ap);
    if (level > QB_LOG_WARN && (int)level - 2 > qbh_rt.verbose)
        return;
    if (level < QB_LOG_ERROR || level > QB_LOG_DEBUG)
        level = QB_LOG_ERROR;
    if (qbh_rt.progress_tty)
        qbh_progress_done(); /* a log line never lands inside a progress line */
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "quantbridge: %s%s%s: ", who ? who : "", who ? ": " : "", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
}

void qbh_log(qb_log_level level, const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(level, who, fmt, ap);
    va_end(ap);
}

static const char *who_of(const qb_host *h)
{
    const qbh_plugin *p = h ? h->host_private : NULL;
    return p ? p->name : NULL;
}

static void svc_log(const qb_host *h, qb_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(level, who_of(h), fmt, ap);
    va_end(ap);
}

static qb_status svc_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, fmt);
    qbh_error_setv(code, fmt, ap);
    va_end(ap);
    return code;
}

static void *svc_alloc(const qb_host *h, size_t n)
{
    (void)h;
    return qbh_alloc(n);
}

static void svc_free(const qb_host *h, void *p)
{
    (void)h;
    qbh_free(p);
}

qb_status qbh_read_small_file(const char *path, size_t max_len, void **data, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    qb_status rc = QB_OK;
    int fd;

    *data = NULL;
    if (len)
        *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                             strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = qbh_error_set(QB_E_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = qbh_error_set(QB_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if ((uint64_t)st.st_size > max_len) {
        rc = qbh_error_set(QB_E_RANGE, "%s: %lld bytes, more than the %zu allowed", path,
                           (long long)st.st_size, max_len);
        goto out;
    }
    buf = qbh_alloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = qbh_error_set(QB_E_IO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break; /* file shrank while reading: return what is there */
        got += (size_t)r;
    }
    buf[got] = '\0';
    *data = buf;
    buf = NULL;
    if (len)
        *len = got;
out:
    qbh_free(buf);
    close(fd);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

qb_status qbh_list_dir(const char *dir, char ***names)
{
    DIR *d;
    struct dirent *e;
    char **v = NULL;
    size_t n = 0, cap = 0;
    qb_status rc = QB_OK;

    *names = NULL;
    d = opendir(dir);
    if (!d)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", dir,
                             strerror(errno));
    for (;;) {
        errno = 0;
        e = readdir(d);
        if (!e) {
            if (errno)
                rc = qbh_error_set(QB_E_IO, "%s: %s", dir, strerror(errno));
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n + 2 > cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **g = qbh_alloc(nc * sizeof *g);
            if (!g) {
                rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", dir);
                break;
            }
            if (n)
                memcpy(g, v, n * sizeof *g);
            qbh_free(v);
            v = g;
            cap = nc;
        }
        v[n] = qbh_strdup(e->d_name);
        if (!v[n]) {
            rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == QB_OK && !v) {
        v = qbh_alloc(sizeof *v);
        if (!v)
            rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", dir);
    }
    if (v)
        v[n] = NULL;
    if (rc) {
        qbh_free_list(v);
        return rc;
    }
    qsort(v, n, sizeof *v, name_cmp);
    *names = v;
    return QB_OK;
}

void qbh_free_list(char **names)
{
    size_t i;
    if (!names)
        return;
    for (i = 0; names[i]; i++)
        qbh_free(names[i]);
    qbh_free(names);
}

static qb_status svc_read_small_file(const qb_host *h, const char *path, size_t max_len,
                                     void **data, size_t *len)
{
    (void)h;
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "read_small_file")) {
        *data = NULL;
        *len = 0;
        return qbh_error_set(QB_E_IO, "%s: input/output error (injected by plugin-check)",
                             path ? path : "(null)");
    }
    return qbh_read_small_file(path, max_len, data, len);
}

static qb_status svc_list_dir(const qb_host *h, const char *dir, char ***names)
{
    qb_status rc;
    (void)h;
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "list_dir")) {
        *names = NULL;
        return qbh_error_set(QB_E_IO, "%s: input/output error (injected by plugin-check)",
                             dir ? dir : "(null)");
    }
    rc = qbh_list_dir(dir, names);
    if (rc == QB_OK)
        qbh_objects_add(*names, "directory listing from list_dir");
    return rc;
}

static void svc_free_list(const qb_host *h, char **names)
{
    (void)h;
    qbh_objects_remove(names);
    qbh_free_list(names);
}

static const char *svc_get_config(const qb_host *h, const char *key)
{
    const qbh_plugin *p = h ? h->host_private : NULL;
    size_t i;
    if (!p || !p->conf || !key)
        return NULL;
    for (i = 0; i < p->conf->n_options; i++)
        if (strcmp(p->conf->options[i].key, key) == 0)
            return p->conf->options[i].value;
    return NULL;
}

static int svc_progress(const qb_host *h, uint64_t done, uint64_t total, const char *stage)
{
    qbh_progress_stage(who_of(h), done, total, stage);
    return qbh_cancel_requested();
}

static int svc_cancelled(const qb_host *h)
{
    (void)h;
    return qbh_cancel_requested();
}

static qb_status svc_parallel_for(const qb_host *h, size_t n, qb_parallel_fn fn, void *arg)
{
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "parallel_for"))
        return qbh_error_set(QB_E_NOMEM, "parallel_for: out of memory (injected by "
                             "plugin-check)");
    (void)h;
    return qbh_parallel_for(n, fn, arg);
}

static uint32_t svc_thread_count(const qb_host *h)
{
    (void)h;
    return qbh_pool_threads();
}

static void *svc_get_proc(const qb_host *h, const char *name)
{
    (void)h;
    (void)name;
    return NULL;
}

static const qb_st_api *safetensors_api(void)
{
    return qbk_safetensors_api();
}

static void fill(qb_host *h, void *priv)
{
    memset(h, 0, sizeof *h);
    h->struct_size = sizeof *h;
    h->abi = QB_ABI_CURRENT;
    h->host_private = priv;
    h->log = svc_log;
    h->set_error = svc_set_error;
    h->alloc = svc_alloc;
    h->free = svc_free;
    h->read_small_file = svc_read_small_file;
    h->list_dir = svc_list_dir;
    h->free_list = svc_free_list;
    h->get_config = svc_get_config;
    h->progress = svc_progress;
    h->cancelled = svc_cancelled;
    h->parallel_for = svc_parallel_for;
    h->thread_count = svc_thread_count;
    h->safetensors = safetensors_api();
    h->get_proc = svc_get_proc;
    h->json = qbh_json_api();
    qbh_services_13_fill(h);
    h->stats = qbh_stats_api();
}

void qbh_services_init(qbh_plugin *p)
{
    fill(&p->host, p);
}

static qb_host anon_host;
static pthread_once_t anon_once = PTHREAD_ONCE_INIT;

static void anon_init(void)
{
    fill(&anon_host, NULL);
}

const qb_host *qbh_services_anonymous(void)
{
    pthread_once(&anon_once, anon_init);
    return &anon_host;
}

/* The tables of qbh_services_named: a plugin record that carries only the
 * name (no config section, so get_config answers NULL) and its table. */
#define NAMED_MAX 8
static struct named {
    qbh_plugin who;
    qb_host host;
} named[NAMED_MAX];
static size_t n_named;
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

const qb_host *qbh_services_named(const char *who)
{
    const qb_host *h = NULL;
    size_t i;
    assert(who && strlen(who) < 32);
    pthread_mutex_lock(&named_lock);
    for (i = 0; i < n_named && !h; i++)
        if (strcmp(named[i].who.name, who) == 0)
            h = &named[i].host;
    if (!h && n_named < NAMED_MAX) {
        struct named *e = &named[n_named];
        /* a static copy of the name: never freed, like the table */
        static char names[NAMED_MAX][32];
        snprintf(names[n_named], sizeof names[n_named], "%s", who);
        e->who.name = names[n_named];
        fill(&e->host, &e->who);
        n_named++;
        h = &e->host;
    }
    pthread_mutex_unlock(&named_lock);
    assert(h); /* a handful of host components ask: NAMED_MAX is plenty */
    return h;
}
