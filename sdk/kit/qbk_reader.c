/* What the in-tree readers on the reader base add (qbk_reader.h). */
#include "qbk_reader.h"

#include <string.h>

#include "qbk_alloc.h"
#include "qbk_json.h"

qb_status qbk_reader_config(const qb_stdir *d, cJSON **config, const cJSON **qcfg)
{
    qb_status st = qbk_json_parse_object(d->host, d->config_path, d->config_text, d->config_len,
                                         config);
    *qcfg = st == QB_OK ? cJSON_GetObjectItemCaseSensitive(*config, "quantization_config") : NULL;
    return st;
}

qb_status qbk_reader_model_new(qb_streader *r, size_t size, void **model)
{
    qbk_reader_model *m;
    *model = NULL;
    if (!(m = qbk_calloc(1, size)))
        return r->host->set_error(r->host, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    r->model = m;
    *model = m;
    m->d = r->dir;
    return qbk_reader_config(m->d, &m->config, &m->qcfg);
}

void qbk_reader_model_free(qb_streader *r)
{
    qbk_reader_model *m = r->model;
    if (!m)
        return;
    cJSON_Delete(m->config);
    qbk_free(m);
    r->model = NULL;
}

int qbk_reader_probe_quant_method(const char *config_json, const char *quant_method,
                                  int *has_qcfg)
{
    cJSON *root;
    const cJSON *q, *m;
    int score = 0;

    if (has_qcfg)
        *has_qcfg = -1;
    if (!config_json)
        return 0;
    root = qbk_json_parse_quiet(config_json, strlen(config_json));
    if (!root)
        return 0;
    q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (has_qcfg)
        *has_qcfg = q != NULL;
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
