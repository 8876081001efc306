/*
 * CLI-level tests of the mxfp4 reader through the built `quantbridge`
 * ($QB_TEST_BIN with the in-tree config and plugins): conversion to hf-dense
 * f32 reproduces every expert element from the definitions (mx_oracle.h) in
 * the BF16 gpt-oss layout and the BF16 tensors bit for bit; malformed
 * checkpoints exit 1 naming the tensor.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "gen_mxfp4.h"
#include "mx_oracle.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_run.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("mx-cli");
    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(getenv("QB_TEST_BIN"));
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static char *sub(const char *name)
{
    static char b[4][1024];
    static int k;
    char *p = b[k++ & 3];
    snprintf(p, 1024, "%s/%s", tmp, name);
    return p;
}

static float bf16_at(const uint8_t *d, size_t i)
{
    uint32_t u = (uint32_t)(d[2 * i] | (d[2 * i + 1] << 8)) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float f32_at(const uint8_t *d, size_t i)
{
    float f;
    memcpy(&f, d + 4 * i, 4);
    return f;
}

/* Output `name` F32 [E, K, R] against the source `name`_blocks/_scales. */
static void check_expert_out(const qb_st_set *src, const qb_st_set *out, const char *name,
                             int64_t E, int64_t K, int64_t R)
{
    const qb_st_api *api = qbt_host()->safetensors;
    char nb[256], ns[256];
    const qb_st_tensor *o = api->find(out, name), *b, *s;
    int64_t e, k, j;

    snprintf(nb, sizeof(nb), "%s_blocks", name);
    snprintf(ns, sizeof(ns), "%s_scales", name);
    b = api->find(src, nb);
    s = api->find(src, ns);
    ck_assert_msg(o != NULL, "output lacks %s", name);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(o->dtype_name, "F32");
    ck_assert_uint_eq(o->n_dims, 3);
    ck_assert_int_eq(o->dims[0], E);
    ck_assert_int_eq(o->dims[1], K);
    ck_assert_int_eq(o->dims[2], R);
    for (e = 0; e < E; e++)
        for (k = 0; k < K; k++)
            for (j = 0; j < R; j++) {
                double want = mx_oracle(b->data, s->data, R, K / 32, e, j, k);
                float got = f32_at(o->data, (size_t)((e * K + k) * R + j));
                ck_assert_msg((double)got == want, "%s[%lld, %lld, %lld] = %.9g, want %.9g", name,
                              (long long)e, (long long)k, (long long)j, (double)got, want);
            }
}

START_TEST(hf_dense_f32_exact)
{
    const qb_st_api *api = qbt_host()->safetensors;
    char args[4096], *out = NULL;
    qbt_mx_spec s;
    qb_st_set *src = NULL, *dst = NULL;
    size_t i, n_bf16 = 0;
    int l;

    memset(&s, 0, sizeof(s));
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(sub("src"), &s), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=f32", sub("src"), sub("dense"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert failed: %s", out);
    free(out);
    ck_assert_int_eq(api->open_dir(qbt_host(), sub("src"), &src), QB_OK);
    ck_assert_int_eq(api->open_dir(qbt_host(), sub("dense"), &dst), QB_OK);
    for (l = 0; l < s.layers; l++) {
        char n[128];
        snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.gate_up_proj", l);
        check_expert_out(src, dst, n, s.experts, s.hidden, 2 * s.inter);
        snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.down_proj", l);
        check_expert_out(src, dst, n, s.experts, s.inter, s.hidden);
        snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.gate_up_proj_blocks", l);
        ck_assert_ptr_null(api->find(dst, n));
    }
    /* every BF16 source tensor: same name and shape, the same values in F32 */
    for (i = 0; i < api->count(src); i++) {
        const qb_st_tensor *a = api->tensor(src, i), *o;
        size_t k, n;
        if (a->dtype != QB_DT_BF16)
            continue;
        o = api->find(dst, a->name);
        ck_assert_msg(o != NULL, "output lacks %s", a->name);
        ck_assert_uint_eq(o->n_dims, a->n_dims);
        ck_assert_str_eq(o->dtype_name, "F32");
        n = (size_t)(a->n_bytes / 2);
        ck_assert_uint_eq(o->n_bytes, 4 * n);
        for (k = 0; k < n; k++)
            ck_assert_msg(f32_at(o->data, k) == bf16_at(a->data, k), "%s[%zu]", a->name, k);
        n_bf16++;
    }
    ck_assert_uint_eq(n_bf16 + (size_t)(2 * s.layers), api->count(dst)); /* + the expert tensors */
    api->close(src);
    api->close(dst);
}
END_TEST

static void bad(qbt_mx_bad kind, const char *needle)
{
    char args[4096], *out = NULL;
    qbt_mx_spec s;
    memset(&s, 0, sizeof(s));
    s.bad = kind;
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(sub("bad"), &s), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=f32", sub("bad"), sub("bad-out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, needle) && strstr(out, "quantbridge: error:"), "output: %s", out);
    ck_assert(!qbt_exists(sub("bad-out")) || qbt_count_entries(sub("bad-out"), "safetensors") == 0);
    free(out);
    qbt_rmtree(sub("bad"));
    qbt_rmtree(sub("bad-out"));
}

START_TEST(malformed_exit_1_naming_tensor)
{
    bad(QBT_MX_BAD_SCALES_SHAPE, "model.layers.0.mlp.experts.gate_up_proj_scales");
    bad(QBT_MX_BAD_E8M0, "model.layers.0.mlp.experts.gate_up_proj_scales");
    bad(QBT_MX_BAD_BLOCK_BYTES, "model.layers.0.mlp.experts.gate_up_proj_blocks");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("mxfp4-cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, hf_dense_f32_exact);
    tcase_add_test(tc, malformed_exit_1_naming_tensor);
    suite_add_tcase(s, tc);
    return s;
}
