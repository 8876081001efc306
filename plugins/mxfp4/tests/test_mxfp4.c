/*
 * Tests of the mxfp4 reader plugin (plugins/mxfp4), compiled into the test
 * with the real host services: the probe, every expert element of a
 * generated gpt-oss checkpoint (tests/gen/gen_mxfp4.c) against the value
 * from the definitions (mx_oracle.h) at its transposed place, the dense
 * tensors passed through, the stored view, and the malformed variants'
 * errors naming the tensor.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/quantbridge.h>

#include "gen_mxfp4.h"
#include "mx_oracle.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_json_refusals.h"

static const qb_plugin *plugin(void)
{
    qb_negotiation neg = {sizeof(qb_negotiation), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    const qb_plugin *p = NULL;
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, qbt_host(), &p), QB_OK);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(p->reader);
    ck_assert_str_eq(p->name, "mxfp4");
    return p;
}

START_TEST(test_probe)
{
    const qb_plugin *p = plugin();
    qb_probe_input in;
    memset(&in, 0, sizeof(in));
    in.struct_size = sizeof(in);
    in.is_dir = 1;
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"mxfp4\"}}";
    ck_assert_int_ge(p->reader->probe(p->ctx, &in), 80);
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"fp8\"}}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "{\"model_type\": \"gpt_oss\"}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "{not json";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
}
END_TEST

static size_t find(const qb_plugin *p, qb_reader_handle h, size_t n, const char *name)
{
    qb_tensor_info ti;
    size_t i;
    for (i = 0; i < n; i++) {
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        ck_assert_int_eq(p->reader->get_tensor_info(h, i, &ti), QB_OK);
        if (!strcmp(ti.name, name))
            return i;
    }
    ck_abort_msg("tensor %s not presented", name);
    return 0;
}

/* Every element of expert tensor <prefix> (presented [E, K, R]) equals the
 * definition's value of stored element [e, j, k]; read in uneven row
 * chunks that cross expert boundaries. */
static void check_experts(const qb_plugin *p, qb_reader_handle h, size_t n, const qb_st_set *raw,
                          const char *prefix, int64_t E, int64_t R, int64_t K)
{
    const qb_st_api *api = qbt_host()->safetensors;
    char nb[256], ns[256];
    const qb_st_tensor *b, *s;
    qb_tensor_info ti;
    size_t idx = find(p, h, n, prefix);
    int64_t rows = E * K, r0, chunk = 37, e, k, j, checked = 0;
    float *buf = malloc((size_t)(chunk * R) * sizeof(float));

    ck_assert_ptr_nonnull(buf);
    snprintf(nb, sizeof(nb), "%s_blocks", prefix);
    snprintf(ns, sizeof(ns), "%s_scales", prefix);
    b = api->find(raw, nb);
    s = api->find(raw, ns);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(s);
    memset(&ti, 0, sizeof(ti));
    ti.struct_size = sizeof(ti);
    ck_assert_int_eq(p->reader->get_tensor_info(h, idx, &ti), QB_OK);
    ck_assert_uint_eq(ti.n_dims, 3);
    ck_assert_int_eq(ti.dims[0], E);
    ck_assert_int_eq(ti.dims[1], K);
    ck_assert_int_eq(ti.dims[2], R);
    ck_assert_int_eq(ti.source_dtype, QB_DT_QUANTIZED);
    ck_assert_str_eq(ti.source_encoding, "mxfp4 e2m1 block32 e8m0");
    for (r0 = 0; r0 < rows; r0 += chunk) {
        int64_t nr = rows - r0 < chunk ? rows - r0 : chunk, r;
        ck_assert_int_eq(p->reader->read_rows(h, idx, r0, nr, buf), QB_OK);
        for (r = r0; r < r0 + nr; r++) {
            e = r / K;
            k = r % K;
            for (j = 0; j < R; j++) {
                double want = mx_oracle(b->data, s->data, R, K / 32, e, j, k);
                float got = buf[(r - r0) * R + j];
                ck_assert_msg((double)got == want && !!signbit(got) == !!signbit(want),
                              "%s[%lld, %lld, %lld] = %.9g, want %.9g", prefix, (long long)e,
                              (long long)k, (long long)j, (double)got, want);
                checked++;
            }
        }
    }
    ck_assert_int_eq(checked, E * K * R);
    free(buf);
}

