/* Stored-tensor view of a safetensors tensor (qbk_raw_st.h). */
#include "qbk_raw_st.h"

#include <string.h>

void qbk_raw_from_st(const qb_st_tensor *st, int64_t canonical, qb_raw_tensor_info *out)
{
    uint32_t d;
    out->name = st->name;
    out->type = st->dtype_name;
    out->n_dims = st->n_dims;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < st->n_dims ? st->dims[d] : 0;
    out->n_bytes = st->n_bytes;
    out->file = st->file;
    out->canonical = canonical;
}

int64_t qbk_raw_module_of(const char *stored, qbk_raw_name_fn name_at, const void *m, size_t n)
{
    const char *dot = strrchr(stored, '.');
    size_t i, plen;
    if (!dot)
        return -1;
    plen = (size_t)(dot - stored);
    for (i = 0; i < n; i++) {
        const char *c = name_at(m, i);
        if (strncmp(c, stored, plen) == 0 && strcmp(c + plen, ".weight") == 0)
            return (int64_t)i;
    }
    return -1;
}
