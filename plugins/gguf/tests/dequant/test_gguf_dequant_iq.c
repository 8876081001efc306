/*
 * gguf_ggml i-quants: the lookup tables' structure, and IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M decoded from hand-built blocks: the
 * test picks grid indices, signs and scales, packs them by the layout of
 * docs/formats/gguf.md "I-quants", and expects grid magnitude x sign x sub-block scale.
 *
 * Exactness: all block comparisons are EXACT-BIT (scale steps rounded once
 * each, in ggml's order). The grid tables are data carried over from
 * ggml-common.h; they are checked here by structure (value sets, the
 * strictly increasing packed codes upstream generated them from, sign
 * parity) and a few entries read from ggml-org/llama.cpp.
 */
#include "tgd.h"

#include "ggml_iq_grids.h"
#include "ggml_types.h"

#include <stdlib.h>
#include <string.h>

static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int rnd(qbt_rng *r, int n) { return (int)(qbt_rng_u64(r) % (uint64_t)n); }

/* The 8-bit sign pattern of a 7-bit sign index: bit 7 makes the number of
 * negative signs even (docs/formats/gguf.md "ggml type table", ksigns_iq2xs). */
static int sign_pattern(int s7)
{
    return s7 | ((__builtin_popcount((unsigned)s7) & 1) << 7);
}

static float signed_mag(float scale, int mag, int negative)
{
    const float v = r_mul(scale, (float)mag);
    return negative ? -v : v;
}

/* ----------------------------------------------------------------- tables */

/* Position of a magnitude in the value set, or -1. */
static int level_of(int v, const int *set, int n)
{
    for (int i = 0; i < n; i++)
        if (set[i] == v)
            return i;
    return -1;
}

/* Each grid entry, read as base-`radix` digits (byte j = digit j), must use
 * only the given magnitudes and the digit codes must strictly increase
 * over the table: upstream generates the grids from sorted code lists
 * (ggml-quants.c iq2xs_init_impl / iq3xs_init_impl kgrid_*), so a typo in
 * a carried-over entry breaks one of the two. */
static void check_grid(const char *name, const uint64_t *g64, const uint32_t *g32, int n, int bytes,
                       const int *set, int nset, int bits_per_digit)
{
    uint64_t prev = 0;
    for (int i = 0; i < n; i++) {
        const uint64_t e = g64 ? g64[i] : g32[i];
        uint64_t code = 0;
        for (int j = 0; j < bytes; j++) {
            int v = (int)((e >> (8 * j)) & 0xFF);
            if (set[0] < 0 && v >= 128)
                v -= 256; /* iq1s: int8 */
            const int lv = level_of(v, set, nset);
            ck_assert_msg(lv >= 0, "%s[%d] byte %d = %d not a grid value", name, i, j, v);
            code |= (uint64_t)lv << (bits_per_digit * j);
        }
        ck_assert_msg(i == 0 || code > prev, "%s[%d]: code not increasing", name, i);
        prev = code;
    }
}

