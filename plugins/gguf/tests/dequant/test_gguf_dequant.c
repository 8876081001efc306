/*
 * gguf_ggml: type table, plain types, and the non-grid block types decoded
 * from hand-built blocks (random codes, random fp16 scales) against an
 * independent per-element restatement of each format (docs/formats/gguf.md, "Block layouts").
 *
 * Exactness: every comparison in this file is EXACT-BIT (the expected value
 * is rounded once per operation in the order ggml's dequantize_row_* uses).
 */
#include "qbt_check_main.h"
#include "tgd.h"

#include "ggml_quant.h"
#include "ggml_types.h"

#include <quantbridge/qb_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

float tgd_h2f(uint16_t h)
{
    const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v = exp == 0 ? ldexp(man, -24) : ldexp(1024 + man, exp - 25);
    ck_assert_int_ne(exp, 31);
    return (float)(sign ? -v : v);
}

uint16_t tgd_rand_f16(qbt_rng *r)
{
    const uint64_t u = qbt_rng_u64(r);
    const uint16_t exp = (uint16_t)(5 + u % 14);  /* 2^-10 .. 2^3 */
    const uint16_t man = (uint16_t)((u >> 8) & 1023);
    const uint16_t sign = (uint16_t)(((u >> 20) & 1) << 15);
    return (uint16_t)(sign | (exp << 10) | man);
}

void tgd_expect_bits(const char *what, const float *want, const float *got, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &want[i], 4);
        memcpy(&b, &got[i], 4);
        ck_assert_msg(a == b, "%s: element %lld: want %a (0x%08x) got %a (0x%08x)", what,
                      (long long)i, (double)want[i], a, (double)got[i], b);
    }
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* ------------------------------------------------------------------ table */

START_TEST(test_type_table)
{
    static const struct { uint32_t id; const char *name; uint32_t blck, bytes; } known[] = {
        {0, "F32", 1, 4}, {1, "F16", 1, 2}, {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22}, {7, "Q5_1", 32, 24}, {8, "Q8_0", 32, 34}, {9, "Q8_1", 32, 36},
        {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144},
        {13, "Q5_K", 256, 176}, {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292},
        {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74}, {18, "IQ3_XXS", 256, 98},
        {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
        {22, "IQ2_S", 256, 82}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1}, {25, "I16", 1, 2},
        {26, "I32", 1, 4}, {27, "I64", 1, 8}, {28, "F64", 1, 8}, {29, "IQ1_M", 256, 56},
        {30, "BF16", 1, 2}, {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66},
        {39, "MXFP4", 32, 17}, {40, "NVFP4", 64, 36}, {41, "Q1_0", 128, 18}, {42, "Q2_0", 64, 18},
    };
    static const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 44, 255, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const gguf_ggml_type_info *t = gguf_ggml_type_get(known[i].id);
        ck_assert_msg(t != NULL, "id %u", known[i].id);
        ck_assert_str_eq(t->name, known[i].name);
        ck_assert_str_eq(gguf_ggml_type_name(known[i].id), known[i].name);
        ck_assert_uint_eq(t->blck, known[i].blck);
        ck_assert_uint_eq(t->bytes, known[i].bytes);
        ck_assert_int_eq(gguf_ggml_type_supported(known[i].id), 1);
    }
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        uint64_t out = 77;
        ck_assert_ptr_null(gguf_ggml_type_get(removed[i]));
        ck_assert_ptr_null(gguf_ggml_type_name(removed[i]));
        ck_assert_int_eq(gguf_ggml_type_supported(removed[i]), 0);
        ck_assert_int_eq(gguf_ggml_row_bytes(removed[i], 256, &out), QB_E_UNSUPPORTED);
        ck_assert_uint_eq(out, 77);
    }
}
END_TEST

