/* HF side files: the tokenizer list and the config clean-up rule. See
 * qbk_hf_sidefiles.h and docs/architecture.md, "HF side files". */
#include "qbk_hf_sidefiles.h"

#include <string.h>

#include "qbk_alloc.h"
#include "qbk_path.h"

const char *const qbk_hf_quant_config_keys[] = {"quantization_config", "compression_config", NULL};

cJSON *qbk_hf_generation_from_config(const cJSON *cfg)
{
    static const char *const ids[] = {"bos_token_id", "eos_token_id", "pad_token_id",
                                      "decoder_start_token_id", NULL};
    cJSON *gen = cJSON_CreateObject();
    size_t i;

    if (!gen || !cJSON_AddTrueToObject(gen, "_from_model_config"))
        goto fail;
    for (i = 0; ids[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, ids[i]);
        cJSON *dup;
        if (!v || cJSON_IsNull(v))
            continue;
        dup = cJSON_Duplicate(v, 1);
        if (!dup || !cJSON_AddItemToObject(gen, ids[i], dup)) {
            cJSON_Delete(dup);
            goto fail;
        }
    }
    return gen;
fail:
    cJSON_Delete(gen);
    return NULL;
}

void qbk_hf_config_strip_quant(cJSON *cfg)
{
    size_t k;
    if (!cJSON_IsObject(cfg))
        return;
    for (k = 0; qbk_hf_quant_config_keys[k]; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, qbk_hf_quant_config_keys[k]);
}

qb_status qbk_read_text(const qb_host *h, const char *dir, const char *name, char **out)
{
    return qbk_read_side_text(h, dir, name, (size_t)64 << 20, NULL, 0, out);
}

qb_status qbk_read_side_text(const qb_host *h, const char *dir, const char *name, size_t max_bytes,
                             const char *missing, int reject_nul, char **out)
{
    char *path = qbk_path_join(dir, name);
    void *data = NULL;
    size_t len = 0;
    qb_status st;
    *out = NULL;
    if (!path)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    st = h->read_small_file(h, path, max_bytes, &data, &len);
    if (st == QB_E_NOT_FOUND)
        st = missing ? h->set_error(h, QB_E_NOT_FOUND, "%s: %s", path, missing) : QB_OK;
    else if (st == QB_OK && reject_nul && strlen(data) != len)
        st = h->set_error(h, QB_E_FORMAT, "%s: contains a NUL byte", path);
    else if (st == QB_OK) {
        *out = data;
        data = NULL;
    }
    h->free(h, data);
    qbk_free(path);
    return st;
}
