/*
 * fp8 reader — plugin entry and reader vtable.
 *
 * Reads `quant_method: fp8` checkpoints (DeepSeek-V3 / HF fine-grained FP8
 * block scales, per-tensor and per-channel scales) from a Hugging Face
 * directory and presents every FP8 linear as a dense float32 `<m>.weight`
 * [out, in]. FP8 has no uniform integer grid: a W4A16 writer requantizes
 * from the dense values; e4m3 weights offer their bytes and scales as a
 * float-coded grid (qb_tensor.h, ABI 1.4) to a writer that accepts it, so
 * the compressed-tensors writer keeps them. The reader vtable is
 * the reader base library's (qb_streader.h) around fp8_class.
 */
#include <quantbridge/quantbridge.h>

#include "fp8_model.h"
#include "qbk_mtp.h"
#include "qbk_plugin_entry.h"

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
    (void)ctx;
    return qb_streader_open(fp8_host, &fp8_class, path, params, out);
}

static const qb_reader_vtable fp8_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = fp8_probe,
    .open = fp8_open,
    QB_STREADER_VT_ENTRIES,
    QB_STREADER_VT_GRID_ENTRIES,
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

/* Plugin entry (qb_plugin.h): negotiates ABI major 1 from 1.1 (the reader
 * base reads config.json through host->json), keeps the host table (valid
 * for the process lifetime) and returns the static descriptor. Called
 * once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 1), &fp8_plugin, out);
    if (rc == QB_OK)
        fp8_host = host;
    return rc;
}