START_TEST(test_row_bytes)
{
    uint64_t out = 0;
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_Q4_K, 4096, &out), QB_OK);
    ck_assert_uint_eq(out, 16 * 144);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_Q4_0, 0, &out), QB_OK);
    ck_assert_uint_eq(out, 0);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_F16, 3, &out), QB_OK);
    ck_assert_uint_eq(out, 6);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_MXFP4, 64, &out), QB_OK);
    ck_assert_uint_eq(out, 34);
    out = 5;
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_Q4_K, 4095, &out), QB_E_INVALID);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_Q4_0, 16, &out), QB_E_INVALID);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_F32, -1, &out), QB_E_INVALID);
    ck_assert_uint_eq(out, 5);
    /* 2^62 F64 elements = 2^65 bytes: overflow; INT64_MAX - 7 Q8_K-aligned */
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_F64, (int64_t)1 << 62, &out), QB_E_RANGE);
    ck_assert_int_eq(gguf_ggml_row_bytes(GGUF_GGML_TYPE_Q8_K, INT64_MAX - 255, &out), QB_OK);
    ck_assert_uint_eq(out, ((uint64_t)INT64_MAX - 255) / 256 * 292);
    ck_assert_uint_eq(out, (((uint64_t)1 << 63) / 256 - 1) * 292);
}
END_TEST

/* ------------------------------------------------------------------ plain */

START_TEST(test_plain_types)
{
    float out[4];
    const float f32[4] = {1.5f, -0.0f, 3.0e38f, 1e-45f};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F32, f32, out, 4);
    tgd_expect_bits("F32", f32, out, 4);

    /* F16: 1.0, -2.0, smallest subnormal 2^-24, max 65504 */
    const uint8_t f16[8] = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0xFF, 0x7B};
    const float f16w[4] = {1.0f, -2.0f, 5.9604644775390625e-8f, 65504.0f};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F16, f16, out, 4);
    tgd_expect_bits("F16", f16w, out, 4);

    /* BF16 bits are the top half of the f32 bits: 0x3FC0 = 1.5, 0xC2F7 = -123.5 */
    const uint8_t bf16[4] = {0xC0, 0x3F, 0xF7, 0xC2};
    const float bf16w[2] = {1.5f, -123.5f};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_BF16, bf16, out, 2);
    tgd_expect_bits("BF16", bf16w, out, 2);

    const int8_t i8[4] = {-128, 127, 0, -1};
    const float i8w[4] = {-128, 127, 0, -1};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_I8, i8, out, 4);
    tgd_expect_bits("I8", i8w, out, 4);

    const int16_t i16[2] = {-32768, 1234};
    const float i16w[2] = {-32768, 1234};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_I16, i16, out, 2);
    tgd_expect_bits("I16", i16w, out, 2);

    const int32_t i32[2] = {-7, 16777217}; /* 2^24 + 1 rounds to even 2^24 */
    const float i32w[2] = {-7, 16777216.0f};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_I32, i32, out, 2);
    tgd_expect_bits("I32", i32w, out, 2);

    const int64_t i64[2] = {-((int64_t)1 << 40), 5};
    const float i64w[2] = {-1099511627776.0f, 5};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_I64, i64, out, 2);
    tgd_expect_bits("I64", i64w, out, 2);

    const double f64[2] = {0.1, -1e300};
    const float f64w[2] = {0.1f, -INFINITY};
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F64, f64, out, 2);
    tgd_expect_bits("F64", f64w, out, 2);
}
END_TEST

/* All 65536 fp16 patterns in one row (the vector path where the CPU has
 * F16C, the scalar one for the tail and elsewhere): finite values and
 * infinities exact by the definition, NaNs quiet with the payload kept. */
START_TEST(test_f16_exhaustive)
{
    uint8_t *src = malloc(2 * 65536 + 2);
    float *out = malloc(sizeof(float) * 65537);
    ck_assert(src && out);
    for (uint32_t h = 0; h < 65537; h++)
        wr16(src + 2 * h, (uint16_t)h); /* 65537th = 0 again: a scalar tail */
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F16, src, out, 65537);
    for (uint32_t h = 0; h < 65537; h++) {
        const uint16_t v = (uint16_t)h;
        const int exp = (v >> 10) & 31, man = v & 1023;
        uint32_t want, got;
        if (exp != 31) {
            const float f = tgd_h2f(v);
            memcpy(&want, &f, 4);
        } else {
            want = (uint32_t)(v >> 15) << 31 | 0x7F800000u | (uint32_t)man << 13;
            if (man != 0)
                want |= 0x00400000u;
        }
        memcpy(&got, &out[h], 4);
        ck_assert_msg(want == got, "f16 0x%04x: want 0x%08x got 0x%08x", v, want, got);
        /* one element at a time always takes the scalar path */
        float one;
        gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F16, src + 2 * h, &one, 1);
        memcpy(&got, &one, 4);
        ck_assert_msg(want == got, "f16 0x%04x scalar: want 0x%08x got 0x%08x", v, want, got);
    }
    free(src);
    free(out);
}
END_TEST

