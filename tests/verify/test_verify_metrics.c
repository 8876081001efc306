/*
 * Unit tests of the verify metrics and report internals (host/verify/,
 * linked through qbh_core): hand-computed values, degenerate inputs,
 * streaming in blocks equal to one pass, worst-tensor order, per-layer
 * aggregates, the JSON shape and the HTML file (self-contained, written
 * atomically, one row per tensor).
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_half.h>

#include "verify.h"
#include "vt_util.h"

START_TEST(acc_exact)
{
    float a[4] = {1.0f, -2.5f, 3.0f, 0.125f};
    qbh_vm_acc acc;
    double rel, cos, snr;
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, a, a, 4);
    qbh_vm_acc_metrics(&acc, &rel, &cos, &snr);
    ck_assert_uint_eq(acc.n, 4);
    ck_assert_uint_eq(acc.n_diff, 0);
    ck_assert(rel == 0.0);
    ck_assert(cos == 1.0);
    ck_assert(isinf(snr) && snr > 0);
    ck_assert(acc.max_abs == 0.0);
}
END_TEST

/* The absmax baseline of one group, worked by hand: w = {0.7, -0.35, 0.1,
 * 0}, absmax 0.7, scale fp16(0.1) = 0.0999755859375 (0x2E66), codes
 * rint(w / s) = {7, -4 (ties to even from -3.5009), 1, 0}. */
START_TEST(baseline_grid_by_hand)
{
    const float s = 0.0999755859375f;
    float a[4] = {0.7f, -0.35f, 0.1f, 0.0f};
    float base[4] = {7 * s, -4 * s, 1 * s, 0.0f}, worse[4], better[4];
    double want = 0.0;
    qbh_vb_rule rl;
    qbh_vb_stats st;
    qb_grid_info gi;
    int i;
    for (i = 0; i < 4; i++)
        want += ((double)base[i] - a[i]) * ((double)base[i] - a[i]);
    memset(&gi, 0, sizeof gi);
    gi.bits = 4;
    gi.n_groups = 1;
    gi.group_size = 128; /* wider than the row: one group */
    gi.symmetric = 1;
    gi.scale_dtype = QB_DT_F16;
    memset(&rl, 0, sizeof rl);
    ck_assert_int_eq(qbh_vb_rule_grid(&rl, &gi, 4), QB_OK);
    ck_assert_int_eq(rl.kind, QBH_VB_GRID);
    rl.margin = 0.01;
    /* the baseline itself passes and its error is the hand value */
    memset(&st, 0, sizeof st);
    qbh_vb_rows(&rl, a, base, 1, 4, &st);
    ck_assert_uint_eq(st.n_units, 1);
    ck_assert_uint_eq(st.n_worse, 0);
    ck_assert_double_eq_tol(st.ss_base, want, 1e-15);
    /* the exact values pass (better than the rule) */
    memcpy(better, a, sizeof a);
    memset(&st, 0, sizeof st);
    qbh_vb_rows(&rl, a, better, 1, 4, &st);
    ck_assert_uint_eq(st.n_worse, 0);
    /* one code a step off: worse than the rule by far more than 1 % */
    memcpy(worse, base, sizeof base);
    worse[2] = 2 * s;
    memset(&st, 0, sizeof st);
    qbh_vb_rows(&rl, a, worse, 1, 4, &st);
    ck_assert_uint_eq(st.n_worse, 1);
    ck_assert_double_gt(st.worst, 1.01);
    qbh_vb_rule_free(&rl);
}
END_TEST

/* Scattered (act-order) groups give the same verdicts as the contiguous
 * groups they are a permutation of. */
