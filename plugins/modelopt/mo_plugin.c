/*
 * modelopt reader — plugin entry and reader vtable.
 *
 * Reads NVIDIA ModelOpt NVFP4 checkpoints (mo_model.h) from a Hugging Face
 * directory and presents every packed linear as a dense float32
 * `<m>.weight` [out, in]. E2M1 values under E4M3 group scales are no
 * uniform integer grid, so no grid view is offered: a W4A16 writer
 * requantizes from the dense values and reports the error.
 */
#include <stdlib.h>

#include <quantbridge/quantbridge.h>

#include "mo_model.h"
#include "qbk_plugin_entry.h"
#include "qbk_raw_st.h"
#include "qbk_reader.h"

static const qb_host *mo_host;

static int mo_probe_cb(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in || !in->config_json)
        return QB_PROBE_NONE;
    return mo_probe(in->config_json, in->siblings);
}

static qb_status mo_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    mo_model *m = NULL; /* mo_model_open leaves it NULL on failure */
    qb_status st = mo_model_open(mo_host, path, &m);
    (void)ctx;
    (void)params;
    *out = m;
    return st;
}

static void mo_close(qb_reader_handle r)
{
    mo_model_close(mo_host, r);
}

static qb_status mo_get_model_info(qb_reader_handle r, qb_model_info *out)
{
    const mo_model *m = r;
    qbk_reader_hfdir_info(m->d, m->n, "modelopt", m->summary, out);
    return QB_OK;
}

static qb_status mo_get_tensor_info(qb_reader_handle r, size_t index, qb_tensor_info *out)
{
    mo_model *m = r;
    const mo_tensor *t;
    qb_status st = qbk_reader_check_index(mo_host, m->d->dir, index, m->n);
    uint32_t i;

    if (st != QB_OK)
        return st;
    t = &m->t[index];
    out->name = t->name;
    if (t->quant) {
        for (i = 0; i < QB_MAX_DIMS; i++)
            out->dims[i] = 0;
        out->n_dims = 2;
        out->dims[0] = t->rows;
        out->dims[1] = t->cols;
        out->source_dtype = QB_DT_QUANTIZED;
    } else {
        qbk_reader_set_dims(out, t->w->n_dims, t->w->dims);
        out->source_dtype = t->w->dtype;
    }
    out->source_encoding = t->encoding;
    out->has_grid = 0;
    return QB_OK;
}

static qb_status mo_read_rows(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                              float *dst)
{
    mo_model *m = r;
    qb_status st = qbk_reader_check_index(mo_host, m->d->dir, index, m->n);
    if (st != QB_OK)
        return st;
    return mo_tensor_read_rows(mo_host, &m->t[index], row0, n_rows, dst);
}

static const char *mo_name_at(const void *m, size_t i)
{
    return ((const mo_model *)m)->t[i].name;
}

/* ABI 1.2 stored view: the checkpoint's tensors in file order, each with
 * the canonical tensor it feeds (packed weight and its two scales; other
 * "<module>.*" side tensors through "<module>.weight"). */
static qb_status mo_raw_tensor(qb_reader_handle r, size_t index, qb_raw_tensor_info *out)
{
    const mo_model *m = r;
    const qb_st_api *api = mo_host->safetensors;
    const qb_st_tensor *st;
    int64_t c = -1;
    size_t i;
    if (index >= api->count(m->d->st))
        return QB_E_RANGE;
    st = api->tensor(m->d->st, index);
    for (i = 0; i < m->n && c < 0; i++)
        if (m->t[i].w == st || m->t[i].scale == st || m->t[i].scale2 == st)
            c = (int64_t)i;
    if (c < 0)
        c = qbk_raw_module_of(st->name, mo_name_at, m, m->n);
    qbk_raw_from_st(st, c, out);
    return QB_OK;
}

static const qb_reader_vtable mo_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = mo_probe_cb,
    .open = mo_open,
    .close = mo_close,
    .get_model_info = mo_get_model_info,
    .get_tensor_info = mo_get_tensor_info,
    .read_rows = mo_read_rows,
    /* no get_grid_info/read_grid: FP4 under E4M3 scales is not a uniform integer grid */
    .get_raw_tensor_info = mo_raw_tensor,
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin mo_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "modelopt",
    .version = "0.1.0",
    .description = "NVIDIA ModelOpt NVFP4 (hf_quant_config.json / quant_method modelopt) reader",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &mo_reader,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1, keeps the host
 * table (valid for the process lifetime) and returns the static
 * descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &mo_plugin, out);
    if (rc == QB_OK)
        mo_host = host;
    return rc;
}
