/*
 * qb-bench-gen-dsv3: writes a synthetic DeepSeek-V3 FP8 checkpoint with the
 * real 671B tensor shapes but a chosen number of decoder layers and routed
 * experts per MoE layer, for the conversion memory benchmark
 * (bench/deepseek-v3/run.sh). Streaming: the tensor list is planned first
 * (names and sizes only), then each shard is written tensor by tensor
 * through one 1 MiB buffer, so a 20 GB checkpoint needs a few MB.
 *
 * usage: qb-bench-gen-dsv3 [--tiny] [--shard-mb MB] [--plan] LAYERS EXPERTS OUTDIR
 *   LAYERS   decoder layers; the first min(3, LAYERS) are dense
 *            (first_k_dense_replace), the others MoE
 *   EXPERTS  routed experts per MoE layer (the real model has 256), plus
 *            one shared expert
 *   --tiny   small dimensions with the same structure (and partial
 *            128-blocks), for the ctest smoke
 *   --shard-mb  shard size limit (default 5000 MB: the real checkpoint's
 *            163 shards are ~4.3 GB)
 *   --plan   print the line below and write nothing (disk checks)
 * Prints "stored N canonical M weights W bytes B": stored safetensors
 * tensors, tensors an FP8 reader presents (scales folded into their
 * weights), logical weights, data bytes.
 *
 * Layout (docs/formats/fp8.md; names and shapes as the published
 * DeepSeek-V3 checkpoint's model.safetensors.index.json):
 *   FP8 E4M3 linears <m>.weight [N, K] with <m>.weight_scale_inv F32
 *   [ceil(N/128), ceil(K/128)]: self_attn.{q_a_proj, q_b_proj,
 *   kv_a_proj_with_mqa, kv_b_proj, o_proj}, mlp.{gate,up,down}_proj (dense
 *   layers), mlp.experts.E.{gate,up,down}_proj, mlp.shared_experts.*;
 *   BF16: embed_tokens, lm_head, every norm, mlp.gate.weight (router);
 *   F32: mlp.gate.e_score_correction_bias.
 * No multi-token-prediction layer is written (num_nextn_predict_layers 0).
 * Values: per tensor a splitmix64 stream seeded from the tensor's name;
 * FP8 bytes and BF16 weights come from 65536-entry tables indexed by 16
 * random bits (cheap: 4 elements per draw). FP8 bytes follow a bell-shaped
 * distribution (|v| <= 448 like a quantizer's absmax / 448 blocks), block
 * scales ~2e-4 (weights ~0.01), norms ~1, BF16 weights ~0.02: finite and
 * in a real model's range.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <quantbridge/qb_half.h>

#include "qbk_fp8_decode.h"

typedef struct dims {
    int64_t hidden, heads, q_lora, kv_lora, qk_nope, qk_rope, v_head, inter, moe_inter, vocab;
} dims;

/* deepseek-ai/DeepSeek-V3 config.json */
static const dims g_full = {7168, 128, 1536, 512, 128, 64, 128, 18432, 2048, 129280};
/* Same structure, a few hundred KB: every FP8 matrix has a partial
 * 128-block in at least one direction. */
static const dims g_tiny = {320, 2, 192, 128, 32, 16, 32, 448, 160, 1000};

enum fill { F_FP8, F_SCALE, F_BF16_W, F_BF16_NORM, F_F32_BIAS };

typedef struct tspec {
    char name[128];
    const char *dtype;
    int n_dims;
    int64_t d[2];
    uint64_t bytes, off; /* off: within its shard's data */
    enum fill fill;
    int shard;
} tspec;

static tspec *g_t;
static size_t g_n, g_cap;
static uint64_t g_weights;   /* logical weights (scales not counted) */
static size_t g_canonical;   /* tensors without the scales */

