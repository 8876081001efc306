/*
 * mxfp4 reader — plugin entry and reader vtable.
 *
 * Reads `quant_method: mxfp4` checkpoints (gpt-oss: MoE experts as
 * `*_blocks` E2M1 + `*_scales` E8M0, the rest BF16) from a Hugging Face
 * directory and presents each expert tensor as the BF16 gpt-oss checkpoint
 * holds it: dense float32 `<p>` [experts, in, out] (mxfp4_model.h). MXFP4
 * is no uniform integer grid, so no grid view is offered: a W4A16 writer
 * requantizes from the exact dense values.
 */
#include <stdlib.h>

#include <quantbridge/quantbridge.h>

#include "mxfp4_model.h"
#include "qbk_plugin_entry.h"
#include "qbk_raw_st.h"
#include "qbk_reader.h"

static const qb_host *mx_host;

static int mx_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in || !in->config_json)
        return QB_PROBE_NONE;
    return mx_config_probe(in->config_json);
}

static qb_status mx_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    mx_model *m = NULL; /* mx_model_open leaves it NULL on failure */
    qb_status st = mx_model_open(mx_host, path, &m);
    (void)ctx;
    (void)params;
    *out = m;
    return st;
}

static void mx_close(qb_reader_handle r)
{
    mx_model_close(mx_host, r);
}

static qb_status mx_get_model_info(qb_reader_handle r, qb_model_info *out)
{
    const mx_model *m = r;
    qbk_reader_hfdir_info(m->d, m->n, "mxfp4", m->summary, out);
    return QB_OK;
}

static qb_status mx_get_tensor_info(qb_reader_handle r, size_t index, qb_tensor_info *out)
{
    mx_model *m = r;
    const mx_tensor *t;
    qb_status st = qbk_reader_check_index(mx_host, m->d->dir, index, m->n);

    if (st != QB_OK)
        return st;
    t = &m->t[index];
    out->name = t->name;
    qbk_reader_set_dims(out, t->n_dims, t->dims);
    out->source_dtype = t->kind == MX_K_EXPERTS ? QB_DT_QUANTIZED : t->w->dtype;
    out->source_encoding = t->encoding;
    out->has_grid = 0;
    return QB_OK;
}

static qb_status mx_read_rows(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                              float *dst)
{
    mx_model *m = r;
    qb_status st = qbk_reader_check_index(mx_host, m->d->dir, index, m->n);
    if (st != QB_OK)
        return st;
    return mx_tensor_read_rows(mx_host, &m->t[index], row0, n_rows, dst);
}

/* ABI 1.2 stored view: the checkpoint's tensors in file order; `_blocks`
 * and `_scales` read through the expert tensor they make, every other
 * tensor through itself. */
static qb_status mx_raw_tensor(qb_reader_handle r, size_t index, qb_raw_tensor_info *out)
{
    const mx_model *m = r;
    const qb_st_api *api = mx_host->safetensors;
    const qb_st_tensor *st;
    int64_t c = -1;
    size_t i;
    if (index >= api->count(m->d->st))
        return QB_E_RANGE;
    st = api->tensor(m->d->st, index);
    for (i = 0; i < m->n && c < 0; i++)
        if (m->t[i].w == st || m->t[i].scale == st)
            c = (int64_t)i;
    qbk_raw_from_st(st, c, out);
    return QB_OK;
}

static const qb_reader_vtable mx_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = mx_probe,
    .open = mx_open,
    .close = mx_close,
    .get_model_info = mx_get_model_info,
    .get_tensor_info = mx_get_tensor_info,
    .read_rows = mx_read_rows,
    /* no get_grid_info/read_grid: E2M1 values are not a uniform integer grid */
    .get_raw_tensor_info = mx_raw_tensor,
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin mx_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "mxfp4",
    .version = "0.1.0",
    .description = "MXFP4 (quant_method mxfp4: gpt-oss *_blocks E2M1 + *_scales E8M0 experts) reader",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &mx_reader,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1, keeps the host
 * table (valid for the process lifetime) and returns the static
 * descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &mx_plugin, out);
    if (rc == QB_OK)
        mx_host = host;
    return rc;
}
