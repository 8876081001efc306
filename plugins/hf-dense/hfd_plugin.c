/*
 * hf-dense plugin: descriptor and entry. Plain Hugging Face checkpoints
 * (config.json + F32/F16/BF16 safetensors). The reader lives in reader.c,
 * the writer in writer.c; the options (dtype, max_shard_size) are the
 * writer's (declared for the writer role only).
 */
#include <stddef.h>

#include "hfw.h"
#include "qbk_plugin_entry.h"

const qb_host *hfd_host;

/* The writer copies the side files itself (hfw_files.c), writes any
 * architecture its config names, relies on no model fact, and its output
 * is read back by this plugin's reader. */
static const qb_writer_caps hfd_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_SELF,
    .architectures = NULL,
    .required_facts = 0,
    .verify_reader = "hf-dense",
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin hfd_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "hf-dense",
    .version = "0.1.0",
    .description = "Hugging Face dense checkpoints (config.json + F32/F16/BF16 safetensors, sharded or not), read and written",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &hfd_reader_vtable,
    .writer = &hfd_writer_vtable,
    .options = hfd_option_decls,
    .writer_caps = &hfd_caps,
};

/* Plugin entry (qb_plugin.h): speaks min(ABI 1.x compiled in, host's
 * newest); QB_E_ABI when that is outside the host's range. Keeps `host`
 * for the life of the process. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &hfd_plugin, out);
    if (rc == QB_OK)
        hfd_host = host;
    return rc;
}
