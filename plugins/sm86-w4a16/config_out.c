/*
 * sm86-w4a16 — the non-tensor files: config.json, generation_config.json
 * and the tokenizer files (w4a16-format.md, "Directory").
 */
#include "w4w.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_hf_sidefiles.h"
#include "qbk_path.h"
#include "qbk_alloc.h"

#define W4W_TOKENIZER_MAX (512u << 20)

static qb_status write_json(const qb_host *h, const qb_sink *sink, const char *name,
                            const cJSON *obj, w4w_written_list *list)
{
    char *text = cJSON_Print(obj);
    qb_status rc;
    if (!text)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory printing JSON", name);
    rc = w4w_write_whole(h, sink, name, text, strlen(text), list);
    cJSON_free(text);
    return rc;
}

/* The source config without its quantization description (the kit's one
 * rule, qbk_hf_sidefiles.h), torch_dtype float16, and
 * the keys a runtime needs made explicit (tie_word_embeddings,
 * architectures, model_type). */
static qb_status write_config(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                              const w4w_plan *plan, w4w_written_list *list)
{
    cJSON *cfg = cJSON_Parse(src->info->config_json);
    qb_status rc = QB_OK;
    if (!cfg || !cJSON_IsObject(cfg)) {
        rc = h->set_error(h, QB_E_FORMAT, "config.json: source config is not a JSON object");
        goto out;
    }
    qbk_hf_config_strip_quant(cfg);
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "torch_dtype");
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "tie_word_embeddings");
    if (!cJSON_AddStringToObject(cfg, "torch_dtype", "float16") ||
        !cJSON_AddBoolToObject(cfg, "tie_word_embeddings", plan->tied)) {
        rc = h->set_error(h, QB_E_NOMEM, "config.json: out of memory");
        goto out;
    }
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "model_type") &&
        !cJSON_AddStringToObject(cfg, "model_type", plan->arch->model_type)) {
        rc = h->set_error(h, QB_E_NOMEM, "config.json: out of memory");
        goto out;
    }
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "architectures")) {
        cJSON *arr = cJSON_AddArrayToObject(cfg, "architectures");
        cJSON *s = cJSON_CreateString(plan->arch->hf_class);
        if (!arr || !s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(arr ? NULL : s);
            rc = h->set_error(h, QB_E_NOMEM, "config.json: out of memory");
            goto out;
        }
    }
    rc = write_json(h, sink, "config.json", cfg, list);
out:
    cJSON_Delete(cfg);
    return rc;
}

/* The source's generation config, or one built from the config's token ids
 * as transformers' GenerationConfig.from_model_config does. */
static qb_status write_generation(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                                  w4w_written_list *list)
{
    const char *text = src->info->generation_config_json;
    cJSON *obj = NULL, *cfg = NULL;
    qb_status rc = QB_OK;

    if (text) {
        obj = cJSON_Parse(text);
        if (!obj || !cJSON_IsObject(obj)) {
            rc = h->set_error(h, QB_E_FORMAT,
                              "generation_config.json: source file is not a JSON object");
            goto out;
        }
        rc = w4w_write_whole(h, sink, "generation_config.json", text, strlen(text), list);
        goto out;
    }
    cfg = cJSON_Parse(src->info->config_json);
    obj = cfg ? qbk_hf_generation_from_config(cfg) : NULL;
    if (!obj) {
        rc = h->set_error(h, QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    rc = write_json(h, sink, "generation_config.json", obj, list);
out:
    cJSON_Delete(obj);
    cJSON_Delete(cfg);
    return rc;
}

/* tokenizer_config.json with chat_template set (or replaced). */
static qb_status write_tok_config(const qb_host *h, const qb_sink *sink, const char *text,
                                  const char *chat_template, w4w_written_list *list)
{
    cJSON *obj = text ? cJSON_Parse(text) : cJSON_CreateObject();
    qb_status rc = QB_OK;
    if (!obj || !cJSON_IsObject(obj)) {
        rc = h->set_error(h, text ? QB_E_FORMAT : QB_E_NOMEM, "tokenizer_config.json: %s",
                          text ? "not a JSON object" : "out of memory");
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "chat_template");
    if (!cJSON_AddStringToObject(obj, "chat_template", chat_template)) {
        rc = h->set_error(h, QB_E_NOMEM, "tokenizer_config.json: out of memory");
        goto out;
    }
    rc = write_json(h, sink, "tokenizer_config.json", obj, list);
out:
    cJSON_Delete(obj);
    return rc;
}

static qb_status copy_tokenizer(const qb_host *h, const qb_sink *sink, const qb_model_info *mi,
                                w4w_written_list *list)
{
    char **names = NULL;
    char *path = NULL;
    int wrote_tok_config = 0;
    qb_status rc = QB_OK;
    size_t i;

    if (mi->tokenizer_dir) {
        rc = h->list_dir(h, mi->tokenizer_dir, &names);
        if (rc != QB_OK)
            goto out;
        for (i = 0; names[i]; i++) {
            void *data = NULL;
            size_t len = 0;
            if (!qbk_hf_is_tokenizer_file(names[i]))
                continue;
            if (!(path = qbk_path_join(mi->tokenizer_dir, names[i]))) {
                rc = h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", mi->tokenizer_dir, names[i]);
                goto out;
            }
            rc = h->read_small_file(h, path, W4W_TOKENIZER_MAX, &data, &len);
            qbk_free(path);
            path = NULL;
            if (rc != QB_OK)
                goto out;
            if (mi->chat_template && strcmp(names[i], "tokenizer_config.json") == 0) {
                rc = write_tok_config(h, sink, data, mi->chat_template, list);
                wrote_tok_config = 1;
            } else {
                rc = w4w_write_whole(h, sink, names[i], data, len, list);
            }
            h->free(h, data);
            if (rc != QB_OK)
                goto out;
        }
    }
    if (mi->chat_template && !wrote_tok_config)
        rc = write_tok_config(h, sink, NULL, mi->chat_template, list);
out:
    if (names)
        h->free_list(h, names);
    return rc;
}

qb_status w4w_config_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                           const w4w_plan *plan, w4w_written_list *list)
{
    qb_status rc = write_config(h, sink, src, plan, list);
    if (rc == QB_OK)
        rc = write_generation(h, sink, src, list);
    if (rc == QB_OK)
        rc = copy_tokenizer(h, sink, src->info, list);
    return rc;
}