/* ------------------------------------- legacy 32-element types, Q1_0, Q2_0 */

/* nib(e) of a split-half packed 16-byte qs (docs/formats/gguf.md, "Legacy blocks") */
static int nib(const uint8_t *qs, int e)
{
    return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
}

/* fills a block with random bytes, then sets its fp16 fields to finite
 * values at the given offsets */
static void rand_block(qbt_rng *r, uint8_t *b, int bytes, const int *f16_off, int n_f16)
{
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)qbt_rng_u64(r);
    for (int i = 0; i < n_f16; i++)
        wr16(b + f16_off[i], tgd_rand_f16(r));
}

typedef float (*ref_fn)(const uint8_t *blk, int e);

static float ref_q4_0(const uint8_t *b, int e) { return r_mul((float)(nib(b + 2, e) - 8), tgd_h2f(rd16(b))); }
static float ref_q4_1(const uint8_t *b, int e)
{
    return r_add(r_mul((float)nib(b + 4, e), tgd_h2f(rd16(b))), tgd_h2f(rd16(b + 2)));
}
static float ref_q5_0(const uint8_t *b, int e)
{
    const int h = (rd32(b + 2) >> e) & 1;
    return r_mul((float)((nib(b + 6, e) | h << 4) - 16), tgd_h2f(rd16(b)));
}
static float ref_q5_1(const uint8_t *b, int e)
{
    const int h = (rd32(b + 4) >> e) & 1;
    return r_add(r_mul((float)(nib(b + 8, e) | h << 4), tgd_h2f(rd16(b))), tgd_h2f(rd16(b + 2)));
}
static float ref_q8_0(const uint8_t *b, int e) { return r_mul((float)(int8_t)b[2 + e], tgd_h2f(rd16(b))); }
static float ref_q8_1(const uint8_t *b, int e) { return r_mul((float)(int8_t)b[4 + e], tgd_h2f(rd16(b))); }
static float ref_q1_0(const uint8_t *b, int e)
{
    const float d = tgd_h2f(rd16(b));
    return (b[2 + e / 8] >> (e % 8)) & 1 ? d : -d;
}
static float ref_q2_0(const uint8_t *b, int e)
{
    const int q = (b[2 + e / 4] >> (2 * (e % 4))) & 3;
    return r_mul((float)(q - 1), tgd_h2f(rd16(b)));
}

/* --------------------------------------------------------------- K-quants */

static float ref_q2_k(const uint8_t *b, int e)
{
    const int n = e / 128, j = (e % 128) / 32, r = e % 32, is = 8 * n + 2 * j + r / 16;
    const int sc = b[is], q = (b[16 + 32 * n + r] >> (2 * j)) & 3;
    const float d = tgd_h2f(rd16(b + 80)), dmin = tgd_h2f(rd16(b + 82));
    return r_sub(r_mul(r_mul(d, (float)(sc & 15)), (float)q), r_mul(dmin, (float)(sc >> 4)));
}

static int q3k_scale6(const uint8_t *s, int i)
{
    const int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4;
    const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return lo | hi << 4;
}

static float ref_q3_k(const uint8_t *b, int e)
{
    const int n = e / 128, j = (e % 128) / 32, r = e % 32, is = 8 * n + 2 * j + r / 16;
    const int q = ((b[32 + 32 * n + r] >> (2 * j)) & 3) - (((b[r] >> (4 * n + j)) & 1) ? 0 : 4);
    const float d = tgd_h2f(rd16(b + 108));
    return r_mul(r_mul(d, (float)(q3k_scale6(b + 96, is) - 32)), (float)q);
}

