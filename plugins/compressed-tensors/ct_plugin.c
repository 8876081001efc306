/*
 * compressed-tensors reader — plugin entry and reader vtable.
 *
 * Reads llm-compressor / compressed-tensors checkpoints (pack-quantized
 * int4/int8, naive/int-quantized int8, float-quantized FP8; group,
 * channel, tensor and (unpacked) block strategies; symmetric and
 * asymmetric; act-order g_idx; several config_groups and ignore lists)
 * from a Hugging Face directory. Every quantized linear becomes one dense
 * float32 `<m>.weight` [out, in]; integer schemes (except block) also offer
 * the integer grid view so a writer can repack without loss. The reader
 * vtable is the reader base library's (qb_streader.h) around ct_class.
 */
#include <quantbridge/quantbridge.h>

#include "ct_model.h"
#include "ctw.h"
#include "qbk_plugin_entry.h"

const qb_host *ct_host;

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
    (void)ctx;
    return qb_streader_open(ct_host, &ct_class, path, params, out);
}

static const qb_reader_vtable ct_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = ct_probe,
    .open = ct_open,
    QB_STREADER_VT_ENTRIES,
    QB_STREADER_VT_GRID_ENTRIES,
};

/* The writer copies the side files itself (ctw_writer.c) and its output is
 * read back by this plugin's reader. */
static const qb_writer_caps ct_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_SELF,
    .architectures = NULL,
    .required_facts = 0,
    .verify_reader = "compressed-tensors",
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin ct_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "compressed-tensors",
    .version = "0.1.0",
    .description = "compressed-tensors reader (pack-quantized int4/int8, naive/int/float-quantized) "
                   "and pack-quantized int4/int8 writer",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &ct_reader,
    .writer = &ct_writer_vtable,
    .options = ct_option_decls,
    .writer_caps = &ct_caps,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1 from 1.1 (the reader
 * base reads config.json through host->json), keeps the host table (valid
 * for the process lifetime) and returns the static descriptor. Called
 * once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 1), &ct_plugin, out);
    if (rc == QB_OK)
        ct_host = host;
    return rc;
}
