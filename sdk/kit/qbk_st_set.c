/*
 * quantbridge host — safetensors: the set of tensors (one file or the
 * shards of a checkpoint), its O(1) name index, the direct entry points
 * and the qb_st_api table adapting them to a qb_host.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "qbk_safetensors.h"
#include "qbk_st_internal.h"
#include "qbk_alloc.h"

qb_st_set *qbk_st_set_new(void)
{
    return qbk_calloc(1, sizeof(qb_st_set));
}

void qbk_st_set_free(qb_st_set *set)
{
    size_t i;
    if (!set)
        return;
    for (i = 0; i < set->n; i++)
        qbk_free((void *)set->t[i].name);
    for (i = 0; i < set->n_maps; i++) {
        munmap(set->maps[i].base, set->maps[i].len);
        qbk_free(set->maps[i].path);
    }
    for (i = 0; i < 2 * set->n_meta; i++)
        qbk_free(set->meta[i]);
    qbk_free(set->meta);
    qbk_free(set->maps);
    qbk_free(set->t);
    qbk_free(set->slots);
    qbk_free(set);
}

/* FNV-1a, 64-bit (constants from the FNV reference, Fowler/Noll/Vo). */
static uint64_t st_hash(const char *s)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        x ^= (uint8_t)*s;
        x *= 0x100000001b3ull;
    }
    return x;
}

qb_status qbk_st_set_index(qbk_st_err *err, qb_st_set *set)
{
    size_t ns = 16, i;

    while (ns < 2 * set->n)
        ns *= 2;
    qbk_free(set->slots);
    set->slots = qbk_calloc(ns, sizeof(*set->slots));
    set->n_slots = set->slots ? ns : 0;
    if (!set->slots)
        return qbk_st_fail(err, QB_E_NOMEM, "safetensors: out of memory for the tensor index");
    for (i = 0; i < set->n; i++) {
        size_t s = (size_t)st_hash(set->t[i].name) & (ns - 1);
        while (set->slots[s]) {
            const qb_st_tensor *o = &set->t[set->slots[s] - 1];
            if (strcmp(o->name, set->t[i].name) == 0)
                return qbk_st_fail(err, QB_E_MISMATCH, "%s: tensor '%s': also present in %s",
                                    set->t[i].file, set->t[i].name, o->file);
            s = (s + 1) & (ns - 1);
        }
        set->slots[s] = i + 1;
    }
    return QB_OK;
}

qb_status qbk_st_open_file(qbk_st_err *err, const char *path, qb_st_set **out)
{
    qb_st_set *set;
    qb_status st;

    *out = NULL;
    set = qbk_st_set_new();
    if (!set)
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    st = qbk_st_file_load(err, set, path, 1);
    if (st == QB_OK)
        st = qbk_st_set_index(err, set);
    if (st != QB_OK) {
        qbk_st_set_free(set);
        return st;
    }
    *out = set;
    return QB_OK;
}

static size_t st_count(const qb_st_set *set)
{
    return set ? set->n : 0;
}

static const qb_st_tensor *st_tensor(const qb_st_set *set, size_t i)
{
    return set && i < set->n ? &set->t[i] : NULL;
}

static const qb_st_tensor *st_find(const qb_st_set *set, const char *name)
{
    size_t s;
    if (!set || !name || !set->n_slots)
        return NULL;
    s = (size_t)st_hash(name) & (set->n_slots - 1);
    while (set->slots[s]) {
        const qb_st_tensor *t = &set->t[set->slots[s] - 1];
        if (strcmp(t->name, name) == 0)
            return t;
        s = (s + 1) & (set->n_slots - 1);
    }
    return NULL;
}

static const char *st_metadata(const qb_st_set *set, const char *key)
{
    size_t i;
    if (!set || !key)
        return NULL;
    for (i = 0; i < set->n_meta; i++)
        if (strcmp(set->meta[2 * i], key) == 0)
            return set->meta[2 * i + 1];
    return NULL;
}

const qb_st_tensor *qbk_st_find(const qb_st_set *set, const char *name)
{
    return st_find(set, name);
}

/* The host's table: the same parser, its message handed to h->set_error. */
static qb_status api_open_file(const qb_host *h, const char *path, qb_st_set **out)
{
    qbk_st_err err;
    qb_status st = qbk_st_open_file(&err, path, out);
    return st == QB_OK ? QB_OK : h->set_error(h, st, "%s", err.msg);
}

static qb_status api_open_dir(const qb_host *h, const char *dir, qb_st_set **out)
{
    qbk_st_err err;
    qb_status st = qbk_st_open_dir(&err, dir, out);
    return st == QB_OK ? QB_OK : h->set_error(h, st, "%s", err.msg);
}

static const qb_st_api st_api = {
    sizeof(qb_st_api), api_open_file, api_open_dir, qbk_st_set_free,
    st_count,          st_tensor,     st_find,      st_metadata,
};

const qb_st_api *qbk_safetensors_api(void)
{
    return &st_api;
}
