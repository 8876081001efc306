/* Reader vtable glue shared by reader plugins. Internal kit code; see
 * qbk_reader.h. */
#include "qbk_reader.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "qbk_json.h"

qb_status qbk_reader_check_index(const qb_host *h, const char *where, size_t index, size_t n)
{
    if (index < n)
        return QB_OK;
    return h->set_error(h, QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", where, index, n);
}

void qbk_reader_set_dims(qb_tensor_info *out, uint32_t n_dims, const int64_t *dims)
{
    uint32_t i;
    out->n_dims = n_dims ? n_dims : 1;
    for (i = 0; i < QB_MAX_DIMS; i++)
        out->dims[i] = i < n_dims ? dims[i] : (i == 0 ? 1 : 0);
}

void qbk_reader_hfdir_info(const qbk_hfdir *d, size_t n_tensors, const char *format,
                           const char *summary, qb_model_info *out)
{
    out->architecture = d->model_type;
    out->config_json = d->config_text;
    out->generation_config_json = d->gen_text;
    out->n_tensors = n_tensors;
    out->source_format = format;
    out->source_summary = summary;
    out->tokenizer_dir = d->has_tokenizer ? d->dir : NULL;
    if (QB_HAS_FIELD(out, qb_model_info, chat_template))
        out->chat_template = NULL;
}

int qbk_reader_probe_quant_method(const char *config_json, const char *quant_method)
{
    cJSON *root;
    const cJSON *q, *m;
    int score = 0;

    if (!config_json)
        return 0;
    root = qbk_json_parse_quiet(config_json, strlen(config_json));
    if (!root)
        return 0;
    q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    m = cJSON_IsObject(q) ? cJSON_GetObjectItemCaseSensitive(q, "quant_method") : NULL;
    if (cJSON_IsString(m) && !strcmp(m->valuestring, quant_method))
        score = 90;
    cJSON_Delete(root);
    return score;
}

int64_t qbk_reader_numel(const qb_st_tensor *t)
{
    int64_t n = 1;
    uint32_t i;
    for (i = 0; i < t->n_dims; i++)
        n *= t->dims[i];
    return n;
}
