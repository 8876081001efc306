/*
 * ggml block quantizers for test fixtures (see ggml_quant.h). Simple
 * round-to-nearest schemes written from the block layouts of docs/formats/gguf.md,
 * "Block layouts"; each block is encoded with the scales it will be decoded with (the
 * fp16-rounded ones), so decode error stays within half a step.
 */
#include "ggml_quant.h"

#include "ggml_iq_grids.h"
#include "ggml_types.h"

#include <quantbridge/qb_half.h>

#include <math.h>
#include <string.h>

#define QK_K 256

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* fp16 of v and the float it decodes to. */
static float f16_round(float v, uint16_t *bits)
{
    *bits = qb_f32_to_f16(v);
    return qb_f16_to_f32(*bits);
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int round_div(float x, float d)
{
    return d != 0.0f ? (int)lrintf(x / d) : 0;
}

/* the element with the largest magnitude, sign kept */
static float signed_absmax(const float *x, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > fabsf(m))
            m = x[i];
    return m;
}

static void min_max(const float *x, int n, float *mn, float *mx)
{
    *mn = x[0];
    *mx = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < *mn)
            *mn = x[i];
        if (x[i] > *mx)
            *mx = x[i];
    }
}

/* split-half nibble packing of 32 codes: byte j = codes[j] | codes[j+16]<<4 */
static void pack_nibbles32(const uint8_t *codes, uint8_t *qs)
{
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((codes[j] & 15) | ((codes[j + 16] & 15) << 4));
}

void qbt_ggml_q4_0_from_codes(const uint8_t codes[32], uint16_t d_f16, uint8_t out[18])
{
    put_u16(out, d_f16);
    pack_nibbles32(codes, out + 2);
}

void qbt_ggml_q8_0_from_codes(const int8_t codes[32], uint16_t d_f16, uint8_t out[34])
{
    put_u16(out, d_f16);
    memcpy(out + 2, codes, 32);
}

void qbt_ggml_iq4_nl_from_codes(const uint8_t idx[32], uint16_t d_f16, uint8_t out[18])
{
    put_u16(out, d_f16);
    pack_nibbles32(idx, out + 2);
}

/* symmetric: largest magnitude maps to code -half (Q4_0: -8, Q5_0: -16) */
static void quant_sym32(const float *x, uint8_t *out, int half, int with_qh)
{
    uint16_t db;
    uint8_t codes[32];
    uint32_t qh = 0;
    const float d = f16_round(signed_absmax(x, 32) / (float)-half, &db);
    for (int e = 0; e < 32; e++) {
        codes[e] = (uint8_t)clampi(round_div(x[e], d) + half, 0, 2 * half - 1);
        qh |= (uint32_t)((codes[e] >> 4) & 1) << e;
    }
    put_u16(out, db);
    if (with_qh) {
        put_u32(out + 2, qh);
        pack_nibbles32(codes, out + 6);
    } else {
        pack_nibbles32(codes, out + 2);
    }
}

/* affine: value = code * d + m with m = block minimum */
static void quant_affine32(const float *x, uint8_t *out, int levels, int with_qh)
{
    uint16_t db, mb;
    uint8_t codes[32];
    uint32_t qh = 0;
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float m = f16_round(mn, &mb);
    const float d = f16_round((mx - m) / (float)(levels - 1), &db);
    for (int e = 0; e < 32; e++) {
        codes[e] = (uint8_t)clampi(round_div(x[e] - m, d), 0, levels - 1);
        qh |= (uint32_t)((codes[e] >> 4) & 1) << e;
    }
    put_u16(out, db);
    put_u16(out + 2, mb);
    if (with_qh) {
        put_u32(out + 4, qh);
        pack_nibbles32(codes, out + 8);
    } else {
        pack_nibbles32(codes, out + 4);
    }
}

static void quant_q8_0(const float *x, uint8_t *out)
{
    uint16_t db;
    float amax = fabsf(signed_absmax(x, 32));
    const float d = f16_round(amax / 127.0f, &db);
    put_u16(out, db);
    for (int e = 0; e < 32; e++)
        out[2 + e] = (uint8_t)(int8_t)clampi(round_div(x[e], d), -127, 127);
}

