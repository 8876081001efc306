/*
 * GGUF reader: every architecture written from known HF weights by the
 * fixture generator (with llama.cpp's forward transforms) must come back
 * under the HF names, shapes and values: exact for F32/F16/BF16/Q8_0/Q4_0
 * built from codes, and the Q4_0 integer grid equal to the codes/scales.
 */
#include "qbt_fs.h"
#include "qbt_host.h"
#include "gen_gguf.h"
#include "gguf_reader.h"
#include "ggml/ggml_types.h"
#include "qbt_fs.h"

#include <check.h>

#include "qbt_check_main.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qbt_gguf_spec base_spec(const char *arch, uint32_t wtype)
{
    qbt_gguf_spec s;
    memset(&s, 0, sizeof(s));
    s.arch = arch;
    s.n_layer = 2;
    s.n_embd = 64;
    s.n_ff = 96;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_vocab = 80;
    s.wtype = wtype;
    s.seed = 7;
    return s;
}

/* Compares every reader tensor with the reference, reading in odd row
 * chunks so row ranges are exercised. Returns the reader (caller closes). */
static gguf_reader *check_model(const qbt_gguf_spec *s, const char *path, qbt_hf_model *ref)
{
    const qb_host *h = qbt_host();
    gguf_reader *r = NULL;
    size_t i;
    qb_status st = gguf_reader_open(h, path, &r);
    ck_assert_msg(st == QB_OK, "%s: open failed: %s", s->arch, qbt_host_last_error());
    ck_assert_uint_eq(gguf_reader_count(r), ref->n);
    for (i = 0; i < gguf_reader_count(r); i++) {
        const gguf_ctensor *c = gguf_reader_tensor(r, i);
        const qbt_hf_tensor *t = qbt_hf_model_find(ref, c->name);
        int64_t rows, cols, r0;
        float *buf;
        ck_assert_msg(t != NULL, "%s: reader emitted unexpected tensor %s", s->arch, c->name);
        if (c->n_dims == 3) { /* gpt-oss fused experts: the reference is the row view */
            ck_assert_int_eq(t->n_dims, 2);
            ck_assert_int_eq(c->dims[0] * c->dims[1], t->dims[0]);
            ck_assert_int_eq(c->dims[2], t->dims[1]);
        } else {
            ck_assert_int_eq((int)c->n_dims, t->n_dims);
            ck_assert_int_eq(c->dims[0], t->dims[0]);
            if (t->n_dims == 2)
                ck_assert_int_eq(c->dims[1], t->dims[1]);
        }
        rows = t->n_dims == 2 ? t->dims[0] : 1;
        cols = t->dims[1];
        buf = malloc((size_t)(rows * cols) * sizeof(float));
        for (r0 = 0; r0 < rows; r0 += 3) {
            int64_t n = rows - r0 < 3 ? rows - r0 : 3;
            ck_assert_int_eq(gguf_reader_read_rows(r, i, r0, n, buf + r0 * cols), QB_OK);
        }
        ck_assert_msg(memcmp(buf, t->vals, (size_t)(rows * cols) * sizeof(float)) == 0, "%s: %s values differ",
                      s->arch, c->name);
        if (t->codes) {
            qb_grid_info gi = {.struct_size = sizeof(gi)};
            uint8_t *codes = malloc((size_t)(rows * cols));
            float *scales = malloc((size_t)(rows * cols / 32) * sizeof(float));
            int32_t *zeros = malloc((size_t)(rows * cols / 32) * sizeof(int32_t));
            qb_grid_rows gr = {sizeof(gr), codes, scales, zeros};
            int64_t k;
            ck_assert_int_eq(c->has_grid, 1);
            ck_assert_int_eq(gguf_reader_get_grid_info(r, i, &gi), QB_OK);
            ck_assert_int_eq(gi.bits, 4);
            ck_assert_int_eq(gi.group_size, 32);
            ck_assert_int_eq(gi.symmetric, 1);
            ck_assert_int_eq(gguf_reader_read_grid(r, i, 0, rows, &gr), QB_OK);
            ck_assert_msg(memcmp(codes, t->codes, (size_t)(rows * cols)) == 0, "%s: %s codes differ", s->arch, c->name);
            ck_assert(memcmp(scales, t->scales, (size_t)(rows * cols / 32) * sizeof(float)) == 0);
            for (k = 0; k < rows * cols / 32; k++)
                ck_assert_int_eq(zeros[k], 8);
            /* The grid promise: dense == (code - zero) * scale in float. */
            for (k = 0; k < rows * cols; k++)
                ck_assert(buf[k] == (float)((int32_t)codes[k] - 8) * scales[k / 32]);
            free(codes);
            free(scales);
            free(zeros);
        } else if (c->has_grid && c->src->type == GGUF_GGML_TYPE_Q8_0) {
            /* Q8_0 as an 8-bit grid: codes qs + 128, zero 128, the block's d */
            qb_grid_info gi = {.struct_size = sizeof(gi)};
            uint8_t *codes = malloc((size_t)(rows * cols));
            float *scales = malloc((size_t)(rows * cols / 32) * sizeof(float));
            int32_t *zeros = malloc((size_t)(rows * cols / 32) * sizeof(int32_t));
            qb_grid_rows gr = {sizeof(gr), codes, scales, zeros};
            int64_t k;
            ck_assert_int_eq(gguf_reader_get_grid_info(r, i, &gi), QB_OK);
            ck_assert_int_eq(gi.bits, 8);
            ck_assert_int_eq(gi.group_size, 32);
            ck_assert_int_eq(gi.symmetric, 1);
            ck_assert_int_eq(gguf_reader_read_grid(r, i, 0, rows, &gr), QB_OK);
            for (k = 0; k < rows * cols / 32; k++)
                ck_assert_int_eq(zeros[k], 128);
            for (k = 0; k < rows * cols; k++)
                ck_assert(buf[k] == (float)((int32_t)codes[k] - 128) * scales[k / 32]);
            free(codes);
            free(scales);
            free(zeros);
        } else {
            ck_assert_int_eq(gguf_reader_get_grid_info(r, i, &(qb_grid_info){.struct_size = sizeof(qb_grid_info)}),
                             QB_E_UNSUPPORTED);
        }
        free(buf);
    }
    /* Out-of-range reads are refused. */
    ck_assert_int_eq(gguf_reader_read_rows(r, ref->n, 0, 1, NULL), QB_E_RANGE);
    ck_assert_int_eq(gguf_reader_read_rows(r, 0, gguf_reader_tensor(r, 0)->n_rows, 1, NULL), QB_E_RANGE);
    return r;
}

