/*
 * mlx plugin — config.json: the probe's test for an MLX quantized
 * checkpoint (mlx-lm's load_model reads `quantization`: group_size, bits,
 * mode and per-module entries keyed by the module path).
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "mlx.h"
#include "qbk_json.h"

int mlx_config_probe(const char *config_json)
{
    cJSON *root = NULL;
    const cJSON *qz, *qc, *qm;
    qbk_json_fail fail;
    int score = 0;

    /* a probe is pure: the parser's message is never reported */
    if (!config_json ||
        qbk_json_parse_text(config_json, strlen(config_json), NULL, &root, &fail) != QB_OK)
        return QB_PROBE_NONE;
    qz = cJSON_GetObjectItemCaseSensitive(root, "quantization");
    qc = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    qm = cJSON_GetObjectItemCaseSensitive(qc, "quant_method");
    if (cJSON_IsObject(qz) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(qz, "bits")) &&
        cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(qz, "group_size")) && !qm)
        score = QB_PROBE_LIKELY;
    cJSON_Delete(root);
    return score;
}
