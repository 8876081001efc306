/*
 * libFuzzer target: every ggml block decoder on arbitrary bytes.
 * Byte 0 picks the type id (mod GGUF_GGML_TYPE_ID_END, so removed ids are
 * exercised too), the rest are blocks. gguf_ggml_row_bytes must agree with
 * the type table, and gguf_ggml_dequantize_row decodes as many whole
 * blocks as the input holds into an exactly sized heap buffer (ASan
 * reports a decoder writing past n floats or reading past its blocks).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const gguf_ggml_type_info *ti;
    uint32_t type;
    uint64_t rb = 0, n_blocks;
    int64_t n;
    uint8_t *src;
    float *dst;
    int rc;

    if (size < 1)
        return 0;
    type = data[0] % GGUF_GGML_TYPE_ID_END;
    data++;
    size--;
    ti = gguf_ggml_type_get(type);
    if (!ti) {
        if (gguf_ggml_type_supported(type) || gguf_ggml_type_name(type) ||
            gguf_ggml_row_bytes(type, 0, &rb) != -3)
            __builtin_trap();
        return 0;
    }
    if (ti->blck == 0 || ti->bytes == 0)
        __builtin_trap();
    n_blocks = size / ti->bytes;
    n = (int64_t)(n_blocks * ti->blck);
    rc = gguf_ggml_row_bytes(type, n, &rb);
    if (rc != 0 || rb != n_blocks * ti->bytes)
        __builtin_trap();
    if (ti->blck > 1 && gguf_ggml_row_bytes(type, n + 1, &rb) != -2)
        __builtin_trap();
    {
        /* the largest whole-block count: its size overflows uint64_t exactly
         * when the block count exceeds UINT64_MAX / bytes */
        int64_t big = INT64_MAX - (INT64_MAX % ti->blck);
        uint64_t nb = (uint64_t)big / ti->blck;
        int want = nb > UINT64_MAX / ti->bytes ? -11 : 0;
        if (gguf_ggml_row_bytes(type, big, &rb) != want)
            __builtin_trap();
    }
    if (!gguf_ggml_type_supported(type) || n == 0)
        return 0;
    /* exact-size copies so ASan sees any overrun of either side */
    src = malloc((size_t)(n_blocks * ti->bytes));
    dst = malloc((size_t)n * sizeof(float));
    if (src && dst) {
        memcpy(src, data, (size_t)(n_blocks * ti->bytes));
        gguf_ggml_dequantize_row(type, src, dst, n);
    }
    free(src);
    free(dst);
    return 0;
}
