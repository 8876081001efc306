/* See qbt_fs.h. */
#define _GNU_SOURCE
#include "qbt_fs.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void qbt_mkdir_p(const char *path)
{
    char *buf = strdup(path);
    size_t i, n = strlen(path);
    ck_assert_ptr_nonnull(buf);
    for (i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                ck_abort_msg("mkdir %s: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    free(buf);
}

char *qbt_mkdtemp(const char *tag)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    char *tmpl = NULL;
    if (!base || !*base)
        base = "/tmp";
    qbt_mkdir_p(base);
    ck_assert(asprintf(&tmpl, "%s/%s-XXXXXX", base, tag) > 0);
    ck_assert_msg(mkdtemp(tmpl) != NULL, "mkdtemp %s: %s", tmpl, strerror(errno));
    return tmpl;
}

char *qbt_tmpdir(const char *tag)
{
    return qbt_mkdtemp(tag);
}

static char *scratch[64];
static size_t n_scratch;

/* atexit: removes and frees every qbt_scratch directory. */
static void scratch_cleanup(void)
{
    while (n_scratch > 0) {
        char *d = scratch[--n_scratch];
        qbt_rmtree(d);
        free(d);
    }
}

const char *qbt_scratch(const char *tag)
{
    ck_assert_msg(n_scratch < sizeof scratch / sizeof scratch[0], "qbt_scratch: too many");
    static int registered;
    if (!registered)
        registered = atexit(scratch_cleanup) == 0;
    scratch[n_scratch] = qbt_mkdtemp(tag);
    return scratch[n_scratch++];
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

void qbt_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *qbt_path(const char *a, const char *b)
{
    char *p = NULL;
    ck_assert(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

void qbt_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

void qbt_write_file(const char *path, const char *text)
{
    qbt_write_bytes(path, text, strlen(text));
}

char *qbt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    ck_assert(fseek(f, 0, SEEK_END) == 0);
    n = ftell(f);
    ck_assert(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
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

void qbt_copy_file(const char *from, const char *to, size_t len)
{
    size_t n = 0;
    char *b = qbt_read_file(from, &n);
    ck_assert_msg(b != NULL, "cannot read %s", from);
    qbt_write_bytes(to, b, len < n ? len : n);
    free(b);
}

void qbt_copy_dir(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *e;
    ck_assert_msg(d != NULL, "opendir %s: %s", from, strerror(errno));
    ck_assert_msg(mkdir(to, 0755) == 0, "mkdir %s: %s", to, strerror(errno));
    while ((e = readdir(d))) {
        char *s, *t;
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        s = qbt_path(from, e->d_name);
        t = qbt_path(to, e->d_name);
        ck_assert_int_eq(stat(s, &st), 0);
        if (S_ISDIR(st.st_mode))
            qbt_copy_dir(s, t);
        else
            qbt_copy_file(s, t, (size_t)-1);
        free(s);
        free(t);
    }
    closedir(d);
}