static void k4_pair(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static float ref_q45_k(const uint8_t *b, int e, int five)
{
    const int c = e / 64, h = (e % 64) / 32, r = e % 32, sub = 2 * c + h;
    const uint8_t *qs = b + (five ? 48 : 16);
    int sc, m, q = h ? qs[32 * c + r] >> 4 : qs[32 * c + r] & 15;
    if (five)
        q += ((b[16 + r] >> (2 * c + h)) & 1) << 4;
    k4_pair(b + 4, sub, &sc, &m);
    const float d = tgd_h2f(rd16(b)), dmin = tgd_h2f(rd16(b + 2));
    return r_sub(r_mul(r_mul(d, (float)sc), (float)q), r_mul(dmin, (float)m));
}
static float ref_q4_k(const uint8_t *b, int e) { return ref_q45_k(b, e, 0); }
static float ref_q5_k(const uint8_t *b, int e) { return ref_q45_k(b, e, 1); }

static float ref_q6_k(const uint8_t *b, int e)
{
    const int n = e / 128, g = (e % 128) / 32, l = e % 32;
    const int L = b[64 * n + l + 32 * (g & 1)];
    const int lo = g < 2 ? L & 15 : L >> 4;
    const int h2 = (b[128 + 32 * n + l] >> (2 * g)) & 3;
    const int q = (lo | h2 << 4) - 32;
    const int sc = (int8_t)b[192 + 8 * n + l / 16 + 2 * g];
    return r_mul(r_mul(tgd_h2f(rd16(b + 208)), (float)sc), (float)q);
}

static float ref_q8_k(const uint8_t *b, int e)
{
    float d;
    uint32_t u = rd32(b);
    memcpy(&d, &u, 4);
    return r_mul(d, (float)(int8_t)b[4 + e]);
}

/* ---------------------------------------------------- 4-bit codebook types */

/* docs/formats/gguf.md "ggml type table" (kvalues_iq4nl, kvalues_fp4), restated here on purpose */
static const int kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const int kv_fp4x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static float ref_iq4_nl(const uint8_t *b, int e) { return r_mul(tgd_h2f(rd16(b)), (float)kv_iq4nl[nib(b + 2, e)]); }

static float ref_iq4_xs(const uint8_t *b, int e)
{
    const int ib = e / 32, w = e % 32;
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((rd16(b + 2) >> (2 * ib)) & 3) << 4);
    const float dl = r_mul(tgd_h2f(rd16(b)), (float)(ls - 32));
    return r_mul(dl, (float)kv_iq4nl[nib(b + 8 + 16 * ib, w)]);
}

/* MXFP4: true E2M1 value times 2^(E-127) = doubled value times 2^(E-128) */
static float ref_mxfp4(const uint8_t *b, int e)
{
    return (float)ldexp((double)kv_fp4x2[nib(b + 1, e)], (int)b[0] - 128);
}

static double ue4m3(uint8_t x)
{
    const int exp = (x >> 3) & 15, man = x & 7;
    if (x == 0 || x == 0x7F)
        return 0.0;
    return exp == 0 ? ldexp(man, -9) : ldexp(8 + man, exp - 10);
}

static float ref_nvfp4(const uint8_t *b, int e)
{
    const int s = e / 16, w = e % 16;
    const int nb = w < 8 ? b[4 + 8 * s + w] & 15 : b[4 + 8 * s + w - 8] >> 4;
    /* the doubled table times half the UE4M3 scale */
    return (float)((double)kv_fp4x2[nb] * (ue4m3(b[s]) * 0.5));
}

/* --------------------------------------------------------------- ternary */

static float ref_tq2_0(const uint8_t *b, int e)
{
    const int jb = e / 128, l = (e % 128) / 32, m = e % 32;
    const int q = (b[32 * jb + m] >> (2 * l)) & 3;
    return r_mul((float)(q - 1), tgd_h2f(rd16(b + 64)));
}

/* --------------------------------------------------------------- driver */

struct case_def {
    uint32_t type;
    ref_fn ref;
    int f16_off[3];
    int n_f16;
};

