/*
 * modelopt reader — plugin entry and reader vtable.
 *
 * Reads NVIDIA ModelOpt NVFP4 checkpoints (mo_model.h) from a Hugging Face
 * directory and presents every packed linear as a dense float32
 * `<m>.weight` [out, in]. E2M1 values under E4M3 group scales are no
 * uniform integer grid, so no grid view is offered: a W4A16 writer
 * requantizes from the dense values and reports the error. The reader
 * vtable is the reader base library's (qb_streader.h) around mo_class.
 */
#include <quantbridge/quantbridge.h>

#include "mo_model.h"
#include "qbk_plugin_entry.h"

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
    (void)ctx;
    return qb_streader_open(mo_host, &mo_class, path, params, out);
}

static const qb_reader_vtable mo_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = mo_probe_cb,
    .open = mo_open,
    QB_STREADER_VT_ENTRIES,
    QB_STREADER_VT_GRID_ENTRIES,
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

/* Plugin entry (qb_plugin.h): negotiates ABI major 1 from 1.1 (the reader
 * base reads config.json through host->json), keeps the host table (valid
 * for the process lifetime) and returns the static descriptor. Called
 * once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 1), &mo_plugin, out);
    if (rc == QB_OK)
        mo_host = host;
    return rc;
}
