/* quantbridge host — safetensors: the set of tensors and the API table. */
#include <stdlib.h>

#include "qbh_safetensors.h"
#include "qbh_st_internal.h"

qb_st_set *qbh_st_set_new(void)
{
    return calloc(1, sizeof(qb_st_set));
}

void qbh_st_set_free(qb_st_set *set)
{
    free(set);
}

qb_status qbh_st_set_index(const qb_host *h, qb_st_set *set)
{
    (void)h;
    (void)set;
    return QB_OK;
}

static qb_status st_open_file(const qb_host *h, const char *path, qb_st_set **out)
{
    *out = NULL;
    return h->set_error(h, QB_E_UNSUPPORTED, "%s: safetensors parser not implemented yet", path);
}

static size_t st_count(const qb_st_set *set) { return set ? set->n : 0; }
static const qb_st_tensor *st_tensor(const qb_st_set *set, size_t i) { return set && i < set->n ? &set->t[i] : NULL; }
static const qb_st_tensor *st_find(const qb_st_set *set, const char *name) { (void)set; (void)name; return NULL; }
static const char *st_metadata(const qb_st_set *set, const char *key) { (void)set; (void)key; return NULL; }

static const qb_st_api st_api = {
    sizeof(qb_st_api), st_open_file, qbh_st_open_dir, qbh_st_set_free,
    st_count, st_tensor, st_find, st_metadata,
};

const qb_st_api *qbh_safetensors_api(void)
{
    return &st_api;
}
