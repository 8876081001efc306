/*
 * quantbridge host — temporary directories left by runs that died.
 *
 * A run killed with SIGKILL (or a power cut) cannot clean up: its
 * .<name>.qbtmp-<pid>-<rand> directory stays beside the output, with the
 * marker file outdir.c wrote (pid, process start time, boot id). The next
 * convert of the same output removes such a directory only when it can
 * prove the owner is gone; a pid alone proves nothing (pids are reused),
 * so a live pid must also show the recorded start time in the recorded
 * boot to count as the owner. Anything unproven is left alone.
 */
#include "qbh.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#define QBH_TMP_MARKER ".quantbridge-tmp"
#define QBH_MARKER_MAX 8192

qb_status qbh_proc_start_time(long pid, unsigned long long *out)
{
    char path[64], buf[1024], *p;
    ssize_t n;
    int fd, field;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return QB_E_NOT_FOUND;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return QB_E_NOT_FOUND;
    buf[n] = '\0';
    /* proc(5): field 2 (comm) is in parentheses and may hold spaces or
     * ')': fields after it are counted from the last ')'. starttime is
     * field 22. */
    p = strrchr(buf, ')');
    if (!p)
        return QB_E_NOT_FOUND;
    p++;
    for (field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    if (!p)
        return QB_E_NOT_FOUND;
    *out = strtoull(p + 1, NULL, 10);
    return QB_OK;
}

void qbh_boot_id(char out[40])
{
    ssize_t n;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    out[0] = '\0';
    if (fd < 0)
        return;
    n = read(fd, out, 39);
    close(fd);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

typedef struct marker {
    long pid;
    int have_start;
    unsigned long long start;
    char boot[40];
} marker;

/* Parses the marker's key=value lines; 0 when it names a pid. */
static int marker_parse(const char *text, marker *m)
{
    gchar **lines = g_strsplit(text, "\n", -1);
    size_t i;
    memset(m, 0, sizeof *m);
    for (i = 0; lines[i]; i++) {
        const char *l = lines[i];
        if (strncmp(l, "pid=", 4) == 0)
            m->pid = strtol(l + 4, NULL, 10);
        else if (strncmp(l, "proc_start=", 11) == 0) {
            m->start = strtoull(l + 11, NULL, 10);
            m->have_start = 1;
        } else if (strncmp(l, "boot_id=", 8) == 0)
            g_strlcpy(m->boot, l + 8, sizeof m->boot);
    }
    g_strfreev(lines);
    return m->pid > 0 ? 0 : -1;
}

/* 1 with a reason in why[] when the marker's owner provably is gone. */
static int owner_gone(const marker *m, char *why, size_t n)
{
    char boot[40];
    unsigned long long st;
    qbh_boot_id(boot);
    if (m->boot[0] && boot[0] && strcmp(m->boot, boot) != 0) {
        snprintf(why, n, "left by pid %ld before the last reboot", m->pid);
        return 1;
    }
    if (kill((pid_t)m->pid, 0) != 0 && errno == ESRCH) {
        snprintf(why, n, "left by pid %ld, which is no longer running", m->pid);
        return 1;
    }
    if (m->have_start && qbh_proc_start_time(m->pid, &st) == QB_OK && st != m->start) {
        snprintf(why, n, "left by pid %ld started at tick %llu; that pid now belongs to a "
                 "process started at tick %llu", m->pid, m->start, st);
        return 1;
    }
    snprintf(why, n, "its owner, pid %ld, is still running", m->pid);
    return 0;
}

int qbh_outdir_reap_stale(const char *output)
{
    gchar *trimmed = g_strdup(output), *parent, *base, *prefix;
    size_t len = strlen(trimmed), plen;
    DIR *d;
    struct dirent *e;
    int removed = 0;

    while (len > 1 && trimmed[len - 1] == '/')
        trimmed[--len] = '\0';
    parent = g_path_get_dirname(trimmed);
    base = g_path_get_basename(trimmed);
    prefix = g_strdup_printf(".%s.qbtmp-", base);
    plen = strlen(prefix);
    d = opendir(parent);
    while (d && (e = readdir(d))) {
        gchar *path, *mpath, *text = NULL;
        struct stat st;
        marker m;
        char why[256];
        if (strncmp(e->d_name, prefix, plen) != 0)
            continue;
        path = g_build_filename(parent, e->d_name, NULL);
        mpath = g_build_filename(path, QBH_TMP_MARKER, NULL);
        /* Only our own plain directories: never follow a symlink, never
         * touch another user's files. */
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
            qbh_log(QB_LOG_INFO, NULL, "%s: not a directory of this user; left alone", path);
        } else if (lstat(mpath, &st) != 0 || !S_ISREG(st.st_mode) ||
                   st.st_size > QBH_MARKER_MAX ||
                   !g_file_get_contents(mpath, &text, NULL, NULL) || marker_parse(text, &m)) {
            qbh_log(QB_LOG_INFO, NULL, "%s: no readable marker; not provably stale, left alone",
                    path);
        } else if (m.pid == (long)getpid()) {
            /* ours (cannot happen before begin; harmless) */
        } else if (!owner_gone(&m, why, sizeof why)) {
            qbh_log(QB_LOG_WARN, NULL, "temporary directory %s left alone: %s", path, why);
        } else if (qbh_rmtree(path) == QB_OK) {
            fprintf(stderr, "quantbridge: removed stale temporary directory %s (%s)\n", path,
                    why);
            removed++;
        } else {
            qbh_log(QB_LOG_WARN, NULL, "could not remove stale temporary directory %s: %s",
                    path, qbh_error_message());
            qbh_error_clear();
        }
        g_free(text);
        g_free(mpath);
        g_free(path);
    }
    if (d)
        closedir(d);
    g_free(prefix);
    g_free(base);
    g_free(parent);
    g_free(trimmed);
    return removed;
}