/* Q2_K: 16 sub-blocks of 16, x = dl*q - ml, q in 0..3, 4-bit scale/min */
static void quant_q2_k(const float *x, uint8_t *out)
{
    float sc[16], mn[16], max_sc = 0, max_mn = 0;
    uint16_t db, dmb;
    uint8_t *scales = out, *qs = out + 16;
    for (int j = 0; j < 16; j++) {
        float lo, hi;
        min_max(x + 16 * j, 16, &lo, &hi);
        if (lo > 0)
            lo = 0;
        mn[j] = -lo;
        sc[j] = (hi - lo) / 3.0f;
        max_sc = fmaxf(max_sc, sc[j]);
        max_mn = fmaxf(max_mn, mn[j]);
    }
    /* round scales up so the top code still reaches the maximum */
    const float d = f16_round(max_sc / 15.0f, &db);
    const float dmin = f16_round(max_mn / 15.0f, &dmb);
    memset(qs, 0, 64);
    for (int j = 0; j < 16; j++) {
        const int ls = d > 0 ? clampi((int)ceilf(sc[j] / d), 0, 15) : 0;
        const int lm = dmin > 0 ? clampi((int)lrintf(mn[j] / dmin), 0, 15) : 0;
        scales[j] = (uint8_t)(ls | (lm << 4));
        const float dl = d * (float)ls, ml = dmin * (float)lm;
        for (int l = 0; l < 16; l++) {
            const int e = 16 * j + l;
            const int q = clampi(round_div(x[e] + ml, dl), 0, 3);
            /* element e: half n = e/128, plane p = (e%128)/32, r = e%32 */
            qs[32 * (e / 128) + e % 32] |= (uint8_t)(q << (2 * ((e % 128) / 32)));
        }
    }
    put_u16(out + 80, db);
    put_u16(out + 82, dmb);
}

/* Q3_K: 16 sub-blocks of 16, x = d*(s-32)*q, q in -4..3 */
static void quant_q3_k(const float *x, uint8_t *out)
{
    float s[16], smax = 0;
    uint16_t db;
    uint8_t *hmask = out, *qs = out + 32, *sc = out + 96;
    for (int j = 0; j < 16; j++) {
        s[j] = fabsf(signed_absmax(x + 16 * j, 16)) / 4.0f;
        smax = fmaxf(smax, s[j]);
    }
    const float d = f16_round(smax / 31.0f, &db);
    memset(out, 0, 110);
    for (int j = 0; j < 16; j++) {
        const int ls = d > 0 ? clampi((int)lrintf(s[j] / d), 0, 31) : 0;
        const int v = ls + 32; /* stored 6-bit, decoded as v - 32 */
        if (j < 8)
            sc[j] |= (uint8_t)(v & 15);
        else
            sc[j - 8] |= (uint8_t)((v & 15) << 4);
        sc[8 + j % 4] |= (uint8_t)((v >> 4) << (2 * (j / 4)));
        const float dl = d * (float)ls;
        for (int l = 0; l < 16; l++) {
            const int e = 16 * j + l;
            const int q = clampi(round_div(x[e], dl), -4, 3) + 4; /* 0..7 */
            const int n = e / 128, p = (e % 128) / 32, r = e % 32;
            qs[32 * n + r] |= (uint8_t)((q & 3) << (2 * p));
            if (q & 4)
                hmask[r] |= (uint8_t)(1u << (4 * n + p));
        }
    }
    put_u16(out + 108, db);
}

/* packs 8 (scale, min) 6-bit pairs the way get_scale_min_k4 reads them */
static void pack_k4_scales(const int *ls, const int *lm, uint8_t *s)
{
    memset(s, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] |= (uint8_t)(ls[j] & 63);
            s[j + 4] |= (uint8_t)(lm[j] & 63);
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 15) | ((lm[j] & 15) << 4));
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

void qbt_ggml_q4_k_from_codes(const uint8_t codes[256], const uint8_t sc[8], const uint8_t m[8],
                              uint16_t d_f16, uint16_t dmin_f16, uint8_t out[144])
{
    int ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        ls[j] = sc[j] & 63;
        lm[j] = m[j] & 63;
    }
    put_u16(out, d_f16);
    put_u16(out + 2, dmin_f16);
    pack_k4_scales(ls, lm, out + 4);
    /* 4 chunks of 64 elements: byte 32c + l holds element 64c + l (low
     * nibble) and 64c + 32 + l (high nibble) */
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            out[16 + 32 * c + l] = (uint8_t)((codes[64 * c + l] & 15) | ((codes[64 * c + 32 + l] & 15) << 4));
}

