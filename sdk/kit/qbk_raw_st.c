/* Stored-tensor view of a safetensors tensor (qbk_raw_st.h). */
#include "qbk_raw_st.h"

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
