/*
 * The loader and the CPU GEMM on real writer output: a tiny Hugging Face
 * llama checkpoint from known weights (tests/gen/gen_hf_dense) is converted
 * by the built program ($QB_TEST_BIN, hf-dense reader -> sm86-w4a16
 * writer); libquantbridge-w4a16 must open the result with its SHA-256
 * check, hand out every linear with the shapes config.json implies, and
 * those tensors must be the right weights: decoded, each is close to its
 * known source tensor (int4 requantization with outlier columns: relative
 * RMSE 0.12-0.18 measured, < 0.3 asserted, while a
 * swapped or misread tensor is ~1.4), and the GEMM on them matches a
 * float64 product of the test's own decoding within qbt_w4a16_bound().
 *
 * Exits 77 (skipped) when the program or either plugin is not built
 * (e.g. -DQB_ONLY_PLUGINS=none).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include "gen_hf_dense.h"
#include "qbt_w4a16_case.h"
#include "qbt_args.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char g_tmp[512];

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void make_tmp(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    char tmpl[512];
    if (!base || !*base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(tmpl, sizeof(tmpl), "%s/w4a16-e2e-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(g_tmp, sizeof(g_tmp), "%s", tmpl);
}

/* Converts spec -> out with extra CLI args; returns the exit status. */
static int convert(const qbt_hfd_spec *spec, const char *src, const char *out, const char *extra)
{
    char args[2048], errf[1100];
    int n;
    qbt_result r;
    char **av;
    ck_assert_int_eq(qbt_hfd_write(spec, src), 0);
    n = snprintf(args, sizeof(args), "convert --source '%s' --output '%s' %s", src, out, extra);
    ck_assert(n > 0 && (size_t)n < sizeof(args));
    av = qbt_args_split(args);
    qbt_run(&r, (const char *const *)av);
    qbt_args_free(av);
    snprintf(errf, sizeof(errf), "%s.err", out);
    qbt_write_file(errf, r.err);
    n = r.status;
    qbt_result_free(&r);
    return n;
}