static cJSON *config_of(gguf_reader *r)
{
    cJSON *c = cJSON_Parse(gguf_reader_config_json(r));
    ck_assert_ptr_nonnull(c);
    return c;
}

static double num(cJSON *c, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(c, k);
    ck_assert_msg(cJSON_IsNumber(v), "config lacks %s", k);
    return v->valuedouble;
}

static const char *str(cJSON *c, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(c, k);
    ck_assert_msg(cJSON_IsString(v), "config lacks %s", k);
    return v->valuestring;
}

/* The number text of top-level `key` in JSON text `json` (up to the next
 * ',', '}' or white space), for checks of how a value is written. */
static void number_text(const char *json, const char *key, char *out, size_t cap)
{
    char pat[128];
    const char *p;
    size_t n = 0;
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    p = strstr(json, pat);
    ck_assert_msg(p != NULL, "config text lacks %s", key);
    p += strlen(pat);
    while (*p == ' ' || *p == '\t')
        p++;
    while (p[n] && !strchr(",}\n\t ", p[n]) && n + 1 < cap) {
        out[n] = p[n];
        n++;
    }
    out[n] = '\0';
}

static gguf_reader *roundtrip(const qbt_gguf_spec *s, qbt_hf_model *ref, const char *tag)
{
    qbt_gguf *g;
    char path[1200];
    const char *dir = qbt_scratch(tag);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(qbt_gguf_build_model(s, &g, ref), 0);
    snprintf(path, sizeof(path), "%s/model.gguf", dir);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    return check_model(s, path, ref);
}