static const struct case_def cases[] = {
    {GGUF_GGML_TYPE_Q4_0, ref_q4_0, {0}, 1},
    {GGUF_GGML_TYPE_Q4_1, ref_q4_1, {0, 2}, 2},
    {GGUF_GGML_TYPE_Q5_0, ref_q5_0, {0}, 1},
    {GGUF_GGML_TYPE_Q5_1, ref_q5_1, {0, 2}, 2},
    {GGUF_GGML_TYPE_Q8_0, ref_q8_0, {0}, 1},
    {GGUF_GGML_TYPE_Q8_1, ref_q8_1, {0, 2}, 2},
    {GGUF_GGML_TYPE_Q1_0, ref_q1_0, {0}, 1},
    {GGUF_GGML_TYPE_Q2_0, ref_q2_0, {0}, 1},
    {GGUF_GGML_TYPE_Q2_K, ref_q2_k, {80, 82}, 2},
    {GGUF_GGML_TYPE_Q3_K, ref_q3_k, {108}, 1},
    {GGUF_GGML_TYPE_Q4_K, ref_q4_k, {0, 2}, 2},
    {GGUF_GGML_TYPE_Q5_K, ref_q5_k, {0, 2}, 2},
    {GGUF_GGML_TYPE_Q6_K, ref_q6_k, {208}, 1},
    {GGUF_GGML_TYPE_IQ4_NL, ref_iq4_nl, {0}, 1},
    {GGUF_GGML_TYPE_IQ4_XS, ref_iq4_xs, {0}, 1},
    {GGUF_GGML_TYPE_TQ2_0, ref_tq2_0, {64}, 1},
};

/* Decodes NB random hand-built blocks as one row and compares each element
 * with the reference formula on its block. */
static void run_case(uint32_t type, ref_fn ref, const int *f16_off, int n_f16, qbt_rng *r,
                     void (*fixup)(qbt_rng *, uint8_t *))
{
    enum { NB = 24 };
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    uint64_t bytes;
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gguf_ggml_row_bytes(type, (int64_t)NB * t->blck, &bytes), QB_OK);
    uint8_t *src = malloc(bytes);
    float *got = malloc(sizeof(float) * NB * t->blck);
    float *want = malloc(sizeof(float) * NB * t->blck);
    ck_assert(src && got && want);
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + (size_t)b * t->bytes;
        rand_block(r, blk, (int)t->bytes, f16_off, n_f16);
        if (fixup)
            fixup(r, blk);
        for (uint32_t e = 0; e < t->blck; e++)
            want[(size_t)b * t->blck + e] = ref(blk, (int)e);
    }
    gguf_ggml_dequantize_row(type, src, got, (int64_t)NB * t->blck);
    tgd_expect_bits(t->name, want, got, (int64_t)NB * t->blck);
    free(src);
    free(got);
    free(want);
}

START_TEST(test_handbuilt_blocks)
{
    const struct case_def *c = &cases[_i];
    qbt_rng r = {0x51ED270B27A3ULL + (uint64_t)_i};
    run_case(c->type, c->ref, c->f16_off, c->n_f16, &r, NULL);
}
END_TEST

static void q8k_fix(qbt_rng *r, uint8_t *b)
{
    /* d is an f32 here: random bytes could be NaN, so set a finite one */
    const float d = (float)((qbt_rng_uniform(r) - 0.5) * 8.0);
    memcpy(b, &d, 4);
}

START_TEST(test_q8_k_blocks)
{
    qbt_rng r = {99};
    run_case(GGUF_GGML_TYPE_Q8_K, ref_q8_k, NULL, 0, &r, q8k_fix);
}
END_TEST

static void mx_fix(qbt_rng *r, uint8_t *b)
{
    /* all 256 exponents over the blocks, incl. subnormal 0, 1 and 255 */
    static int next;
    (void)r;
    b[0] = (uint8_t)(next++ * 11);
}

