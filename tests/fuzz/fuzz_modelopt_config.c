/*
 * libFuzzer target: the modelopt reader's configuration (issue 30): its
 * probe (mo_probe) and mo_parse_config (static in
 * plugins/modelopt/mo_model.c, #included), which reads both
 * config.json's quantization_config and hf_quant_config.json. Input:
 * config.json text, then after a NUL byte hf_quant_config.json (served as
 * a virtual file of the model directory; absent without the NUL). Then the
 * exclude_modules matcher on a module name.
 */
#include "mo_model.c"

#include "fuzz_host.h"
#include "qbk_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sib_with[] = {"config.json", "hf_quant_config.json", NULL};
    static const char *const sib_without[] = {"config.json", NULL};
    const qb_host *h = qbt_fuzz_host();
    const uint8_t *nul = memchr(data, 0, size);
    size_t clen = nul ? (size_t)(nul - data) : size;
    char *text = malloc(clen + 1);
    cJSON *root;
    qb_stdir d;
    mo_model m;
    qb_status st;
    size_t i;
    int from_side = 0;

    if (!text)
        return 0;
    memcpy(text, data, clen);
    text[clen] = 0;
    (void)mo_probe(text, nul ? sib_with : sib_without);
    root = qbk_json_parse_quiet(text, clen);
    free(text);
    if (!root)
        return 0;
    qbt_fuzz_reset();
    if (nul)
        qbt_fuzz_vfile("/nonexistent-qbfuzz/hf_quant_config.json", nul + 1, size - clen - 1);
    memset(&d, 0, sizeof(d));
    memset(&m, 0, sizeof(m));
    d.dir = (char *)"/nonexistent-qbfuzz";
    m.b.d = &d;
    m.b.config = root;
    m.b.qcfg = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (m.b.qcfg && !cJSON_IsObject(m.b.qcfg))
        m.b.qcfg = NULL; /* qb_stdir_open refuses any other */
    st = mo_parse_config(h, &m, &from_side);
    qbt_fuzz_check_status(st, "mo_parse_config");
    if (st == QB_OK)
        (void)mo_excluded(&m, "model.layers.0.mlp.down_proj");
    for (i = 0; i < m.n_exclude; i++)
        qbk_free(m.exclude[i]);
    qbk_free(m.exclude);
    cJSON_Delete(root);
    return 0;
}