START_TEST(llama_f32_gqa_permuted)
{
    qbt_gguf_spec s = base_spec("llama", 0);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "llama");
    cJSON *c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "llama");
    ck_assert_int_eq((int)num(c, "num_key_value_heads"), 2);
    ck_assert_int_eq((int)num(c, "num_attention_heads"), 4);
    ck_assert_int_eq((int)num(c, "head_dim"), 16);
    ck_assert_int_eq((int)num(c, "vocab_size"), 80);
    ck_assert_int_eq((int)num(c, "intermediate_size"), 96);
    ck_assert_int_eq((int)num(c, "bos_token_id"), 1);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    ck_assert(num(c, "rope_theta") == 500000.0);
    /* GGUF floats are written as JSON floats even when integral:
     * transformers 5 refuses "rope_theta": 500000 for a float field. */
    {
        char t[64];
        number_text(gguf_reader_config_json(r), "rope_theta", t, sizeof(t));
        ck_assert_str_eq(t, "500000.0");
        number_text(gguf_reader_config_json(r), "vocab_size", t, sizeof(t));
        ck_assert_str_eq(t, "80");
    }
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(llama_q4_0_grid_permuted)
{
    qbt_gguf_spec s = base_spec("llama", 2);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "llamaq4");
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(mistral_sliding_window)
{
    qbt_gguf_spec s = base_spec("llama", 1);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.sliding_window = 4096;
    r = roundtrip(&s, &ref, "mistral");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "mistral");
    ck_assert_int_eq((int)num(c, "sliding_window"), 4096);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(mixtral_experts)
{
    qbt_gguf_spec s = base_spec("llama", 8);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.n_expert = 4;
    s.n_expert_used = 2;
    r = roundtrip(&s, &ref, "mixtral");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "mixtral");
    ck_assert_int_eq((int)num(c, "num_local_experts"), 4);
    ck_assert_int_eq((int)num(c, "num_experts_per_tok"), 2);
    ck_assert_ptr_nonnull(qbt_hf_model_find(&ref, "model.layers.1.block_sparse_moe.experts.3.w2.weight"));
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(qwen2_f16_bias)
{
    qbt_gguf_spec s = base_spec("qwen2", 1);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "qwen2");
    cJSON *c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "qwen2");
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(qwen3_bf16_head_dim)
{
    qbt_gguf_spec s = base_spec("qwen3", 30);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.head_dim = 32;
    r = roundtrip(&s, &ref, "qwen3");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "qwen3");
    ck_assert_int_eq((int)num(c, "head_dim"), 32);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(qwen2moe_shared_expert_q4_0)
{
    qbt_gguf_spec s = base_spec("qwen2moe", 2);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.n_ff = 0;
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.n_ff_exp = 32;
    s.n_ff_shexp = 64;
    r = roundtrip(&s, &ref, "qwen2moe");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "qwen2_moe");
    ck_assert_int_eq((int)num(c, "num_experts"), 4);
    ck_assert_int_eq((int)num(c, "moe_intermediate_size"), 32);
    ck_assert_int_eq((int)num(c, "shared_expert_intermediate_size"), 64);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(qwen3moe_f32)
{
    qbt_gguf_spec s = base_spec("qwen3moe", 0);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.n_ff = 0;
    s.n_expert = 3;
    s.n_expert_used = 2;
    s.n_ff_exp = 32;
    s.head_dim = 32;
    r = roundtrip(&s, &ref, "qwen3moe");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "qwen3_moe");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "norm_topk_prob")));
    ck_assert_int_eq((int)num(c, "moe_intermediate_size"), 32);
    ck_assert_int_eq((int)num(c, "num_experts"), 3);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(gemma_tied_norm_minus_one)
{
    qbt_gguf_spec s = base_spec("gemma", 0);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.tied = 1;
    s.head_dim = 32;
    r = roundtrip(&s, &ref, "gemma");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "gemma");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(gemma2_q4_0)
{
    qbt_gguf_spec s = base_spec("gemma2", 2);
    qbt_hf_model ref;
    gguf_reader *r;
    s.tied = 1;
    s.head_dim = 32;
    s.sliding_window = 4096;
    r = roundtrip(&s, &ref, "gemma2");
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(gemma3_f16_qk_norm)
{
    qbt_gguf_spec s = base_spec("gemma3", 1);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.head_dim = 32;
    s.sliding_window = 512;
    r = roundtrip(&s, &ref, "gemma3");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "gemma3_text");
    ck_assert_int_eq((int)num(c, "sliding_window_pattern"), 6);
    ck_assert(num(c, "rope_local_base_freq") == 10000.0);
    ck_assert_int_eq((int)num(c, "query_pre_attn_scalar"), 32);
    ck_assert_str_eq(str(c, "hidden_activation"), "gelu_pytorch_tanh");
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(phi3_fused_split_q4_0)
{
    qbt_gguf_spec s = base_spec("phi3", 2);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c;
    s.n_head_kv = 4;
    r = roundtrip(&s, &ref, "phi3");
    c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "phi3");
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(llama_qk_bias_permuted)
{
    qbt_gguf_spec s = base_spec("llama", 0);
    qbt_hf_model ref;
    gguf_reader *r;
    s.qk_bias = 1;
    r = roundtrip(&s, &ref, "llamabias");
    ck_assert_ptr_nonnull(qbt_hf_model_find(&ref, "model.layers.0.self_attn.k_proj.bias"));
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(llama3_rope_scaling)
{
    qbt_gguf_spec s = base_spec("llama", 0);
    qbt_hf_model ref;
    gguf_reader *r;
    cJSON *c, *rs;
    qbt_gguf *g;
    char path[1200];
    s.llama3_rope = 1;
    r = roundtrip(&s, &ref, "llama3");
    c = config_of(r);
    rs = cJSON_GetObjectItem(c, "rope_scaling");
    ck_assert_ptr_nonnull(rs);
    ck_assert_str_eq(str(rs, "rope_type"), "llama3");
    ck_assert(num(rs, "factor") == 8.0);
    ck_assert(num(rs, "original_max_position_embeddings") == 8192.0);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);

    /* Factors that match no known parameter set: refused, not guessed. */
    s.llama3_rope = 2;
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    snprintf(path, sizeof(path), "%s/bogus.gguf", qbt_scratch("llama3bad"));
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    r = NULL;
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "rope_freqs"));
    qbt_hf_model_free(&ref);
}
END_TEST

/* Every ggml type the fixture quantizer writes, through a permuted llama:
 * the reader's values equal ggml's decoding of the blocks it wrote (exact),
 * and the decoded weights stay near the original floats (figure printed). */
