/*
 * libFuzzer target: the mxfp4 reader's configuration (issue 30): its
 * probe (mx_config_probe) and quantization_config interpretation
 * (mx_parse_config, static in plugins/mxfp4/mxfp4_model.c, so that file
 * is compiled into this target by #include), plus the positive-integer
 * config reading the expert width checks use, on a config.json text.
 */
#include "mxfp4_model.c"

#include "fuzz_host.h"
#include "qbk_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    char *text = malloc(size + 1);
    cJSON *root;
    qb_stdir d;
    mx_model m;
    qb_status st;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    (void)mx_config_probe(text);
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
    st = mx_parse_config(h, &m);
    qbt_fuzz_check_status(st, "mx_parse_config");
    /* -1 or a positive value, never anything else */
    if (mx_cfg_int(root, "hidden_size") == 0 || mx_cfg_int(root, "intermediate_size") < -1)
        __builtin_trap();
    cJSON_Delete(root);
    return 0;
}
