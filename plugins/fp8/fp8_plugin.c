/*
 * fp8 reader — plugin entry and reader vtable.
 *
 * Reads `quant_method: fp8` checkpoints (DeepSeek-V3 / HF fine-grained FP8
 * block scales, per-tensor and per-channel scales) from a Hugging Face
 * directory and presents every FP8 linear as a dense float32 `<m>.weight`
 * [out, in]. FP8 has no uniform integer grid, so no grid view is offered:
 * a W4A16 writer requantizes from the dense values.
 */
#include <stdlib.h>

#include <quantbridge/quantbridge.h>

#include "fp8_model.h"
#include "qbk_plugin_entry.h"
#include "qbk_raw_st.h"
#include "qbk_reader.h"
#include "qbk_mtp.h"

static const qb_host *fp8_host;

static int fp8_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in || !in->config_json)
        return QB_PROBE_NONE;
    return fp8_config_probe(in->config_json);
}

static qb_status fp8_open(void *ctx, const char *path, const qb_param *params,
                          qb_reader_handle *out)
{
    fp8_model *m = NULL; /* fp8_model_open leaves it NULL on failure */
    int mtp_drop;
    qb_status st = qbk_mtp_mode(fp8_host, params, &mtp_drop);
    (void)ctx;
    if (st == QB_OK)
        st = fp8_model_open(fp8_host, path, mtp_drop, &m);
    *out = m;
    return st;
}

static void fp8_close(qb_reader_handle r)
{
    fp8_model_close(fp8_host, r);
}

static qb_status fp8_get_model_info(qb_reader_handle r, qb_model_info *out)
{
    const fp8_model *m = r;
    qbk_reader_hfdir_info(m->d, m->n, "fp8", m->summary, out);
    return QB_OK;
}

static qb_status fp8_get_tensor_info(qb_reader_handle r, size_t index, qb_tensor_info *out)
{
    fp8_model *m = r;
    const fp8_tensor *t;
    qb_status st = qbk_reader_check_index(fp8_host, m->d->dir, index, m->n);

    if (st != QB_OK)
        return st;
    t = &m->t[index];
    out->name = t->name;
    qbk_reader_set_dims(out, t->w->n_dims, t->w->dims);
    out->source_dtype = t->w->dtype;
    out->source_encoding = t->encoding;
    out->has_grid = 0;
    return QB_OK;
}

static qb_status fp8_read_rows(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                               float *dst)
{
    fp8_model *m = r;
    qb_status st = qbk_reader_check_index(fp8_host, m->d->dir, index, m->n);
    if (st != QB_OK)
        return st;
    fp8_model_note_read(m, index);
    return fp8_tensor_read_rows(fp8_host, &m->t[index], row0, n_rows, dst);
}

static const char *fp8_name_at(const void *m, size_t i)
{
    return ((const fp8_model *)m)->t[i].name;
}

/* ABI 1.2 stored view: the checkpoint's tensors in file order, each with
 * the canonical tensor reading it (weight and weight_scale_inv directly,
 * other "<module>.*" side tensors through "<module>.weight"). */
static qb_status fp8_raw_tensor(qb_reader_handle r, size_t index, qb_raw_tensor_info *out)
{
    const fp8_model *m = r;
    const qb_st_api *api = fp8_host->safetensors;
    const qb_st_tensor *st;
    int64_t c = -1;
    size_t i;
    if (index >= api->count(m->d->st))
        return QB_E_RANGE;
    st = api->tensor(m->d->st, index);
    for (i = 0; i < m->n && c < 0; i++)
        if (m->t[i].w == st || m->t[i].scale == st)
            c = (int64_t)i;
    if (c < 0)
        c = qbk_raw_module_of(st->name, fp8_name_at, m, m->n);
    qbk_raw_from_st(st, c, out);
    return QB_OK;
}

static const qb_reader_vtable fp8_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = fp8_probe,
    .open = fp8_open,
    .close = fp8_close,
    .get_model_info = fp8_get_model_info,
    .get_tensor_info = fp8_get_tensor_info,
    .read_rows = fp8_read_rows,
    /* no get_grid_info/read_grid: FP8 values are not a uniform integer grid */
    .get_raw_tensor_info = fp8_raw_tensor,
};

/* mtp=drop|keep: DeepSeek-V3 checkpoints carry an MTP layer (qbk_mtp.h) */
static const qb_option_decl *const fp8_options[] = {&qbk_mtp_option, NULL};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin fp8_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "fp8",
    .version = "0.1.0",
    .description = "FP8 (quant_method fp8: block weight_scale_inv, per-tensor/channel weight_scale) reader",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &fp8_reader,
    .options = fp8_options,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1, keeps the host
 * table (valid for the process lifetime) and returns the static
 * descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &fp8_plugin, out);
    if (rc == QB_OK)
        fp8_host = host;
    return rc;
}