/* Q4_K (bits 4) / Q5_K (bits 5): 8 sub-blocks of 32, x = d*sc*q - dmin*m */
static void quant_q45_k(const float *x, uint8_t *out, int bits)
{
    const int qmax = (1 << bits) - 1;
    float sc[8], mn[8], max_sc = 0, max_mn = 0;
    int ls[8], lm[8];
    uint16_t db, dmb;
    for (int j = 0; j < 8; j++) {
        float lo, hi;
        min_max(x + 32 * j, 32, &lo, &hi);
        if (lo > 0)
            lo = 0;
        mn[j] = -lo;
        sc[j] = (hi - lo) / (float)qmax;
        max_sc = fmaxf(max_sc, sc[j]);
        max_mn = fmaxf(max_mn, mn[j]);
    }
    const float d = f16_round(max_sc / 63.0f, &db);
    const float dmin = f16_round(max_mn / 63.0f, &dmb);
    for (int j = 0; j < 8; j++) {
        ls[j] = d > 0 ? clampi((int)ceilf(sc[j] / d), 0, 63) : 0;
        lm[j] = dmin > 0 ? clampi((int)lrintf(mn[j] / dmin), 0, 63) : 0;
    }
    put_u16(out, db);
    put_u16(out + 2, dmb);
    pack_k4_scales(ls, lm, out + 4);
    uint8_t *qh = bits == 5 ? out + 16 : NULL;
    uint8_t *qs = bits == 5 ? out + 48 : out + 16;
    memset(qs, 0, 128);
    if (qh)
        memset(qh, 0, 32);
    for (int j = 0; j < 8; j++) {
        const float dl = d * (float)ls[j], ml = dmin * (float)lm[j];
        for (int l = 0; l < 32; l++) {
            const int q = clampi(round_div(x[32 * j + l] + ml, dl), 0, qmax);
            /* chunk c = j/2 of 32 bytes; even sub-block low nibbles */
            qs[32 * (j / 2) + l] |= (uint8_t)((q & 15) << (4 * (j % 2)));
            if (qh && (q & 16))
                qh[l] |= (uint8_t)(1u << j);
        }
    }
}

/* Q6_K packing of 256 codes (0..63 = value + 32) into ql/qh */
static void pack_q6_k(const int *q, uint8_t *ql, uint8_t *qh)
{
    memset(ql, 0, 128);
    memset(qh, 0, 64);
    for (int e = 0; e < QK_K; e++) {
        const int n = e / 128, g = (e % 128) / 32, r = e % 32;
        /* g 0,1: low nibbles of ql[64n + r + 32(g&1)], g 2,3: high */
        ql[64 * n + r + 32 * (g & 1)] |= (uint8_t)((q[e] & 15) << (g < 2 ? 0 : 4));
        qh[32 * n + r] |= (uint8_t)((q[e] >> 4) << (2 * g));
    }
}

void qbt_ggml_q6_k_from_codes(const int8_t codes[256], const int8_t sc[16], uint16_t d_f16,
                              uint8_t out[210])
{
    int q[QK_K];
    for (int e = 0; e < QK_K; e++)
        q[e] = clampi(codes[e], -32, 31) + 32;
    pack_q6_k(q, out, out + 128);
    memcpy(out + 192, sc, 16);
    put_u16(out + 208, d_f16);
}

/* Q6_K: 16 sub-blocks of 16, x = d*sc*q, sc int8, q in -32..31 */
static void quant_q6_k(const float *x, uint8_t *out)
{
    float s[16], smax = 0;
    uint16_t db;
    uint8_t *ql = out, *qh = out + 128;
    int8_t *sc = (int8_t *)(out + 192);
    for (int j = 0; j < 16; j++) {
        s[j] = fabsf(signed_absmax(x + 16 * j, 16)) / 32.0f;
        smax = fmaxf(smax, s[j]);
    }
    const float d = f16_round(smax / 127.0f, &db);
    int q[QK_K];
    for (int j = 0; j < 16; j++) {
        sc[j] = (int8_t)(d > 0 ? clampi((int)ceilf(s[j] / d), 0, 127) : 0);
        const float dl = d * (float)sc[j];
        for (int l = 0; l < 16; l++)
            q[16 * j + l] = clampi(round_div(x[16 * j + l], dl), -32, 31) + 32; /* 0..63 */
    }
    pack_q6_k(q, ql, qh);
    put_u16(out + 208, db);
}