START_TEST(baseline_grid_col_group)
{
    /* two groups of 3: contiguous {0,1,2} {3,4,5}; scattered: column c of
     * the second layout holds contiguous column perm[c] */
    const int perm[6] = {3, 0, 4, 1, 5, 2};
    const int32_t cg[6] = {1, 0, 1, 0, 1, 0};
    float a[6] = {0.3f, -1.1f, 0.05f, 2.0f, -0.6f, 0.25f}, b[6], pa[6], pb[6];
    qbh_vb_rule rc_rule, rs_rule;
    qbh_vb_stats sc, ss;
    qb_grid_info gi;
    int i, bad;
    for (bad = 0; bad < 2; bad++) {
        memset(&gi, 0, sizeof gi);
        gi.bits = 4;
        gi.n_groups = 2;
        gi.group_size = 3;
        gi.symmetric = 1;
        gi.scale_dtype = QB_DT_F16;
        memset(&rc_rule, 0, sizeof rc_rule);
        memset(&rs_rule, 0, sizeof rs_rule);
        ck_assert_int_eq(qbh_vb_rule_grid(&rc_rule, &gi, 6), QB_OK);
        gi.group_size = 0;
        gi.col_group = cg;
        ck_assert_int_eq(qbh_vb_rule_grid(&rs_rule, &gi, 6), QB_OK);
        rc_rule.margin = rs_rule.margin = 0.01;
        for (i = 0; i < 6; i++)
            b[i] = a[i] * (bad && i == 4 ? 1.5f : 1.0f);
        for (i = 0; i < 6; i++) {
            pa[i] = a[perm[i]];
            pb[i] = b[perm[i]];
        }
        memset(&sc, 0, sizeof sc);
        memset(&ss, 0, sizeof ss);
        qbh_vb_rows(&rc_rule, a, b, 1, 6, &sc);
        qbh_vb_rows(&rs_rule, pa, pb, 1, 6, &ss);
        ck_assert_uint_eq(sc.n_units, 2);
        ck_assert_uint_eq(ss.n_units, 2);
        ck_assert_uint_eq(sc.n_worse, (unsigned)bad);
        ck_assert_uint_eq(ss.n_worse, (unsigned)bad);
        ck_assert_double_eq_tol(sc.ss_base, ss.ss_base, 1e-15);
        qbh_vb_rule_free(&rc_rule);
        qbh_vb_rule_free(&rs_rule);
    }
}
END_TEST

/* The baseline model's values (qbh_vb_apply_rows) against the rule worked
 * out here: per group s = fp16(absmax / 7), q = clamp(rint(w / s), -8, 7),
 * decoded q * s in fp32; for a column map, the same on the scattered
 * groups; nearest-even rounding for a float target. And the applied values
 * carry exactly the error qbh_vb_rows reports as the baseline. */
START_TEST(baseline_apply_rows)
{
    enum { R = 3, C = 10, G = 4 };
    const int32_t cg[C] = {2, 0, 1, 0, 2, 1, 1, 0, 2, 2};
    float a[R * C], got[R * C], want[R * C];
    qbh_vb_rule rl;
    qbh_vb_stats st;
    qb_grid_info gi;
    int r, c, g, map;
    double ss = 0;
    for (c = 0; c < R * C; c++)
        a[c] = (float)((c * 53) % 29) / 5.0f - 2.9f + (c == 7 ? 40.0f : 0.0f); /* an outlier */
    for (map = 0; map < 2; map++) {
        memset(&gi, 0, sizeof gi);
        gi.bits = 4;
        gi.symmetric = 1;
        gi.scale_dtype = QB_DT_F16;
        gi.n_groups = map ? 3 : (C + G - 1) / G;
        gi.group_size = map ? 0 : G;
        gi.col_group = map ? cg : NULL;
        memset(&rl, 0, sizeof rl);
        ck_assert_int_eq(qbh_vb_rule_grid(&rl, &gi, C), QB_OK);
        ck_assert_int_eq(rl.kind, QBH_VB_GRID);
        for (r = 0; r < R; r++)
            for (g = 0; g < (int)gi.n_groups; g++) {
                float amax = 0, s;
                for (c = 0; c < C; c++)
                    if ((map ? cg[c] : c / G) == g && fabsf(a[r * C + c]) > amax)
                        amax = fabsf(a[r * C + c]);
                s = qb_f16_to_f32(qb_f32_to_f16(amax / 7.0f));
                for (c = 0; c < C; c++)
                    if ((map ? cg[c] : c / G) == g) {
                        float q = rintf(a[r * C + c] / s);
                        q = q > 7 ? 7 : q < -8 ? -8 : q;
                        want[r * C + c] = q * s;
                    }
            }
        memcpy(got, a, sizeof a);
        ck_assert_int_eq(qbh_vb_apply_rows(&rl, got, R, C), 0);
        ss = 0;
        for (c = 0; c < R * C; c++) {
            ck_assert_msg(got[c] == want[c], "map %d element %d: %g, want %g", map, c, got[c],
                          want[c]);
            ss += ((double)got[c] - a[c]) * ((double)got[c] - a[c]);
        }
        memset(&st, 0, sizeof st);
        rl.margin = 0.01;
        qbh_vb_rows(&rl, a, got, R, C, &st);
        ck_assert_uint_eq(st.n_worse, 0);
        ck_assert_double_eq_tol(st.ss_base, ss, 1e-12 * ss);
        qbh_vb_rule_free(&rl);
    }
    /* a value the scale dtype cannot hold: counted, the group left */
    memset(&gi, 0, sizeof gi);
    gi.bits = 4;
    gi.symmetric = 1;
    gi.scale_dtype = QB_DT_F16;
    gi.n_groups = 1;
    gi.group_size = C;
    memset(&rl, 0, sizeof rl);
    ck_assert_int_eq(qbh_vb_rule_grid(&rl, &gi, C), QB_OK);
    memcpy(got, a, sizeof a);
    got[3] = 1e9f; /* 1e9 / 7 is beyond fp16 */
    ck_assert_int_eq(qbh_vb_apply_rows(&rl, got, 1, C), 1);
    ck_assert(got[3] == 1e9f && got[0] == a[0]);
    qbh_vb_rule_free(&rl);
    /* float targets: nearest even */
    memset(&rl, 0, sizeof rl);
    rl.kind = QBH_VB_ROUND;
    rl.round_dtype = QB_DT_BF16;
    memcpy(got, a, sizeof a);
    ck_assert_int_eq(qbh_vb_apply_rows(&rl, got, R, C), 0);
    for (c = 0; c < R * C; c++)
        ck_assert(got[c] == qb_bf16_to_f32(qb_f32_to_bf16(a[c])));
}
END_TEST

