/*
 * CLI-level tests of the mxfp4 reader through the built `quantbridge`
 * ($QB_TEST_BIN with the in-tree config and plugins): conversion to hf-dense
 * f32 reproduces every expert element from the definitions (mx_oracle.h) in
 * the BF16 gpt-oss layout and the BF16 tensors bit for bit; conversion to
 * sm86-w4a16 splits each expert's interleaved gate_up into gate/up and
 * transposes it (checked by decoding the stored int4 against the right and
 * a wrong source element), keeps sinks, router and expert biases, records
 * the requantization error, passes verify (--no-model-check: the forward
 * pass does not run gpt_oss), and reads back fused as hf-dense; malformed
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

static float f16_at(const uint8_t *d, size_t i)
{
    return qb_f16_to_f32((uint16_t)(d[2 * i] | (d[2 * i + 1] << 8)));
}

/* Element [r][c] of a stored W4A16 linear, decoded from the format's
 * definition (docs/w4a16-format.md "Encoding of a packed linear"). */
static float w4_at(const qb_st_tensor *packed, const qb_st_tensor *scales, int64_t gs, int64_t r,
                   int64_t c)
{
    uint8_t b = packed->data[r * packed->dims[1] + c / 2];
    int q = (int)((c & 1) ? b >> 4 : b & 15) - 8;
    return (float)q * f16_at(scales->data, (size_t)(r * scales->dims[1] + c / gs));
}