START_TEST(every_quantizable_type)
{
    uint32_t type;
    int tested = 0;
    for (type = 0; type < 64; type++) {
        qbt_gguf_spec s = base_spec("llama", type);
        qbt_hf_model ref;
        gguf_reader *r;
        size_t i;
        double se = 0, sw = 0;
        char tag[32];
        if (type == 0 || type == 1 || type == 2 || type == 8 || type == 30 || !qbt_gguf_can_quantize(type))
            continue;
        s.n_embd = 256;
        s.n_ff = 256;
        s.n_layer = 1;
        snprintf(tag, sizeof(tag), "type%u", type);
        r = roundtrip(&s, &ref, tag);
        for (i = 0; i < ref.n; i++) {
            const qbt_hf_tensor *t = &ref.t[i];
            int64_t k, n = (t->n_dims == 2 ? t->dims[0] : 1) * t->dims[1];
            if (!t->orig)
                continue;
            for (k = 0; k < n; k++) {
                se += ((double)t->vals[k] - t->orig[k]) * ((double)t->vals[k] - t->orig[k]);
                sw += (double)t->orig[k] * t->orig[k];
            }
        }
        fprintf(stderr, "gguf type %u: relative RMS error of the fixture quantization %.4f\n", type, sqrt(se / sw));
        /* Loose bound (ternary TQ1_0/TQ2_0 of Gaussian weights is coarse,
         * ~0.8); the exact check above is the reader's test. */
        ck_assert_msg(sqrt(se / sw) < (type == 34 || type == 35 ? 1.0 : 0.5), "type %u: error %.3f", type,
                      sqrt(se / sw));
        gguf_reader_close(r);
        qbt_hf_model_free(&ref);
        tested++;
    }
#ifdef QBT_GGUF_HAVE_QUANT
    ck_assert_int_gt(tested, 5);
#endif
}
END_TEST

/* QB_PLUGIN_CONCURRENT_READS: reads from several threads on one reader
 * give the same values as the reference. */
typedef struct conc_arg {
    gguf_reader *r;
    const qbt_hf_model *ref;
    int id, bad;
} conc_arg;

static void *conc_worker(void *p)
{
    conc_arg *a = p;
    size_t i;
    int pass;
    for (pass = 0; pass < 3; pass++)
        for (i = (size_t)a->id; i < gguf_reader_count(a->r); i += 2) {
            const gguf_ctensor *c = gguf_reader_tensor(a->r, i);
            const qbt_hf_tensor *t = qbt_hf_model_find(a->ref, c->name);
            float *buf = malloc((size_t)(c->n_rows * c->cols) * sizeof(float));
            if (!buf || gguf_reader_read_rows(a->r, i, 0, c->n_rows, buf) != QB_OK ||
                memcmp(buf, t->vals, (size_t)(c->n_rows * c->cols) * sizeof(float)) != 0)
                a->bad++;
            free(buf);
        }
    return NULL;
}

START_TEST(concurrent_reads)
{
    qbt_gguf_spec s = base_spec("llama", 2);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "conc");
    pthread_t th[4];
    conc_arg a[4];
    int i;
    for (i = 0; i < 4; i++) {
        a[i] = (conc_arg){r, &ref, i % 2, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, conc_worker, &a[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(a[i].bad, 0);
    }
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

/* phi3 longrope: rope_factors_long/short tensors become rope_scaling. */
START_TEST(phi3_longrope_config)
{
    qbt_gguf_spec s = base_spec("phi3", 0);
    qbt_hf_model ref;
    qbt_gguf *g;
    char path[1200];
    gguf_reader *r = NULL;
    float lf[8], sf[8];
    int64_t ne[1] = {8};
    cJSON *c, *rs, *arr;
    int i;
    s.n_head_kv = 4;
    for (i = 0; i < 8; i++) {
        lf[i] = 1.0f + (float)i;
        sf[i] = 1.0f + (float)i / 8.0f;
    }
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    qbt_gguf_add_tensor(g, "rope_factors_long.weight", 1, ne, 0, lf, sizeof(lf));
    qbt_gguf_add_tensor(g, "rope_factors_short.weight", 1, ne, 0, sf, sizeof(sf));
    qbt_gguf_kv_u32(g, "phi3.rope.scaling.original_context_length", 4096);
    snprintf(path, sizeof(path), "%s/phi3.gguf", qbt_scratch("longrope"));
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    gguf_reader_close(check_model(&s, path, &ref)); /* rope tensors are not emitted as weights */
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_OK);
    c = config_of(r);
    rs = cJSON_GetObjectItem(c, "rope_scaling");
    ck_assert_ptr_nonnull(rs);
    ck_assert_str_eq(str(rs, "type"), "longrope");
    arr = cJSON_GetObjectItem(rs, "long_factor");
    ck_assert_int_eq(cJSON_GetArraySize(arr), 8);
    ck_assert(cJSON_GetArrayItem(arr, 7)->valuedouble == 8.0);
    ck_assert(cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "short_factor"), 4)->valuedouble == 1.5);
    ck_assert_int_eq((int)num(c, "original_max_position_embeddings"), 4096);
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(fused_gate_up_experts)
{
    static const char *const archs[] = {"llama", "qwen3moe"};
    int i;
    for (i = 0; i < 2; i++) {
        qbt_gguf_spec s = base_spec(archs[i], 2);
        qbt_hf_model ref;
        gguf_reader *r;
        s.n_expert = 3;
        s.n_expert_used = 2;
        s.fuse_gate_up_exps = 1;
        if (i == 1) {
            s.n_ff = 0;
            s.n_ff_exp = 32;
        }
        r = roundtrip(&s, &ref, archs[i]);
        gguf_reader_close(r);
        qbt_hf_model_free(&ref);
    }
}
END_TEST