/* The verdict bands of verify.h on hand-set figures: which band, whether
 * it fails, and that the noise term keeps a noisy mean from failing. */
START_TEST(verdict_bands)
{
    struct {
        double kc, kb, se;
        int exact, ran;
        qbh_mc_verdict want;
        int pass;
    } c[] = {
        {1e-7, 0, 0, 1, 0, QBH_MCV_EXACT, 1},
        {0.5, 0, 0, 0, 0, QBH_MCV_NONE, 1},
        {0.089, 0.1, 0.001, 0, 1, QBH_MCV_BETTER, 1},
        {0.091, 0.1, 0.001, 0, 1, QBH_MCV_EXPECTED, 1},
        {0.1109, 0.1, 0.001, 0, 1, QBH_MCV_EXPECTED, 1},
        {0.112, 0.1, 0.001, 0, 1, QBH_MCV_WORSE, 1},
        {0.0009, 0, 0.0001, 0, 1, QBH_MCV_EXPECTED, 1},  /* slack for a zero baseline */
        {0.159, 0.1, 0.001, 0, 1, QBH_MCV_WORSE, 1},     /* below 1.5 KL_b + 0.01 */
        {0.163, 0.1, 0.001, 0, 1, QBH_MCV_DEFECT, 0},    /* 0.16 + 2 x 0.001 */
        {0.163, 0.1, 0.01, 0, 1, QBH_MCV_WORSE, 1},      /* within the noise */
        {2.29, 1.21, 0.27, 0, 1, QBH_MCV_WORSE, 1},      /* a random fixture's 32 ids */
        {NAN, 1.21, 0.27, 0, 1, QBH_MCV_DEFECT, 0},      /* non-finite logits: never a band */
        {INFINITY, 0, 0, 0, 0, QBH_MCV_DEFECT, 0},       /* even without a baseline */
    };
    size_t i;
    for (i = 0; i < sizeof c / sizeof c[0]; i++) {
        qbh_model_check mc;
        memset(&mc, 0, sizeof mc);
        mc.ran = 1;
        mc.pass = 1;
        mc.n_tokens = 32;
        mc.kl_mean = c[i].kc;
        mc.base.kl_mean = c[i].kb;
        mc.defect_se = c[i].se;
        mc.base_ran = c[i].ran;
        mc.bits = 4;
        mc.group_size = 128;
        snprintf(mc.base_note, sizeof mc.base_note, "baseline not computed: test");
        qbh_mc_verdict_decide(&mc, c[i].exact);
        ck_assert_msg(mc.verdict == c[i].want, "case %zu: %s", i, mc.words);
        ck_assert_msg(mc.pass == c[i].pass, "case %zu: pass %d", i, mc.pass);
        ck_assert(mc.words[0]);
        if (!c[i].pass)
            ck_assert_msg(strstr(mc.reason, "defect"), "%s", mc.reason);
        if (c[i].want == QBH_MCV_EXPECTED)
            ck_assert_msg(strstr(mc.words, "as expected for int4 at group 128"), "%s", mc.words);
        if (c[i].want == QBH_MCV_NONE)
            ck_assert_str_eq(mc.words, "baseline not computed: test");
    }
}
END_TEST

