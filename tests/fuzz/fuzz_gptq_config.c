/*
 * libFuzzer target: the GPTQ reader's quantization config
 * (plugins/gptq/gptq_config.c). The input is split at its first
 * NUL byte: the part before is config.json, the part after (when present)
 * is quantize_config.json of the same virtual directory, so the "two
 * configs must agree" path is reached too. A loaded config resolves a few
 * module names through its `dynamic` rules; the probe sees the same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_host.h"
#include "gptq_config.h"

#define FZ_DIR "/nonexistent-qbfuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const modules[] = {"model.layers.0.self_attn.q_proj",
                                          "model.layers.1.mlp.down_proj", "lm_head", ""};
    const qb_host *h = qbt_fuzz_host();
    const uint8_t *nul = memchr(data, 0, size);
    size_t n_main = nul ? (size_t)(nul - data) : size;
    char *main_text = malloc(n_main + 1);
    gptq_config cfg;
    gptq_params p;
    qb_status st;
    size_t i;

    if (!main_text)
        return 0;
    memcpy(main_text, data, n_main);
    main_text[n_main] = 0;
    qbt_fuzz_reset();
    if (nul)
        qbt_fuzz_vfile(FZ_DIR "/quantize_config.json", nul + 1, size - n_main - 1);
    (void)gptq_config_probe(main_text, nul != NULL);
    memset(&cfg, 0, sizeof(cfg));
    st = gptq_config_load(h, FZ_DIR, main_text, &cfg);
    qbt_fuzz_check_status(st, "gptq_config_load");
    if (st == QB_OK) {
        for (i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
            memset(&p, 0, sizeof(p));
            if (gptq_config_resolve(&cfg, modules[i], &p) == 0 &&
                (p.bits < 2 || p.bits > 8 || (p.group_size <= 0 && p.group_size != -1)))
                __builtin_trap(); /* the header promises validated parameters */
        }
    }
    gptq_config_free(&cfg);
    free(main_text);
    return 0;
}