START_TEST(mixtral_legacy_per_expert_tensors)
{
    qbt_gguf_spec s = base_spec("llama", 2);
    qbt_hf_model ref;
    gguf_reader *r;
    s.n_expert = 3;
    s.n_expert_used = 2;
    s.legacy_experts = 1;
    r = roundtrip(&s, &ref, "mixtral-legacy");
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

/* ---- split sets ---- */

static void write_split(const char *dir, int shards, qbt_hf_model *ref)
{
    qbt_gguf_spec s = base_spec("llama", 2);
    qbt_gguf *g;
    char prefix[1200];
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, ref), 0);
    snprintf(prefix, sizeof(prefix), "%s/m", dir);
    ck_assert_int_eq(qbt_gguf_save_split(g, prefix, shards), 0);
    qbt_gguf_free(g);
}

START_TEST(split_any_shard_and_dir)
{
    qbt_gguf_spec s = base_spec("llama", 2);
    qbt_hf_model ref;
    const char *dir = qbt_scratch("split");
    char path[1300];
    gguf_reader *r;
    write_split(dir, 3, &ref);
    snprintf(path, sizeof(path), "%s/m-00002-of-00003.gguf", dir);
    r = check_model(&s, path, &ref);
    gguf_reader_close(r);
    snprintf(path, sizeof(path), "%s/m-00001-of-00003.gguf", dir);
    r = check_model(&s, path, &ref);
    gguf_reader_close(r);
    r = check_model(&s, dir, &ref);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(split_missing_shard)
{
    qbt_hf_model ref;
    const char *dir = qbt_scratch("splitmiss");
    char path[1300];
    gguf_reader *r = NULL;
    write_split(dir, 3, &ref);
    snprintf(path, sizeof(path), "%s/m-00003-of-00003.gguf", dir);
    ck_assert_int_eq(remove(path), 0);
    snprintf(path, sizeof(path), "%s/m-00001-of-00003.gguf", dir);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_NOT_FOUND);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "m-00003-of-00003.gguf"));
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(split_inconsistent_shard)
{
    qbt_hf_model ref;
    const char *dir = qbt_scratch("splitbad");
    char a[1300], b[2800];
    gguf_reader *r = NULL;
    write_split(dir, 3, &ref);
    /* Shard 3 replaced by shard 2 under its name: split.no disagrees. */
    snprintf(a, sizeof(a), "%s/m-00002-of-00003.gguf", dir);
    snprintf(b, sizeof(b), "%s/m-00003-of-00003.gguf", dir);
    qbt_copy_file(a, b, (size_t)-1);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), a, &r), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "split.no"));
    qbt_hf_model_free(&ref);
}
END_TEST

/* ---- mapping errors ---- */

START_TEST(unknown_arch_and_tensor)
{
    qbt_gguf *g = qbt_gguf_new();
    const char *dir = qbt_scratch("unk");
    char path[1200];
    float v[32] = {0};
    int64_t ne[2] = {32, 1};
    gguf_reader *r = NULL;
    snprintf(path, sizeof(path), "%s/x.gguf", dir);
    qbt_gguf_kv_str(g, "general.architecture", "bloomish");
    qbt_gguf_add_tensor(g, "token_embd.weight", 2, ne, 0, v, sizeof(v));
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "bloomish"));

    {
        qbt_gguf_spec s = base_spec("llama", 0);
        qbt_hf_model ref;
        ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
        qbt_gguf_add_tensor(g, "blk.0.attn_mystery.weight", 2, ne, 0, v, sizeof(v));
        ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
        qbt_gguf_free(g);
        qbt_hf_model_free(&ref);
        ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "blk.0.attn_mystery.weight"));
        ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), path));
    }
}
END_TEST

/* A missing layer tensor or one whose shape contradicts the metadata is
 * refused by name at open, before any writer runs. */
/* Writes spec's model with the u32 metadata `key` patched to v. */
static void write_patched(const char *arch, const char *key, uint32_t v, const char *path)
{
    qbt_gguf_spec s = base_spec(arch, 0);
    qbt_hf_model ref;
    qbt_gguf *g;
    qbt_gguf_layout lay;
    uint8_t *img;
    size_t i, kl = strlen(key);
    FILE *fp;
    s.n_layer = 3;
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    qbt_hf_model_free(&ref);
    img = qbt_gguf_serialize(g, NULL, &lay);
    qbt_gguf_free(g);
    for (i = 0; i + kl < lay.tinfo_start; i++)
        if (memcmp(img + i, key, kl) == 0)
            break;
    ck_assert_uint_lt(i + kl, lay.tinfo_start);
    memcpy(img + i + kl + 4, &v, 4); /* after the key: u32 type, then the value */
    fp = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(img, 1, lay.size, fp), lay.size);
    fclose(fp);
    free(img);
}

/* A missing layer tensor or one whose shape contradicts the metadata is
 * refused by name at open, before any writer runs. */
