/*
 * libFuzzer target: the AWQ reader's config interpretation
 * (plugins/awq/awq_open.c awq_config_load / awq_parse, static
 * there, so that file is compiled into this target by #include). The input
 * is split at its first NUL: config.json before, quant_config.json (the
 * pre-2023-11 side file) after. The probe sees the same text.
 */
#include "awq_open.c"

#include "fuzz_host.h"

#define FZ_DIR "/nonexistent-qbfuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    const uint8_t *nul = memchr(data, 0, size);
    size_t n_main = nul ? (size_t)(nul - data) : size;
    char *main_text = malloc(n_main + 1);
    awq_config c;
    qb_status st;

    if (!main_text)
        return 0;
    memcpy(main_text, data, n_main);
    main_text[n_main] = 0;
    qbt_fuzz_reset();
    if (nul)
        qbt_fuzz_vfile(FZ_DIR "/quant_config.json", nul + 1, size - n_main - 1);
    (void)awq_probe_config(main_text, nul != NULL);
    memset(&c, 0, sizeof(c));
    st = awq_config_load(h, FZ_DIR, main_text, &c);
    qbt_fuzz_check_status(st, "awq_config_load");
    if (st == QB_OK && (c.bits != 4 || (c.group_size < 1 && c.group_size != -1) ||
                        (c.version != AWQ_GEMM && c.version != AWQ_GEMV)))
        __builtin_trap();
    awq_config_free(&c);
    free(main_text);
    return 0;
}