static void check_model(const qbt_hfd_spec *spec, const char *out, int64_t g)
{
    qb_w4a16_model *m = NULL;
    char err[1024];
    qbt_hfd_tensor *ts = NULL;
    size_t nt = 0;
    qbt_rng rng = {11};
    int checked = 0;

    ck_assert_msg(qb_w4a16_open(out, QB_W4A16_OPEN_VERIFY_SHA256, &m, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(qb_w4a16_group_size(m), g);
    ck_assert_int_eq(qb_w4a16_num_layers(m), spec->layers);
    ck_assert_str_eq(qb_w4a16_architecture(m), spec->arch);
    ck_assert_int_eq(qbt_hfd_tensors(spec, &ts, &nt), 0);

    for (size_t i = 0; i < nt; i++) {
        const qbt_hfd_tensor *t = &ts[i];
        int layer;
        char path[96];
        qb_w4a16_linear lin;
        int64_t N, K, sc;
        float *src;
        double se = 0, ss = 0;
        uint16_t *x, *y;
        if (t->kind != QBT_HFD_LINEAR || sscanf(t->name, "model.layers.%d.%95[^ ]", &layer, path) != 2)
            continue;
        /* "self_attn.q_proj.weight" -> "self_attn.q_proj" */
        ck_assert_ptr_nonnull(strstr(path, ".weight"));
        *strstr(path, ".weight") = '\0';
        N = t->dims[0], K = t->dims[1], sc = (K + g - 1) / g;
        ck_assert_msg(qb_w4a16_linear_get(m, layer, path, K, &lin) == 0, "%s",
                      qb_w4a16_error(m));
        ck_assert_int_eq(lin.n, N);
        ck_assert_int_eq(lin.k, K);
        ck_assert_ptr_null(lin.perm);

        /* decoded weights vs the known source weights */
        src = malloc(sizeof(float) * (size_t)(N * K));
        ck_assert_ptr_nonnull(src);
        qbt_hfd_fill(spec, t, src);
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < K; c++) {
                uint8_t b = lin.packed[r * ((K + 1) / 2) + c / 2];
                int q = (c & 1 ? b >> 4 : b & 15) - 8;
                double w = q * (double)qb_f16_to_f32(lin.scales[r * sc + c / g]);
                double s = qbt_hfd_round(spec->dtype, src[r * K + c]);
                se += (w - s) * (w - s);
                ss += s * s;
            }
        ck_assert_msg(sqrt(se / ss) < 0.3, "layer %d %s: relative RMSE %.3f vs the source", layer,
                      path, sqrt(se / ss));

        /* the GEMM on the loaded tensors vs a float64 product */
        {
            const int64_t M = 3;
            x = malloc((size_t)(M * K) * 2);
            y = malloc((size_t)(M * N) * 2);
            for (int64_t j = 0; j < M * K; j++)
                x[j] = qb_f32_to_f16((float)qbt_rng_normal(&rng));
            ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, lin.packed, lin.scales, NULL, M, N, K, g, 2, 0), 0);
            for (int64_t mm = 0; mm < M; mm++)
                for (int64_t r = 0; r < N; r++) {
                    double ref = 0, a = 0;
                    for (int64_t c = 0; c < K; c++) {
                        uint8_t b = lin.packed[r * ((K + 1) / 2) + c / 2];
                        int q = (c & 1 ? b >> 4 : b & 15) - 8;
                        double v = q * (double)qb_f16_to_f32(lin.scales[r * sc + c / g]) *
                                   qb_f16_to_f32(x[mm * K + c]);
                        ref += v;
                        a += fabs(v);
                    }
                    ck_assert_msg(fabs(qb_f16_to_f32(y[mm * N + r]) - ref) <= qbt_w4a16_bound(ref, a, K, g),
                                  "layer %d %s y[%lld][%lld]", layer, path, (long long)mm, (long long)r);
                }
            free(x);
            free(y);
        }
        free(src);
        checked++;
    }
    /* 7 projections per llama layer */
    ck_assert_int_eq(checked, 7 * spec->layers);
    free(ts);
    qb_w4a16_close(m);
}

START_TEST(test_convert_and_load)
{
    /* hidden 96, intermediate 200: K of 96 and 200 are not multiples of
     * 128 (ragged last group) and 200 is not one of 32 either. */
    qbt_hfd_spec spec = {.arch = "llama", .dtype = "f16", .layers = 2, .hidden = 96,
                         .intermediate = 200, .vocab = 64, .shards = 1, .seed = 5};
    char src[700], out[700];
    ck_assert_int_eq(qbt_hfd_spec_check(&spec), 0);
    make_tmp();
    snprintf(src, sizeof(src), "%s/src", g_tmp);
    snprintf(out, sizeof(out), "%s/out-g128", g_tmp);
    ck_assert_msg(convert(&spec, src, out, "") == 0, "convert failed: see %s.err", out);
    check_model(&spec, out, 128);
    snprintf(out, sizeof(out), "%s/out-g32", g_tmp);
    ck_assert_msg(convert(&spec, src, out, "--group-size 32") == 0, "convert failed: see %s.err", out);
    check_model(&spec, out, 32);
}
END_TEST

Suite *qbt_suite(void)
{
    const char *bin = getenv("QB_TEST_BIN"), *bdir = getenv("QB_TEST_BUILD_DIR");
    char p1[1024], p2[1024];
    Suite *s;
    TCase *tc;
    snprintf(p1, sizeof(p1), "%s/lib/quantbridge/plugins/libqb_hf_dense.so", bdir ? bdir : ".");
    snprintf(p2, sizeof(p2), "%s/lib/quantbridge/plugins/libqb_sm86_w4a16.so", bdir ? bdir : ".");
    if (!bin || !file_exists(bin) || !file_exists(p1) || !file_exists(p2)) {
        printf("quantbridge or the hf-dense / sm86-w4a16 plugins are not built: skipped\n");
        return NULL; /* skipped */
    }
    s = suite_create("w4a16_e2e");
    tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_convert_and_load);
    suite_add_tcase(s, tc);
    return s;
}
