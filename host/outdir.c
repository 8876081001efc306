/*
 * quantbridge host — output safety: where a conversion may write, the
 * temporary directory it writes into, and the final rename.
 *
 * The final path is touched only by rename(2) after the writer's finish
 * succeeded, so a failure, a crash or a signal leaves it as it was. With
 * --overwrite the old and new outputs are exchanged atomically at that
 * moment (renameat2 RENAME_EXCHANGE) and the old one deleted; where the
 * filesystem cannot exchange, the old one is moved aside just before the
 * rename and deleted after it.
 */
#include "qbh.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#define QBH_TMP_MARKER ".quantbridge-tmp"

/* `p` without trailing slashes ("out/" names "out", whose parent is ".",
 * not "out"); "/" stays "/". New string (qbh_free) or NULL on OOM. */
static char *strip_slashes(const char *p)
{
    char *c = qbh_strdup(p);
    size_t n;
    if (!c)
        return NULL;
    n = strlen(c);
    while (n > 1 && c[n - 1] == '/')
        c[--n] = '\0';
    return c;
}

/* realpath of `p`, or, when p does not exist, realpath(parent)/basename. */
static qb_status resolve(const char *p, int must_exist, char **out)
{
    char buf[PATH_MAX];
    gchar *parent, *base;
    *out = NULL;
    if (realpath(p, buf)) {
        *out = qbh_strdup(buf);
        return *out ? QB_OK : qbh_error_set(QB_E_NOMEM, "out of memory");
    }
    if (errno != ENOENT || must_exist)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", p,
                             strerror(errno));
    parent = g_path_get_dirname(p);
    base = g_path_get_basename(p);
    if (!realpath(parent, buf)) {
        qb_status rc = qbh_error_set(QB_E_NOT_FOUND, "%s: parent directory %s: %s", p, parent,
                                     strerror(errno));
        g_free(parent);
        g_free(base);
        return rc;
    }
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0) {
        g_free(parent);
        g_free(base);
        return qbh_error_set(QB_E_INVALID, "%s: not usable as an output name", p);
    }
    *out = g_strcmp0(buf, "/") == 0 ? g_strconcat("/", base, NULL)
                                     : g_strconcat(buf, "/", base, NULL);
    {
        char *c = qbh_strdup(*out);
        g_free(*out);
        *out = c;
    }
    g_free(parent);
    g_free(base);
    return *out ? QB_OK : qbh_error_set(QB_E_NOMEM, "out of memory");
}

/* 1 when `inner` is `outer` or lies below it (both canonical). */
static int is_within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    if (strcmp(outer, "/") == 0)
        return 1;
    return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

static int dir_is_empty(const char *path, int *err)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int empty = 1;
    *err = 0;
    if (!d) {
        *err = errno;
        return 0;
    }
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

qb_status qbh_outdir_check(const char *source, const char *output, int overwrite)
{
    char *src = NULL, *out = NULL, *given = strip_slashes(output);
    struct stat st;
    qb_status rc;

    if (!given)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    rc = resolve(source, 1, &src);
    if (rc)
        goto done;
    rc = resolve(given, 0, &out);
    if (rc)
        goto done;
    if (strcmp(src, out) == 0) {
        rc = qbh_error_set(QB_E_INVALID, "output %s is the source itself", output);
    } else if (is_within(out, src)) {
        rc = qbh_error_set(QB_E_INVALID, "output %s is inside the source %s", output, source);
    } else if (is_within(src, out)) {
        rc = qbh_error_set(QB_E_INVALID, "output %s contains the source %s", output, source);
    } else if (lstat(out, &st) == 0) {
        int err = 0;
        if (!S_ISDIR(st.st_mode))
            rc = qbh_error_set(QB_E_INVALID, "output %s exists and is not a directory", output);
        else if (!dir_is_empty(out, &err) && !overwrite)
            rc = err ? qbh_error_set(QB_E_IO, "%s: %s", output, strerror(err))
                     : qbh_error_set(QB_E_INVALID,
                                     "output %s exists and is not empty (use --overwrite to "
                                     "replace it)", output);
    }
done:
    qbh_free(given);
    qbh_free(src);
    qbh_free(out);
    return rc;
}