static void die(const char *what)
{
    fprintf(stderr, "qb-bench-gen-dsv3: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void add(const char *name, const char *dtype, int n_dims, int64_t d0, int64_t d1,
                enum fill fill)
{
    tspec *t;
    uint64_t n = (uint64_t)d0 * (uint64_t)(n_dims == 2 ? d1 : 1);
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 512;
        g_t = realloc(g_t, g_cap * sizeof(*g_t));
        if (!g_t)
            die("realloc");
    }
    t = &g_t[g_n++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->d[0] = d0;
    t->d[1] = d1;
    t->fill = fill;
    t->bytes = n * (fill == F_FP8 ? 1 : fill == F_SCALE || fill == F_F32_BIAS ? 4 : 2);
    if (fill != F_SCALE) {
        g_canonical++;
        g_weights += n;
    }
}

/* One FP8 linear: weight [n, k] and its 128x128 block scale. */
static void add_fp8(const char *module, int64_t n, int64_t k)
{
    char nm[128];
    snprintf(nm, sizeof(nm), "%s.weight", module);
    add(nm, "F8_E4M3", 2, n, k, F_FP8);
    snprintf(nm, sizeof(nm), "%s.weight_scale_inv", module);
    add(nm, "F32", 2, (n + 127) / 128, (k + 127) / 128, F_SCALE);
}

static void plan(const dims *s, int layers, int experts)
{
    char p[32], m[96];
    int l, e;
    static const char *const mlp[3] = {"gate_proj", "up_proj", "down_proj"};
    add("model.embed_tokens.weight", "BF16", 2, s->vocab, s->hidden, F_BF16_W);
    for (l = 0; l < layers; l++) {
        int k;
        snprintf(p, sizeof(p), "model.layers.%d", l);
        snprintf(m, sizeof(m), "%s.input_layernorm.weight", p);
        add(m, "BF16", 1, s->hidden, 0, F_BF16_NORM);
        snprintf(m, sizeof(m), "%s.post_attention_layernorm.weight", p);
        add(m, "BF16", 1, s->hidden, 0, F_BF16_NORM);
        /* MLA (DeepseekV3Attention): q through a rank-q_lora bottleneck,
         * kv_a gives the latent plus the shared rope key */
        snprintf(m, sizeof(m), "%s.self_attn.q_a_proj", p);
        add_fp8(m, s->q_lora, s->hidden);
        snprintf(m, sizeof(m), "%s.self_attn.q_a_layernorm.weight", p);
        add(m, "BF16", 1, s->q_lora, 0, F_BF16_NORM);
        snprintf(m, sizeof(m), "%s.self_attn.q_b_proj", p);
        add_fp8(m, s->heads * (s->qk_nope + s->qk_rope), s->q_lora);
        snprintf(m, sizeof(m), "%s.self_attn.kv_a_proj_with_mqa", p);
        add_fp8(m, s->kv_lora + s->qk_rope, s->hidden);
        snprintf(m, sizeof(m), "%s.self_attn.kv_a_layernorm.weight", p);
        add(m, "BF16", 1, s->kv_lora, 0, F_BF16_NORM);
        snprintf(m, sizeof(m), "%s.self_attn.kv_b_proj", p);
        add_fp8(m, s->heads * (s->qk_nope + s->v_head), s->kv_lora);
        snprintf(m, sizeof(m), "%s.self_attn.o_proj", p);
        add_fp8(m, s->hidden, s->heads * s->v_head);
        if (l < 3) { /* first_k_dense_replace = 3 */
            for (k = 0; k < 3; k++) {
                snprintf(m, sizeof(m), "%s.mlp.%s", p, mlp[k]);
                add_fp8(m, k == 2 ? s->hidden : s->inter, k == 2 ? s->inter : s->hidden);
            }
            continue;
        }
        snprintf(m, sizeof(m), "%s.mlp.gate.weight", p);
        add(m, "BF16", 2, experts, s->hidden, F_BF16_W);
        snprintf(m, sizeof(m), "%s.mlp.gate.e_score_correction_bias", p);
        add(m, "F32", 1, experts, 0, F_F32_BIAS);
        for (e = 0; e <= experts; e++)
            for (k = 0; k < 3; k++) {
                if (e < experts)
                    snprintf(m, sizeof(m), "%s.mlp.experts.%d.%s", p, e, mlp[k]);
                else
                    snprintf(m, sizeof(m), "%s.mlp.shared_experts.%s", p, mlp[k]);
                add_fp8(m, k == 2 ? s->hidden : s->moe_inter, k == 2 ? s->moe_inter : s->hidden);
            }
    }
    add("model.norm.weight", "BF16", 1, s->hidden, 0, F_BF16_NORM);
    add("lm_head.weight", "BF16", 2, s->vocab, s->hidden, F_BF16_W);
}

/* ---- values ------------------------------------------------------------------ */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_unit(rng *r)
{
    return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* Bell-shaped, unit variance: the sum of 4 uniforms scaled. */
static float rng_normal(rng *r)
{
    float s = 0;
    int i;
    for (i = 0; i < 4; i++)
        s += rng_unit(r);
    return (s - 2.0f) * 1.732f;
}

static uint64_t name_seed(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* 65536 FP8 E4M3 bytes drawn once from N(0, 100^2) clamped to +-448 and
 * rounded to the nearest representable value: a 16-bit random index then
 * gives a realistic byte (most blocks' absmax near 448, no NaN) at the
 * cost of a table load. */
static uint8_t g_fp8_lut[65536];
/* Same idea for BF16 weights, N(0, 0.02^2): the embedding and lm_head are
 * 1.85 G elements each at the real shape. */
static uint16_t g_bf16_lut[65536];

static void build_fp8_lut(void)
{
    float val[256];
    rng r = {0x5eed};
    int b, i;
    for (b = 0; b < 256; b++)
        val[b] = qbk_fp8_e4m3fn_to_f32((uint8_t)b);
    for (i = 0; i < 65536; i++) {
        float x = 100.0f * rng_normal(&r), best = INFINITY;
        int bi = 0;
        if (x > 448.0f)
            x = 448.0f;
        if (x < -448.0f)
            x = -448.0f;
        for (b = 0; b < 256; b++)
            if (val[b] == val[b] && fabsf(val[b] - x) < best) {
                best = fabsf(val[b] - x);
                bi = b;
            }
        g_fp8_lut[i] = (uint8_t)bi;
        g_bf16_lut[i] = qb_f32_to_bf16(0.02f * rng_normal(&r));
    }
}

#define CHUNK (1u << 20)

static void emit(FILE *f, const tspec *t)
{
    static uint8_t buf[CHUNK];
    uint64_t left = t->bytes;
    rng r = {name_seed(t->name)};
    while (left) {
        size_t n = left < CHUNK ? (size_t)left : CHUNK, i;
        switch (t->fill) {
        case F_FP8:
            for (i = 0; i + 4 <= n; i += 4) {
                uint64_t x = rng_next(&r);
                buf[i] = g_fp8_lut[x & 0xffff];
                buf[i + 1] = g_fp8_lut[(x >> 16) & 0xffff];
                buf[i + 2] = g_fp8_lut[(x >> 32) & 0xffff];
                buf[i + 3] = g_fp8_lut[x >> 48];
            }
            for (; i < n; i++)
                buf[i] = g_fp8_lut[rng_next(&r) & 0xffff];
            break;
        case F_SCALE:
        case F_F32_BIAS:
            for (i = 0; i + 4 <= n; i += 4) {
                float v = t->fill == F_SCALE ? 2e-4f * (0.5f + rng_unit(&r)) : 0.01f * rng_normal(&r);
                memcpy(buf + i, &v, 4);
            }
            break;
        case F_BF16_W:
            for (i = 0; i + 8 <= n; i += 8) {
                uint64_t x = rng_next(&r);
                uint16_t h[4] = {g_bf16_lut[x & 0xffff], g_bf16_lut[(x >> 16) & 0xffff],
                                 g_bf16_lut[(x >> 32) & 0xffff], g_bf16_lut[x >> 48]};
                memcpy(buf + i, h, 8);
            }
            for (; i + 2 <= n; i += 2)
                memcpy(buf + i, &g_bf16_lut[rng_next(&r) & 0xffff], 2);
            break;
        case F_BF16_NORM:
            for (i = 0; i + 2 <= n; i += 2) {
                uint16_t h = qb_f32_to_bf16(1.0f + 0.05f * rng_normal(&r));
                memcpy(buf + i, &h, 2);
            }
            break;
        }
        if (fwrite(buf, 1, n, f) != n)
            die(t->name);
        left -= n;
    }
}

/* ---- files --------------------------------------------------------------------- */
static void shard_name(char *out, size_t cap, int i, int n)
{
    snprintf(out, cap, "model-%05d-of-%05d.safetensors", i + 1, n);
}

static void write_shard(const char *dir, int shard, int n_shards, size_t t0, size_t t1)
{
    size_t cap = 64 + (t1 - t0) * 224, len = 0, i;
    char *h = malloc(cap), fn[64], path[4096];
    uint64_t hl;
    FILE *f;
    if (!h)
        die("malloc");
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = t0; i < t1; i++) {
        const tspec *t = &g_t[i];
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRId64, t->name,
                                t->dtype, t->d[0]);
        if (t->n_dims == 2)
            len += (size_t)snprintf(h + len, cap - len, ",%" PRId64, t->d[1]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", t->off,
                                t->off + t->bytes);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8)
        h[len++] = ' ';
    shard_name(fn, sizeof(fn), shard, n_shards);
    snprintf(path, sizeof(path), "%s/%s", dir, fn);
    f = fopen(path, "wb");
    if (!f)
        die(path);
    hl = len; /* little-endian host assumed (x86-64/aarch64) */
    if (fwrite(&hl, 8, 1, f) != 1 || fwrite(h, 1, len, f) != len)
        die(path);
    for (i = t0; i < t1; i++)
        emit(f, &g_t[i]);
    if (fclose(f))
        die(path);
    free(h);
}

static void write_config(const char *dir, const dims *s, int layers, int experts)
{
    char path[4096];
    FILE *f;
    /* n_group must divide the expert count (noaux_tc group routing) */
    int n_group = experts % 8 == 0 ? 8 : 1;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "w");
    if (!f)
        die(path);
    fprintf(f,
            "{\"architectures\":[\"DeepseekV3ForCausalLM\"],\"model_type\":\"deepseek_v3\","
            "\"vocab_size\":%" PRId64 ",\"hidden_size\":%" PRId64 ",\"intermediate_size\":%" PRId64 ","
            "\"moe_intermediate_size\":%" PRId64 ",\"num_hidden_layers\":%d,\"num_nextn_predict_layers\":0,"
            "\"num_attention_heads\":%" PRId64 ",\"num_key_value_heads\":%" PRId64 ",\"n_shared_experts\":1,"
            "\"n_routed_experts\":%d,\"routed_scaling_factor\":2.5,\"kv_lora_rank\":%" PRId64 ","
            "\"q_lora_rank\":%" PRId64 ",\"qk_rope_head_dim\":%" PRId64 ",\"v_head_dim\":%" PRId64 ","
            "\"qk_nope_head_dim\":%" PRId64 ",\"topk_method\":\"noaux_tc\",\"n_group\":%d,\"topk_group\":%d,"
            "\"num_experts_per_tok\":%d,\"moe_layer_freq\":1,\"first_k_dense_replace\":3,"
            "\"norm_topk_prob\":true,\"scoring_func\":\"sigmoid\",\"hidden_act\":\"silu\","
            "\"max_position_embeddings\":163840,\"rms_norm_eps\":1e-06,\"rope_theta\":10000,"
            "\"rope_scaling\":{\"beta_fast\":32,\"beta_slow\":1,\"factor\":40,\"mscale\":1.0,"
            "\"mscale_all_dim\":1.0,\"original_max_position_embeddings\":4096,\"type\":\"yarn\"},"
            "\"attention_bias\":false,\"attention_dropout\":0.0,\"tie_word_embeddings\":false,"
            "\"bos_token_id\":0,\"eos_token_id\":1,\"torch_dtype\":\"bfloat16\","
            "\"quantization_config\":{\"activation_scheme\":\"dynamic\",\"fmt\":\"e4m3\","
            "\"quant_method\":\"fp8\",\"weight_block_size\":[128,128]}}\n",
            s->vocab, s->hidden, s->inter, s->moe_inter, layers, s->heads, s->heads, experts, s->kv_lora,
            s->q_lora, s->qk_rope, s->v_head, s->qk_nope, n_group, n_group >= 4 ? 4 : 1,
            experts < 8 ? experts : 8);
    if (fclose(f))
        die(path);
}

int main(int argc, char **argv)
{
    const dims *s = &g_full;
    uint64_t shard_limit = 5000ull * 1000 * 1000, cur = 0, total = 0;
    int a = 1, layers, experts, n_shards = 0, plan_only = 0;
    size_t i, t0;
    char path[4096], fn[64];
    FILE *f;

    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "--tiny"))
            s = &g_tiny;
        else if (!strcmp(argv[a], "--plan"))
            plan_only = 1;
        else if (!strcmp(argv[a], "--shard-mb") && a + 1 < argc)
            shard_limit = strtoull(argv[++a], NULL, 10) * 1000 * 1000;
        else
            break;
    }
    if (argc - a != 3 || (layers = atoi(argv[a])) < 1 || (experts = atoi(argv[a + 1])) < 1 ||
        shard_limit == 0) {
        fprintf(stderr, "usage: qb-bench-gen-dsv3 [--tiny] [--shard-mb MB] [--plan] LAYERS EXPERTS OUTDIR\n");
        return 2;
    }
    if (!plan_only && mkdir(argv[a + 2], 0777) != 0 && errno != EEXIST)
        die(argv[a + 2]);
    plan(s, layers, experts);
    /* shards: a new one when the next tensor would pass the limit */
    for (i = 0; i < g_n; i++) {
        if (cur && cur + g_t[i].bytes > shard_limit) {
            n_shards++;
            cur = 0;
        }
        g_t[i].shard = n_shards;
        g_t[i].off = cur;
        cur += g_t[i].bytes;
        total += g_t[i].bytes;
    }
    n_shards++;
    if (plan_only)
        goto done;
    build_fp8_lut();
    for (i = 0, t0 = 0; i <= g_n; i++)
        if (i == g_n || g_t[i].shard != g_t[t0].shard) {
            write_shard(argv[a + 2], g_t[t0].shard, n_shards, t0, i);
            t0 = i;
        }
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", argv[a + 2]);
    f = fopen(path, "w");
    if (!f)
        die(path);
    fprintf(f, "{\"metadata\":{\"total_size\":%" PRIu64 "},\"weight_map\":{", total);
    for (i = 0; i < g_n; i++) {
        shard_name(fn, sizeof(fn), g_t[i].shard, n_shards);
        fprintf(f, "%s\n\"%s\":\"%s\"", i ? "," : "", g_t[i].name, fn);
    }
    fprintf(f, "}}\n");
    if (fclose(f))
        die(path);
    write_config(argv[a + 2], s, layers, experts);
done:
    printf("stored %zu canonical %zu weights %" PRIu64 " bytes %" PRIu64 "\n", g_n, g_canonical, g_weights,
           total);
    free(g_t);
    return 0;
}
