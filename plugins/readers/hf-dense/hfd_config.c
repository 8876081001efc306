/*
 * hf-dense: what config.json says about a checkpoint.
 *
 * Quantized checkpoints announce themselves with
 * config.json:quantization_config.quant_method (transformers
 * PreTrainedConfig; GPTQModel may write `method`), older compressed-tensors
 * ones with `compression_config` (formats.md §9). hf-dense understands no
 * quant_method yet, so any of them is refused by name.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfd.h"

/* The quantization object of a config, or NULL for a dense one. */
static const cJSON *hfd_quant_object(const cJSON *root, const char **key)
{
    static const char *const keys[] = {"quantization_config", "compression_config"};
    size_t i;
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        if (q && !cJSON_IsNull(q)) {
            *key = keys[i];
            return q;
        }
    }
    return NULL;
}

hfd_config_kind hfd_config_classify(const char *text)
{
    cJSON *root;
    const char *key;
    hfd_config_kind k;

    if (!text)
        return HFD_CONFIG_BROKEN;
    root = cJSON_Parse(text);
    if (!cJSON_IsObject(root))
        k = HFD_CONFIG_BROKEN;
    else if (hfd_quant_object(root, &key))
        k = HFD_CONFIG_QUANTIZED;
    else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "model_type")))
        k = HFD_CONFIG_INVALID;
    else
        k = HFD_CONFIG_DENSE;
    cJSON_Delete(root);
    return k;
}

qb_status hfd_config_check(const qb_host *h, const char *path, const char *text, char **model_type)
{
    cJSON *root = NULL;
    const cJSON *q, *mt;
    const char *key = NULL;
    qb_status st = QB_OK;

    *model_type = NULL;
    root = cJSON_Parse(text);
    if (!cJSON_IsObject(root)) {
        st = h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    q = hfd_quant_object(root, &key);
    if (q) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
        if (!cJSON_IsString(m))
            m = cJSON_GetObjectItemCaseSensitive(q, "method");
        st = h->set_error(h, QB_E_UNSUPPORTED,
                          "%s: %s with quant_method '%s': a quantized checkpoint, which hf-dense "
                          "does not read (use the reader for that method)",
                          path, key, cJSON_IsString(m) ? m->valuestring : "(none)");
        goto out;
    }
    mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt) || !mt->valuestring[0]) {
        st = h->set_error(h, QB_E_FORMAT, "%s: no model_type string", path);
        goto out;
    }
    *model_type = strdup(mt->valuestring);
    if (!*model_type)
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
out:
    cJSON_Delete(root);
    return st;
}