static qb_status rm_at(int at, const char *name, const char *shown, int depth)
{
    struct stat st;
    if (depth > 64)
        return qbh_error_set(QB_E_IO, "%s: directory tree too deep to remove", shown);
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? QB_OK : qbh_error_set(QB_E_IO, "%s: %s", shown, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d;
        struct dirent *e;
        qb_status rc = QB_OK;
        if (fd < 0)
            return qbh_error_set(QB_E_IO, "%s: %s", shown, strerror(errno));
        d = fdopendir(fd);
        if (!d) {
            close(fd);
            return qbh_error_set(QB_E_IO, "%s: %s", shown, strerror(errno));
        }
        while ((e = readdir(d)) && rc == QB_OK)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                rc = rm_at(dirfd(d), e->d_name, shown, depth + 1);
        closedir(d);
        if (rc)
            return rc;
        if (unlinkat(at, name, AT_REMOVEDIR) != 0)
            return qbh_error_set(QB_E_IO, "%s: %s", shown, strerror(errno));
        return QB_OK;
    }
    if (unlinkat(at, name, 0) != 0 && errno != ENOENT)
        return qbh_error_set(QB_E_IO, "%s: %s", shown, strerror(errno));
    return QB_OK;
}

qb_status qbh_rmtree(const char *path)
{
    return rm_at(AT_FDCWD, path, path, 0);
}

static qb_status sibling_name(const char *output, const char *kind, char **out)
{
    gchar *parent = g_path_get_dirname(output), *base = g_path_get_basename(output), *p;
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint32_t)time(NULL) ^ (uint32_t)clock();
    p = g_strdup_printf("%s/.%s.%s-%ld-%08x", parent, base, kind, (long)getpid(), r);
    *out = qbh_strdup(p);
    g_free(p);
    g_free(parent);
    g_free(base);
    return *out ? QB_OK : qbh_error_set(QB_E_NOMEM, "out of memory");
}

qb_status qbh_outdir_begin(const char *output, int overwrite, qbh_outdir *od)
{
    gchar *marker = NULL, *text = NULL;
    qb_status rc;

    memset(od, 0, sizeof *od);
    od->overwrite = overwrite;
    od->final_path = strip_slashes(output);
    if (!od->final_path)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    rc = sibling_name(od->final_path, "qbtmp", &od->tmp_path);
    if (rc)
        goto out;
    if (mkdir(od->tmp_path, 0755) != 0) {
        rc = qbh_error_set(QB_E_IO, "%s: cannot create temporary directory: %s", od->tmp_path,
                           strerror(errno));
        qbh_free(od->tmp_path);
        od->tmp_path = NULL;
        goto out;
    }
    /* The marker tells a later run (or a person) whose leftover this is. */
    marker = g_build_filename(od->tmp_path, QBH_TMP_MARKER, NULL);
    /* pid, its start time and the boot let a later run prove this run is
     * gone before removing the directory (stale.c); a pid alone may have
     * been reused. */
    {
        unsigned long long start = 0;
        char boot[40];
        qbh_boot_id(boot);
        (void)qbh_proc_start_time((long)getpid(), &start);
        text = g_strdup_printf("quantbridge temporary output\npid=%ld\nproc_start=%llu\n"
                               "boot_id=%s\nstarted=%lld\nfinal=%s\n", (long)getpid(), start,
                               boot, (long long)time(NULL), output);
    }
    if (!g_file_set_contents(marker, text, -1, NULL))
        rc = qbh_error_set(QB_E_IO, "%s: cannot write marker file", marker);
out:
    g_free(marker);
    g_free(text);
    if (rc)
        qbh_outdir_abort(od);
    return rc;
}

static void sync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