START_TEST(test_grid_tables)
{
    static const int iq2[3] = {8, 25, 43};
    static const int iq3xxs[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    static const int iq3s[8] = {1, 3, 5, 7, 9, 11, 13, 15};
    static const int iq1[3] = {-1, 0, 1};
    check_grid("iq2xxs_grid", gguf_ggml_iq2xxs_grid, NULL, 256, 8, iq2, 3, 2);
    check_grid("iq2xs_grid", gguf_ggml_iq2xs_grid, NULL, 512, 8, iq2, 3, 2);
    check_grid("iq2s_grid", gguf_ggml_iq2s_grid, NULL, 1024, 8, iq2, 3, 2);
    check_grid("iq3xxs_grid", NULL, gguf_ggml_iq3xxs_grid, 256, 4, iq3xxs, 8, 3);
    check_grid("iq3s_grid", NULL, gguf_ggml_iq3s_grid, 512, 4, iq3s, 8, 3);
    check_grid("iq1s_grid", gguf_ggml_iq1s_grid, NULL, 2048, 8, iq1, 3, 2);
    for (int i = 0; i < 128; i++)
        ck_assert_int_eq(gguf_ggml_ksigns_iq2xs[i], sign_pattern(i));
    for (int j = 0; j < 8; j++)
        ck_assert_int_eq(gguf_ggml_kmask_iq2xs[j], 1 << j);
    /* entries as read in ggml-org/llama.cpp ggml/src/ggml-common.h */
    ck_assert_uint_eq(gguf_ggml_iq2xxs_grid[0], 0x0808080808080808ULL);
    ck_assert_uint_eq(gguf_ggml_iq2xxs_grid[1], 0x080808080808082bULL);
    ck_assert_uint_eq(gguf_ggml_iq2xxs_grid[255], 0x2b2b2b1908081908ULL);
    ck_assert_uint_eq(gguf_ggml_iq2xs_grid[3], 0x0808080808082b08ULL);
    ck_assert_uint_eq(gguf_ggml_iq3xxs_grid[5], 0x04040c3eU);
    ck_assert_uint_eq(gguf_ggml_iq3s_grid[511], 0x0f0f0101U);
    ck_assert_uint_eq(gguf_ggml_iq1s_grid[1], 0xffffffffffffff01ULL);
}
END_TEST

/* ------------------------------------------------------------ IQ2 family */

/* grid byte j of an entry */
static int gb(uint64_t e, int j) { return (int)((e >> (8 * j)) & 0xFF); }

START_TEST(test_iq2_xxs)
{
    enum { NB = 6 };
    qbt_rng r = {11};
    uint8_t src[NB * 66];
    float want[NB * 256], got[NB * 256];
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 66 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = rnd(&r, 16);
            const float db = r_mul(r_mul(tgd_h2f(dh), 0.5f + (float)ls), 0.25f);
            uint32_t aux = (uint32_t)ls << 28;
            for (int l = 0; l < 4; l++) {
                const int idx = rnd(&r, 256), s7 = rnd(&r, 128), sp = sign_pattern(s7);
                blk[2 + 8 * ib + l] = (uint8_t)idx;
                aux |= (uint32_t)s7 << (7 * l);
                for (int j = 0; j < 8; j++)
                    want[256 * b + 32 * ib + 8 * l + j] =
                        signed_mag(db, gb(gguf_ggml_iq2xxs_grid[idx], j), (sp >> j) & 1);
            }
            wr32(blk + 2 + 8 * ib + 4, aux);
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ2_XXS, src, got, NB * 256);
    tgd_expect_bits("IQ2_XXS", want, got, NB * 256);
}
END_TEST

START_TEST(test_iq2_xs)
{
    enum { NB = 6 };
    qbt_rng r = {12};
    uint8_t src[NB * 74];
    float want[NB * 256], got[NB * 256];
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 74 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int s_lo = rnd(&r, 16), s_hi = rnd(&r, 16);
            blk[66 + ib] = (uint8_t)(s_lo | s_hi << 4);
            for (int l = 0; l < 4; l++) {
                const int ls = l < 2 ? s_lo : s_hi;
                const float db = r_mul(r_mul(tgd_h2f(dh), 0.5f + (float)ls), 0.25f);
                const int idx = rnd(&r, 512), s7 = rnd(&r, 128), sp = sign_pattern(s7);
                wr16(blk + 2 + 2 * (4 * ib + l), (uint16_t)(idx | s7 << 9));
                for (int j = 0; j < 8; j++)
                    want[256 * b + 32 * ib + 8 * l + j] =
                        signed_mag(db, gb(gguf_ggml_iq2xs_grid[idx], j), (sp >> j) & 1);
            }
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ2_XS, src, got, NB * 256);
    tgd_expect_bits("IQ2_XS", want, got, NB * 256);
}
END_TEST

