/*
 * MTP layers (DeepSeek, the Qwen3-Next hybrids): the shared `mtp` reader
 * option and the name test
 * (see qbk_mtp.h).
 */
#include "qbk_mtp.h"

#include <string.h>

const qb_option_decl qbk_mtp_option = {
    .struct_size = sizeof(qb_option_decl),
    .name = "mtp",
    .type = QB_PARAM_STRING,
    .default_value = "drop",
    .help = "multi-token-prediction layers (DeepSeek's model.layers.{num_hidden_layers}.*, the "
            "Qwen3-Next/Qwen3.5 mtp.*): drop (default; transformers ignores them too) or keep "
            "(present them as tensors)",
    .choices = "drop|keep",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_READER,
};

qb_status qbk_mtp_mode(const qb_host *h, const qb_param *params, int *drop)
{
    const qb_param *p = qb_param_find(params, "mtp");
    *drop = 1;
    if (!p || !p->is_set || p->type != QB_PARAM_STRING || !p->v.s)
        return QB_OK;
    if (strcmp(p->v.s, "keep") == 0) {
        *drop = 0;
        return QB_OK;
    }
    if (strcmp(p->v.s, "drop") == 0)
        return QB_OK;
    return h->set_error(h, QB_E_INVALID, "option mtp=%s: expected drop or keep", p->v.s);
}

/* Positive integer member, else -1. */
static int64_t pos_int(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 1e9) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -1;
    return (int64_t)v->valuedouble;
}

/* The Qwen3-Next hybrids keep their MTP block under `mtp.*` and their
 * configs do not count it (transformers' Qwen3NextPreTrainedModel and
 * Qwen3_5ForCausalLM ignore `^mtp.*` on load). */
static int qwen_hybrid(const cJSON *config)
{
    static const char *const types[] = {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"};
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(config, "model_type");
    size_t i;
    for (i = 0; cJSON_IsString(t) && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t->valuestring, types[i]) == 0)
            return 1;
    return 0;
}

int64_t qbk_mtp_first_layer(const cJSON *config)
{
    int64_t n = pos_int(config, "num_hidden_layers");
    return n > 0 && (pos_int(config, "num_nextn_predict_layers") > 0 || qwen_hybrid(config)) ? n
                                                                                             : -1;
}

int qbk_mtp_is_mtp(const char *name, int64_t first)
{
    static const char pre[] = "model.layers.";
    const char *s;
    int64_t l = 0;
    if (first >= 0 && strncmp(name, "mtp.", 4) == 0)
        return 1;
    if (first < 0 || strncmp(name, pre, sizeof pre - 1) != 0)
        return 0;
    s = name + sizeof pre - 1;
    if (*s < '0' || *s > '9')
        return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (l > 100000000)
            return 0;
        l = l * 10 + (*s - '0');
    }
    return *s == '.' && l >= first;
}