/* A fused expert tensor [E, in, cols] (expert_rows = in): its groups are
 * the contiguous groups of the per-expert transposes [cols, in], so the
 * rule must agree with the plain contiguous rule on those transposes,
 * block by block of whole groups, and name the one corrupted group. */
START_TEST(baseline_grid_fused)
{
    enum { E = 2, IN = 5, COLS = 3, GS = 2 };
    float a[E * IN * COLS], b[E * IN * COLS], ta[COLS * IN], tb[COLS * IN];
    qbh_vb_rule fr, cr;
    qbh_vb_stats sf, sc;
    qb_grid_info gi;
    int e, k, c, bad;
    for (k = 0; k < E * IN * COLS; k++)
        a[k] = (float)((k * 37) % 23) / 7.0f - 1.5f;
    for (bad = 0; bad < 2; bad++) {
        memset(&fr, 0, sizeof fr);
        fr.kind = QBH_VB_GRID;
        fr.bits = 4;
        fr.scale_dtype = QB_DT_F16;
        fr.group_size = GS;
        fr.n_groups = (IN + GS - 1) / GS;
        fr.expert_rows = IN;
        fr.margin = 0.01;
        memset(&gi, 0, sizeof gi);
        gi.bits = 4;
        gi.n_groups = (IN + GS - 1) / GS;
        gi.group_size = GS;
        gi.symmetric = 1;
        gi.scale_dtype = QB_DT_F16;
        memset(&cr, 0, sizeof cr);
        ck_assert_int_eq(qbh_vb_rule_grid(&cr, &gi, IN), QB_OK);
        cr.margin = 0.01;
        /* converted = source quantized by nothing, except one element of
         * expert 1, input feature 3, column 2 pushed far off */
        memcpy(b, a, sizeof b);
        if (bad)
            b[(1 * IN + 3) * COLS + 2] += 3.0f;
        memset(&sf, 0, sizeof sf);
        memset(&sc, 0, sizeof sc);
        for (e = 0; e < E; e++) {
            /* blocks of whole groups inside one expert: rows [0, 4), [4, 5) */
            qbh_vb_rows(&fr, a + e * IN * COLS, b + e * IN * COLS, 4, COLS, &sf);
            qbh_vb_rows(&fr, a + (e * IN + 4) * COLS, b + (e * IN + 4) * COLS, 1, COLS, &sf);
            for (c = 0; c < COLS; c++)
                for (k = 0; k < IN; k++) {
                    ta[c * IN + k] = a[(e * IN + k) * COLS + c];
                    tb[c * IN + k] = b[(e * IN + k) * COLS + c];
                }
            qbh_vb_rows(&cr, ta, tb, COLS, IN, &sc);
        }
        ck_assert_uint_eq(sf.n_units, E * COLS * 3);
        ck_assert_uint_eq(sf.n_units, sc.n_units);
        ck_assert_uint_eq(sf.n_worse, sc.n_worse);
        ck_assert_uint_eq(sf.n_worse, (unsigned)bad);
        ck_assert_double_eq_tol(sf.ss_base, sc.ss_base, 1e-15);
        ck_assert_double_gt(sf.ss_base, 0.0);
        qbh_vb_rule_free(&cr);
    }
}
END_TEST