START_TEST(test_iq2_s)
{
    enum { NB = 6 };
    qbt_rng r = {13};
    uint8_t src[NB * 82];
    float want[NB * 256], got[NB * 256];
    memset(src, 0, sizeof src);
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 82 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int s_lo = rnd(&r, 16), s_hi = rnd(&r, 16);
            blk[74 + ib] = (uint8_t)(s_lo | s_hi << 4);
            for (int l = 0; l < 4; l++) {
                const int ls = l < 2 ? s_lo : s_hi;
                const float db = r_mul(r_mul(tgd_h2f(dh), 0.5f + (float)ls), 0.25f);
                /* 10-bit index: low 8 in qs, top 2 in qh[ib] bits 2l, 2l+1;
                 * explicit sign byte (no parity) */
                const int idx = rnd(&r, 1024), signs = rnd(&r, 256);
                blk[2 + 4 * ib + l] = (uint8_t)idx;
                blk[66 + ib] |= (uint8_t)((idx >> 8) << (2 * l));
                blk[2 + 32 + 4 * ib + l] = (uint8_t)signs;
                for (int j = 0; j < 8; j++)
                    want[256 * b + 32 * ib + 8 * l + j] =
                        signed_mag(db, gb(gguf_ggml_iq2s_grid[idx], j), (signs >> j) & 1);
            }
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ2_S, src, got, NB * 256);
    tgd_expect_bits("IQ2_S", want, got, NB * 256);
}
END_TEST

/* ------------------------------------------------------------ IQ3 family */

START_TEST(test_iq3_xxs)
{
    enum { NB = 6 };
    qbt_rng r = {14};
    uint8_t src[NB * 98];
    float want[NB * 256], got[NB * 256];
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 98 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = rnd(&r, 16);
            const float db = r_mul(r_mul(tgd_h2f(dh), 0.5f + (float)ls), 0.5f);
            uint32_t aux = (uint32_t)ls << 28;
            for (int l = 0; l < 4; l++) {
                const int s7 = rnd(&r, 128), sp = sign_pattern(s7);
                aux |= (uint32_t)s7 << (7 * l);
                for (int half = 0; half < 2; half++) {
                    const int idx = rnd(&r, 256);
                    blk[2 + 8 * ib + 2 * l + half] = (uint8_t)idx;
                    for (int j = 0; j < 4; j++)
                        want[256 * b + 32 * ib + 8 * l + 4 * half + j] = signed_mag(
                            db, gb(gguf_ggml_iq3xxs_grid[idx], j), (sp >> (4 * half + j)) & 1);
                }
            }
            wr32(blk + 2 + 64 + 4 * ib, aux);
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ3_XXS, src, got, NB * 256);
    tgd_expect_bits("IQ3_XXS", want, got, NB * 256);
}
END_TEST

START_TEST(test_iq3_s)
{
    enum { NB = 6 };
    qbt_rng r = {15};
    uint8_t src[NB * 110];
    float want[NB * 256], got[NB * 256];
    memset(src, 0, sizeof src);
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 110 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = rnd(&r, 16);
            blk[106 + ib / 2] |= (uint8_t)(ls << (4 * (ib % 2)));
            const float db = r_mul(tgd_h2f(dh), (float)(1 + 2 * ls));
            for (int l = 0; l < 4; l++) {
                const int signs = rnd(&r, 256);
                blk[74 + 4 * ib + l] = (uint8_t)signs;
                for (int half = 0; half < 2; half++) {
                    /* index k = 2l + half of the sub-block: low 8 bits in
                     * qs[8ib + k], 9th bit = bit k of qh[ib] */
                    const int k = 2 * l + half, idx = rnd(&r, 512);
                    blk[2 + 8 * ib + k] = (uint8_t)idx;
                    blk[66 + ib] |= (uint8_t)((idx >> 8) << k);
                    for (int j = 0; j < 4; j++)
                        want[256 * b + 32 * ib + 8 * l + 4 * half + j] = signed_mag(
                            db, gb(gguf_ggml_iq3s_grid[idx], j), (signs >> (4 * half + j)) & 1);
                }
            }
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ3_S, src, got, NB * 256);
    tgd_expect_bits("IQ3_S", want, got, NB * 256);
}
END_TEST

/* ------------------------------------------------------------ IQ1 family */

