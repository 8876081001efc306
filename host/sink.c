/*
 * quantbridge host — the output sink (qb_sink) over the temporary output
 * directory. Writers never see paths: they create plain file names here.
 * Writes are buffered (1 MiB per file), hashed with SHA-256 as they pass
 * (no re-read). Durability without stalls: every QBH_SINK_WB bytes of a
 * file, and at its close, writeback is started (sync_file_range WRITE,
 * which does not wait); the fsyncs themselves are deferred to
 * qbh_sink_sync, which the host calls before renaming the directory into
 * place, so no file becomes visible before all are on disk. (An fsync at
 * each close blocked the conversion: 41 fsyncs, 2.0 s of a 27 s 2-thread
 * 7B conversion with every thread idle.) At most QBH_SINK_PENDING closed
 * files keep their descriptor for that; older ones are fsynced then.
 */
#include "qbh.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#define QBH_SINK_BUF (1u << 20)
#define QBH_SINK_NAME_MAX 255
#define QBH_SINK_WB ((uint64_t)32 << 20)
#define QBH_SINK_PENDING 64

struct qb_sink_file {
    qbh_sink *s;
    char *name;
    int fd;
    int failed;
    qb_status err;  /* status of the first failure */
    uint8_t *buf;
    size_t used;
    uint64_t bytes;
    uint64_t off; /* bytes handed to write(2) */
    uint64_t wb;  /* writeback started for [0, wb) */
    qbk_sha256 sha;
    qb_sink_file *prev, *next;
};

/* A closed file whose fsync is still due (see the top of this file). */
typedef struct qbh_sink_pending {
    int fd;
    char *name;
} qbh_sink_pending;

struct qbh_sink {
    qb_sink table;
    char *dir;
    char *shown;            /* directory named in messages (NULL: dir) */
    int dirfd;
    pthread_mutex_t mu;
    GHashTable *names;      /* every name created */
    qb_sink_file *open;     /* files not yet closed */
    size_t n_open, n_closed;
    uint64_t bytes;
    qbh_sink_pending pending[QBH_SINK_PENDING]; /* guarded by mu */
    size_t n_pending;
};

/* The temporary directory is gone by the time a user reads the message:
 * messages name the final output when the caller said which it is. */
static const char *shown(const qbh_sink *s)
{
    return s->shown ? s->shown : s->dir;
}

static qb_status io_error(qb_sink_file *f, int err, const char *what)
{
    f->failed = 1;
    f->err = (err == ENOSPC || err == EFBIG || err == EDQUOT) ? QB_E_NOSPACE : QB_E_IO;
    if (f->err == QB_E_NOSPACE)
        return qbh_error_set(QB_E_NOSPACE, "%s/%s: %s: %s (output device full or file size "
                             "limit reached)", shown(f->s), f->name, what, strerror(err));
    return qbh_error_set(QB_E_IO, "%s/%s: %s: %s", shown(f->s), f->name, what, strerror(err));
}

static qb_status write_all(qb_sink_file *f, const uint8_t *p, size_t n)
{
    while (n) {
        /* The test hook (testhooks.c) stands in for a device that fills up
         * after a known number of bytes; without it allow == n. */
        size_t allow = qbh_testhook_write_allow(n);
        ssize_t w;
        if (allow == 0)
            return io_error(f, ENOSPC, "write (test hook QUANTBRIDGE_TEST_WRITE_LIMIT)");
        w = write(f->fd, p, allow);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return io_error(f, errno, "write");
        if (w == 0)
            return io_error(f, ENOSPC, "write");
        p += w;
        n -= (size_t)w;
        f->off += (uint64_t)w;
    }
    if (f->off - f->wb >= QBH_SINK_WB) {
        /* start writeback of what is written, without waiting: the deferred
         * fsync then finds little left to do. Advisory: a failure here
         * shows again at that fsync. */
        (void)sync_file_range(f->fd, (off64_t)f->wb, (off64_t)(f->off - f->wb), SYNC_FILE_RANGE_WRITE);
        f->wb = f->off;
    }
    return QB_OK;
}

static qb_status flush(qb_sink_file *f)
{
    qb_status rc;
    if (!f->used)
        return QB_OK;
    rc = write_all(f, f->buf, f->used);
    f->used = 0;
    return rc;
}

static int name_ok(const char *n)
{
    size_t len;
    if (!n || !*n || n[0] == '.')
        return 0;
    len = strlen(n);
    if (len > QBH_SINK_NAME_MAX || strchr(n, '/'))
        return 0;
    return 1;
}