START_TEST(missing_or_misshaped_layer_tensor)
{
    char path[1200];
    gguf_reader *r = NULL;
    snprintf(path, sizeof(path), "%s/four.gguf", qbt_scratch("layers"));
    write_patched("qwen2", "qwen2.block_count", 4, path); /* 3 layers stored */
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model.layers.3."));
    snprintf(path, sizeof(path), "%s/kv1.gguf", qbt_scratch("layers2"));
    write_patched("qwen2", "qwen2.attention.head_count_kv", 1, path); /* k_proj holds 2 heads */
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "blk.0.attn_k.weight"));
    ck_assert_ptr_null(r);
}
END_TEST

START_TEST(unpermute_is_inverse_of_permute)
{
    /* LlamaModel.permute: GGUF_row[h*D + 2i + j] = HF_row[h*D + j*(D/2) + i]. */
    const int64_t rows = 48;
    const uint32_t heads = 3;
    int64_t d = rows / heads, h, i, j;
    for (h = 0; h < heads; h++)
        for (i = 0; i < d / 2; i++)
            for (j = 0; j < 2; j++)
                ck_assert_int_eq(gguf_unpermute_row(h * d + j * (d / 2) + i, rows, heads), h * d + 2 * i + j);
}
END_TEST

START_TEST(probe_magic)
{
    const qb_reader_vtable *vt = gguf_reader_vtable();
    uint8_t head[8 + 64] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    uint8_t other[8 + 64] = {'{', '"'};
    qb_probe_input in = {sizeof(in), "x.gguf", 0, "x.gguf", head, 8, NULL, NULL};
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_CERTAIN);
    in.head = other;
    /* Named .gguf without the magic: weak, so that the host can show the
     * reader's own diagnosis of the damaged file. */
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_WEAK);
    in.path = in.main_file = "x.json";
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_NONE);
    in.head = NULL;
    in.is_dir = 1;
    in.path = "d";
    in.main_file = NULL;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_NONE);
}
END_TEST

/* A directory is one GGUF model when its .gguf names make one (as
 * gguf_model_open picks them): one plain file, or one split set with its
 * first shard. Anything else stays weak so open() says what is wrong. */
START_TEST(probe_directory)
{
    const qb_reader_vtable *vt = gguf_reader_vtable();
    static const char *const split[] = {"README.md", "m-00001-of-00002.gguf", "m-00002-of-00002.gguf", NULL};
    static const char *const no_first[] = {"m-00002-of-00002.gguf", NULL};
    static const char *const plain[] = {"model.gguf", NULL};
    static const char *const two[] = {"a.gguf", "b.gguf", NULL};
    static const char *const none[] = {"config.json", "model.safetensors", NULL};
    static const char *const beside_st[] = {"config.json", "model.Q4_0.gguf", "model.safetensors", NULL};
    qb_probe_input in = {sizeof(in), "d", 1, NULL, NULL, 0, split, NULL};
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_LIKELY);
    in.siblings = plain;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_LIKELY);
    in.siblings = no_first;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_WEAK);
    in.siblings = two;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_WEAK);
    in.siblings = none;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_NONE);
    /* beside safetensors: possible, below a sure safetensors reader */
    in.siblings = beside_st;
    ck_assert_int_eq(vt->probe(NULL, &in), QB_PROBE_POSSIBLE);
}
END_TEST

/* deepseek2 spec: 3 blocks (1 dense), MLA widths all different so a
 * nope/rope/v or rank mix-up changes shapes, 4 routed + 1 shared expert. */
static qbt_gguf_spec ds2_spec(uint32_t wtype, int v3, int split)
{
    qbt_gguf_spec s = base_spec("deepseek2", wtype);
    s.n_layer = 3;
    s.n_head_kv = 4;
    s.n_ff = 96;
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.n_ff_exp = 32;
    s.n_dense = 1;
    s.n_shared = 1;
    s.q_lora = v3 ? 96 : 0;
    s.kv_lora = 64;
    s.qk_nope = 32;
    s.qk_rope = 32;
    s.v_head = split ? 48 : 32; /* Q8_0 rows need multiples of 32 */
    s.sigmoid = v3;
    s.split_kv_b = split;
    return s;
}

static int is_true(cJSON *c, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(c, k));
}