/* grid value (int8 in {-1,0,1}) plus the +-1/8 shift, times the scale */
static float iq1_val(float dl, uint64_t entry, int j, int neg_delta)
{
    const int g = (int8_t)(uint8_t)gb(entry, j);
    return r_mul(dl, r_add((float)g, neg_delta ? -0.125f : 0.125f));
}

START_TEST(test_iq1_s)
{
    enum { NB = 6 };
    qbt_rng r = {16};
    uint8_t src[NB * 50];
    float want[NB * 256], got[NB * 256];
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 50 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        wr16(blk, dh);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = rnd(&r, 8), neg = rnd(&r, 2);
            const float dl = r_mul(tgd_h2f(dh), (float)(2 * ls + 1));
            uint16_t qh = (uint16_t)(ls << 12 | neg << 15);
            for (int l = 0; l < 4; l++) {
                const int idx = rnd(&r, 2048);
                blk[2 + 4 * ib + l] = (uint8_t)idx;
                qh |= (uint16_t)((idx >> 8) << (3 * l));
                for (int j = 0; j < 8; j++)
                    want[256 * b + 32 * ib + 8 * l + j] = iq1_val(dl, gguf_ggml_iq1s_grid[idx], j, neg);
            }
            wr16(blk + 34 + 2 * ib, qh);
        }
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ1_S, src, got, NB * 256);
    tgd_expect_bits("IQ1_S", want, got, NB * 256);
}
END_TEST

START_TEST(test_iq1_m)
{
    enum { NB = 6 };
    qbt_rng r = {17};
    uint8_t src[NB * 56];
    float want[NB * 256], got[NB * 256];
    memset(src, 0, sizeof src);
    for (int b = 0; b < NB; b++) {
        uint8_t *blk = src + 56 * b;
        const uint16_t dh = tgd_rand_f16(&r);
        uint16_t sc[4] = {0, 0, 0, 0};
        /* the fp16 super-scale: nibble i in the top 4 bits of sc[i] */
        for (int i = 0; i < 4; i++)
            sc[i] = (uint16_t)(((dh >> (4 * i)) & 15) << 12);
        for (int ib = 0; ib < 8; ib++) {
            const int s1 = rnd(&r, 8), s2 = rnd(&r, 8);
            sc[ib / 2] |= (uint16_t)((s1 | s2 << 3) << (6 * (ib % 2)));
            for (int l = 0; l < 4; l++) {
                const int idx = rnd(&r, 2048), neg = rnd(&r, 2);
                const float dl = r_mul(tgd_h2f(dh), (float)(2 * (l < 2 ? s1 : s2) + 1));
                /* qh byte per pair of groups: even group low nibble (3
                 * index bits + delta sign bit 3), odd group high nibble */
                blk[4 * ib + l] = (uint8_t)idx;
                blk[32 + 2 * ib + l / 2] |= (uint8_t)(((idx >> 8) | neg << 3) << (4 * (l % 2)));
                for (int j = 0; j < 8; j++)
                    want[256 * b + 32 * ib + 8 * l + j] = iq1_val(dl, gguf_ggml_iq1s_grid[idx], j, neg);
            }
        }
        for (int i = 0; i < 4; i++)
            wr16(blk + 48 + 2 * i, sc[i]);
    }
    gguf_ggml_dequantize_row(GGUF_GGML_TYPE_IQ1_M, src, got, NB * 256);
    tgd_expect_bits("IQ1_M", want, got, NB * 256);
}
END_TEST

void tgd_add_iq(Suite *s)
{
    TCase *tc = tcase_create("iq");
    tcase_add_test(tc, test_grid_tables);
    tcase_add_test(tc, test_iq2_xxs);
    tcase_add_test(tc, test_iq2_xs);
    tcase_add_test(tc, test_iq2_s);
    tcase_add_test(tc, test_iq3_xxs);
    tcase_add_test(tc, test_iq3_s);
    tcase_add_test(tc, test_iq1_s);
    tcase_add_test(tc, test_iq1_m);
    suite_add_tcase(s, tc);
}
