/* quantbridge host — safetensors: a Hugging Face checkpoint directory. */
#include "qbh_st_internal.h"

qb_status qbh_st_open_dir(const qb_host *h, const char *dir, qb_st_set **out)
{
    *out = NULL;
    return h->set_error(h, QB_E_UNSUPPORTED, "%s: safetensors parser not implemented yet", dir);
}