START_TEST(deepseek_v3_split_kv_b_f32)
{
    qbt_gguf_spec s = ds2_spec(0, 1, 1);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "ds3split");
    cJSON *c = config_of(r), *rs;
    ck_assert_str_eq(str(c, "model_type"), "deepseek_v3");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "architectures"), 0)->valuestring,
                     "DeepseekV3ForCausalLM");
    ck_assert_int_eq((int)num(c, "q_lora_rank"), s.q_lora);
    ck_assert_int_eq((int)num(c, "kv_lora_rank"), s.kv_lora);
    ck_assert_int_eq((int)num(c, "qk_nope_head_dim"), s.qk_nope);
    ck_assert_int_eq((int)num(c, "qk_rope_head_dim"), s.qk_rope);
    ck_assert_int_eq((int)num(c, "v_head_dim"), s.v_head);
    /* the file says 1 kv head (absorbed MQA view); HF has one per head */
    ck_assert_int_eq((int)num(c, "num_key_value_heads"), s.n_head);
    ck_assert_int_eq((int)num(c, "head_dim"), s.qk_rope);
    ck_assert_int_eq((int)num(c, "n_routed_experts"), s.n_expert);
    ck_assert_int_eq((int)num(c, "num_experts_per_tok"), s.n_expert_used);
    ck_assert_int_eq((int)num(c, "moe_intermediate_size"), s.n_ff_exp);
    ck_assert_int_eq((int)num(c, "intermediate_size"), s.n_ff);
    ck_assert_int_eq((int)num(c, "n_shared_experts"), s.n_shared);
    ck_assert_int_eq((int)num(c, "first_k_dense_replace"), s.n_dense);
    ck_assert(num(c, "routed_scaling_factor") == 2.5);
    ck_assert(is_true(c, "norm_topk_prob"));
    ck_assert_int_eq((int)num(c, "n_group"), 2);
    ck_assert_int_eq((int)num(c, "topk_group"), 1);
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "num_experts")); /* qwen's key, not DeepSeek's */
    rs = cJSON_GetObjectItem(c, "rope_scaling");
    ck_assert_str_eq(str(rs, "rope_type"), "yarn");
    ck_assert(num(rs, "factor") == 40.0);
    ck_assert_int_eq((int)num(rs, "original_max_position_embeddings"), 4096);
    /* HF mscale_all_dim 0.707 went in as yarn_log_multiplier 0.1 * 0.707 (f32) */
    ck_assert(fabs(num(rs, "mscale_all_dim") - 0.707) < 1e-6);
    ck_assert(num(rs, "mscale") == num(rs, "mscale_all_dim"));
    /* the router bias is present in MoE layers only */
    ck_assert_ptr_nonnull(qbt_hf_model_find(&ref, "model.layers.1.mlp.gate.e_score_correction_bias"));
    ck_assert_ptr_null(qbt_hf_model_find(&ref, "model.layers.0.mlp.gate.weight"));
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(deepseek_v3_split_kv_b_bf16_views)
{
    qbt_gguf_spec s = ds2_spec(30, 1, 1);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "ds3bf16");
    const qb_reader_vtable *vt = gguf_reader_vtable();
    size_t i, kv_b = (size_t)-1;
    int seen = 0;
    for (i = 0; i < gguf_reader_count(r); i++)
        if (strcmp(gguf_reader_tensor(r, i)->name, "model.layers.2.self_attn.kv_b_proj.weight") == 0)
            kv_b = i;
    ck_assert(kv_b != (size_t)-1);
    /* both stored halves name the one kv_b_proj they make */
    for (i = 0;; i++) {
        qb_raw_tensor_info ri = {.struct_size = sizeof(ri)};
        if (vt->get_raw_tensor_info(r, i, &ri) != QB_OK)
            break;
        if (strcmp(ri.name, "blk.2.attn_k_b.weight") == 0 || strcmp(ri.name, "blk.2.attn_v_b.weight") == 0) {
            ck_assert_int_eq(ri.canonical, (int64_t)kv_b);
            seen++;
        }
    }
    ck_assert_int_eq(seen, 2);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(deepseek_v2_kv_b_q8_0)
{
    qbt_gguf_spec s = ds2_spec(8, 0, 0);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "ds2q8");
    cJSON *c = config_of(r);
    ck_assert_str_eq(str(c, "model_type"), "deepseek_v2");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(c, "q_lora_rank")));
    ck_assert_str_eq(str(c, "topk_method"), "greedy");
    ck_assert(num(c, "routed_scaling_factor") == 16.0);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "norm_topk_prob")));
    ck_assert_int_eq((int)num(c, "v_head_dim"), s.v_head);
    ck_assert_int_eq((int)num(c, "num_key_value_heads"), s.n_head);
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "rope_scaling"));
    ck_assert_ptr_nonnull(qbt_hf_model_find(&ref, "model.layers.0.self_attn.q_proj.weight"));
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

/* Malformed deepseek2 files are refused by name: a kv_b half without its
 * partner, a routing function transformers has no class for. */
