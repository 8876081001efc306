/* model_facts.c: each fact of qb_model_facts from the one source
 * qb_tensor.h names (embedding shape, lm_head presence, config keys, layer
 * names), its bit clear whenever that source does not state it, never a
 * guess; the one-line text `inspect` prints. */
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"

#define MAXT 16
static qb_tensor_info ts[MAXT];
static size_t nt;

static void tensor(const char *name, int64_t d0, int64_t d1)
{
    ck_assert_uint_lt(nt, MAXT);
    memset(&ts[nt], 0, sizeof ts[nt]);
    ts[nt].struct_size = sizeof ts[nt];
    ts[nt].name = name;
    ts[nt].n_dims = d1 ? 2 : 1;
    ts[nt].dims[0] = d0;
    ts[nt].dims[1] = d1;
    ts[nt].source_encoding = "f32";
    nt++;
}

/* A llama-like list: embed [128, 64], two layers, norm; lm_head if !tied. */
static void llama(int tied)
{
    nt = 0;
    tensor("model.embed_tokens.weight", 128, 64);
    tensor("model.layers.0.self_attn.q_proj.weight", 64, 64);
    tensor("model.layers.1.self_attn.q_proj.weight", 64, 64);
    tensor("model.layers.1.mlp.down_proj.weight", 64, 256);
    tensor("model.norm.weight", 64, 0);
    if (!tied)
        tensor("lm_head.weight", 128, 64);
}

static qb_model_facts facts(const char *config)
{
    qb_model_facts f;
    qb_status rc;
    memset(&f, 0xab, sizeof f);
    rc = qbh_model_facts_compute("cfg", config, ts, nt, &f);
    ck_assert_msg(rc == QB_OK, "%s: %s", config ? config : "(null)", qbh_error_message());
    ck_assert_uint_eq(f.struct_size, sizeof f);
    ck_assert_uint_eq(f.known & ~QB_FACT_ALL, 0);
    return f;
}

static const char *text(const qb_model_facts *f)
{
    static char buf[256];
    qbh_model_facts_text(f, buf, sizeof buf);
    return buf;
}

static const char *llama_cfg =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
    " \"intermediate_size\": 256, \"vocab_size\": 128, \"tie_word_embeddings\": false}";

START_TEST(llama_like)
{
    qb_model_facts f;
    llama(0);
    f = facts(llama_cfg);
    ck_assert_uint_eq(f.known, QB_FACT_ALL);
    ck_assert_int_eq(f.n_layers, 2);
    ck_assert_int_eq(f.hidden_size, 64);
    ck_assert_int_eq(f.vocab_size, 128);
    ck_assert_int_eq(f.n_heads, 4);
    ck_assert_int_eq(f.n_kv_heads, 2);
    ck_assert_int_eq(f.head_dim, 16);
    ck_assert_int_eq(f.intermediate_size, 256);
    ck_assert_int_eq(f.tied_embeddings, 0);
    ck_assert_int_eq(f.n_experts, 0);
    ck_assert_int_eq(f.n_experts_used, 0);
    ck_assert_str_eq(text(&f), "layers 2, hidden 64, vocab 128, heads 4, kv heads 2, head dim 16, "
                               "intermediate 256, tied no, experts 0");
}
END_TEST

START_TEST(tied_from_tensors_not_config)
{
    qb_model_facts f;
    /* the config says untied; the tensor list (the stated source) says tied */
    llama(1);
    f = facts(llama_cfg);
    ck_assert(f.known & QB_FACT_TIED_EMBEDDINGS);
    ck_assert_int_eq(f.tied_embeddings, 1);
    /* vocab and hidden come from the embedding, not config's numbers */
    nt = 0;
    tensor("model.embed_tokens.weight", 100, 32);
    f = facts(llama_cfg);
    ck_assert_int_eq(f.vocab_size, 100);
    ck_assert_int_eq(f.hidden_size, 32);
    /* no embedding: vocab, hidden and tied unknown */
    nt = 0;
    tensor("lm_head.weight", 128, 64);
    f = facts(llama_cfg);
    ck_assert_uint_eq(f.known & (QB_FACT_VOCAB | QB_FACT_HIDDEN | QB_FACT_TIED_EMBEDDINGS), 0);
    ck_assert_int_eq(f.vocab_size, 0);
    ck_assert_int_eq(f.tied_embeddings, 0);
    /* an embedding that is not a matrix: tied known, shape facts not */
    nt = 0;
    tensor("model.embed_tokens.weight", 128, 0);
    f = facts(llama_cfg);
    ck_assert_uint_eq(f.known & (QB_FACT_VOCAB | QB_FACT_HIDDEN), 0);
    ck_assert(f.known & QB_FACT_TIED_EMBEDDINGS);
}
END_TEST

