/*
 * GPTQ reader — the quantization config: where it lives, which fields and
 * synonyms count, the on-disk format label and GPTQModel `dynamic` rules.
 *
 * Facts (docs/formats/gptq.md, "Config", checked against upstream):
 *   - search order quantize_config.json, quant_config.json,
 *     config.json:quantization_config (AutoGPTQ BaseQuantizeConfig.
 *     from_pretrained; GPTQModel QUANT_CONFIG_FILENAME_COMPAT); when two of
 *     them exist they must agree, or we refuse (never pick one silently);
 *   - synonyms w_bit->bits, q_group_size->group_size (AutoGPTQ
 *     QUANT_CONFIG_ARG_SYNONYMS), format->checkpoint_format,
 *     method->quant_method, zero_point->!sym (GPTQModel
 *     QUANT_CONFIG_ARG_SYNONYMS(_NEGATED));
 *   - checkpoint_format "gptq" = v1 (stored zero = real zero - 1),
 *     "gptq_v2" = v2; marlin/bitblas/gptq_p/other layouts are refused;
 *   - `dynamic`: ordered {pattern: overrides}; "-:" = module left
 *     unquantized, "+:" or none = overrides; first match wins, matched with
 *     Python re.match, i.e. anchored at the start of the module name
 *     (vLLM gptq_utils.get_dynamic_override, GPTQModel
 *     QuantizeConfig.dynamic_get).
 *
 * Not thread-safe; one config per open().
 */
#ifndef GPTQ_CONFIG_H
#define GPTQ_CONFIG_H

#include <regex.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>

enum { GPTQ_CONV_NONE = 0, GPTQ_CONV_V1 = 1, GPTQ_CONV_V2 = 2 };

/* Per-module quantization parameters. */
typedef struct gptq_params {
    int bits;            /* 2, 3, 4 or 8 */
    int64_t group_size;  /* > 0, or -1 = one group over all inputs */
    int sym;             /* config's claim */
    int desc_act;
} gptq_params;

typedef struct gptq_rule {
    char *pattern;       /* as written, prefix stripped */
    int negative;        /* "-:" rule: module stays unquantized */
    regex_t re;
    int has_bits, has_gs, has_sym, has_desc;
    gptq_params p;       /* override values where has_* is set */
} gptq_rule;

typedef struct gptq_config {
    gptq_params base;
    int label;           /* GPTQ_CONV_*: NONE when the checkpoint has no format label */
    char *label_text;    /* the label as written, or NULL */
    char *source;        /* file the config came from (for messages) */
    int sym_given;       /* sym (or zero_point) present in the config */
    gptq_rule *rules;
    size_t n_rules;
} gptq_config;

/* Reads and validates the GPTQ config of directory `dir` whose config.json
 * text is `config_json` (may be NULL). Fills *cfg (caller zeroes it first);
 * free with gptq_config_free even on failure. Errors: QB_E_NOT_FOUND (no
 * GPTQ config), QB_E_FORMAT (malformed), QB_E_UNSUPPORTED (a layout or
 * width we refuse, named), QB_E_MISMATCH (two config files disagree),
 * QB_E_NOMEM; message set through h. */
qb_status gptq_config_load(const qb_host *h, const char *dir, const char *config_json,
                           gptq_config *cfg);

void gptq_config_free(gptq_config *cfg);

/* Parameters for module `module` (e.g. "model.layers.0.mlp.up_proj"):
 * returns 0 and fills *out when it is quantized, 1 when a "-:" rule leaves
 * it unquantized. */
int gptq_config_resolve(const gptq_config *cfg, const char *module, gptq_params *out);

/* Scores how likely a config.json text / sibling list is GPTQ (probe). */
int gptq_config_probe(const char *config_json, int has_quantize_config);

#endif /* GPTQ_CONFIG_H */
