/*
 * hf-dense writer: one shard of the plan as a safetensors file, through
 * the kit's qbk_st_writer (which owns the file layout).
 */
#include <stdlib.h>
#include <string.h>

#include "hfw.h"
#include "qbk_alloc.h"

qb_status hfw_st_open(const qb_host *h, const qb_sink *sink, const char *name, const hfw_plan *p,
                      size_t first, size_t last, hfw_dtype dt, qbk_st_writer **out)
{
    qbk_st_out_tensor *ts = NULL;
    qb_status st;
    size_t i, n = last - first;

    *out = NULL;
    ts = qbk_calloc(n ? n : 1, sizeof *ts);
    if (!ts)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
    for (i = 0; i < n; i++) {
        const hfw_tensor *t = &p->t[first + i];
        ts[i].name = t->name;
        ts[i].dtype = hfw_dtype_st_name(dt);
        ts[i].n_dims = t->n_dims;
        memcpy(ts[i].dims, t->dims, sizeof ts[i].dims);
        ts[i].n_bytes = t->n_bytes;
    }
    st = qbk_st_writer_open(h, sink, name, ts, n, out);
    qbk_free(ts);
    return st;
}
