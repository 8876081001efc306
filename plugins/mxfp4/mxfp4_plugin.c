/*
 * mxfp4 reader — plugin entry and reader vtable.
 *
 * Reads `quant_method: mxfp4` checkpoints (gpt-oss: MoE experts as
 * `*_blocks` E2M1 + `*_scales` E8M0, the rest BF16) from a Hugging Face
 * directory and presents each expert tensor as the BF16 gpt-oss checkpoint
 * holds it: dense float32 `<p>` [experts, in, out] (mxfp4_model.h). MXFP4
 * is no uniform integer grid, so no grid view is offered: a W4A16 writer
 * requantizes from the exact dense values. The reader vtable is the reader
 * base library's (qb_streader.h) around mx_class.
 */
#include <quantbridge/quantbridge.h>

#include "mxfp4_model.h"
#include "qbk_plugin_entry.h"

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
    (void)ctx;
    return qb_streader_open(mx_host, &mx_class, path, params, out);
}

static const qb_reader_vtable mx_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = mx_probe,
    .open = mx_open,
    QB_STREADER_VT_ENTRIES,
    .get_stored_rows = mx_vt_stored_info,
    .read_stored_rows = mx_vt_read_stored,
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

/* Plugin entry (qb_plugin.h): negotiates ABI major 1 from 1.1 (the reader
 * base reads config.json through host->json), keeps the host table (valid
 * for the process lifetime) and returns the static descriptor. Called
 * once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 1), &mx_plugin, out);
    if (rc == QB_OK)
        mx_host = host;
    return rc;
}
