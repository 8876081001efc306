/*
 * A writer's output float dtype. See qbk_out_dtype.h.
 */
#include "qbk_out_dtype.h"

#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/qb_half.h>

#include "qbk_json.h"

size_t qbk_out_dt_size(qb_dtype dt)
{
    return dt == QB_DT_F32 ? 4 : 2;
}

const char *qbk_out_dt_st_name(qb_dtype dt)
{
    return dt == QB_DT_F32 ? "F32" : dt == QB_DT_F16 ? "F16" : "BF16";
}

const char *qbk_out_dt_torch_name(qb_dtype dt)
{
    return dt == QB_DT_F32 ? "float32" : dt == QB_DT_F16 ? "float16" : "bfloat16";
}

float qbk_out_dt_round(qb_dtype dt, float v)
{
    return dt == QB_DT_F16 ? qb_f16_to_f32(qb_f32_to_f16(v))
           : dt == QB_DT_BF16 ? qb_bf16_to_f32(qb_f32_to_bf16(v)) : v;
}

void qbk_out_dt_encode(qb_dtype dt, const float *src, size_t n, uint8_t *dst)
{
    size_t i, k, es = qbk_out_dt_size(dt);
    for (i = 0; i < n; i++) {
        uint32_t u = dt == QB_DT_F32 ? qb_f32_bits(src[i])
                     : dt == QB_DT_F16 ? qb_f32_to_f16(src[i]) : qb_f32_to_bf16(src[i]);
        for (k = 0; k < es; k++)
            dst[i * es + k] = (uint8_t)(u >> (8 * k));
    }
}

int qbk_out_dt_holds(qb_dtype dt, qb_dtype s)
{
    return dt == s || (dt == QB_DT_F32 && (s == QB_DT_F16 || s == QB_DT_BF16));
}

qb_dtype qbk_out_dt_of_config(const qb_host *h, const char *source, const char *config_json)
{
    cJSON *root = NULL;
    const cJSON *v;
    qb_dtype d = QB_DT_F16;
    if (qbk_json_parse_config(h, source, config_json, &root) != QB_OK)
        return d;
    v = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!cJSON_IsString(v))
        v = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "bfloat16") == 0)
        d = QB_DT_BF16;
    else if (cJSON_IsString(v) && strcmp(v->valuestring, "float32") == 0)
        d = QB_DT_F32;
    cJSON_Delete(root);
    return d;
}
