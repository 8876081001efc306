/*
 * libFuzzer target: the compressed-tensors reader's quantization_config
 * (plugins/compressed-tensors/ct_config.c, ct_match.c): the input
 * is a config.json text; its quantization_config object (or the whole
 * document when it has none) goes to ct_config_parse, and a parsed config
 * is asked for a few module names. The probe sees the same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ct_config.h"
#include "fuzz_host.h"
#include "qbk_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const modules[] = {"model.layers.0.self_attn.q_proj",
                                          "model.layers.3.mlp.gate_proj", "lm_head",
                                          "model.embed_tokens", ""};
    const qb_host *h = qbt_fuzz_host();
    char *text = malloc(size + 1);
    cJSON *root;
    const cJSON *q;
    ct_config cfg;
    qb_status st;
    size_t i;
    int ignored, n_match, by_name;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    (void)ct_config_probe(text);
    root = qbk_json_parse_quiet(text, size); /* what the reader's open parses with */
    free(text);
    if (!root)
        return 0;
    q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (!q)
        q = root;
    qbt_fuzz_reset();
    memset(&cfg, 0, sizeof(cfg));
    st = ct_config_parse(h, "/nonexistent-qbfuzz", q, &cfg);
    qbt_fuzz_check_status(st, "ct_config_parse");
    if (st == QB_OK) {
        for (i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
            const ct_scheme *s = ct_config_lookup(&cfg, modules[i], (int)(i & 1) | (i < 2), &ignored,
                                                  &n_match, &by_name);
            if (s && s->has_weights && (s->bits < 1 || s->bits > 32))
                __builtin_trap();
        }
    }
    ct_config_free(&cfg);
    cJSON_Delete(root);
    return 0;
}