START_TEST(test_mxfp4_blocks)
{
    qbt_rng r = {7};
    run_case(GGUF_GGML_TYPE_MXFP4, ref_mxfp4, NULL, 0, &r, mx_fix);
    /* E = 0 and 1 are the subnormal halves 2^-128, 2^-127; E = 255 2^127 */
    uint8_t blk[17] = {0};
    float out[32];
    blk[1] = 0x71; /* e0: nibble 1 (+1 doubled = 0.5), e16: nibble 7 (+12) */
    for (int e = 0; e < 4; e++) {
        const uint8_t ex[4] = {0, 1, 254, 255};
        blk[0] = ex[e];
        gguf_ggml_dequantize_row(GGUF_GGML_TYPE_MXFP4, blk, out, 32);
        ck_assert(out[0] == ldexpf(1.0f, ex[e] - 128));
        ck_assert(out[16] == ldexpf(12.0f, ex[e] - 128));
        ck_assert(out[1] == 0.0f);
    }
}
END_TEST

START_TEST(test_nvfp4_blocks)
{
    qbt_rng r = {8};
    run_case(GGUF_GGML_TYPE_NVFP4, ref_nvfp4, NULL, 0, &r, NULL);
    /* 0x38 = exp 7, man 0 = 1.0 -> half 0.5; nibble 7 = doubled 12 -> 6.0;
     * 0x7F (NaN) and 0 decode to scale 0 */
    uint8_t blk[36] = {0x38, 0x7F, 0x00, 0x39};
    float out[64];
    for (int i = 4; i < 36; i++)
        blk[i] = 0x77;
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_NVFP4, blk, out, 64);
    ck_assert(out[0] == 6.0f && out[15] == 6.0f);
    ck_assert(out[16] == 0.0f && out[32] == 0.0f);
    ck_assert(out[48] == 6.75f); /* 0x39 = 1.125 */
}
END_TEST

/* TQ1_0 from chosen trits: byte = ceil(v * 256 / 243) of the base-3 number
 * v (first trit most significant); element -> (byte, trit) per docs/formats/gguf.md "Ternary" */
START_TEST(test_tq1_0_blocks)
{
    qbt_rng r = {1234};
    uint8_t blk[3][54];
    float want[3 * 256], got[3 * 256];
    for (int b = 0; b < 3; b++) {
        int trits[256];
        int v[52] = {0};
        const uint16_t d = tgd_rand_f16(&r);
        for (int e = 0; e < 256; e++) {
            trits[e] = (int)(qbt_rng_u64(&r) % 3);
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
            v[byte] += trits[e] * (int)pow(3, 4 - pos);
            want[b * 256 + e] = r_mul((float)(trits[e] - 1), tgd_h2f(d));
        }
        for (int i = 0; i < 52; i++)
            blk[b][i] = (uint8_t)((v[i] * 256 + 242) / 243);
        wr16(&blk[b][52], d);
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_TQ1_0, blk, got, 3 * 256);
    tgd_expect_bits("TQ1_0", want, got, 3 * 256);
}
END_TEST

/* The known-code builder of tests/gen gives blocks whose decode is known
 * without any formula from the library: (code - 8) * d. */
START_TEST(test_q4_0_known_codes)
{
    uint8_t codes[32], blk[18];
    float out[32];
    for (int e = 0; e < 32; e++)
        codes[e] = (uint8_t)((e * 7 + 3) % 16);
    qbt_ggml_q4_0_from_codes(codes, 0x3800 /* 0.5 */, blk);
    ck_assert_uint_eq(blk[2], (uint8_t)(codes[0] | codes[16] << 4)); /* split-half order */
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_Q4_0, blk, out, 32);
    for (int e = 0; e < 32; e++)
        ck_assert_msg(out[e] == (codes[e] - 8) * 0.5f, "e %d", e);
}
END_TEST

START_TEST(test_q8_0_iq4_nl_known_codes)
{
    int8_t c8[32];
    uint8_t idx[32], blk[34];
    float out[32];
    for (int e = 0; e < 32; e++) {
        c8[e] = (int8_t)(e * 9 - 128);
        idx[e] = (uint8_t)(31 - e) % 16;
    }
    qbt_ggml_q8_0_from_codes(c8, 0xC000 /* -2 */, blk);
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_Q8_0, blk, out, 32);
    for (int e = 0; e < 32; e++)
        ck_assert(out[e] == c8[e] * -2.0f);
    qbt_ggml_iq4_nl_from_codes(idx, 0x3400 /* 0.25 */, blk);
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ4_NL, blk, out, 32);
    for (int e = 0; e < 32; e++)
        ck_assert(out[e] == kv_iq4nl[idx[e]] * 0.25f);
}
END_TEST