/* Float targets: nearest-even rounding passes, its neighbour fails. */
START_TEST(baseline_round)
{
    float a[3] = {1.0f / 3.0f, 1e-3f, -7.25f}, b[3];
    qbh_vb_rule rl;
    qbh_vb_stats st;
    int i;
    memset(&rl, 0, sizeof rl);
    rl.kind = QBH_VB_ROUND;
    rl.round_dtype = QB_DT_F16;
    for (i = 0; i < 3; i++)
        b[i] = qb_f16_to_f32(qb_f32_to_f16(a[i]));
    memset(&st, 0, sizeof st);
    qbh_vb_rows(&rl, a, b, 1, 3, &st);
    ck_assert_uint_eq(st.n_units, 3);
    ck_assert_uint_eq(st.n_worse, 0);
    /* 1/3 is not an fp16 value: the next fp16 away from it is farther */
    b[0] = qb_f16_to_f32((uint16_t)(qb_f32_to_f16(a[0]) + 1));
    memset(&st, 0, sizeof st);
    qbh_vb_rows(&rl, a, b, 1, 3, &st);
    ck_assert_uint_eq(st.n_worse, 1);
    ck_assert_double_gt(st.worst, 0.0);
}
END_TEST

START_TEST(acc_known_values)
{
    /* a = (3, 4), b = (3, 5): ||b-a||^2 = 1, ||a||^2 = 25, ||b||^2 = 34,
     * <a,b> = 29 -> rel 0.2, SNR 10 log10 25, cosine 29 / (5 sqrt 34). */
    float a[2] = {3.0f, 4.0f}, b[2] = {3.0f, 5.0f};
    qbh_vm_acc acc;
    double rel, cos, snr;
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, a, b, 2);
    qbh_vm_acc_metrics(&acc, &rel, &cos, &snr);
    ck_assert_uint_eq(acc.n_diff, 1);
    ck_assert_double_eq_tol(rel, 0.2, 1e-15);
    ck_assert_double_eq_tol(snr, 10.0 * log10(25.0), 1e-12);
    ck_assert_double_eq_tol(cos, 29.0 / (5.0 * sqrt(34.0)), 1e-15);
    ck_assert_double_eq(acc.max_abs, 1.0);
}
END_TEST

START_TEST(acc_signed_zero_and_nonfinite)
{
    float a[4] = {0.0f, NAN, INFINITY, 1.0f}, b[4] = {-0.0f, NAN, INFINITY, 1.0f};
    float c[2] = {1.0f, 2.0f}, d[2] = {NAN, 2.0f};
    qbh_vm_acc acc;
    double rel, cos, snr;
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, a, b, 4);
    /* -0 vs +0 is the same value (issue 28: ggml decodes MXFP4's -0 code
     * as +0), so neither a difference nor an error; a NaN/Inf kept bit for
     * bit is fine. */
    ck_assert_uint_eq(acc.n_diff, 0);
    ck_assert_uint_eq(acc.n_bad_nonfinite, 0);
    qbh_vm_acc_metrics(&acc, &rel, &cos, &snr);
    ck_assert(rel == 0.0);
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, c, d, 2);
    ck_assert_uint_eq(acc.n_bad_nonfinite, 1);
    {
        /* the smallest nonzero value against a zero still differs */
        float e[2] = {0.0f, 1.0f}, f[2] = {1e-45f, 1.0f};
        qbh_vm_acc_init(&acc);
        qbh_vm_acc_add(&acc, e, f, 2);
        ck_assert_uint_eq(acc.n_diff, 1);
    }
}
END_TEST

START_TEST(acc_degenerate)
{
    float z[3] = {0, 0, 0}, o[3] = {0, 1, 0};
    qbh_vm_acc acc;
    double rel, cos, snr;
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, z, z, 3);
    qbh_vm_acc_metrics(&acc, &rel, &cos, &snr);
    ck_assert(rel == 0.0 && cos == 1.0 && isinf(snr));
    qbh_vm_acc_init(&acc);
    qbh_vm_acc_add(&acc, z, o, 3);
    qbh_vm_acc_metrics(&acc, &rel, &cos, &snr);
    ck_assert(isinf(rel) && cos == 0.0);
    ck_assert(qbh_vm_cosine(-4.0, 4.0, 4.0) == -1.0);
}
END_TEST

/* Direct double computation of cos(W_a x_k, W_b x_k) pooled over k. */
static double wx_direct(const float *a, const float *b, int rows, int cols, const qbh_vm_wx *wx)
{
    double dot = 0, sa = 0, sb = 0;
    int k, r, c;
    for (k = 0; k < wx->k; k++) {
        for (r = 0; r < rows; r++) {
            double ya = 0, yb = 0;
            for (c = 0; c < cols; c++) {
                ya += (double)a[r * cols + c] * wx->x[k * cols + c];
                yb += (double)b[r * cols + c] * wx->x[k * cols + c];
            }
            dot += ya * yb;
            sa += ya * ya;
            sb += yb * yb;
        }
    }
    return dot / sqrt(sa * sb);
}