static qb_status sink_create(void *handle, const char *name, qb_sink_file **out)
{
    qbh_sink *s = handle;
    qb_sink_file *f = NULL;
    qb_status rc = QB_OK;

    *out = NULL;
    if (!name_ok(name))
        return qbh_error_set(QB_E_INVALID, "%s: output file name '%s' is not a plain name "
                             "(no '/', not starting with '.')", shown(s), name ? name : "(null)");
    if (qbh_cancel_requested())
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    if (qbh_testhook_fault(QBH_FAULT_CREATE, "sink->create"))
        return qbh_error_set(QB_E_IO, "%s/%s: cannot create: no space left on device (injected "
                             "by plugin-check)", shown(s), name);
    pthread_mutex_lock(&s->mu);
    if (g_hash_table_contains(s->names, name)) {
        rc = qbh_error_set(QB_E_INVALID, "%s: output file %s created twice", shown(s), name);
        goto out;
    }
    f = qbh_calloc(1, sizeof *f);
    if (f) {
        f->name = qbh_strdup(name);
        f->buf = qbh_alloc(QBH_SINK_BUF);
    }
    if (!f || !f->name || !f->buf) {
        rc = qbh_error_set(QB_E_NOMEM, "%s/%s: out of memory", shown(s), name);
        goto out;
    }
    f->s = s;
    f->fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f->fd < 0) {
        rc = qbh_error_set(QB_E_IO, "%s/%s: %s", shown(s), name, strerror(errno));
        goto out;
    }
    qbk_sha256_init(&f->sha);
    g_hash_table_add(s->names, g_strdup(name));
    f->next = s->open;
    if (s->open)
        s->open->prev = f;
    s->open = f;
    s->n_open++;
    *out = f;
    f = NULL;
out:
    pthread_mutex_unlock(&s->mu);
    if (f) {
        qbh_free(f->name);
        qbh_free(f->buf);
        qbh_free(f);
    }
    return rc;
}

static qb_status sink_write(qb_sink_file *f, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    qb_status rc;
    if (!f)
        return qbh_error_set(QB_E_INVALID, "sink write on a NULL file");
    if (f->failed)
        return qbh_error_set(QB_E_IO, "%s/%s: write after an earlier error", shown(f->s), f->name);
    if (qbh_cancel_requested()) {
        f->failed = 1;
        f->err = QB_E_CANCELLED;
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    }
    if (qbh_testhook_fault(QBH_FAULT_WRITE, "sink->write")) {
        f->failed = 1;
        f->err = QB_E_IO;
        return qbh_error_set(QB_E_IO, "%s/%s: input/output error (injected by plugin-check)",
                             shown(f->s), f->name);
    }
    qbk_sha256_update(&f->sha, p, len);
    f->bytes += len;
    if (len >= QBH_SINK_BUF) {
        rc = flush(f);
        return rc ? rc : write_all(f, p, len);
    }
    if (f->used + len > QBH_SINK_BUF) {
        rc = flush(f);
        if (rc)
            return rc;
    }
    memcpy(f->buf + f->used, p, len);
    f->used += len;
    return QB_OK;
}

static void unlink_open(qb_sink_file *f)
{
    qbh_sink *s = f->s;
    pthread_mutex_lock(&s->mu);
    if (f->prev)
        f->prev->next = f->next;
    else
        s->open = f->next;
    if (f->next)
        f->next->prev = f->prev;
    s->n_open--;
    pthread_mutex_unlock(&s->mu);
}

static void release(qb_sink_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    qbh_free(f->name);
    qbh_free(f->buf);
    qbh_free(f);
}

/* fsync and close one pending file; an error names it. */
static qb_status sync_pending(qbh_sink *s, qbh_sink_pending *p)
{
    qb_status rc = QB_OK;
    if (fsync(p->fd) != 0) {
        int e = errno;
        rc = qbh_error_set((e == ENOSPC || e == EDQUOT) ? QB_E_NOSPACE : QB_E_IO, "%s/%s: fsync: %s",
                           shown(s), p->name, strerror(e));
    }
    if (close(p->fd) != 0 && rc == QB_OK)
        rc = qbh_error_set(QB_E_IO, "%s/%s: close: %s", shown(s), p->name, strerror(errno));
    p->fd = -1;
    qbh_free(p->name);
    p->name = NULL;
    return rc;
}

/* Hands f's descriptor to the pending list (its fsync waits for
 * qbh_sink_sync); when the list is full, the oldest entry is synced now. */
static qb_status defer_fsync(qb_sink_file *f)
{
    qbh_sink *s = f->s;
    qbh_sink_pending oldest = {-1, NULL};
    qb_status rc = QB_OK;
    char *name = qbh_strdup(f->name);
    if (!name)
        return qbh_error_set(QB_E_NOMEM, "%s/%s: out of memory", shown(s), f->name);
    pthread_mutex_lock(&s->mu);
    if (s->n_pending == QBH_SINK_PENDING) {
        oldest = s->pending[0];
        memmove(s->pending, s->pending + 1, (QBH_SINK_PENDING - 1) * sizeof *s->pending);
        s->n_pending--;
    }
    s->pending[s->n_pending].fd = f->fd;
    s->pending[s->n_pending].name = name;
    s->n_pending++;
    f->fd = -1;
    pthread_mutex_unlock(&s->mu);
    if (oldest.fd >= 0) {
        rc = sync_pending(s, &oldest);
        if (rc != QB_OK)
            f->failed = 1;
    }
    return rc;
}

