/*
 * bench_ggml_dequant: single-thread throughput of gguf_ggml_dequantize_row
 * for every supported ggml type, as GB/s of source bytes read and millions
 * of weights written per second. Source rows are random bytes with the
 * blocks' fp16 scale fields set to ordinary finite values (no NaN or
 * subnormal slow paths). Usage: bench_ggml_dequant [seconds_per_type]
 */
#include "ggml_types.h"

#include <quantbridge/qb_half.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* byte offsets of fp16 scale fields per block (-1 ends), f32 for Q8_K */
static const struct {
    uint32_t type;
    int f16[3];
} scale_fields[] = {
    {GGUF_GGML_TYPE_Q4_0, {0, -1}}, {GGUF_GGML_TYPE_Q4_1, {0, 2, -1}},
    {GGUF_GGML_TYPE_Q5_0, {0, -1}}, {GGUF_GGML_TYPE_Q5_1, {0, 2, -1}},
    {GGUF_GGML_TYPE_Q8_0, {0, -1}}, {GGUF_GGML_TYPE_Q8_1, {0, 2, -1}},
    {GGUF_GGML_TYPE_Q2_K, {80, 82, -1}}, {GGUF_GGML_TYPE_Q3_K, {108, -1}},
    {GGUF_GGML_TYPE_Q4_K, {0, 2, -1}}, {GGUF_GGML_TYPE_Q5_K, {0, 2, -1}},
    {GGUF_GGML_TYPE_Q6_K, {208, -1}}, {GGUF_GGML_TYPE_IQ2_XXS, {0, -1}},
    {GGUF_GGML_TYPE_IQ2_XS, {0, -1}}, {GGUF_GGML_TYPE_IQ3_XXS, {0, -1}},
    {GGUF_GGML_TYPE_IQ1_S, {0, -1}}, {GGUF_GGML_TYPE_IQ4_NL, {0, -1}},
    {GGUF_GGML_TYPE_IQ3_S, {0, -1}}, {GGUF_GGML_TYPE_IQ2_S, {0, -1}},
    {GGUF_GGML_TYPE_IQ4_XS, {0, -1}}, {GGUF_GGML_TYPE_TQ1_0, {52, -1}},
    {GGUF_GGML_TYPE_TQ2_0, {64, -1}}, {GGUF_GGML_TYPE_Q1_0, {0, -1}},
    {GGUF_GGML_TYPE_Q2_0, {0, -1}},
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint8_t rnd8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)rng;
}

static void fill(uint32_t type, const gguf_ggml_type_info *t, uint8_t *src, uint64_t bytes)
{
    for (uint64_t i = 0; i < bytes; i++)
        src[i] = rnd8();
    for (uint64_t b = 0; b < bytes / t->bytes; b++) {
        uint8_t *blk = src + b * t->bytes;
        if (type == GGUF_GGML_TYPE_F16 || type == GGUF_GGML_TYPE_BF16 || type == GGUF_GGML_TYPE_F32 ||
            type == GGUF_GGML_TYPE_F64) {
            const float v = (float)(rnd8() - 128) / 64.0f;
            if (type == GGUF_GGML_TYPE_F32)
                memcpy(blk, &v, 4);
            else if (type == GGUF_GGML_TYPE_F64) {
                const double dv = v;
                memcpy(blk, &dv, 8);
            } else {
                const uint16_t h = type == GGUF_GGML_TYPE_F16 ? qb_f32_to_f16(v) : qb_f32_to_bf16(v);
                memcpy(blk, &h, 2);
            }
        } else if (type == GGUF_GGML_TYPE_Q8_K) {
            const float d = 0.01f;
            memcpy(blk, &d, 4);
        } else if (type == GGUF_GGML_TYPE_MXFP4) {
            blk[0] = (uint8_t)(120 + rnd8() % 8);
        }
        for (size_t k = 0; k < sizeof scale_fields / sizeof scale_fields[0]; k++) {
            if (scale_fields[k].type != type)
                continue;
            for (int f = 0; f < 3 && scale_fields[k].f16[f] >= 0; f++) {
                const uint16_t h = qb_f32_to_f16(0.001f + (float)(rnd8() % 64) * 1e-4f);
                memcpy(blk + scale_fields[k].f16[f], &h, 2);
            }
        }
    }
}

int main(int argc, char **argv)
{
    const double per_type = argc > 1 ? atof(argv[1]) : 0.3;
    const int64_t n = (int64_t)1 << 20; /* weights per call */
    float *dst = malloc(sizeof(float) * (size_t)n);
    uint8_t *src = malloc((size_t)n * 4 * 2);
    if (dst == NULL || src == NULL)
        return 1;
    printf("%-8s %12s %10s %12s\n", "type", "bytes/wt", "GB/s src", "Mweights/s");
    for (uint32_t type = 0; type < GGUF_GGML_TYPE_ID_END; type++) {
        const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
        uint64_t bytes;
        if (t == NULL || !t->supported || gguf_ggml_row_bytes(type, n, &bytes) != 0)
            continue;
        fill(type, t, src, bytes);
        gguf_ggml_dequantize_row(type, src, dst, n); /* warm up */
        long calls = 0;
        const double t0 = now_s();
        double t1;
        do {
            gguf_ggml_dequantize_row(type, src, dst, n);
            calls++;
            t1 = now_s();
        } while (t1 - t0 < per_type);
        const double secs = t1 - t0;
        printf("%-8s %12.4f %10.2f %12.1f\n", t->name, (double)bytes / (double)n,
               (double)bytes * calls / secs / 1e9, (double)n * calls / secs / 1e6);
    }
    free(dst);
    free(src);
    return 0;
}
