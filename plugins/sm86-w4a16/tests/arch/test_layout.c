/*
 * sm86-w4a16 unit tests of the architecture tables, the per-layer layout
 * (layout.c) and the exact-repack decision (repack.c), compiled from the
 * plugin's sources over the real host services (qbt_host).
 */
#include <cJSON.h>
#include <check.h>

#include "qbt_check_main.h"
#include "qbt_host.h"
#include <stdio.h>
#include <string.h>

#include "w4w.h"

static qb_status layout_of(const char *model_type, const char *cfg_text, int64_t L, w4w_layout *lo)
{
    cJSON *cfg = cJSON_Parse(cfg_text);
    qb_status rc;
    ck_assert_ptr_nonnull(cfg);
    qbt_host_clear_error();
    rc = w4w_layout_init(qbt_host(), "src", w4w_arch_find(model_type), cfg, L, lo);
    cJSON_Delete(cfg);
    return rc;
}

START_TEST(test_arch_table)
{
    static const char *const known[] = {"llama", "mistral", "qwen2", "qwen3", "gemma",
                                        "gemma2", "gemma3_text", "phi3", "mixtral",
                                        "qwen2_moe", "qwen3_moe", NULL};
    size_t i;
    for (i = 0; known[i]; i++)
        ck_assert_ptr_nonnull(w4w_arch_find(known[i]));
    /* the multimodal wrapper nests its text config: not this table's */
    ck_assert_ptr_null(w4w_arch_find("gemma3"));
    ck_assert_ptr_null(w4w_arch_find("qwen2moe"));
    ck_assert_int_eq(w4w_arch_find("gemma")->tie_default, 1);
    ck_assert_int_eq(w4w_arch_find("gemma3_text")->tie_default, 1);
    ck_assert_int_eq(w4w_arch_find("phi3")->tie_default, 0);
    ck_assert_ptr_nonnull(w4w_arch_role(w4w_arch_find("gemma3_text"), "self_attn.q_norm"));
    ck_assert_ptr_nonnull(
        w4w_arch_role(w4w_arch_find("gemma3_text"), "post_feedforward_layernorm"));
    ck_assert_ptr_null(w4w_arch_role(w4w_arch_find("phi3"), "self_attn.qkv_proj"));
    ck_assert_int_eq(w4w_arch_role(w4w_arch_find("qwen2_moe"), "mlp.shared_expert_gate")->kind,
                     W4W_ROLE_ROUTER);
    ck_assert_int_eq(w4w_arch_role(w4w_arch_find("qwen2_moe"), "self_attn.q_proj")->bias,
                     W4W_BIAS_REQUIRED);
}
END_TEST

