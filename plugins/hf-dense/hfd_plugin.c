/*
 * hf-dense plugin: descriptor and entry. Plain Hugging Face checkpoints
 * (config.json + F32/F16/BF16 safetensors). The reader lives in reader.c,
 * the writer in writer.c; the options (dtype, max_shard_size) are the
 * writer's, and the reader ignores them.
 */
#include <stddef.h>

#include "hfw.h"

const qb_host *hfd_host;

static const qb_plugin hfd_plugin = {
    sizeof(qb_plugin),
    QB_ABI_CURRENT,
    "hf-dense",
    "0.1.0",
    "Hugging Face dense checkpoints (config.json + F32/F16/BF16 safetensors, sharded or not), read and written",
    "quantbridge",
    NULL,
    QB_PLUGIN_CONCURRENT_READS,
    NULL,
    NULL,
    &hfd_reader_vtable,
    &hfd_writer_vtable,
    hfd_option_decls,
    NULL,
};

/* Plugin entry (qb_plugin.h): speaks min(ABI 1.x compiled in, host's
 * newest); QB_E_ABI when that is outside the host's range. Keeps `host`
 * for the life of the process. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    if (!neg || !host || !out)
        return QB_E_INVALID;
    neg->plugin_abi = neg->host_abi_max < QB_ABI_CURRENT ? neg->host_abi_max : QB_ABI_CURRENT;
    if (neg->plugin_abi < neg->host_abi_min || QB_ABI_GET_MAJOR(neg->plugin_abi) != QB_ABI_MAJOR)
        return QB_E_ABI;
    hfd_host = host;
    *out = &hfd_plugin;
    return QB_OK;
}