START_TEST(moe_counts)
{
    qb_model_facts f;
    llama(0);
    tensor("model.layers.0.block_sparse_moe.experts.7.w1.weight", 256, 64);
    /* Mixtral */
    f = facts("{\"num_local_experts\": 8, \"num_experts_per_tok\": 2}");
    ck_assert(f.known & QB_FACT_EXPERTS);
    ck_assert_int_eq(f.n_experts, 8);
    ck_assert_int_eq(f.n_experts_used, 2);
    ck_assert_ptr_nonnull(strstr(text(&f), "experts 8 (2 per token)"));
    /* DeepSeek */
    f = facts("{\"n_routed_experts\": 64, \"num_experts_per_tok\": 6, \"n_shared_experts\": 2}");
    ck_assert(f.known & QB_FACT_EXPERTS);
    ck_assert_int_eq(f.n_experts, 64);
    ck_assert_int_eq(f.n_experts_used, 6);
    /* Qwen MoE; two count keys that agree */
    f = facts("{\"num_experts\": 60, \"num_local_experts\": 60, \"num_experts_per_tok\": 4}");
    ck_assert_int_eq(f.n_experts, 60);
    /* refused: disagreeing counts, count without per-token, per-token
     * without count, expert tensors with no count at all */
    f = facts("{\"num_experts\": 60, \"num_local_experts\": 8, \"num_experts_per_tok\": 4}");
    ck_assert_uint_eq(f.known & QB_FACT_EXPERTS, 0);
    ck_assert_int_eq(f.n_experts, 0);
    f = facts("{\"num_local_experts\": 8}");
    ck_assert_uint_eq(f.known & QB_FACT_EXPERTS, 0);
    f = facts("{\"num_experts_per_tok\": 2}");
    ck_assert_uint_eq(f.known & QB_FACT_EXPERTS, 0);
    f = facts("{}");
    ck_assert_uint_eq(f.known & QB_FACT_EXPERTS, 0);
    f = facts("{\"num_local_experts\": 8.5, \"num_experts_per_tok\": 2}");
    ck_assert_uint_eq(f.known & QB_FACT_EXPERTS, 0);
}
END_TEST

START_TEST(missing_keys_clear_bits)
{
    qb_model_facts f;
    llama(0);
    tensor("model.layers.9.mlp.up_proj.weight", 256, 64);
    f = facts("{\"model_type\": \"llama\"}");
    /* layers from the largest layer index; no expert weights: dense */
    ck_assert_uint_eq(f.known, QB_FACT_LAYERS | QB_FACT_HIDDEN | QB_FACT_VOCAB |
                                   QB_FACT_TIED_EMBEDDINGS | QB_FACT_EXPERTS);
    ck_assert_int_eq(f.n_layers, 10);
    ck_assert_int_eq(f.n_heads, 0);
    ck_assert_int_eq(f.head_dim, 0);
    ck_assert_str_eq(text(&f), "layers 10, hidden 64, vocab 128, tied no, experts 0");
    /* null states nothing either */
    f = facts("{\"num_hidden_layers\": null, \"num_attention_heads\": null}");
    ck_assert_int_eq(f.n_layers, 10);
    ck_assert_uint_eq(f.known & QB_FACT_HEADS, 0);
    /* no layer tensors and no key: unknown */
    nt = 0;
    tensor("model.embed_tokens.weight", 128, 64);
    tensor("model.layers.01.x.weight", 4, 4);  /* not a canonical index */
    tensor("model.layers.3x.y.weight", 4, 4);  /* nor this */
    tensor("model.layers.5", 4, 4);            /* no member after the index */
    f = facts("{}");
    ck_assert_uint_eq(f.known & QB_FACT_LAYERS, 0);
}
END_TEST