/* K-quant known-code builders: scales chosen so every product is exact,
 * so the expected value is plain integer arithmetic times a power of two. */
START_TEST(test_k_known_codes)
{
    uint8_t codes4[256], sc[8], m[8], blk4[144];
    int8_t codes6[256], sc6[16];
    uint8_t blk6[210];
    float out[256];
    for (int e = 0; e < 256; e++) {
        codes4[e] = (uint8_t)((e * 5 + 1) % 16);
        codes6[e] = (int8_t)((e * 7) % 64 - 32);
    }
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)(63 - 7 * j); /* uses the high 2 bits for j >= 4 */
        m[j] = (uint8_t)(5 * j + 20);
    }
    for (int j = 0; j < 16; j++)
        sc6[j] = (int8_t)(j % 2 ? -3 * j - 1 : 127 - j);
    qbt_ggml_q4_k_from_codes(codes4, sc, m, 0x3000 /* 0.125 */, 0x2C00 /* 0.0625 */, blk4);
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_Q4_K, blk4, out, 256);
    for (int e = 0; e < 256; e++)
        ck_assert_msg(out[e] == 0.125f * sc[e / 32] * codes4[e] - 0.0625f * m[e / 32], "Q4_K e %d", e);
    qbt_ggml_q6_k_from_codes(codes6, sc6, 0x1C00 /* 2^-8 */, blk6);
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_Q6_K, blk6, out, 256);
    for (int e = 0; e < 256; e++)
        ck_assert_msg(out[e] == ldexpf((float)(sc6[e / 16] * codes6[e]), -8), "Q6_K e %d", e);
}
END_TEST

/* Every supported type: a multi-block row decodes as its blocks one by one
 * (block stride = table bytes), and a signaling-NaN fp16 scale comes out
 * as a quiet NaN (as ggml's conversion gives). */
START_TEST(test_row_is_concatenation)
{
    qbt_rng r = {42};
    for (uint32_t type = 0; type < GGUF_GGML_TYPE_ID_END; type++) {
        const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
        if (t == NULL)
            continue;
        ck_assert_int_eq(t->supported, 1);
        const int nb = 5;
        uint8_t *src = malloc((size_t)nb * t->bytes);
        float *row = malloc(sizeof(float) * nb * t->blck), *one = malloc(sizeof(float) * t->blck);
        for (size_t i = 0; i < (size_t)nb * t->bytes; i++)
            src[i] = (uint8_t)qbt_rng_u64(&r);
        gguf_ggml_dequantize_row(type, src, row, (int64_t)nb * t->blck);
        for (int b = 0; b < nb; b++) {
            gguf_ggml_dequantize_row(type, src + (size_t)b * t->bytes, one, t->blck);
            ck_assert_msg(memcmp(one, row + (size_t)b * t->blck, sizeof(float) * t->blck) == 0,
                          "%s block %d", t->name, b);
        }
        free(src);
        free(row);
        free(one);
    }
    /* F16 sNaN 0x7C01 -> quiet NaN 0x7FC02000 */
    const uint8_t snan[2] = {0x01, 0x7C};
    float f;
    uint32_t u;
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_F16, snan, &f, 1);
    memcpy(&u, &f, 4);
    ck_assert_uint_eq(u, 0x7FC02000u);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf-dequant");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_type_table);
    tcase_add_test(tc, test_row_bytes);
    tcase_add_test(tc, test_plain_types);
    tcase_add_test(tc, test_f16_exhaustive);
    tcase_add_loop_test(tc, test_handbuilt_blocks, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_q8_k_blocks);
    tcase_add_test(tc, test_mxfp4_blocks);
    tcase_add_test(tc, test_nvfp4_blocks);
    tcase_add_test(tc, test_tq1_0_blocks);
    tcase_add_test(tc, test_q4_0_known_codes);
    tcase_add_test(tc, test_q8_0_iq4_nl_known_codes);
    tcase_add_test(tc, test_k_known_codes);
    tcase_add_test(tc, test_row_is_concatenation);
    suite_add_tcase(s, tc);
    tgd_add_iq(s);
    tgd_add_roundtrip(s);
    return s;
}
