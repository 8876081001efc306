/*
 * quantbridge internal kit — safetensors parser internals shared by its .c files.
 * Not part of any public contract.
 */
#ifndef QBK_ST_INTERNAL_H
#define QBK_ST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_safetensors.h>

#include "qbk_safetensors.h"

/* One mapped file. path is owned; base/len describe the read-only mapping. */
typedef struct qbk_st_map {
    char *path;
    void *base;
    size_t len;
} qbk_st_map;

struct qb_st_set {
    qbk_st_map *maps; /* files in load order */
    size_t n_maps, cap_maps;
    qb_st_tensor *t; /* ordered by (file, offset); names owned */
    size_t n, cap;
    size_t *slots; /* open-addressing hash: tensor index + 1, 0 = empty */
    size_t n_slots; /* power of two, >= 2 * n */
    char **meta; /* key, value pairs of the first file's __metadata__ */
    size_t n_meta;
};

/* New empty set, or NULL when out of memory. */
qb_st_set *qbk_st_set_new(void);

/* Maps `path`, validates its header strictly (qb_safetensors.h) and appends
 * its tensors to `set` in offset order. When `want_meta` is nonzero and the
 * set has no metadata yet, the file's __metadata__ becomes the set's.
 * Returns QB_OK or QB_E_NOT_FOUND / QB_E_IO / QB_E_FORMAT / QB_E_NOMEM with
 * the message in *err; on failure the set is unchanged apart from
 * possibly grown arrays. Not thread-safe for one set. */
qb_status qbk_st_file_load(qbk_st_err *err, qb_st_set *set, const char *path, int want_meta);

/* Builds the name index of `set`. Two tensors with one name are
 * QB_E_MISMATCH naming both files. QB_E_NOMEM on allocation failure. */
qb_status qbk_st_set_index(qbk_st_err *err, qb_st_set *set);

#endif /* QBK_ST_INTERNAL_H */