START_TEST(wx_streaming_and_invariants)
{
    enum { R = 37, C = 19 };
    static float a[R * C], b[R * C], s2[R * C], neg[R * C];
    qbh_vm_wx w1, w2, w3;
    uint64_t st = 12345;
    int i;
    double direct;
    for (i = 0; i < R * C; i++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (float)((double)(st >> 40) / (double)(1 << 24) - 0.5);
        b[i] = a[i] + (float)(((i * 7) % 11) - 5) * 0.01f;
        s2[i] = 2.0f * a[i];
        neg[i] = -a[i];
    }
    ck_assert_int_eq(qbh_vm_wx_init(&w1, 4, C, 99), QB_OK);
    ck_assert_int_eq(qbh_vm_wx_init(&w2, 4, C, 99), QB_OK);
    /* same seed, same vectors; uniform in [-1, 1) */
    ck_assert_mem_eq(w1.x, w2.x, sizeof(double) * 4 * C);
    for (i = 0; i < 4 * C; i++)
        ck_assert(w1.x[i] >= -1.0 && w1.x[i] < 1.0);
    qbh_vm_wx_add_rows(&w1, a, b, R);
    qbh_vm_wx_add_rows(&w2, a, b, 10);
    qbh_vm_wx_add_rows(&w2, a + 10 * C, b + 10 * C, R - 10);
    direct = wx_direct(a, b, R, C, &w1);
    ck_assert_double_eq_tol(qbh_vm_wx_cosine(&w1), direct, 1e-12);
    ck_assert_double_eq_tol(qbh_vm_wx_cosine(&w2), direct, 1e-12);
    ck_assert(direct < 1.0 && direct > 0.9);
    qbh_vm_wx_free(&w2);
    /* scale invariant; a sign flip is -1 */
    ck_assert_int_eq(qbh_vm_wx_init(&w2, 3, C, 7), QB_OK);
    qbh_vm_wx_add_rows(&w2, a, s2, R);
    ck_assert_double_eq_tol(qbh_vm_wx_cosine(&w2), 1.0, 1e-12);
    ck_assert_int_eq(qbh_vm_wx_init(&w3, 3, C, 7), QB_OK);
    qbh_vm_wx_add_rows(&w3, a, neg, R);
    ck_assert_double_eq_tol(qbh_vm_wx_cosine(&w3), -1.0, 1e-12);
    qbh_vm_wx_free(&w1);
    qbh_vm_wx_free(&w2);
    qbh_vm_wx_free(&w3);
    ck_assert_int_ne(qbh_vm_wx_init(&w1, 0, C, 1), QB_OK);
}
END_TEST

/* A hand-made result: 5 tensors over 2 layers, one failed, one missing. */
static qbh_verify_result *fake_result(void)
{
    static const struct {
        const char *name;
        int layer, state;
        double rel, cos, ss_a, ss_err;
    } rows[] = {
        {"model.embed_tokens.weight", -1, QBH_VT_OK, 0.0, 1.0, 4.0, 0.0},
        {"model.layers.0.self_attn.q_proj.weight", 0, QBH_VT_OK, 0.1, 0.995, 100.0, 1.0},
        {"model.layers.0.mlp.down_proj.weight", 0, QBH_VT_FAIL, 0.3, 0.95, 100.0, 9.0},
        {"model.layers.1.self_attn.q_proj.weight", 1, QBH_VT_OK, 0.2, 0.98, 50.0, 2.0},
        {"model.layers.1.mlp.up_proj.weight<&>", 1, QBH_VT_MISSING, 0, 0, 0, 0},
    };
    qbh_verify_result *r = qbh_calloc(1, sizeof *r);
    size_t i;
    ck_assert_ptr_nonnull(r);
    qbh_verify_opts_default(&r->opts);
    r->source_path = qbh_strdup("/src");
    r->converted_path = qbh_strdup("/conv");
    r->source_format = qbh_strdup("hf-dense");
    r->converted_format = qbh_strdup("sm86-w4a16");
    r->source_reader = qbh_strdup("hf-dense");
    r->converted_reader = qbh_strdup("sm86-w4a16");
    r->source_summary = qbh_strdup("summary");
    r->n = 5;
    r->t = qbh_calloc(5, sizeof *r->t);
    for (i = 0; i < 5; i++) {
        qbh_verify_tensor *t = &r->t[i];
        t->name = qbh_strdup(rows[i].name);
        t->encoding = qbh_strdup("bf16");
        t->conv_encoding = qbh_strdup("int4");
        t->n_dims = 2;
        t->dims[0] = 4;
        t->dims[1] = 8;
        t->layer = rows[i].layer;
        t->state = rows[i].state;
        t->rel_rmse = rows[i].rel;
        t->cosine = rows[i].cos;
        t->ss_a = rows[i].ss_a;
        t->ss_err = rows[i].ss_err;
        t->exact = rows[i].ss_err == 0.0;
        t->snr_db = t->exact ? INFINITY : 10 * log10(t->ss_a / t->ss_err);
        t->has_wx = t->layer >= 0;
        t->wx_cosine = t->has_wx ? rows[i].cos - 0.001 : NAN;
        if (t->state == QBH_VT_FAIL)
            strcpy(t->reason, "rel_rmse 0.3 > 0.25");
    }
    r->n_compared = 4;
    r->n_exact = 1;
    r->n_failed = 1;
    r->n_missing = 1;
    r->pass = 0;
    return r;
}

