/*
 * GPTQ reader plugin — entry point, descriptor, probe and the reader vtable
 * (the work is in gptq_open.c and the kit core qlinear: sdk/kit/qlinear.h).
 */
#include <string.h>

#include <quantbridge/qb_plugin.h>

#include "gptq_config.h"
#include "gptq_open.h"
#include "qlinear.h"
#include "qbk_plugin_entry.h"

static const qb_host *gptq_host;

static int gptq_probe(void *ctx, const qb_probe_input *in)
{
    int has_qc = 0;
    const char *const *s;
    (void)ctx;
    if (in->siblings)
        for (s = in->siblings; *s; s++)
            if (strcmp(*s, "quantize_config.json") == 0)
                has_qc = 1;
    return gptq_config_probe(in->config_json, has_qc);
}

static qb_status gptq_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    const qb_param *zc = qb_param_find(params, "zero_convention");
    int opt = GPTQ_OPT_AUTO;
    qlinear_model *m = NULL;
    qb_status st;
    (void)ctx;
    *out = NULL;
    if (zc && zc->type == QB_PARAM_STRING && zc->is_set && zc->v.s) {
        if (strcmp(zc->v.s, "v1") == 0)
            opt = GPTQ_OPT_V1;
        else if (strcmp(zc->v.s, "v2") == 0)
            opt = GPTQ_OPT_V2;
        else if (strcmp(zc->v.s, "auto") != 0)
            return gptq_host->set_error(gptq_host, QB_E_INVALID,
                                        "gptq: zero_convention \"%s\" is not auto, v1 or v2", zc->v.s);
    }
    st = gptq_open_model(gptq_host, path, opt, &m);
    if (st == QB_OK)
        *out = m;
    return st;
}

static const qb_reader_vtable gptq_reader = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = gptq_probe,
    .open = gptq_open,
    QLINEAR_VT_ENTRIES,
};

static const qb_option_decl gptq_opt_zero = {
    .struct_size = sizeof(qb_option_decl),
    .name = "zero_convention",
    .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "GPTQ zero points: auto (stored zeros, then checkpoint_format), v1 (stored = zero - 1), v2",
    .choices = "auto|v1|v2",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_READER,
};

static const qb_option_decl *const gptq_options[] = {&gptq_opt_zero, NULL};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin gptq_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "gptq",
    .version = "1.0.0",
    .description = "GPTQ reader (AutoGPTQ/GPTQModel: 2/3/4/8-bit, v1/v2 zeros, act-order g_idx, dynamic)",
    .vendor = "quantbridge",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &gptq_reader,
    .options = gptq_options,
};

/* The only exported symbol (qb_plugin.h): negotiates ABI major 1, keeps the
 * host table for the process lifetime and hands out the static descriptor.
 * QB_E_ABI when the host serves no ABI 1.x. Called once, main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &gptq_plugin, out);
    if (rc == QB_OK)
        gptq_host = host;
    return rc;
}
