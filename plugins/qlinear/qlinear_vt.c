/* Quantized-linear reader core: the reader vtable entries that take a
 * qlinear_model as the opaque handle. The GPTQ/AWQ core; see
 * qlinear.h. */
#include "qlinear.h"
#include <quantbridge/base/qb_streader.h>

#include <string.h>

void qlinear_vt_close(qb_reader_handle r)
{
    qlinear_free(r);
}

qb_status qlinear_vt_model_info(qb_reader_handle r, qb_model_info *out)
{
    return qlinear_model_info(r, out);
}

qb_status qlinear_vt_tensor_info(qb_reader_handle r, size_t i, qb_tensor_info *out)
{
    return qlinear_tensor_info(r, i, out);
}

qb_status qlinear_vt_read_rows(qb_reader_handle r, size_t i, int64_t row0, int64_t n, float *dst)
{
    return qlinear_read_rows(r, i, row0, n, dst);
}

qb_status qlinear_vt_grid_info(qb_reader_handle r, size_t i, qb_grid_info *out)
{
    return qlinear_grid_info(r, i, out);
}

qb_status qlinear_vt_read_grid(qb_reader_handle r, size_t i, int64_t row0, int64_t n,
                                   qb_grid_rows *out)
{
    return qlinear_read_grid(r, i, row0, n, out);
}

/* The canonical tensor that reads st, or -1. */
static int64_t canonical_of(const qlinear_model *m, const qb_st_tensor *st)
{
    const char *dot = strrchr(st->name, '.');
    size_t i, plen = dot ? (size_t)(dot - st->name) : 0;
    for (i = 0; i < m->n; i++) {
        const qlinear_tensor *t = &m->t[i];
        if (t->st == st || t->qweight == st || t->qzeros == st || t->scales == st)
            return (int64_t)i;
    }
    if (!dot)
        return -1;
    for (i = 0; i < m->n; i++) {
        const qlinear_tensor *t = &m->t[i];
        if (t->kind == QLINEAR_QUANT && strncmp(t->name, st->name, plen) == 0 &&
            strcmp(t->name + plen, ".weight") == 0)
            return (int64_t)i;
    }
    return -1;
}

qb_status qlinear_vt_raw_tensor(qb_reader_handle r, size_t i, qb_raw_tensor_info *out)
{
    const qlinear_model *m = r;
    const qb_st_api *api = m->host->safetensors;
    const qb_st_tensor *st;
    if (!m->set || i >= api->count(m->set))
        return QB_E_RANGE;
    st = api->tensor(m->set, i);
    qb_streader_raw_info(st, canonical_of(m, st), out);
    return QB_OK;
}