static int nearest_index(const int8_t *table, float v)
{
    int best = 0;
    for (int i = 1; i < 16; i++)
        if (fabsf((float)table[i] - v) < fabsf((float)table[best] - v))
            best = i;
    return best;
}

static void quant_iq4_nl(const float *x, uint8_t *out)
{
    uint16_t db;
    uint8_t idx[32];
    /* the largest magnitude maps onto kvalues[0] = -127 */
    const float d = f16_round(signed_absmax(x, 32) / -127.0f, &db);
    for (int e = 0; e < 32; e++)
        idx[e] = (uint8_t)(d != 0 ? nearest_index(gguf_ggml_kvalues_iq4nl, x[e] / d) : 8);
    qbt_ggml_iq4_nl_from_codes(idx, db, out);
}

static void quant_iq4_xs(const float *x, uint8_t *out)
{
    float s[8], smax = 0;
    uint16_t db, scales_h = 0;
    for (int ib = 0; ib < 8; ib++) {
        s[ib] = signed_absmax(x + 32 * ib, 32) / -127.0f;
        if (fabsf(s[ib]) > fabsf(smax))
            smax = s[ib];
    }
    const float d = f16_round(smax / -32.0f, &db);
    memset(out, 0, 136);
    for (int ib = 0; ib < 8; ib++) {
        const int ls = d != 0 ? clampi((int)lrintf(s[ib] / d), -32, 31) + 32 : 32;
        out[4 + ib / 2] |= (uint8_t)((ls & 15) << (4 * (ib % 2)));
        scales_h |= (uint16_t)((ls >> 4) << (2 * ib));
        const float dl = d * (float)(ls - 32);
        uint8_t idx[32];
        for (int e = 0; e < 32; e++)
            idx[e] = (uint8_t)(dl != 0 ? nearest_index(gguf_ggml_kvalues_iq4nl, x[32 * ib + e] / dl) : 8);
        pack_nibbles32(idx, out + 8 + 16 * ib);
    }
    put_u16(out, db);
    put_u16(out + 2, scales_h);
}

/* ternary code -1/0/+1 of x relative to d, as 0/1/2 */
static int trit(float x, float d)
{
    return clampi(round_div(x, d), -1, 1) + 1;
}

static void quant_tq1_0(const float *x, uint8_t *out)
{
    uint16_t db;
    const float d = f16_round(fabsf(signed_absmax(x, QK_K)), &db);
    /* element -> (byte, trit position) exactly as dequantize_row_tq1_0
     * reads it; a byte holds ceil(v * 256 / 243) of its base-3 number v
     * with trit 0 most significant */
    int v[52] = {0};
    for (int e = 0; e < QK_K; e++) {
        int byte, pos;
        if (e < 160) {
            byte = e % 32;
            pos = e / 32;
        } else if (e < 240) {
            byte = 32 + (e - 160) % 16;
            pos = (e - 160) / 16;
        } else {
            byte = 48 + (e - 240) % 4;
            pos = (e - 240) / 4;
        }
        int w = 1;
        for (int k = pos; k < 4; k++)
            w *= 3;
        v[byte] += trit(x[e], d) * w;
    }
    for (int b = 0; b < 52; b++)
        out[b] = (uint8_t)((v[b] * 256 + 242) / 243);
    put_u16(out + 52, db);
}

static void quant_tq2_0(const float *x, uint8_t *out)
{
    uint16_t db;
    const float d = f16_round(fabsf(signed_absmax(x, QK_K)), &db);
    memset(out, 0, 64);
    for (int e = 0; e < QK_K; e++) {
        const int jb = e / 128, l = (e % 128) / 32, m = e % 32;
        out[32 * jb + m] |= (uint8_t)(trit(x[e], d) << (2 * l));
    }
    put_u16(out + 64, db);
}

