/*
 * mlx plugin: descriptor and entry. MLX affine-quantized checkpoints in
 * mlx-lm's layout (mlx.h), read (mlx_read.c, on the reader base library)
 * and written (mlx_write.c).
 */
#include <quantbridge/quantbridge.h>

#include "mlx.h"
#include "qbk_plugin_entry.h"

const qb_host *mlx_host;

static int mlx_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in || !in->config_json)
        return QB_PROBE_NONE;
    return mlx_config_probe(in->config_json);
}

static qb_status mlx_open(void *ctx, const char *path, const qb_param *params,
                          qb_reader_handle *out)
{
    (void)ctx;
    return qb_streader_open(mlx_host, &mlx_class, path, params, out);
}

static const qb_reader_vtable mlx_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = mlx_probe,
    .open = mlx_open,
    QB_STREADER_VT_ENTRIES,
    QB_STREADER_VT_GRID_ENTRIES,
};

/* The writer copies the side files itself and its output is read back by
 * this plugin's reader. */
static const qb_writer_caps mlx_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_SELF,
    .architectures = NULL,
    .required_facts = 0,
    .verify_reader = "mlx",
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin mlx_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "mlx",
    .version = "0.1.0",
    .description = "MLX affine-quantized checkpoints (mlx-lm layout: U32 codes, scales and "
                   "biases per group of 32/64/128, 2/4/8 bits), read and written",
    .vendor = "quantbridge",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &mlx_reader,
    .writer = &mlx_writer_vtable,
    .options = mlx_option_decls,
    .writer_caps = &mlx_caps,
};

/* Plugin entry (qb_plugin.h): negotiates ABI major 1 from 1.1 (the reader
 * base reads config.json through host->json), keeps the host table and
 * returns the static descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 1), &mlx_plugin, out);
    if (rc == QB_OK)
        mlx_host = host;
    return rc;
}
