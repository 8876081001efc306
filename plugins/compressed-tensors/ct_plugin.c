/*
 * compressed-tensors reader — plugin entry and reader vtable.
 *
 * Reads llm-compressor / compressed-tensors checkpoints (pack-quantized
 * int4/int8, naive/int-quantized int8, float-quantized FP8; group,
 * channel, tensor and (unpacked) block strategies; symmetric and
 * asymmetric; act-order g_idx; several config_groups and ignore lists)
 * from a Hugging Face directory. Every quantized linear becomes one dense
 * float32 `<m>.weight` [out, in]; integer schemes (except block) also offer
 * the integer grid view so a writer can repack without loss.
 */
#include <stdlib.h>

#include <quantbridge/quantbridge.h>

#include "ct_model.h"
#include "qbk_plugin_entry.h"
#include "qbk_raw_st.h"
#include "qbk_reader.h"

static const qb_host *ct_host;

static int ct_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in || !in->config_json)
        return QB_PROBE_NONE;
    return ct_config_probe(in->config_json);
}

static qb_status ct_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    ct_model *m = NULL; /* ct_model_open leaves it NULL on failure */
    qb_status st = ct_model_open(ct_host, path, &m);
    (void)ctx;
    (void)params;
    *out = m;
    return st;
}

static void ct_close(qb_reader_handle r)
{
    ct_model_close(ct_host, r);
}

static qb_status ct_get_model_info(qb_reader_handle r, qb_model_info *out)
{
    const ct_model *m = r;
    qbk_reader_hfdir_info(m->d, m->n, "compressed-tensors", m->summary, out);
    return QB_OK;
}

static const ct_tensor *ct_at(ct_model *m, size_t index)
{
    if (qbk_reader_check_index(ct_host, m->d->dir, index, m->n) != QB_OK)
        return NULL;
    return &m->t[index];
}

static qb_status ct_get_tensor_info(qb_reader_handle r, size_t index, qb_tensor_info *out)
{
    const ct_tensor *t = ct_at(r, index);
    uint32_t i;

    if (!t)
        return QB_E_RANGE;
    out->name = t->name;
    for (i = 0; i < QB_MAX_DIMS; i++)
        out->dims[i] = 0;
    if (t->kind == CT_K_DENSE) {
        qbk_reader_set_dims(out, t->w->n_dims, t->w->dims);
        out->source_dtype = t->w->dtype;
    } else {
        out->n_dims = 2;
        out->dims[0] = t->rows;
        out->dims[1] = t->cols;
        out->source_dtype = t->kind == CT_K_FLOAT ? QB_DT_F8_E4M3 : QB_DT_QUANTIZED;
    }
    out->source_encoding = t->encoding;
    out->has_grid = t->has_grid;
    return QB_OK;
}

static qb_status ct_read_rows(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                              float *dst)
{
    const ct_tensor *t = ct_at(r, index);
    if (!t)
        return QB_E_RANGE;
    return ct_tensor_read_rows(ct_host, t, row0, n_rows, dst);
}

static qb_status ct_get_grid_info(qb_reader_handle r, size_t index, qb_grid_info *out)
{
    const ct_tensor *t = ct_at(r, index);
    if (!t)
        return QB_E_RANGE;
    if (!t->has_grid)
        return ct_host->set_error(ct_host, QB_E_UNSUPPORTED, "%s: %s: %s has no integer grid",
                                  t->w->file, t->name, t->encoding);
    out->bits = (uint32_t)t->bits;
    out->n_groups = (uint32_t)t->n_groups;
    out->group_size = t->g_idx ? 0 : t->gs;
    out->col_group = t->g_idx;
    out->symmetric = t->grid_symmetric;
    out->scale_dtype = t->scale->dtype;
    return QB_OK;
}

static qb_status ct_read_grid(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                              qb_grid_rows *out)
{
    const ct_tensor *t = ct_at(r, index);
    if (!t)
        return QB_E_RANGE;
    if (!out || !out->codes || !out->scales || !out->zeros)
        return ct_host->set_error(ct_host, QB_E_INVALID, "%s: read_grid without buffers", t->name);
    return ct_tensor_read_grid(ct_host, t, row0, n_rows, out->codes, out->scales, out->zeros);
}

static const char *ct_name_at(const void *m, size_t i)
{
    return ((const ct_model *)m)->t[i].name;
}

/* ABI 1.2 stored view: the checkpoint's tensors in file order, each with
 * the canonical tensor reading it (weight or weight_packed, weight_scale,
 * weight_zero_point directly; weight_g_idx, weight_shape and other
 * "<module>.*" side tensors through "<module>.weight"). */
static qb_status ct_raw_tensor(qb_reader_handle r, size_t index, qb_raw_tensor_info *out)
{
    const ct_model *m = r;
    const qb_st_api *api = ct_host->safetensors;
    const qb_st_tensor *st;
    int64_t c = -1;
    size_t i;
    if (index >= api->count(m->d->st))
        return QB_E_RANGE;
    st = api->tensor(m->d->st, index);
    for (i = 0; i < m->n && c < 0; i++)
        if (m->t[i].w == st || m->t[i].scale == st || m->t[i].zp == st)
            c = (int64_t)i;
    if (c < 0)
        c = qbk_raw_module_of(st->name, ct_name_at, m, m->n);
    qbk_raw_from_st(st, c, out);
    return QB_OK;
}

static const qb_reader_vtable ct_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = ct_probe,
    .open = ct_open,
    .close = ct_close,
    .get_model_info = ct_get_model_info,
    .get_tensor_info = ct_get_tensor_info,
    .read_rows = ct_read_rows,
    .get_grid_info = ct_get_grid_info,
    .read_grid = ct_read_grid,
    .get_raw_tensor_info = ct_raw_tensor,
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin ct_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "compressed-tensors",
    .version = "0.1.0",
    .description = "compressed-tensors reader (pack-quantized int4/int8, naive/int/float-quantized)",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &ct_reader,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1, keeps the host
 * table (valid for the process lifetime) and returns the static
 * descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &ct_plugin, out);
    if (rc == QB_OK)
        ct_host = host;
    return rc;
}
