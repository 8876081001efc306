/*
 * quantbridge host — safetensors: the checkpoint of a Hugging Face
 * directory (index + shards, model.safetensors, or a single file).
 *
 * Shard naming facts (huggingface_hub serialization/_base.py,
 * split_state_dict_into_shards_factory): shards are
 * model-0000i-of-0000n.safetensors listed in model.safetensors.index.json
 * as {"metadata": {...}, "weight_map": {tensor: shard}}; a tensor is never
 * split across shards.
 */
#define _XOPEN_SOURCE 700 /* realpath, strdup, O_CLOEXEC, lstat */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "qbk_safetensors.h"
#include "qbk_st_internal.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"
/* Index files of the largest public checkpoints are a few MiB. */
#define ST_MAX_INDEX (256u * 1024u * 1024u)

static char *st_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = qbk_malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static int st_str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks that `path` resolves (through any symlinks) to a file directly or
 * indirectly inside `realdir`, so a shard can never read outside the model
 * directory. */
static qb_status st_check_inside(qbk_st_err *err, const char *realdir, const char *path)
{
    char *rp = realpath(path, NULL);
    size_t n = strlen(realdir);
    qb_status st = QB_OK;

    if (!rp)
        return qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                            errno == ENOENT ? "file does not exist" : strerror(errno));
    if (strncmp(rp, realdir, n) != 0 || (n > 1 && rp[n] != '/') || rp[n] == '\0')
        st = qbk_st_fail(err, QB_E_MISMATCH, "%s: resolves to %s, outside the model directory %s",
                          path, rp, realdir);
    free(rp); /* realpath memory is libc's */
    return st;
}

/* Reads a whole small regular file into a NUL-terminated malloc buffer. */
static qb_status st_read_text(qbk_st_err *err, const char *path, char **out)
{
    int fd;
    struct stat sb;
    char *buf = NULL;
    size_t got = 0;
    qb_status st = QB_OK;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot open: %s",
                            path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = qbk_st_fail(err, QB_E_IO, "%s: not a readable regular file", path);
        goto out;
    }
    if ((uint64_t)sb.st_size > ST_MAX_INDEX) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: %lld bytes, larger than an index may be", path,
                          (long long)sb.st_size);
        goto out;
    }
    buf = qbk_malloc((size_t)sb.st_size + 1);
    if (!buf) {
        st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            st = qbk_st_fail(err, QB_E_IO, "%s: read failed: %s", path,
                              r < 0 ? strerror(errno) : "file shrank");
            goto out;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    if (memchr(buf, 0, got)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: contains a NUL byte", path);
        goto out;
    }
    *out = buf;
    buf = NULL;
out:
    qbk_free(buf);
    close(fd);
    return st;
}

/* Loads one file of the directory after the containment check. */
static qb_status st_load_member(qbk_st_err *err, qb_st_set *set, const char *dir,
                                const char *realdir, const char *name, int want_meta)
{
    char *path = st_join(dir, name);
    qb_status st;
    if (!path)
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", dir);
    st = st_check_inside(err, realdir, path);
    if (st == QB_OK)
        st = qbk_st_file_load(err, set, path, want_meta);
    qbk_free(path);
    return st;
}

/* The sharded case: the index decides which files and tensors exist. */
static qb_status st_open_index(qbk_st_err *err, const char *dir, const char *realdir,
                               const char *idx_path, qb_st_set *set)
{
    char *text = NULL, *shard_path = NULL;
    cJSON *root = NULL;
    const cJSON *wm, *c;
    const char **shards = NULL;
    size_t n_map = 0, n_shards = 0, i;
    qb_status st = QB_OK;
    qbk_json_fail jf;

    st = st_read_text(err, idx_path, &text);
    if (st != QB_OK)
        goto out;
    /* The one strict JSON reading (qbk_json.h): a tensor listed twice in
     * weight_map is its duplicate key. */
    if (qbk_json_parse_text(text, strlen(text), NULL, &root, &jf) != QB_OK) {
        if (jf.rc == QB_E_NOMEM)
            st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", idx_path);
        else if (jf.dup_key[0] && strcmp(jf.dup_in, "weight_map") == 0)
            st = qbk_st_fail(err, QB_E_FORMAT, "%s: weight_map: tensor '%s' listed twice",
                             idx_path, jf.dup_key);
        else if (jf.dup_key[0] && !jf.dup_in[0])
            st = qbk_st_fail(err, QB_E_FORMAT, "%s: duplicate key '%s'", idx_path, jf.dup_key);
        else {
            qbk_json_fail_text(&jf, idx_path, err->msg, sizeof err->msg);
            st = QB_E_FORMAT;
        }
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: not a JSON object", idx_path);
        goto out;
    }
    wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: no weight_map object", idx_path);
        goto out;
    }
    for (c = wm->child; c; c = c->next) {
        const char *s = c->valuestring;
        if (!cJSON_IsString(c)) {
            st = qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': shard is not a string", idx_path,
                              c->string);
            goto out;
        }
        /* A shard is a plain file name in the directory: nothing else may
         * be named by a downloaded index. */
        if (!*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
            st = qbk_st_fail(err, QB_E_MISMATCH,
                              "%s: tensor '%s': shard '%s' is not a file name inside the directory",
                              idx_path, c->string, s);
            goto out;
        }
        n_map++;
    }
    shards = qbk_malloc((n_map ? n_map : 1) * sizeof(*shards));
    if (!shards) {
        st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", idx_path);
        goto out;
    }
    for (c = wm->child; c; c = c->next)
        shards[n_shards++] = c->valuestring;
    qsort(shards, n_shards, sizeof(*shards), st_str_cmp);
    for (i = 0, n_shards = n_map ? 1 : 0; i + 1 < n_map; i++)
        if (strcmp(shards[i + 1], shards[n_shards - 1]) != 0)
            shards[n_shards++] = shards[i + 1];

    for (i = 0; i < n_shards; i++) {
        st = st_load_member(err, set, dir, realdir, shards[i], i == 0);
        if (st != QB_OK)
            goto out;
    }
    st = qbk_st_set_index(err, set);
    if (st != QB_OK)
        goto out;

    /* Every mapped tensor in its shard; then equal counts make the map a
     * bijection, so no shard holds a tensor the index does not list. */
    for (c = wm->child; c; c = c->next) {
        const qb_st_tensor *t = qbk_safetensors_api()->find(set, c->string);
        qbk_free(shard_path);
        shard_path = st_join(dir, c->valuestring);
        if (!shard_path) {
            st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", idx_path);
            goto out;
        }
        if (!t) {
            st = qbk_st_fail(err, QB_E_MISMATCH, "%s: tensor '%s': listed for %s but not in any shard",
                              idx_path, c->string, shard_path);
            goto out;
        }
        if (strcmp(t->file, shard_path) != 0) {
            st = qbk_st_fail(err, QB_E_MISMATCH, "%s: tensor '%s': listed for %s but stored in %s",
                              idx_path, c->string, shard_path, t->file);
            goto out;
        }
    }
    if (set->n != n_map) {
        for (i = 0; i < set->n; i++)
            if (!cJSON_GetObjectItemCaseSensitive(wm, set->t[i].name))
                break;
        st = qbk_st_fail(err, QB_E_MISMATCH, "%s: tensor '%s': not listed in %s",
                          i < set->n ? set->t[i].file : dir, i < set->n ? set->t[i].name : "?",
                          idx_path);
        goto out;
    }
