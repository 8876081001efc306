/*
 * Split GGUF sets (see gguf_split.h). Shard file names follow llama.cpp
 * llama_split_path: "%s-%05d-of-%05d.gguf" with a 1-based number, while
 * split.no is 0-based (docs/formats/gguf.md, "Split files").
 */
#include "gguf_split.h"

#include "gguf_kv.h"
#include "qbk_alloc.h"
#include "qbk_path.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SPLIT_MAX_SHARDS 99999 /* five digits in the file name */

static int all_digits(const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int gguf_split_parse_name(const char *name, size_t *prefix_len, int *no, int *count)
{
    static const size_t tail = 20; /* "-NNNNN-of-MMMMM.gguf" */
    size_t n = strlen(name);
    const char *s;
    if (n <= tail)
        return 0;
    s = name + n - tail;
    if (s[0] != '-' || memcmp(s + 6, "-of-", 4) != 0 || strcmp(s + 15, ".gguf") != 0 || !all_digits(s + 1, 5) ||
        !all_digits(s + 10, 5))
        return 0;
    *prefix_len = n - tail;
    *no = (int)strtol(s + 1, NULL, 10);
    *count = (int)strtol(s + 10, NULL, 10);
    return *no >= 1 && *count >= 1 && *no <= *count;
}

void gguf_model_close(gguf_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n_files; i++)
        gguf_file_close(m->files[i]);
    qbk_free(m->files);
    qbk_free(m->by_name);
    qbk_free(m);
}

const gguf_file *gguf_model_meta(const gguf_model *m)
{
    return m->files[0];
}

static int cmp_tinfo_name(const void *a, const void *b)
{
    return strcmp((*(const gguf_tinfo *const *)a)->name, (*(const gguf_tinfo *const *)b)->name);
}

const gguf_tinfo *gguf_model_find(const gguf_model *m, const char *name)
{
    size_t lo = 0, hi = m->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->by_name[mid]->name, name);
        if (c == 0)
            return m->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Split keys of one shard: -1 when absent. */
static qb_status split_keys(const qb_host *h, const gguf_file *f, int64_t *no, int64_t *count, int64_t *total)
{
    qb_status st;
    *no = *count = *total = -1;
    st = gguf_kv_int(h, f, "split.count", count);
    if (st == QB_E_NOT_FOUND)
        return QB_OK;
    if (st)
        return st;
    if ((st = gguf_kv_int(h, f, "split.no", no)) || (st = gguf_kv_int(h, f, "split.tensors.count", total))) {
        if (st == QB_E_NOT_FOUND)
            return h->set_error(h, QB_E_FORMAT, "%s: has split.count but lacks split.no or split.tensors.count", f->path);
        return st;
    }
    if (*count < 1 || *count > SPLIT_MAX_SHARDS || *no < 0 || *no >= *count || *total < 0)
        return h->set_error(h, QB_E_FORMAT, "%s: inconsistent split keys: split.no %lld, split.count %lld, split.tensors.count %lld",
                            f->path, (long long)*no, (long long)*count, (long long)*total);
    return QB_OK;
}