START_TEST(worst_and_layers)
{
    qbh_verify_result *r = fake_result();
    qbh_verify_layer *L;
    size_t idx[3], n, nl;
    n = qbh_verify_worst(r, idx, 3);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(idx[0], 2);
    ck_assert_uint_eq(idx[1], 3);
    ck_assert_uint_eq(idx[2], 1);
    ck_assert_int_eq(qbh_verify_layers(r, &L, &nl), QB_OK);
    ck_assert_uint_eq(nl, 2);
    ck_assert_uint_eq(L[0].n, 2);
    ck_assert_uint_eq(L[0].n_failed, 1);
    ck_assert_double_eq_tol(L[0].mean_rel_rmse, 0.2, 1e-15);
    ck_assert_double_eq_tol(L[0].max_rel_rmse, 0.3, 1e-15);
    ck_assert_double_eq_tol(L[0].snr_db, 10 * log10(200.0 / 10.0), 1e-12);
    ck_assert_double_eq_tol(L[0].min_wx_cosine, 0.949, 1e-12);
    ck_assert_uint_eq(L[1].n, 1); /* the missing tensor is not averaged */
    ck_assert_double_eq_tol(L[1].mean_cosine, 0.98, 1e-15);
    qbh_free(L);
    qbh_verify_result_free(r);
}
END_TEST

START_TEST(json_document)
{
    qbh_verify_result *r = fake_result();
    char *text = qbh_verify_json(r);
    cJSON *j, *t, *e;
    ck_assert_ptr_nonnull(text);
    j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "pass")));
    t = cJSON_GetObjectItem(j, "tensors");
    ck_assert_int_eq(cJSON_GetArraySize(t), 5);
    e = cJSON_GetArrayItem(t, 0);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(e, "snr_db"))); /* +inf */
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "exact")));
    e = cJSON_GetArrayItem(t, 2);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "status")->valuestring, "FAIL");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "reason")->valuestring, "rel_rmse 0.3 > 0.25");
    e = cJSON_GetArrayItem(t, 4);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "status")->valuestring, "MISSING");
    ck_assert_ptr_null(cJSON_GetObjectItem(e, "rel_rmse"));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "layers")), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "worst"), 0)->valuestring,
                     "model.layers.0.mlp.down_proj.weight");
    cJSON_Delete(j);
    cJSON_free(text);
    qbh_verify_result_free(r);
}
END_TEST

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

START_TEST(proj_groups)
{
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.3.self_attn.q_proj.weight"), "q");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.3.self_attn.k_proj.bias"), "k");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.3.self_attn.v_proj.weight"), "v");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.3.self_attn.o_proj.weight"), "o");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.gate_proj.weight"), "gate");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.up_proj.weight"), "up");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.down_proj.weight"), "down");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.experts.7.down_proj.weight"),
                     "experts");
    /* a shared expert is a dense MLP, not a routed expert */
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.shared_expert.up_proj.weight"),
                     "up");
    ck_assert_str_eq(qbh_verify_proj_group("model.layers.0.mlp.gate_up_proj.weight"), "other");
    ck_assert_str_eq(qbh_verify_proj_group("model.embed_tokens.weight"), "other");
    ck_assert_str_eq(qbh_verify_proj_group("q_proj"), "other");
}
END_TEST