START_TEST(test_experts_exact)
{
    const qb_plugin *p = plugin();
    const qb_st_api *api = qbt_host()->safetensors;
    char *dir = qbt_tmpdir("mx-good");
    qbt_mx_spec s;
    qb_reader_handle h = NULL;
    qb_model_info mi;
    qb_st_set *raw = NULL;
    int l;

    memset(&s, 0, sizeof(s));
    s.inter = 64; /* gate_up_proj R = 128: several blocks, odd chunking against K */
    s.hidden = 96;
    s.experts = 3;
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(dir, &s), 0);
    ck_assert_int_eq(p->reader->open(p->ctx, dir, NULL, &h), QB_OK);
    ck_assert_int_eq(api->open_dir(qbt_host(), dir, &raw), QB_OK);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(h, &mi), QB_OK);
    ck_assert_str_eq(mi.architecture, "gpt_oss");
    /* every stored tensor is one canonical tensor, except that each of the
     * 2 * layers `_blocks`/`_scales` pairs makes one */
    ck_assert_uint_eq(mi.n_tensors, api->count(raw) - (size_t)(2 * s.layers));
    for (l = 0; l < s.layers; l++) {
        char pre[128];
        snprintf(pre, sizeof(pre), "model.layers.%d.mlp.experts.gate_up_proj", l);
        check_experts(p, h, mi.n_tensors, raw, pre, s.experts, 2 * s.inter, s.hidden);
        snprintf(pre, sizeof(pre), "model.layers.%d.mlp.experts.down_proj", l);
        check_experts(p, h, mi.n_tensors, raw, pre, s.experts, s.hidden, s.inter);
    }
    api->close(raw);
    p->reader->close(h);
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

/* BF16 dense tensors (biases, sinks, router) come through unchanged. */
START_TEST(test_dense_passthrough)
{
    const qb_plugin *p = plugin();
    const qb_st_api *api = qbt_host()->safetensors;
    static const char *const names[] = {"model.layers.1.self_attn.sinks",
                                        "model.layers.0.mlp.experts.gate_up_proj_bias",
                                        "model.layers.0.mlp.router.weight",
                                        "model.layers.1.self_attn.o_proj.bias", NULL};
    char *dir = qbt_tmpdir("mx-dense");
    qbt_mx_spec s;
    qb_reader_handle h = NULL;
    qb_model_info mi;
    qb_st_set *raw = NULL;
    size_t i, k;

    memset(&s, 0, sizeof(s));
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(dir, &s), 0);
    ck_assert_int_eq(p->reader->open(p->ctx, dir, NULL, &h), QB_OK);
    ck_assert_int_eq(api->open_dir(qbt_host(), dir, &raw), QB_OK);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(h, &mi), QB_OK);
    for (i = 0; names[i]; i++) {
        const qb_st_tensor *t = api->find(raw, names[i]);
        size_t idx = find(p, h, mi.n_tensors, names[i]), n = (size_t)(t->n_bytes / 2);
        float *buf = malloc(n * sizeof(float));
        qb_tensor_info ti;
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        ck_assert_int_eq(p->reader->get_tensor_info(h, idx, &ti), QB_OK);
        ck_assert_int_eq(ti.source_dtype, QB_DT_BF16);
        ck_assert_int_eq(p->reader->read_rows(h, idx, 0, t->n_dims == 2 ? t->dims[0] : 1, buf),
                         QB_OK);
        for (k = 0; k < n; k++) {
            uint32_t u = (uint32_t)(t->data[2 * k] | (t->data[2 * k + 1] << 8)) << 16;
            float want;
            memcpy(&want, &u, 4);
            ck_assert_msg(buf[k] == want, "%s[%zu]: %g != %g", names[i], k, (double)buf[k],
                          (double)want);
        }
        free(buf);
    }
    /* stored view: blocks and scales read through their expert tensor */
    {
        size_t nraw = api->count(raw), found = 0;
        size_t gu = find(p, h, mi.n_tensors, "model.layers.0.mlp.experts.gate_up_proj");
        for (i = 0; i < nraw; i++) {
            qb_raw_tensor_info ri;
            memset(&ri, 0, sizeof(ri));
            ri.struct_size = sizeof(ri);
            ck_assert_int_eq(p->reader->get_raw_tensor_info(h, i, &ri), QB_OK);
            if (!strcmp(ri.name, "model.layers.0.mlp.experts.gate_up_proj_blocks") ||
                !strcmp(ri.name, "model.layers.0.mlp.experts.gate_up_proj_scales")) {
                ck_assert_int_eq(ri.canonical, (int64_t)gu);
                found++;
            }
        }
        ck_assert_uint_eq(found, 2);
    }
    api->close(raw);
    p->reader->close(h);
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

