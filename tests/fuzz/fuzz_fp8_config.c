/*
 * libFuzzer target: the fp8 reader's quantization_config interpretation
 * (plugins/fp8/fp8_model.c fp8_parse_config, static there, so that
 * file is compiled into this target by #include) and its probe, plus the
 * modules_to_not_convert / ignored_layers matcher, on a config.json text.
 */
#include "fp8_model.c"

#include "fuzz_host.h"
#include "qbk_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    char *text = malloc(size + 1);
    cJSON *root;
    qb_stdir d;
    fp8_model m;
    qb_status st;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    (void)fp8_config_probe(text);
    root = qbk_json_parse_quiet(text, size); /* what the reader's open parses with */
    free(text);
    if (!root)
        return 0;
    memset(&d, 0, sizeof(d));
    memset(&m, 0, sizeof(m));
    d.dir = (char *)"/nonexistent-qbfuzz";
    m.b.d = &d;
    m.b.config = root;
    m.b.qcfg = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (m.b.qcfg && !cJSON_IsObject(m.b.qcfg))
        m.b.qcfg = NULL; /* qb_stdir_open refuses any other */
    qbt_fuzz_reset();
    st = fp8_parse_config(h, &m);
    qbt_fuzz_check_status(st, "fp8_parse_config");
    if (st == QB_OK) {
        if ((m.bn < 0 || m.bk < 0) || (m.fmt != QB_DT_F8_E4M3 && m.fmt != QB_DT_F8_E5M2))
            __builtin_trap();
        (void)fp8_module_not_converted(m.b.qcfg, "model.layers.0.mlp.down_proj");
    }
    cJSON_Delete(root);
    return 0;
}