START_TEST(test_role_match)
{
    const w4w_role *r = w4w_arch_role(w4w_arch_find("mixtral"), "block_sparse_moe.experts.%d.w2");
    const char *p;
    char buf[64];
    int64_t e = -1;
    ck_assert_ptr_nonnull(r);
    ck_assert(w4w_role_is_expert(r));
    p = "block_sparse_moe.experts.17.w2";
    ck_assert(w4w_role_match(r, p, strlen(p), &e));
    ck_assert_int_eq(e, 17);
    p = "block_sparse_moe.experts.0.w2";
    ck_assert(w4w_role_match(r, p, strlen(p), &e));
    ck_assert_int_eq(e, 0);
    /* leading zeros, empty index, other projection, trailing garbage */
    p = "block_sparse_moe.experts.07.w2";
    ck_assert(!w4w_role_match(r, p, strlen(p), &e));
    p = "block_sparse_moe.experts..w2";
    ck_assert(!w4w_role_match(r, p, strlen(p), &e));
    p = "block_sparse_moe.experts.1.w3";
    ck_assert(!w4w_role_match(r, p, strlen(p), &e));
    p = "block_sparse_moe.experts.1x.w2";
    ck_assert(!w4w_role_match(r, p, strlen(p), &e));
    /* plen bounds the match: ".weight" after it is not looked at */
    p = "block_sparse_moe.experts.3.w2.weight";
    ck_assert(w4w_role_match(r, p, strlen(p) - 7, &e));
    ck_assert_int_eq(e, 3);
    ck_assert_int_eq(w4w_role_path(r, 12, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "block_sparse_moe.experts.12.w2");
    ck_assert_int_eq(w4w_role_path(r, 12, buf, 10), -1);
}
END_TEST

START_TEST(test_layout_qwen_sparse_step)
{
    w4w_layout lo;
    w4w_inst inst[64];
    size_t n, k, experts = 0, dense = 0;
    const w4w_arch *a = w4w_arch_find("qwen2_moe");
    /* decoder_sparse_step 2: layers 1, 3 sparse, but 3 is mlp_only */
    ck_assert_int_eq(layout_of("qwen2_moe",
                               "{\"num_experts\": 3, \"decoder_sparse_step\": 2, "
                               "\"mlp_only_layers\": [3], \"hidden_size\": 8, "
                               "\"moe_intermediate_size\": 4}",
                               4, &lo),
                     QB_OK);
    ck_assert_int_eq(lo.n_experts, 3);
    ck_assert_int_eq(lo.sparse[0], 0);
    ck_assert_int_eq(lo.sparse[1], 1);
    ck_assert_int_eq(lo.sparse[2], 0);
    ck_assert_int_eq(lo.sparse[3], 0);
    ck_assert_int_eq(lo.width[W4W_IN_MOE_INTER], 4);
    ck_assert_int_eq(lo.width[W4W_IN_SHARED_INTER], -1);
    ck_assert_int_eq(lo.width[W4W_IN_EXPERTS], 3);
    ck_assert_uint_le(lo.per_layer, 64);
    w4w_layout_order(&lo, 1, inst, &n);
    for (k = 0; k < n; k++) {
        experts += inst[k].expert >= 0;
        dense += strcmp(a->roles[inst[k].role].path, "mlp.gate_proj") == 0;
    }
    ck_assert_uint_eq(experts, 9);
    ck_assert_uint_eq(dense, 0);
    /* expert-major: expert 0's gate, up, down, then expert 1's */
    for (k = 0; k < n && inst[k].expert < 0; k++)
        ;
    ck_assert_str_eq(a->roles[inst[k].role].path, "mlp.experts.%d.gate_proj");
    ck_assert_int_eq(inst[k + 2].expert, 0);
    ck_assert_str_eq(a->roles[inst[k + 2].role].path, "mlp.experts.%d.down_proj");
    ck_assert_int_eq(inst[k + 3].expert, 1);
    w4w_layout_order(&lo, 3, inst, &n);
    for (k = 0, experts = dense = 0; k < n; k++) {
        experts += inst[k].expert >= 0;
        dense += strcmp(a->roles[inst[k].role].path, "mlp.gate_proj") == 0;
        ck_assert(a->roles[inst[k].role].kind != W4W_ROLE_ROUTER);
    }
    ck_assert_uint_eq(experts, 0);
    ck_assert_uint_eq(dense, 1);
    w4w_layout_free(&lo);
}
END_TEST

START_TEST(test_layout_errors)
{
    w4w_layout lo;
    ck_assert_int_eq(layout_of("mixtral", "{\"hidden_size\": 8}", 2, &lo), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "num_local_experts"));
    ck_assert_int_eq(layout_of("mixtral", "{\"num_local_experts\": 0}", 2, &lo), QB_E_FORMAT);
    ck_assert_int_eq(layout_of("mixtral", "{\"num_local_experts\": 2.5}", 2, &lo), QB_E_FORMAT);
    ck_assert_int_eq(layout_of("qwen3_moe", "{\"num_experts\": 2, \"mlp_only_layers\": [2]}", 2,
                               &lo),
                     QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "mlp_only_layers"));
    ck_assert_int_eq(layout_of("qwen3_moe", "{\"num_experts\": 2, \"decoder_sparse_step\": 0}",
                               2, &lo),
                     QB_E_FORMAT);
    ck_assert_int_eq(layout_of("llama", "{\"hidden_size\": -3}", 2, &lo), QB_E_FORMAT);
    /* a dense architecture ignores expert keys; head_dim defaults to
     * hidden / heads */
    ck_assert_int_eq(layout_of("llama",
                               "{\"num_experts\": 8, \"hidden_size\": 64, "
                               "\"num_attention_heads\": 4}",
                               2, &lo),
                     QB_OK);
    ck_assert_int_eq(lo.n_experts, 0);
    ck_assert_int_eq(lo.width[W4W_IN_HEADS], 64);
    ck_assert_int_eq(lo.sparse[0] | lo.sparse[1], 0);
    w4w_layout_free(&lo);
    ck_assert_int_eq(layout_of("mixtral", "{\"num_local_experts\": 8}", 3, &lo), QB_OK);
    ck_assert_int_eq(lo.sparse[0] & lo.sparse[1] & lo.sparse[2], 1);
    w4w_layout_free(&lo);
}
END_TEST

START_TEST(test_repack_zero)
{
    qb_grid_info gi;
    char why[128];
    unsigned b;
    memset(&gi, 0, sizeof gi);
    gi.symmetric = 1;
    for (b = 1; b <= 4; b++) {
        gi.bits = b;
        /* code - 2^(b-1) over codes 0 .. 2^b - 1 stays inside [-8, 7] */
        ck_assert_int_eq(w4w_repack_zero(&gi, why, sizeof why), 1 << (b - 1));
        ck_assert_int_ge(0 - (1 << (b - 1)), -8);
        ck_assert_int_le((1 << b) - 1 - (1 << (b - 1)), 7);
    }
    gi.bits = 5;
    ck_assert_int_eq(w4w_repack_zero(&gi, why, sizeof why), 0);
    ck_assert_str_eq(why, "grid is 5-bit symmetric");
    gi.bits = 8;
    ck_assert_int_eq(w4w_repack_zero(&gi, why, sizeof why), 0);
    gi.bits = 2;
    gi.symmetric = 0;
    ck_assert_int_eq(w4w_repack_zero(&gi, why, sizeof why), 0);
    ck_assert_str_eq(why, "grid is 2-bit asymmetric");
    gi.bits = 0;
    gi.symmetric = 1;
    ck_assert_int_eq(w4w_repack_zero(&gi, why, sizeof why), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sm86-w4a16-layout");
    TCase *tc = tcase_create("unit");
    tcase_add_test(tc, test_arch_table);
    tcase_add_test(tc, test_role_match);
    tcase_add_test(tc, test_layout_qwen_sparse_step);
    tcase_add_test(tc, test_layout_errors);
    tcase_add_test(tc, test_repack_zero);
    suite_add_tcase(s, tc);
    return s;
}