/* A malformed variant: open (or, for a scale byte, the read) fails with
 * `code` and a message naming the tensor. */
/* config.json is read by the one strict parser (sdk/kit/qbk_json.h). */
START_TEST(test_strict_json_config)
{
    char *dir = qbt_tmpdir("mx-json");
    qbt_mx_spec s;
    memset(&s, 0, sizeof(s));
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(dir, &s), 0);
    qbt_json_refusals(dir, "config.json", "model_type", NULL, qbt_json_open_reader,
                      (void *)plugin(), NULL);
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

static void run_bad(const char *tag, qbt_mx_bad bad, qb_status code, int at_read,
                    const char *needle1, const char *needle2)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag);
    qbt_mx_spec s;
    qb_reader_handle h = NULL;
    qb_status st;

    memset(&s, 0, sizeof(s));
    s.bad = bad;
    qbt_mx_spec_defaults(&s);
    ck_assert_int_eq(qbt_mx_write(dir, &s), 0);
    qbt_host_clear_error();
    st = p->reader->open(p->ctx, dir, NULL, &h);
    if (at_read) {
        qb_model_info mi;
        size_t idx;
        float *buf;
        ck_assert_int_eq(st, QB_OK);
        memset(&mi, 0, sizeof(mi));
        mi.struct_size = sizeof(mi);
        ck_assert_int_eq(p->reader->get_model_info(h, &mi), QB_OK);
        idx = find(p, h, mi.n_tensors, "model.layers.0.mlp.experts.gate_up_proj");
        buf = malloc((size_t)(s.experts * s.hidden * 2 * s.inter) * sizeof(float));
        st = p->reader->read_rows(h, idx, 0, (int64_t)s.experts * s.hidden, buf);
        free(buf);
        p->reader->close(h);
        h = NULL;
    }
    ck_assert_int_eq(st, code);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(qbt_host_last_error(), needle1) && strstr(qbt_host_last_error(), needle2),
                  "%s: message '%s'", tag, qbt_host_last_error());
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_bad_scales_shape)
{
    run_bad("mx-b-shape", QBT_MX_BAD_SCALES_SHAPE, QB_E_MISMATCH, 0,
            "model.layers.0.mlp.experts.gate_up_proj_scales", "shape");
}
END_TEST

START_TEST(test_bad_e8m0_255)
{
    run_bad("mx-b-e8m0", QBT_MX_BAD_E8M0, QB_E_FORMAT, 1,
            "model.layers.0.mlp.experts.gate_up_proj_scales", "255");
}
END_TEST

START_TEST(test_bad_block_bytes)
{
    run_bad("mx-b-bytes", QBT_MX_BAD_BLOCK_BYTES, QB_E_FORMAT, 0,
            "model.layers.0.mlp.experts.gate_up_proj_blocks", "not 16");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("mxfp4");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_probe);
    tcase_add_test(tc, test_experts_exact);
    tcase_add_test(tc, test_dense_passthrough);
    tcase_add_test(tc, test_bad_scales_shape);
    tcase_add_test(tc, test_bad_e8m0_255);
    tcase_add_test(tc, test_bad_block_bytes);
    tcase_add_test(tc, test_strict_json_config);
    suite_add_tcase(s, tc);
    return s;
}