START_TEST(non_integers_clear_bits)
{
    qb_model_facts f;
    llama(0);
    f = facts("{\"num_hidden_layers\": \"2\", \"num_attention_heads\": 4.5,"
              " \"num_key_value_heads\": -2, \"head_dim\": true, \"intermediate_size\": 1e300}");
    /* a stated but invalid layer count is not replaced by the tensor count */
    ck_assert_uint_eq(f.known & (QB_FACT_LAYERS | QB_FACT_HEADS | QB_FACT_KV_HEADS |
                                 QB_FACT_HEAD_DIM | QB_FACT_INTERMEDIATE), 0);
    ck_assert_int_eq(f.n_layers, 0);
    ck_assert_int_eq(f.n_heads, 0);
    ck_assert_int_eq(f.n_kv_heads, 0);
    ck_assert_int_eq(f.intermediate_size, 0);
    /* an integer written as 32.0 is an integer */
    f = facts("{\"num_attention_heads\": 32.0, \"num_hidden_layers\": 9007199254740993}");
    ck_assert(f.known & QB_FACT_HEADS);
    ck_assert_int_eq(f.n_heads, 32);
    ck_assert_uint_eq(f.known & QB_FACT_LAYERS, 0);
}
END_TEST

START_TEST(unreadable_config)
{
    qb_model_facts f;
    llama(1);
    /* not strict JSON: the tensor facts stay, the config's are unknown */
    ck_assert_int_eq(qbh_model_facts_compute("m/config.json", "{\"num_hidden_layers\": 2,"
                                             " \"num_hidden_layers\": 3}", ts, nt, &f),
                     QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "m/config.json: invalid JSON at byte 25: "
                                                      "duplicate key \"num_hidden_layers\""));
    ck_assert_uint_eq(f.known, QB_FACT_HIDDEN | QB_FACT_VOCAB | QB_FACT_TIED_EMBEDDINGS);
    ck_assert_int_eq(f.n_layers, 0);
    ck_assert_int_eq(qbh_model_facts_compute("m/config.json", "[2]", ts, nt, &f), QB_E_FORMAT);
    ck_assert_str_eq(qbh_error_message(), "m/config.json: not a JSON object");
    ck_assert_uint_eq(f.known, QB_FACT_HIDDEN | QB_FACT_VOCAB | QB_FACT_TIED_EMBEDDINGS);
    ck_assert_int_eq(qbh_model_facts_compute("c", "{\"a\": NaN}", ts, nt, &f), QB_E_FORMAT);
    /* no config at all: nothing concluded from its silence */
    f = facts(NULL);
    ck_assert_uint_eq(f.known, QB_FACT_HIDDEN | QB_FACT_VOCAB | QB_FACT_TIED_EMBEDDINGS);
    ck_assert_str_eq(text(&f), "hidden 64, vocab 128, tied yes");
    nt = 0;
    f = facts(NULL);
    ck_assert_uint_eq(f.known, 0);
    ck_assert_str_eq(text(&f), "none known");
}
END_TEST

START_TEST(allocation_failures)
{
    long n;
    int ok = 0;
    llama(0);
    for (n = 0; n < 100 && !ok; n++) {
        qb_model_facts f;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_model_facts_compute("cfg", llama_cfg, ts, nt, &f);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        ok = rc == QB_OK;
        if (ok)
            ck_assert_uint_eq(f.known, QB_FACT_ALL);
    }
    ck_assert(ok);
    ck_assert_int_gt(n, 1);
}
END_TEST

START_TEST(text_is_cut_safely)
{
    qb_model_facts f;
    char small[12];
    llama(0);
    f = facts(llama_cfg);
    qbh_model_facts_text(&f, small, sizeof small);
    ck_assert_str_eq(small, "layers 2, h");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("model_facts");
    TCase *tc = tcase_create("facts");
    tcase_add_test(tc, llama_like);
    tcase_add_test(tc, tied_from_tensors_not_config);
    tcase_add_test(tc, moe_counts);
    tcase_add_test(tc, missing_keys_clear_bits);
    tcase_add_test(tc, non_integers_clear_bits);
    tcase_add_test(tc, unreadable_config);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, text_is_cut_safely);
    suite_add_tcase(s, tc);
    return s;
}
