/*
 * sm86-w4a16 — the plugin entry point, descriptor and option declarations.
 */
#include "w4w.h"

static w4w_ctx g_ctx;

static const qb_option_decl opt_group_size = {
    sizeof(qb_option_decl),
    "group_size",
    QB_PARAM_INT,
    "128",
    "input columns per fp16 scale (the host maps --group-size here)",
    NULL,
    1,
    1 << 20,
};
static const qb_option_decl opt_quant_rule = {
    sizeof(qb_option_decl),
    "quant_rule",
    QB_PARAM_STRING,
    "auto",
    "requantization rule: absmax/7, a scale search, or per group the better of both",
    "auto|absmax|search",
    1,
    0,
};
static const qb_option_decl opt_act_order = {
    sizeof(qb_option_decl),
    "act_order",
    QB_PARAM_STRING,
    "requant",
    "act-order grids: requantize in source column order, or permute columns into "
    "contiguous groups (feature input_permutation, codes kept)",
    "requant|permute",
    1,
    0,
};
static const qb_option_decl opt_lm_head = {
    sizeof(qb_option_decl),
    "lm_head",
    QB_PARAM_STRING,
    "f16",
    "untied lm_head stored as F16 or as packed int4 (feature quantized_lm_head)",
    "f16|quantized",
    1,
    0,
};

const qb_option_decl *const w4w_option_decls[] = {
    &opt_group_size, &opt_quant_rule, &opt_act_order, &opt_lm_head, NULL,
};

static const qb_plugin g_plugin = {
    sizeof(qb_plugin),
    QB_ABI_CURRENT,
    W4W_PLUGIN_NAME,
    W4W_PLUGIN_VERSION,
    "native layered W4A16 checkpoint for SM86 (symmetric int4, fp16 group scales): write and read",
    "quantbridge",
    "MIT",
    QB_PLUGIN_CONCURRENT_READS,
    &g_ctx,
    NULL,
    &w4w_reader_vtable,
    &w4w_writer_vtable,
    w4w_option_decls,
    NULL,
};

/* Entry point (qb_plugin.h): negotiates ABI 1.x, keeps the host table,
 * returns the static descriptor. Called once, on the host's main thread. */
QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    uint32_t abi;
    if (!neg || !host || !out || neg->struct_size < sizeof(qb_negotiation))
        return QB_E_ABI;
    abi = neg->host_abi_max < QB_ABI_CURRENT ? neg->host_abi_max : QB_ABI_CURRENT;
    if (QB_ABI_GET_MAJOR(abi) != QB_ABI_MAJOR || abi < neg->host_abi_min)
        return QB_E_ABI;
    neg->plugin_abi = abi;
    g_ctx.host = host;
    *out = &g_plugin;
    return QB_OK;
}