static void quant_mxfp4(const float *x, uint8_t *out)
{
    uint8_t idx[32];
    const float amax = fabsf(signed_absmax(x, 32));
    /* shared exponent: amax / 2^(E-127) lands in [4, 8), the top binade
     * of E2M1 (max 6); E - 128 is the exponent of the doubled table */
    int e = amax > 0 ? (int)floorf(log2f(amax)) - 2 + 127 : 0;
    e = clampi(e, 0, 254);
    const float d = ldexpf(1.0f, e - 128);
    out[0] = (uint8_t)e;
    for (int i = 0; i < 32; i++)
        idx[i] = (uint8_t)nearest_index(gguf_ggml_kvalues_mxfp4, x[i] / d);
    pack_nibbles32(idx, out + 1);
}

int qbt_ggml_can_quantize(uint32_t type)
{
    switch (type) {
    case GGUF_GGML_TYPE_F32: case GGUF_GGML_TYPE_F16: case GGUF_GGML_TYPE_BF16:
    case GGUF_GGML_TYPE_Q4_0: case GGUF_GGML_TYPE_Q4_1: case GGUF_GGML_TYPE_Q5_0:
    case GGUF_GGML_TYPE_Q5_1: case GGUF_GGML_TYPE_Q8_0: case GGUF_GGML_TYPE_Q2_K:
    case GGUF_GGML_TYPE_Q3_K: case GGUF_GGML_TYPE_Q4_K: case GGUF_GGML_TYPE_Q5_K:
    case GGUF_GGML_TYPE_Q6_K: case GGUF_GGML_TYPE_IQ4_NL: case GGUF_GGML_TYPE_IQ4_XS:
    case GGUF_GGML_TYPE_TQ1_0: case GGUF_GGML_TYPE_TQ2_0: case GGUF_GGML_TYPE_MXFP4:
        return 1;
    default:
        return 0;
    }
}

int qbt_ggml_quantize_row(uint32_t type, const float *x, void *dst, int64_t n)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    uint8_t *o = dst;
    if (t == NULL || !qbt_ggml_can_quantize(type) || n <= 0 || n % t->blck != 0)
        return -1;
    for (int64_t b = 0; b < n / t->blck; b++, x += t->blck, o += t->bytes) {
        switch (type) {
        case GGUF_GGML_TYPE_F32: memcpy(o, x, 4); break;
        case GGUF_GGML_TYPE_F16: put_u16(o, qb_f32_to_f16(x[0])); break;
        case GGUF_GGML_TYPE_BF16: put_u16(o, qb_f32_to_bf16(x[0])); break;
        case GGUF_GGML_TYPE_Q4_0: quant_sym32(x, o, 8, 0); break;
        case GGUF_GGML_TYPE_Q5_0: quant_sym32(x, o, 16, 1); break;
        case GGUF_GGML_TYPE_Q4_1: quant_affine32(x, o, 16, 0); break;
        case GGUF_GGML_TYPE_Q5_1: quant_affine32(x, o, 32, 1); break;
        case GGUF_GGML_TYPE_Q8_0: quant_q8_0(x, o); break;
        case GGUF_GGML_TYPE_Q2_K: quant_q2_k(x, o); break;
        case GGUF_GGML_TYPE_Q3_K: quant_q3_k(x, o); break;
        case GGUF_GGML_TYPE_Q4_K: quant_q45_k(x, o, 4); break;
        case GGUF_GGML_TYPE_Q5_K: quant_q45_k(x, o, 5); break;
        case GGUF_GGML_TYPE_Q6_K: quant_q6_k(x, o); break;
        case GGUF_GGML_TYPE_IQ4_NL: quant_iq4_nl(x, o); break;
        case GGUF_GGML_TYPE_IQ4_XS: quant_iq4_xs(x, o); break;
        case GGUF_GGML_TYPE_TQ1_0: quant_tq1_0(x, o); break;
        case GGUF_GGML_TYPE_TQ2_0: quant_tq2_0(x, o); break;
        case GGUF_GGML_TYPE_MXFP4: quant_mxfp4(x, o); break;
        default: return -1;
        }
    }
    return 0;
}