out:
    qbk_free(shard_path);
    qbk_free(shards);
    cJSON_Delete(root);
    qbk_free(text);
    return st;
}

/* Finds the one *.safetensors file of `dir`; QB_E_NOT_FOUND for none,
 * QB_E_MISMATCH for several. *name is malloc'd. */
static qb_status st_find_single(qbk_st_err *err, const char *dir, char **name)
{
    DIR *d;
    struct dirent *de;
    char *first = NULL;
    qb_status st = QB_OK;
    static const char ext[] = ".safetensors";
    const size_t el = sizeof(ext) - 1;

    *name = NULL;
    d = opendir(dir);
    if (!d)
        return qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot list: %s",
                            dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n <= el || strcmp(de->d_name + n - el, ext) != 0)
            continue;
        if (first) {
            /* readdir order is arbitrary; name both so the message is useful. */
            st = qbk_st_fail(err, QB_E_MISMATCH,
                              "%s: several .safetensors files (%s, %s) and no %s to choose", dir,
                              first, de->d_name, ST_INDEX_NAME);
            goto out;
        }
        first = qbk_strdup(de->d_name);
        if (!first) {
            st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
    }
    if (!first) {
        st = qbk_st_fail(err, QB_E_NOT_FOUND, "%s: no .safetensors file in the directory", dir);
        goto out;
    }
    *name = first;
    first = NULL;
out:
    qbk_free(first);
    closedir(d);
    return st;
}

qb_status qbk_st_open_dir(qbk_st_err *err, const char *dir, qb_st_set **out)
{
    qb_st_set *set = NULL;
    char *realdir = NULL, *idx = NULL, *single = NULL, *name = NULL;
    struct stat sb;
    qb_status st = QB_OK;

    *out = NULL;
    if (stat(dir, &sb) != 0) {
        st = qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", dir,
                          strerror(errno));
        goto out;
    }
    if (!S_ISDIR(sb.st_mode)) {
        st = qbk_st_fail(err, QB_E_INVALID, "%s: not a directory", dir);
        goto out;
    }
    realdir = realpath(dir, NULL);
    set = qbk_st_set_new();
    idx = st_join(dir, ST_INDEX_NAME);
    single = st_join(dir, ST_SINGLE_NAME);
    if (!realdir || !set || !idx || !single) {
        st = qbk_st_fail(err, realdir ? QB_E_NOMEM : QB_E_IO, "%s: cannot resolve or out of memory",
                          dir);
        goto out;
    }
    if (lstat(idx, &sb) == 0) {
        /* the index decides which files are read: it must not come from
         * outside either */
        st = st_check_inside(err, realdir, idx);
        if (st == QB_OK)
            st = st_open_index(err, dir, realdir, idx, set);
        goto out;
    }
    if (errno != ENOENT) {
        st = qbk_st_fail(err, QB_E_IO, "%s: %s", idx, strerror(errno));
        goto out;
    }
    if (lstat(single, &sb) == 0) {
        st = st_load_member(err, set, dir, realdir, ST_SINGLE_NAME, 1);
    } else {
        st = st_find_single(err, dir, &name);
        if (st == QB_OK)
            st = st_load_member(err, set, dir, realdir, name, 1);
    }
    if (st == QB_OK)
        st = qbk_st_set_index(err, set);
out:
    if (st == QB_OK) {
        *out = set;
        set = NULL;
    }
    qbk_st_set_free(set);
    free(realdir); /* realpath memory is libc's */
    qbk_free(idx);
    qbk_free(single);
    qbk_free(name);
    return st;
}