static char *slurp(const char *path)
{
    size_t n = 0;
    char *s = qbt_read_file(path, &n);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

START_TEST(w4a16_split_verify_roundtrip)
{
    const qb_st_api *api = qbt_host()->safetensors;
    char args[4096], *out = NULL, *text, path[1200];
    qbt_mx_spec s;
    qb_st_set *src = NULL, *lay = NULL, *back = NULL;
    cJSON *man;
    const cJSON *ts, *gsj;
    int64_t gs, e, c, k, H, I;
    int q, n_rec = 0;

    memset(&s, 0, sizeof(s));
    s.layers = 1;
    s.hidden = 128;
    s.inter = 64;
    s.experts = 3;
    qbt_mx_spec_defaults(&s);
    H = s.hidden;
    I = s.inter;
    ck_assert_int_eq(qbt_mx_write(sub("src"), &s), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --group-size 32",
             sub("src"), sub("w4"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert failed: %s", out);
    free(out);
    /* the manifest: one requantized entry per expert part, error recorded */
    snprintf(path, sizeof(path), "%s/manifest.json", sub("w4"));
    text = slurp(path);
    man = cJSON_Parse(text);
    ck_assert_ptr_nonnull(man);
    gsj = cJSON_GetObjectItemCaseSensitive(man, "group_size");
    ck_assert(cJSON_IsNumber(gsj));
    gs = (int64_t)gsj->valuedouble;
    ck_assert_int_eq(gs, 32);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(man, "architecture")->valuestring,
                     "gpt_oss");
    ts = cJSON_GetObjectItemCaseSensitive(man, "tensors");
    for (e = 0; e < s.experts; e++) {
        static const char *const parts[] = {"gate_proj", "up_proj", "down_proj"};
        for (q = 0; q < 3; q++) {
            char key[128];
            const cJSON *t, *rr;
            snprintf(key, sizeof(key), "layer_00.safetensors:mlp.experts.%lld.%s", (long long)e,
                     parts[q]);
            t = cJSON_GetObjectItemCaseSensitive(ts, key);
            ck_assert_msg(t != NULL, "manifest lacks %s", key);
            rr = cJSON_GetObjectItemCaseSensitive(t, "rel_rmse");
            ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "exact")));
            ck_assert(cJSON_IsNumber(rr) && rr->valuedouble > 0.0 && rr->valuedouble < 0.2);
            ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(t, "source_encoding")->valuestring,
                             "mxfp4 e2m1 block32 e8m0");
            n_rec++;
        }
    }
    ck_assert_int_eq(n_rec, 3 * s.experts);
    cJSON_Delete(man);
    free(text);

    /* the stored parts against the source: part (e, gate|up) row c is
     * gate_up[e, :, 2c + q] and down row h is down[e, :, h]; the decoded
     * rows are close to the right source row and far from a wrong one */
    ck_assert_int_eq(api->open_dir(qbt_host(), sub("src"), &src), QB_OK);
    snprintf(path, sizeof(path), "%s/layer_00.safetensors", sub("w4"));
    ck_assert_int_eq(api->open_file(qbt_host(), path, &lay), QB_OK);
    {
        const qb_st_tensor *gb = api->find(src, "model.layers.0.mlp.experts.gate_up_proj_blocks");
        const qb_st_tensor *gsc = api->find(src, "model.layers.0.mlp.experts.gate_up_proj_scales");
        const qb_st_tensor *gbias = api->find(src, "model.layers.0.mlp.experts.gate_up_proj_bias");
        const qb_st_tensor *db = api->find(src, "model.layers.0.mlp.experts.down_proj_blocks");
        const qb_st_tensor *dsc = api->find(src, "model.layers.0.mlp.experts.down_proj_scales");
        const qb_st_tensor *dbias = api->find(src, "model.layers.0.mlp.experts.down_proj_bias");
        ck_assert(gb && gsc && gbias && db && dsc && dbias);
        for (e = 0; e < s.experts; e++)
            for (q = 0; q < 3; q++) {
                char n1[128], n2[128], n3[128];
                const qb_st_tensor *pk, *sc, *bi;
                int64_t rows = q < 2 ? I : H, cols = q < 2 ? H : I;
                double err = 0, wrong = 0, ref = 0;
                static const char *const parts[] = {"gate_proj", "up_proj", "down_proj"};
                snprintf(n1, sizeof(n1), "mlp.experts.%lld.%s.packed", (long long)e, parts[q]);
                snprintf(n2, sizeof(n2), "mlp.experts.%lld.%s.scales", (long long)e, parts[q]);
                snprintf(n3, sizeof(n3), "mlp.experts.%lld.%s.bias", (long long)e, parts[q]);
                pk = api->find(lay, n1);
                sc = api->find(lay, n2);
                bi = api->find(lay, n3);
                ck_assert_msg(pk && sc && bi, "layer_00 lacks %s/.scales/.bias", n1);
                ck_assert_int_eq(pk->dims[0], rows);
                ck_assert_int_eq(pk->dims[1], (cols + 1) / 2);
                ck_assert_int_eq(bi->dims[0], rows);
                for (c = 0; c < rows; c++) {
                    /* the bias: bf16 source value, once rounded to f16 */
                    float bsrc = q < 2 ? bf16_at(gbias->data, (size_t)(e * 2 * I + 2 * c + q))
                                       : bf16_at(dbias->data, (size_t)(e * H + c));
                    ck_assert_msg(f16_at(bi->data, (size_t)c) ==
                                      qb_f16_to_f32(qb_f32_to_f16(bsrc)),
                                  "%s[%lld]", n3, (long long)c);
                    for (k = 0; k < cols; k++) {
                        double got = w4_at(pk, sc, gs, c, k), want, other;
                        if (q < 2) {
                            want = mx_oracle(gb->data, gsc->data, 2 * I, H / 32, e, 2 * c + q, k);
                            other = mx_oracle(gb->data, gsc->data, 2 * I, H / 32, e,
                                              2 * c + (1 - q), k);
                        } else {
                            want = mx_oracle(db->data, dsc->data, H, I / 32, e, c, k);
                            other = mx_oracle(db->data, dsc->data, H, I / 32, e, (c + 1) % H, k);
                        }
                        err += (got - want) * (got - want);
                        wrong += (got - other) * (got - other);
                        ref += want * want;
                    }
                }
                ck_assert_msg(sqrt(err / ref) < 0.15 && sqrt(wrong / ref) > 0.8,
                              "%s: rel error %.4f against its source, %.4f against a wrong one",
                              n1, sqrt(err / ref), sqrt(wrong / ref));
            }
        /* kept tensors: sinks under their own name, the router with its bias */
        ck_assert_ptr_nonnull(api->find(lay, "self_attn.sinks"));
        ck_assert_str_eq(api->find(lay, "self_attn.sinks")->dtype_name, "F16");
        ck_assert_ptr_nonnull(api->find(lay, "mlp.router.weight"));
        ck_assert_ptr_nonnull(api->find(lay, "mlp.router.bias"));
        ck_assert_ptr_nonnull(api->find(lay, "self_attn.o_proj.bias"));
    }

    /* verify: every source tensor matched by name and shape; the fused
     * experts have no plain baseline rule in verify, so a threshold */
    snprintf(args, sizeof(args), "verify --source '%s' --converted '%s' --no-model-check "
             "--max-rel-rmse 0.15", sub("src"), sub("w4"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "verify failed: %s", out);
    ck_assert_msg(strstr(out, "0 missing, 0 extra, 0 shape mismatches"), "verify: %s", out);
    free(out);

    /* the same model as a BF16 checkpoint (hf-dense bf16 holds MXFP4
     * exactly; the hf-dense reader presents the fused tensors as stored)
     * converts to the same bytes */
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=bf16", sub("src"), sub("bf16"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert to bf16 failed: %s", out);
    free(out);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --group-size 32",
             sub("bf16"), sub("w4b"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert bf16 failed: %s", out);
    free(out);
    {
        char p1[1200], p2[1200], *a, *b2;
        size_t na = 0, nb = 0;
        snprintf(p1, sizeof(p1), "%s/layer_00.safetensors", sub("w4"));
        snprintf(p2, sizeof(p2), "%s/layer_00.safetensors", sub("w4b"));
        a = qbt_read_file(p1, &na);
        b2 = qbt_read_file(p2, &nb);
        ck_assert(a && b2 && na == nb && memcmp(a, b2, na) == 0);
        free(a);
        free(b2);
    }

    /* read back: hf-dense of the W4A16 output holds the fused tensors,
     * each element the stored part's decoded value at its interleaved,
     * transposed place */
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=f32", sub("w4"), sub("back"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert back failed: %s", out);
    free(out);
    ck_assert_int_eq(api->open_dir(qbt_host(), sub("back"), &back), QB_OK);
    {
        const qb_st_tensor *gu = api->find(back, "model.layers.0.mlp.experts.gate_up_proj");
        const qb_st_tensor *dn = api->find(back, "model.layers.0.mlp.experts.down_proj");
        const qb_st_tensor *gub = api->find(back, "model.layers.0.mlp.experts.gate_up_proj_bias");
        ck_assert_msg(gu && dn && gub, "hf-dense of the W4A16 output lacks the fused experts");
        ck_assert_int_eq(gu->dims[1], H);
        ck_assert_int_eq(gu->dims[2], 2 * I);
        ck_assert_int_eq(dn->dims[1], I);
        ck_assert_int_eq(dn->dims[2], H);
        for (e = 0; e < s.experts; e++)
            for (q = 0; q < 2; q++) {
                char n1[128], n2[128], n3[128];
                const qb_st_tensor *pk, *sc, *bi;
                snprintf(n1, sizeof(n1), "mlp.experts.%lld.%s.packed", (long long)e,
                         q ? "up_proj" : "gate_proj");
                snprintf(n2, sizeof(n2), "mlp.experts.%lld.%s.scales", (long long)e,
                         q ? "up_proj" : "gate_proj");
                snprintf(n3, sizeof(n3), "mlp.experts.%lld.%s.bias", (long long)e,
                         q ? "up_proj" : "gate_proj");
                pk = api->find(lay, n1);
                sc = api->find(lay, n2);
                bi = api->find(lay, n3);
                for (c = 0; c < I; c++) {
                    ck_assert(f32_at(gub->data, (size_t)(e * 2 * I + 2 * c + q)) ==
                              f16_at(bi->data, (size_t)c));
                    for (k = 0; k < H; k++)
                        ck_assert_msg(f32_at(gu->data, (size_t)((e * H + k) * 2 * I + 2 * c + q)) ==
                                          w4_at(pk, sc, gs, c, k),
                                      "gate_up_proj[%lld, %lld, %lld]", (long long)e, (long long)k,
                                      (long long)(2 * c + q));
                }
            }
        for (e = 0; e < s.experts; e++) {
            char n1[128], n2[128];
            const qb_st_tensor *pk, *sc;
            snprintf(n1, sizeof(n1), "mlp.experts.%lld.down_proj.packed", (long long)e);
            snprintf(n2, sizeof(n2), "mlp.experts.%lld.down_proj.scales", (long long)e);
            pk = api->find(lay, n1);
            sc = api->find(lay, n2);
            for (c = 0; c < H; c++)
                for (k = 0; k < I; k++)
                    ck_assert(f32_at(dn->data, (size_t)((e * I + k) * H + c)) ==
                              w4_at(pk, sc, gs, c, k));
        }
    }
    api->close(back);
    api->close(lay);
    api->close(src);
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

/* A gpt-oss layer without gate_up_proj_bias reads fine but is no gpt-oss
 * layer the W4A16 writer knows: exit 1 naming the missing tensor, no output. */
START_TEST(w4a16_missing_expert_bias_exit_1)
{
    char args[4096], *out = NULL;
    qbt_mx_spec s;
    memset(&s, 0, sizeof(s));
    s.bad = QBT_MX_NO_BIAS;
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(sub("nb"), &s), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s'", sub("nb"), sub("nb-out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "model.layers.0.mlp.experts.gate_up_proj_bias") &&
                      strstr(out, "required tensor missing"), "output: %s", out);
    ck_assert(!qbt_exists(sub("nb-out")) || qbt_count_entries(sub("nb-out"), "safetensors") == 0);
    free(out);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("mxfp4-cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, hf_dense_f32_exact);
    tcase_add_test(tc, w4a16_split_verify_roundtrip);
    tcase_add_test(tc, w4a16_missing_expert_bias_exit_1);
    tcase_add_test(tc, malformed_exit_1_naming_tensor);
    suite_add_tcase(s, tc);
    return s;
}
