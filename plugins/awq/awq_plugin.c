/*
 * AWQ reader plugin — entry point, descriptor, probe and reader vtable (the
 * work is in awq_open.c, awq_layout.c and the kit core qlinear: sdk/kit/qlinear.h).
 */
#include <string.h>

#include <quantbridge/qb_plugin.h>

#include "awq_open.h"
#include "qlinear.h"
#include "qbk_plugin_entry.h"

static const qb_host *awq_host;

static int awq_probe(void *ctx, const qb_probe_input *in)
{
    int has_qc = 0;
    const char *const *s;
    (void)ctx;
    if (in->siblings)
        for (s = in->siblings; *s; s++)
            if (strcmp(*s, "quant_config.json") == 0)
                has_qc = 1;
    return awq_probe_config(in->config_json, has_qc);
}

static qb_status awq_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    qlinear_model *m = NULL;
    qb_status st;
    (void)ctx;
    (void)params;
    *out = NULL;
    st = awq_open_model(awq_host, path, &m);
    if (st == QB_OK)
        *out = m;
    return st;
}

static const qb_reader_vtable awq_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = awq_probe,
    .open = awq_open,
    QLINEAR_VT_ENTRIES,
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin awq_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "awq",
    .version = "1.0.0",
    .description = "AWQ reader (AutoAWQ gemm and gemv 4-bit, zero_point true/false)",
    .vendor = "quantbridge",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &awq_reader,
};

/* The only exported symbol (qb_plugin.h): negotiates ABI major 1, keeps the
 * host table for the process lifetime and hands out the static descriptor.
 * QB_E_ABI when the host serves no ABI 1.x. Called once, main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &awq_plugin, out);
    if (rc == QB_OK)
        awq_host = host;
    return rc;
}