START_TEST(deepseek_refusals)
{
    const qb_host *h = qbt_host();
    const char *dir = qbt_scratch("ds2bad");
    char path[1200];
    gguf_reader *r = NULL;
    qbt_gguf_spec s = ds2_spec(0, 0, 0);
    qbt_hf_model ref;
    qbt_gguf *g;
    snprintf(path, sizeof(path), "%s/a.gguf", dir);
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    ck_assert_int_eq(qbt_gguf_kv_u32(g, "deepseek2.expert_gating_func", 3), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    ck_assert_int_eq(gguf_reader_open(h, path, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "expert_gating_func 3"));
    qbt_gguf_free(g);
    qbt_hf_model_free(&ref);
    /* softmax routing with a router bias: DeepseekV2 has no such parameter */
    s = ds2_spec(0, 1, 0);
    s.sigmoid = 2;
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    ck_assert_int_eq(gguf_reader_open(h, path, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "exp_probs_b but routing is softmax"));
    qbt_gguf_free(g);
    qbt_hf_model_free(&ref);
}
END_TEST

/* gpt-oss: 3 experts of width 32 in a 64-wide model, so a missing
 * transpose or swapped interleave changes values (shapes too for down). */
static qbt_gguf_spec oss_spec(uint32_t wtype)
{
    qbt_gguf_spec s = base_spec("gpt-oss", wtype);
    s.n_layer = 3;
    s.n_ff = 32;
    s.n_ff_exp = 32;
    s.head_dim = 16;
    s.n_expert = 3;
    s.n_expert_used = 2;
    s.sliding_window = 128;
    return s;
}

START_TEST(gpt_oss_f32_fused_experts)
{
    qbt_gguf_spec s = oss_spec(0);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "gptoss");
    cJSON *c = config_of(r), *lt, *rs;
    size_t i;
    int l;
    ck_assert_str_eq(str(c, "model_type"), "gpt_oss");
    ck_assert_int_eq((int)num(c, "num_local_experts"), 3);
    ck_assert_int_eq((int)num(c, "num_experts_per_tok"), 2);
    ck_assert_int_eq((int)num(c, "intermediate_size"), 32);
    ck_assert_int_eq((int)num(c, "head_dim"), 16);
    ck_assert_int_eq((int)num(c, "num_key_value_heads"), 2);
    ck_assert_int_eq((int)num(c, "sliding_window"), 128);
    ck_assert(num(c, "swiglu_limit") == 7.0);
    ck_assert(is_true(c, "attention_bias"));
    lt = cJSON_GetObjectItem(c, "layer_types");
    ck_assert_int_eq(cJSON_GetArraySize(lt), s.n_layer);
    for (l = 0; l < s.n_layer; l++) /* GptOssConfig: sliding when (l + 1) % 2 */
        ck_assert_str_eq(cJSON_GetArrayItem(lt, l)->valuestring, (l + 1) % 2 ? "sliding_attention" : "full_attention");
    rs = cJSON_GetObjectItem(c, "rope_scaling");
    ck_assert_str_eq(str(rs, "rope_type"), "yarn");
    ck_assert(num(rs, "factor") == 32.0);
    ck_assert_int_eq((int)num(rs, "original_max_position_embeddings"), 4096);
    /* the fused experts are 3-D [E, in, out] */
    for (i = 0; i < gguf_reader_count(r); i++) {
        const gguf_ctensor *t = gguf_reader_tensor(r, i);
        if (strcmp(t->name, "model.layers.1.mlp.experts.gate_up_proj") == 0) {
            ck_assert_int_eq(t->n_dims, 3);
            ck_assert_int_eq(t->dims[0], 3);
            ck_assert_int_eq(t->dims[1], s.n_embd);
            ck_assert_int_eq(t->dims[2], 2 * s.n_ff);
        }
        if (strcmp(t->name, "model.layers.1.mlp.experts.down_proj") == 0) {
            ck_assert_int_eq(t->dims[1], s.n_ff);
            ck_assert_int_eq(t->dims[2], s.n_embd);
        }
    }
    cJSON_Delete(c);
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

START_TEST(gpt_oss_bf16)
{
    qbt_gguf_spec s = oss_spec(30);
    qbt_hf_model ref;
    gguf_reader *r = roundtrip(&s, &ref, "gptossbf16");
    gguf_reader_close(r);
    qbt_hf_model_free(&ref);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_models");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, llama_f32_gqa_permuted);
    tcase_add_test(tc, llama_q4_0_grid_permuted);
    tcase_add_test(tc, mistral_sliding_window);
    tcase_add_test(tc, mixtral_experts);
    tcase_add_test(tc, qwen2_f16_bias);
    tcase_add_test(tc, qwen3_bf16_head_dim);
    tcase_add_test(tc, qwen2moe_shared_expert_q4_0);
    tcase_add_test(tc, qwen3moe_f32);
    tcase_add_test(tc, gemma_tied_norm_minus_one);
    tcase_add_test(tc, gemma2_q4_0);
    tcase_add_test(tc, gemma3_f16_qk_norm);
    tcase_add_test(tc, phi3_fused_split_q4_0);
    tcase_add_test(tc, llama_qk_bias_permuted);
    tcase_add_test(tc, llama3_rope_scaling);
    tcase_add_test(tc, every_quantizable_type);
    tcase_add_test(tc, concurrent_reads);
    tcase_add_test(tc, fused_gate_up_experts);
    tcase_add_test(tc, mixtral_legacy_per_expert_tensors);
    tcase_add_test(tc, phi3_longrope_config);
    tcase_add_test(tc, split_any_shard_and_dir);
    tcase_add_test(tc, split_missing_shard);
    tcase_add_test(tc, split_inconsistent_shard);
    tcase_add_test(tc, unknown_arch_and_tensor);
    tcase_add_test(tc, missing_or_misshaped_layer_tensor);
    tcase_add_test(tc, unpermute_is_inverse_of_permute);
    tcase_add_test(tc, probe_magic);
    tcase_add_test(tc, probe_directory);
    tcase_add_test(tc, deepseek_v3_split_kv_b_f32);
    tcase_add_test(tc, deepseek_v3_split_kv_b_bf16_views);
    tcase_add_test(tc, deepseek_v2_kv_b_q8_0);
    tcase_add_test(tc, deepseek_refusals);
    tcase_add_test(tc, gpt_oss_f32_fused_experts);
    tcase_add_test(tc, gpt_oss_bf16);
    suite_add_tcase(s, tc);
    return s;
}