static qb_status index_tensors(const qb_host *h, gguf_model *m)
{
    size_t i, k = 0;
    uint64_t j;
    for (i = 0; i < m->n_files; i++)
        m->n_tensors += (size_t)m->files[i]->n_tensors;
    if (m->n_tensors == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: GGUF model holds no tensors", m->files[0]->path);
    m->by_name = qbk_malloc(m->n_tensors * sizeof(*m->by_name));
    if (!m->by_name)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", m->files[0]->path);
    for (i = 0; i < m->n_files; i++)
        for (j = 0; j < m->files[i]->n_tensors; j++)
            m->by_name[k++] = &m->files[i]->t[j];
    qsort(m->by_name, m->n_tensors, sizeof(*m->by_name), cmp_tinfo_name);
    for (i = 1; i < m->n_tensors; i++)
        if (strcmp(m->by_name[i - 1]->name, m->by_name[i]->name) == 0)
            return h->set_error(h, QB_E_MISMATCH, "%s and %s: tensor '%s' appears twice", m->by_name[i - 1]->file->path,
                                m->by_name[i]->file->path, m->by_name[i]->name);
    return QB_OK;
}

static qb_status open_set(const qb_host *h, gguf_model *m, gguf_file *given, const char *path, int64_t no,
                          int64_t count, int64_t total)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    size_t prefix_len;
    int name_no, name_count;
    int64_t i;
    uint64_t sum = 0;
    char *shard_path = NULL;
    qb_status st = QB_OK;

    if (!gguf_split_parse_name(base, &prefix_len, &name_no, &name_count) || name_no != no + 1 ||
        name_count != count) {
        gguf_file_close(given);
        return h->set_error(h, QB_E_FORMAT,
                            "%s: shard %lld of %lld by its split keys, but the file name is not <prefix>-%05lld-of-%05lld.gguf",
                            path, (long long)no + 1, (long long)count, (long long)no + 1, (long long)count);
    }
    m->files = qbk_calloc((size_t)count, sizeof(*m->files));
    /* room for "-%05lld-of-%05lld.gguf" with two 20-digit numbers */
    shard_path = qbk_malloc(dir_len + prefix_len + 64);
    if (!m->files || !shard_path) {
        gguf_file_close(given);
        qbk_free(shard_path);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    m->n_files = (size_t)count;
    m->files[no] = given;
    for (i = 0; i < count; i++) {
        int64_t sno, scount, stotal;
        if (i != no) {
            memcpy(shard_path, path, dir_len + prefix_len);
            snprintf(shard_path + dir_len + prefix_len, 64, "-%05lld-of-%05lld.gguf", (long long)i + 1,
                     (long long)count);
            st = gguf_file_open(h, shard_path, &m->files[i]);
            if (st == QB_E_NOT_FOUND)
                st = h->set_error(h, QB_E_NOT_FOUND, "%s: split set of %lld shards is incomplete: %s is missing", path,
                                  (long long)count, shard_path);
            if (st)
                goto out;
        }
        if ((st = split_keys(h, m->files[i], &sno, &scount, &stotal)))
            goto out;
        if (scount != count || sno != i || stotal != total) {
            st = h->set_error(h, QB_E_MISMATCH,
                              "%s: shard disagrees with %s: split.no %lld (expected %lld), split.count %lld (expected %lld), split.tensors.count %lld (expected %lld)",
                              m->files[i]->path, path, (long long)sno, (long long)i, (long long)scount,
                              (long long)count, (long long)stotal, (long long)total);
            goto out;
        }
        sum += m->files[i]->n_tensors;
    }
    if (sum != (uint64_t)total)
        st = h->set_error(h, QB_E_MISMATCH, "%s: split set holds %llu tensors, split.tensors.count says %lld", path,
                          (unsigned long long)sum, (long long)total);
out:
    qbk_free(shard_path);
    return st;
}

/* A directory must hold exactly one model: one plain .gguf file or the
 * shards of one set (opened through its first shard). */
static qb_status pick_in_dir(const qb_host *h, const char *dir, char **out)
{
    char **names = NULL;
    char *pick = NULL;
    size_t i, n_plain = 0, n_first = 0, n_shards = 0;
    qb_status st = h->list_dir(h, dir, &names);
    *out = NULL;
    if (st)
        return st;
    for (i = 0; names[i]; i++) {
        size_t len = strlen(names[i]), pl;
        int no, count;
        if (len < 5 || strcmp(names[i] + len - 5, ".gguf") != 0)
            continue;
        if (gguf_split_parse_name(names[i], &pl, &no, &count)) {
            n_shards++;
            if (no != 1)
                continue;
            n_first++;
        } else {
            n_plain++;
        }
        if (!pick)
            pick = names[i];
    }
    if (n_plain == 0 && n_first == 0 && n_shards > 0) {
        st = h->set_error(h, QB_E_NOT_FOUND, "%s: %zu split GGUF shard(s) but no first shard "
                          "(<prefix>-00001-of-NNNNN.gguf, which holds the metadata)", dir, n_shards);
    } else if (n_plain + n_first != 1 || (n_plain == 1 && n_shards > 0)) {
        st = h->set_error(h, QB_E_NOT_FOUND, "%s: expected exactly one GGUF model in the directory, found %zu file(s) and %zu split set(s)",
                          dir, n_plain, n_first);
    } else {
        *out = qbk_path_join(dir, pick);
        if (!*out)
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    }
    h->free_list(h, names);
    return st;
}

qb_status gguf_model_open(const qb_host *h, const char *path, gguf_model **out)
{
    gguf_model *m;
    gguf_file *f = NULL;
    char *picked = NULL;
    int64_t no, count, total;
    struct stat sb;
    qb_status st;

    *out = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if ((st = pick_in_dir(h, path, &picked)))
            return st;
        path = picked;
    }
    m = qbk_calloc(1, sizeof(*m));
    if (!m) {
        qbk_free(picked);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    if ((st = gguf_file_open(h, path, &f)))
        goto out;
    if ((st = split_keys(h, f, &no, &count, &total))) {
        gguf_file_close(f);
        goto out;
    }
    if (count < 0) {
        const char *slash = strrchr(path, '/');
        size_t pl;
        int nno, ncount;
        /* A shard name without split keys would silently drop the other
         * shards' tensors: refuse it. */
        if (gguf_split_parse_name(slash ? slash + 1 : path, &pl, &nno, &ncount) && ncount > 1) {
            st = h->set_error(h, QB_E_FORMAT, "%s: named as shard %d of %d but has no split.count key", path, nno,
                              ncount);
            gguf_file_close(f);
            goto out;
        }
        m->files = qbk_calloc(1, sizeof(*m->files));
        if (!m->files) {
            gguf_file_close(f);
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
            goto out;
        }
        m->n_files = 1;
        m->files[0] = f;
    } else if ((st = open_set(h, m, f, path, no, count, total))) {
        goto out;
    }
    st = index_tensors(h, m);
out:
    qbk_free(picked);
    if (st) {
        gguf_model_close(m);
        return st;
    }
    *out = m;
    return QB_OK;
}