START_TEST(html_file)
{
    qbh_verify_result *r = fake_result();
    char *dir = vt_tmpdir("html"), *html;
    const char *path = vt_path(dir, "report.html");
    DIR *d;
    struct dirent *de;
    size_t n_files = 0;
    ck_assert_int_eq(qbh_verify_write_html(r, path), QB_OK);
    /* written again over itself: replaced atomically, no temp left */
    ck_assert_int_eq(qbh_verify_write_html(r, path), QB_OK);
    d = opendir(dir);
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n_files++;
    closedir(d);
    ck_assert_uint_eq(n_files, 1);
    html = vt_slurp(path, NULL);
    ck_assert_uint_eq(count(html, "<tr class=\"t"), 5);
    /* 3 per-layer charts and the error histogram */
    ck_assert_uint_eq(count(html, "<svg"), 4);
    /* compared: the bit-equal embeddings on the exact side, the three
     * with an error on the requantized side */
    ck_assert_uint_eq(count(html, "<tr class=\"x"), 1);
    ck_assert_uint_eq(count(html, "<tr class=\"q"), 3);
    ck_assert_uint_eq(count(html, "data-group=\"q\" data-n=\"2\" data-exact=\"0\""), 1);
    ck_assert_uint_eq(count(html, "data-group=\"down\" data-n=\"1\" data-exact=\"0\""), 1);
    ck_assert_uint_eq(count(html, "data-group=\"other\" data-n=\"1\" data-exact=\"1\""), 1);
    ck_assert_uint_eq(count(html, "data-group=\""), 3);
    /* rel RMSE 0.1 | 0.2 0.3 in the quarter-decade bins [0.1, 0.316) split
     * at 10^-0.75 = 0.178 */
    ck_assert_uint_eq(
        count(html, "data-count=\"1\"><title>1 tensors with rel RMSE in [0.1, 0.178)"), 1);
    ck_assert_uint_eq(
        count(html, "data-count=\"2\"><title>2 tensors with rel RMSE in [0.178, 0.316)"), 1);
    ck_assert_uint_eq(count(html, "1 bit-exact and 0 non-finite not shown"), 1);
    /* /conv has no manifest: said, not invented */
    ck_assert_uint_eq(count(html, "id=\"settings-none\""), 1);
    ck_assert_uint_eq(count(html, "id=\"versions\""), 1);
    ck_assert_uint_eq(count(html, "<script>"), 1);
    /* self-contained: nothing to fetch */
    ck_assert_uint_eq(count(html, "src="), 0);
    ck_assert_uint_eq(count(html, "href"), 0);
    ck_assert_uint_eq(count(html, "url("), 0);
    ck_assert_uint_eq(count(html, "@import"), 0);
    /* names are escaped */
    ck_assert_uint_eq(count(html, "up_proj.weight&lt;&amp;&gt;"), 2);
    ck_assert_uint_eq(count(html, "up_proj.weight<&>"), 0);
    ck_assert(count(html, "id=\"verdict\">FAIL<") == 1);
    ck_assert_int_ne(qbh_verify_write_html(r, "/nonexistent-dir/x.html"), QB_OK);
    free(html);
    vt_rmtree(dir);
    free(dir);
    qbh_verify_result_free(r);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("verify_metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, acc_exact);
    tcase_add_test(tc, baseline_grid_by_hand);
    tcase_add_test(tc, baseline_grid_col_group);
    tcase_add_test(tc, baseline_grid_fused);
    tcase_add_test(tc, baseline_apply_rows);
    tcase_add_test(tc, verdict_bands);
    tcase_add_test(tc, baseline_round);
    tcase_add_test(tc, acc_known_values);
    tcase_add_test(tc, acc_signed_zero_and_nonfinite);
    tcase_add_test(tc, acc_degenerate);
    tcase_add_test(tc, wx_streaming_and_invariants);
    tcase_add_test(tc, worst_and_layers);
    tcase_add_test(tc, json_document);
    tcase_add_test(tc, html_file);
    tcase_add_test(tc, proj_groups);
    suite_add_tcase(s, tc);
    return s;
}
