/* quantbridge host — safetensors: one file, mapped and validated. */
#include "qbh_st_internal.h"

qb_status qbh_st_file_load(const qb_host *h, qb_st_set *set, const char *path, int want_meta)
{
    (void)set;
    (void)want_meta;
    return h->set_error(h, QB_E_UNSUPPORTED, "%s: safetensors parser not implemented yet", path);
}