qb_status qbh_outdir_commit(qbh_outdir *od)
{
    gchar *marker = g_build_filename(od->tmp_path, QBH_TMP_MARKER, NULL);
    gchar *parent = g_path_get_dirname(od->final_path);
    char *aside = NULL;
    struct stat st;
    qb_status rc = QB_OK;

    if (unlink(marker) != 0) {
        rc = qbh_error_set(QB_E_IO, "%s: %s", marker, strerror(errno));
        goto out;
    }
    sync_dir(od->tmp_path);
    if (lstat(od->final_path, &st) == 0) {
        int err = 0;
        if (!S_ISDIR(st.st_mode)) {
            rc = qbh_error_set(QB_E_INVALID, "output %s appeared as a non-directory meanwhile",
                               od->final_path);
            goto out;
        }
        if (!dir_is_empty(od->final_path, &err)) {
            if (!od->overwrite) {
                rc = qbh_error_set(QB_E_INVALID, "output %s became non-empty meanwhile",
                                   od->final_path);
                goto out;
            }
            /* One atomic step where the filesystem can (renameat2(2),
             * Linux >= 3.15): the new output takes the final path and the
             * old one takes the temp path, so no crash leaves the final
             * path empty; then the old one is deleted. */
            if (renameat2(AT_FDCWD, od->tmp_path, AT_FDCWD, od->final_path,
                          RENAME_EXCHANGE) == 0) {
                sync_dir(parent);
                if (qbh_rmtree(od->tmp_path) != QB_OK)
                    qbh_log(QB_LOG_WARN, NULL, "could not remove the old output, now at %s: %s",
                            od->tmp_path, qbh_error_message());
                qbh_free(od->tmp_path);
                od->tmp_path = NULL;
                goto out;
            }
            /* EINVAL/ENOSYS: no exchange here; move the old one aside. */
            rc = sibling_name(od->final_path, "qbold", &aside);
            if (rc)
                goto out;
            if (rename(od->final_path, aside) != 0) {
                rc = qbh_error_set(QB_E_IO, "cannot move old output %s aside: %s",
                                   od->final_path, strerror(errno));
                qbh_free(aside);
                aside = NULL;
                goto out;
            }
        }
    }
    /* rename(2) replaces an empty directory atomically. */
    if (rename(od->tmp_path, od->final_path) != 0) {
        int e = errno;
        if (aside && rename(aside, od->final_path) == 0) {
            qbh_free(aside);
            aside = NULL;
        }
        rc = qbh_error_set(QB_E_IO, "cannot rename %s to %s: %s", od->tmp_path, od->final_path,
                           strerror(e));
        goto out;
    }
    qbh_free(od->tmp_path);
    od->tmp_path = NULL;
    sync_dir(parent);
    if (aside && qbh_rmtree(aside) != QB_OK)
        qbh_log(QB_LOG_WARN, NULL, "could not remove the old output moved to %s: %s", aside,
                qbh_error_message());
out:
    qbh_free(aside);
    g_free(marker);
    g_free(parent);
    return rc;
}

void qbh_outdir_abort(qbh_outdir *od)
{
    if (!od)
        return;
    if (od->tmp_path && qbh_rmtree(od->tmp_path) != QB_OK)
        qbh_log(QB_LOG_WARN, NULL, "could not remove temporary directory %s",
                od->tmp_path);
    qbh_free(od->tmp_path);
    qbh_free(od->final_path);
    memset(od, 0, sizeof *od);
}

qb_status qbh_outdir_check_parent(const char *path, const char *what)
{
    char dir[4096];
    char *slash;
    struct stat st;
    size_t n = strlen(path);
    if (n >= sizeof dir)
        return qbh_error_set(QB_E_INVALID, "%s %s: path too long", what, path);
    memcpy(dir, path, n + 1);
    while (n > 1 && dir[n - 1] == '/') /* "out/" names out itself */
        dir[--n] = '\0';
    slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0)
        return qbh_error_set(QB_E_NOT_FOUND, "%s %s: directory %s: %s", what, path, dir,
                             strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return qbh_error_set(QB_E_INVALID, "%s %s: %s is not a directory", what, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return qbh_error_set(QB_E_IO, "%s %s: directory %s is not writable: %s", what, path, dir,
                             strerror(errno));
    return QB_OK;
}
