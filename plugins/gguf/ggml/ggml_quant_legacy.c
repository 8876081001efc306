/*
 * Legacy 32-element block quantizers (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and
 * the plain float types, written from the block definitions
 * (docs/formats/gguf.md, "Quantizing legacy blocks"). The arithmetic
 * follows llama.cpp's reference quantizers (ggml-quants.c
 * quantize_row_q4_0_ref, _q4_1_ref, _q5_0_ref, _q5_1_ref, _q8_0_ref)
 * operation for operation in float32, so the bytes are the same: the
 * inverse scale comes from the unrounded float scale, codes are
 * truncating casts of (x * id + offset), and only the stored scale is
 * rounded to fp16.
 */
#include "ggml_quant.h"
#include "ggml_types.h"

#include <quantbridge/qb_half.h>

#include <math.h>
#include <string.h>

#define QK 32

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The element of largest magnitude, with its sign; the first one wins a
 * tie (quantize_row_q4_0_ref compares with <). */
static float signed_absmax(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

static void min_max(const float *x, float *mn, float *mx)
{
    float lo = x[0], hi = x[0];
    /* quantize_row_q4_1_ref starts from +FLT_MAX / -FLT_MAX; starting
     * from x[0] gives the same pair. */
    for (int j = 1; j < QK; j++) {
        if (x[j] < lo)
            lo = x[j];
        if (x[j] > hi)
            hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

/* Symmetric 4/5-bit block: d = max / -half (half 8 or 16), codes
 * min(2*half - 1, (int8)(x * id + half + 0.5)). */
static void quant_sym(const float *x, uint8_t *out, int half, int five)
{
    const float max = signed_absmax(x);
    const float d = max / (float)-half;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float off = (float)half + 0.5f;
    const int top = 2 * half - 1;
    uint32_t qh = 0;
    uint8_t *qs = out + (five ? 6 : 2);
    put16(out, qb_f32_to_f16(d));
    for (int j = 0; j < QK / 2; j++) {
        int a = (int8_t)(x[j] * id + off), b = (int8_t)(x[j + QK / 2] * id + off);
        if (a > top)
            a = top;
        if (b > top)
            b = top;
        qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
        qh |= (uint32_t)((a & 0x10) >> 4) << j;
        qh |= (uint32_t)((b & 0x10) >> 4) << (j + QK / 2);
    }
    if (five)
        put32(out + 2, qh);
}

/* Affine 4/5-bit block: d = (max - min) / (2^bits - 1), m = min. Q4_1
 * clamps the code to 15; quantize_row_q5_1_ref does not clamp (a code
 * cannot pass 31 there: (x - min) * id <= 31 up to rounding, and the +0.5
 * truncation keeps it below 32). */
static void quant_affine(const float *x, uint8_t *out, int five)
{
    float mn, mx;
    min_max(x, &mn, &mx);
    const float d = (mx - mn) / (float)(five ? 31 : 15);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint32_t qh = 0;
    uint8_t *qs = out + (five ? 8 : 4);
    put16(out, qb_f32_to_f16(d));
    put16(out + 2, qb_f32_to_f16(mn));
    for (int j = 0; j < QK / 2; j++) {
        const float x0 = (x[j] - mn) * id, x1 = (x[j + QK / 2] - mn) * id;
        int a, b;
        if (five) {
            a = (uint8_t)(x0 + 0.5f);
            b = (uint8_t)(x1 + 0.5f);
        } else {
            a = (int8_t)(x0 + 0.5f);
            b = (int8_t)(x1 + 0.5f);
            if (a > 15)
                a = 15;
            if (b > 15)
                b = 15;
        }
        qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
        qh |= (uint32_t)((a & 0x10) >> 4) << j;
        qh |= (uint32_t)((b & 0x10) >> 4) << (j + QK / 2);
    }
    if (five)
        put32(out + 4, qh);
}

static void quant_q8_0(const float *x, uint8_t *out)
{
    float amax = 0.0f;
    for (int j = 0; j < QK; j++)
        if (fabsf(x[j]) > amax)
            amax = fabsf(x[j]);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(out, qb_f32_to_f16(d));
    for (int j = 0; j < QK; j++)
        out[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

int gguf_ggml_can_quantize(uint32_t type)
{
    switch (type) {
    case GGUF_GGML_TYPE_F32:
    case GGUF_GGML_TYPE_F16:
    case GGUF_GGML_TYPE_BF16:
    case GGUF_GGML_TYPE_Q4_0:
    case GGUF_GGML_TYPE_Q4_1:
    case GGUF_GGML_TYPE_Q5_0:
    case GGUF_GGML_TYPE_Q5_1:
    case GGUF_GGML_TYPE_Q8_0:
    case GGUF_GGML_TYPE_Q4_K:
    case GGUF_GGML_TYPE_Q5_K:
    case GGUF_GGML_TYPE_Q6_K:
        return 1;
    default:
        return 0;
    }
}

void gguf_ggml_quantize_row(uint32_t type, const float *x, uint8_t *dst, int64_t n)
{
    int64_t i;
    switch (type) {
    case GGUF_GGML_TYPE_F32:
        for (i = 0; i < n; i++)
            put32(dst + 4 * i, qb_f32_bits(x[i]));
        return;
    case GGUF_GGML_TYPE_F16:
        for (i = 0; i < n; i++)
            put16(dst + 2 * i, qb_f32_to_f16(x[i]));
        return;
    case GGUF_GGML_TYPE_BF16:
        for (i = 0; i < n; i++)
            put16(dst + 2 * i, qb_f32_to_bf16(x[i]));
        return;
    case GGUF_GGML_TYPE_Q4_K:
    case GGUF_GGML_TYPE_Q5_K:
    case GGUF_GGML_TYPE_Q6_K:
        gguf_ggml_quantize_k_row(type, x, dst, n);
        return;
    default:
        break;
    }
    for (i = 0; i < n / QK; i++, x += QK) {
        switch (type) {
        case GGUF_GGML_TYPE_Q4_0:
            quant_sym(x, dst, 8, 0), dst += 18;
            break;
        case GGUF_GGML_TYPE_Q5_0:
            quant_sym(x, dst, 16, 1), dst += 22;
            break;
        case GGUF_GGML_TYPE_Q4_1:
            quant_affine(x, dst, 0), dst += 20;
            break;
        case GGUF_GGML_TYPE_Q5_1:
            quant_affine(x, dst, 1), dst += 24;
            break;
        default: /* Q8_0 */
            quant_q8_0(x, dst), dst += 34;
            break;
        }
    }
}

void gguf_ggml_q4_0_pack(const uint8_t codes[32], uint16_t d_f16, uint8_t out[18])
{
    put16(out, d_f16);
    for (int j = 0; j < QK / 2; j++)
        out[2 + j] = (uint8_t)((codes[j] & 0x0F) | (codes[j + QK / 2] << 4));
}

void gguf_ggml_q8_0_pack(const int8_t q[32], uint16_t d_f16, uint8_t out[34])
{
    put16(out, d_f16);
    memcpy(out + 2, q, QK);
}
