/*
 * sm86-w4a16 — the plugin entry point, descriptor and option declarations.
 */
#include "w4w.h"
#include "qbk_plugin_entry.h"

static w4w_ctx g_ctx;

static const qb_option_decl opt_group_size = {
    .struct_size = sizeof(qb_option_decl),
    .name = "group_size",
    .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "input columns per fp16 scale, 1..1048576, or auto: the source's group size when "
            "it keeps the linears exact and is a multiple of 32, else 128 (the host maps "
            "--group-size here)",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_quant_rule = {
    .struct_size = sizeof(qb_option_decl),
    .name = "quant_rule",
    .type = QB_PARAM_STRING,
    /* no default value: unset means "weighted when the run has activation
     * statistics, else the plain default" (writer.c choose_rule) */
    .default_value = NULL,
    .help = "requantization rule: absmax/7, a scale search, per group the better of both, or "
            "weighted by activation statistics (--calibration/--imatrix; unset: weighted when "
            "the run has them), or gptq: GPTQ error compensation through each linear's Hessian "
            "(--calibration; weighted where there is none)",
    .choices = "auto|absmax|search|keep|weighted|gptq",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_act_order = {
    .struct_size = sizeof(qb_option_decl),
    .name = "act_order",
    .type = QB_PARAM_STRING,
    .default_value = "requant",
    .help = "act-order grids: requantize in source column order, or permute columns into "
            "contiguous groups (feature input_permutation, codes kept); with quant_rule=gptq "
            "also GPTQ's act order for requantized linears (columns by descending importance)",
    .choices = "requant|permute",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_gptq_scale = {
    .struct_size = sizeof(qb_option_decl),
    .name = "gptq_scale",
    .type = QB_PARAM_STRING,
    .default_value = "absmax",
    .help = "quant_rule=gptq: each group's scale from its updated weights by absmax/7 (as "
            "published) or by the importance-weighted search (the weighted rule's)",
    .choices = "absmax|weighted",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_lm_head = {
    .struct_size = sizeof(qb_option_decl),
    .name = "lm_head",
    .type = QB_PARAM_STRING,
    .default_value = "f16",
    .help = "untied lm_head stored as F16 or as packed int4 (feature quantized_lm_head)",
    .choices = "f16|quantized",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};

const qb_option_decl *const w4w_option_decls[] = {
    &opt_group_size, &opt_quant_rule, &opt_act_order, &opt_lm_head, &opt_gptq_scale, NULL,
};

/* The writer copies the side files itself (config_out.c) and its output
 * is read back by this plugin's own reader. */
static const qb_writer_caps w4w_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_SELF,
    .architectures = w4w_arch_names,
    .required_facts = 0,
    .verify_reader = W4W_PLUGIN_NAME,
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin g_plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = W4W_PLUGIN_NAME,
    .version = W4W_PLUGIN_VERSION,
    .description = "native layered W4A16 checkpoint for SM86 (symmetric int4, fp16 group scales): write and read",
    .vendor = "quantbridge",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .ctx = &g_ctx,
    .reader = &w4w_reader_vtable,
    .writer = &w4w_writer_vtable,
    .options = w4w_option_decls,
    .writer_caps = &w4w_caps,
};

/* Entry point (qb_plugin.h): negotiates ABI 1.x, keeps the host table,
 * returns the static descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &g_plugin, out);
    if (rc == QB_OK)
        g_ctx.host = host;
    return rc;
}