static qb_status sink_close(qb_sink_file *f, uint64_t *bytes, uint8_t sha256[32])
{
    qb_status rc = QB_OK;
    if (!f)
        return qbh_error_set(QB_E_INVALID, "sink close on a NULL file");
    unlink_open(f);
    /* After a failed write the writer usually closes and then returns the
     * write's status: keep that message, return the same status. */
    if (f->failed)
        rc = f->err ? f->err : QB_E_IO;
    if (rc == QB_OK && qbh_testhook_fault(QBH_FAULT_CLOSE, "sink->close"))
        rc = qbh_error_set(QB_E_IO, "%s/%s: input/output error at close (injected by "
                           "plugin-check)", shown(f->s), f->name);
    if (rc == QB_OK)
        rc = flush(f);
    if (rc == QB_OK) {
        if (f->off > f->wb)
            (void)sync_file_range(f->fd, (off64_t)f->wb, 0, SYNC_FILE_RANGE_WRITE);
        rc = defer_fsync(f);
    }
    if (rc == QB_OK) {
        uint8_t d[32];
        qbk_sha256_final(&f->sha, d);
        if (sha256)
            memcpy(sha256, d, 32);
        if (bytes)
            *bytes = f->bytes;
        pthread_mutex_lock(&f->s->mu);
        f->s->n_closed++;
        f->s->bytes += f->bytes;
        pthread_mutex_unlock(&f->s->mu);
    }
    release(f);
    return rc;
}

/* ABI 1.3: create, write, close in one call (qb_writer.h). */
static qb_status sink_write_file(void *handle, const char *name, const void *buf, size_t len,
                                 uint8_t sha256[32])
{
    qb_sink_file *f = NULL;
    qb_status rc = sink_create(handle, name, &f);
    if (rc)
        return rc;
    rc = sink_write(f, buf, len);
    if (rc) {
        /* close keeps the write's message and status (sink_close) */
        sink_close(f, NULL, NULL);
        return rc;
    }
    return sink_close(f, NULL, sha256);
}

qb_status qbh_sink_open(const char *dir, qbh_sink **out)
{
    qbh_sink *s;
    *out = NULL;
    s = qbh_calloc(1, sizeof *s);
    if (!s)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    s->dir = qbh_strdup(dir);
    s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!s->dir || s->dirfd < 0) {
        qb_status rc = s->dir ? qbh_error_set(QB_E_IO, "%s: %s", dir, strerror(errno))
                              : qbh_error_set(QB_E_NOMEM, "out of memory");
        if (s->dirfd >= 0)
            close(s->dirfd);
        qbh_free(s->dir);
        qbh_free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    s->table.struct_size = sizeof s->table;
    s->table.handle = s;
    s->table.create = sink_create;
    s->table.write = sink_write;
    s->table.close = sink_close;
    s->table.write_file = sink_write_file;
    *out = s;
    return QB_OK;
}

qb_status qbh_sink_set_shown(qbh_sink *s, const char *name)
{
    char *c = qbh_strdup(name);
    if (!c)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    qbh_free(s->shown);
    s->shown = c;
    return QB_OK;
}

const qb_sink *qbh_sink_table(qbh_sink *s)
{
    return &s->table;
}

size_t qbh_sink_open_files(qbh_sink *s)
{
    return s->n_open;
}

size_t qbh_sink_closed_files(qbh_sink *s)
{
    return s->n_closed;
}

uint64_t qbh_sink_bytes(qbh_sink *s)
{
    return s->bytes;
}

int qbh_sink_has_file(qbh_sink *s, const char *name)
{
    int yes;
    pthread_mutex_lock(&s->mu);
    yes = g_hash_table_contains(s->names, name);
    pthread_mutex_unlock(&s->mu);
    return yes;
}

qb_status qbh_sink_sync(qbh_sink *s)
{
    size_t i;
    qb_status rc = QB_OK;
    /* every file before the directory: on return all bytes and names of
     * the temporary directory are on disk */
    for (i = 0; i < s->n_pending; i++) {
        qb_status r = sync_pending(s, &s->pending[i]);
        if (rc == QB_OK)
            rc = r;
    }
    s->n_pending = 0;
    if (rc != QB_OK)
        return rc;
    if (fsync(s->dirfd) != 0)
        return qbh_error_set(QB_E_IO, "%s: fsync: %s", shown(s), strerror(errno));
    return QB_OK;
}

void qbh_sink_free(qbh_sink *s)
{
    if (!s)
        return;
    while (s->open) {
        qb_sink_file *f = s->open;
        s->open = f->next;
        release(f);
    }
    while (s->n_pending) {
        qbh_sink_pending *p = &s->pending[--s->n_pending];
        close(p->fd);
        qbh_free(p->name);
    }
    g_hash_table_destroy(s->names);
    pthread_mutex_destroy(&s->mu);
    close(s->dirfd);
    qbh_free(s->dir);
    qbh_free(s->shown);
    qbh_free(s);
}
