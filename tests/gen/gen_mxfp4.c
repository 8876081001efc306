/*
 * Test fixtures: gpt-oss MXFP4 checkpoints (see gen_mxfp4.h).
 *
 * Layout mirrored from upstream (facts in docs/formats/mxfp4.md):
 *   - transformers models/gpt_oss/modeling_gpt_oss.py: GptOssAttention
 *     (q/k/v/o_proj with biases, `sinks` [num_attention_heads]),
 *     GptOssTopKRouter (`mlp.router.weight` [E, hidden], `.bias` [E]),
 *     GptOssExperts (gate_up_proj_bias [E, 2I], down_proj_bias [E, hidden]);
 *   - transformers integrations/mxfp4.py (Mxfp4GptOssExperts, the
 *     quantizer's serialized_names, _convert_moe_packed_tensors):
 *     `gate_up_proj_blocks` [E, 2I, hidden/32, 16], `gate_up_proj_scales`
 *     [E, 2I, hidden/32], `down_proj_blocks` [E, hidden, I/32, 16],
 *     `down_proj_scales` [E, hidden, I/32];
 *   - openai/gpt-oss-20b config.json: quantization_config {"quant_method":
 *     "mxfp4", "modules_to_not_convert": [self_attn, router, embed_tokens,
 *     lm_head]}.
 * Blocks are uniformly random bytes (every nibble is a valid E2M1); scales
 * lie in [119, 126] (2^-8 .. 2^-1), like trained weights.
 * Built with QBT_GEN_NO_MAIN as a library; with main() as qb-gen-mxfp4.
 */
#define _XOPEN_SOURCE 700
#include "gen_mxfp4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbt_st_writer.h"

void qbt_mx_spec_defaults(qbt_mx_spec *s)
{
    if (!s->layers) s->layers = 2;
    if (!s->hidden) s->hidden = 64;
    if (!s->inter) s->inter = 96;
    if (!s->experts) s->experts = 4;
    if (!s->heads) s->heads = 4;
    if (!s->kv_heads) s->kv_heads = 2;
    if (!s->head_dim) s->head_dim = 16;
    if (!s->vocab) s->vocab = 128;
    if (!s->seed) s->seed = 7;
}

/* float32 -> BF16 bits, round to nearest even (finite inputs only) */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* A BF16 tensor of n normal values * sd (+ mean). */
static int add_bf16(qbt_st_writer *w, qbt_rng *r, const char *name, int nd, const int64_t *dims,
                    double mean, double sd)
{
    size_t n = 1, i;
    uint16_t *v;
    int rc;
    for (i = 0; i < (size_t)nd; i++)
        n *= (size_t)dims[i];
    v = malloc(n * 2 + 2);
    if (!v)
        return -1;
    for (i = 0; i < n; i++)
        v[i] = to_bf16((float)(mean + sd * qbt_rng_normal(r)));
    rc = qbt_st_writer_add(w, name, "BF16", nd, dims, v, n * 2);
    free(v);
    return rc;
}

/* `<p>_blocks`, `<p>_scales` and `<p>_bias` of one expert projection with R
 * output rows and K inputs; `bad` breaks it as gen_mxfp4.h says. */
static int add_experts(qbt_st_writer *w, qbt_rng *r, const char *p, int64_t E, int64_t R,
                       int64_t K, qbt_mx_bad bad)
{
    char name[192];
    int64_t G = K / 32, bb = bad == QBT_MX_BAD_BLOCK_BYTES ? 8 : 16;
    int64_t bd[4] = {E, R, G, bb}, sd[3] = {E, R, bad == QBT_MX_BAD_SCALES_SHAPE ? G - 1 : G};
    int64_t bias_d[2] = {E, R};
    size_t nb = (size_t)(E * R * G * bb), ns = (size_t)(sd[0] * sd[1] * sd[2]), i;
    uint8_t *b = malloc(nb), *s = malloc(ns ? ns : 1);
    int rc = -1;

    if (!b || !s)
        goto out;
    for (i = 0; i < nb; i++)
        b[i] = (uint8_t)(qbt_rng_u64(r) >> 56);
    for (i = 0; i < ns; i++)
        s[i] = (uint8_t)(119 + qbt_rng_u64(r) % 8);
    if (bad == QBT_MX_BAD_E8M0)
        s[ns / 2] = 255;
    snprintf(name, sizeof(name), "%s_blocks", p);
    if (qbt_st_writer_add(w, name, "U8", 4, bd, b, nb) != 0)
        goto out;
    snprintf(name, sizeof(name), "%s_scales", p);
    if (qbt_st_writer_add(w, name, "U8", 3, sd, s, ns) != 0)
        goto out;
    snprintf(name, sizeof(name), "%s_bias", p);
    rc = bad == QBT_MX_NO_BIAS ? 0 : add_bf16(w, r, name, 2, bias_d, 0.0, 0.02);
out:
    free(b);
    free(s);
    return rc;
}

static int write_config(const char *dir, const qbt_mx_spec *s)
{
    char path[1024], *txt, *p;
    size_t cap = 4096 + (size_t)s->layers * 32;
    int l, rc;

    txt = malloc(cap);
    if (!txt)
        return -1;
    p = txt;
    p += snprintf(p, cap, "{\n  \"architectures\": [\"GptOssForCausalLM\"],\n"
                  "  \"model_type\": \"gpt_oss\",\n  \"hidden_size\": %d,\n"
                  "  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                  "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n"
                  "  \"head_dim\": %d,\n  \"num_local_experts\": %d,\n"
                  "  \"num_experts_per_tok\": 2,\n  \"experts_per_token\": 2,\n"
                  "  \"vocab_size\": %d,\n  \"rms_norm_eps\": 1e-05,\n"
                  "  \"rope_theta\": 150000,\n  \"sliding_window\": 128,\n"
                  "  \"max_position_embeddings\": 4096,\n  \"swiglu_limit\": 7.0,\n"
                  "  \"attention_bias\": true,\n  \"hidden_act\": \"silu\",\n"
                  "  \"tie_word_embeddings\": false,\n  \"torch_dtype\": \"bfloat16\",\n"
                  "  \"layer_types\": [",
                  s->hidden, s->inter, s->layers, s->heads, s->kv_heads, s->head_dim,
                  s->experts, s->vocab);
    for (l = 0; l < s->layers; l++)
        p += sprintf(p, "%s\"%s\"", l ? ", " : "", l % 2 ? "full_attention" : "sliding_attention");
    p += sprintf(p, "],\n  \"quantization_config\": {\"quant_method\": \"mxfp4\", "
                 "\"modules_to_not_convert\": [\"model.layers.*.self_attn\", "
                 "\"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"]}\n}\n");
    snprintf(path, sizeof(path), "%s/config.json", dir);
    rc = qbt_write_text(path, txt);
    free(txt);
    return rc;
}

int qbt_mx_write(const char *dir, const qbt_mx_spec *spec)
{
    qbt_mx_spec s = *spec;
    qbt_st_writer *w;
    qbt_rng r;
    char path[1024], name[192];
    int64_t H, I, E, Q, KV, d1[1], d2[2];
    int l, rc = -1;

    qbt_mx_spec_defaults(&s);
    if (s.hidden % 32 || s.inter % 32) {
        fprintf(stderr, "qbt_mx_write: hidden and intermediate must be multiples of 32\n");
        return -1;
    }
    r.s = s.seed;
    H = s.hidden;
    I = s.inter;
    E = s.experts;
    Q = (int64_t)s.heads * s.head_dim;
    KV = (int64_t)s.kv_heads * s.head_dim;
    mkdir(dir, 0755);
    w = qbt_st_writer_new();
    if (!w)
        return -1;
    d2[0] = s.vocab;
    d2[1] = H;
    if (add_bf16(w, &r, "model.embed_tokens.weight", 2, d2, 0.0, 0.02) != 0)
        goto out;
    for (l = 0; l < s.layers; l++) {
        static const char *const qkv[] = {"q", "k", "v"};
        char pre[64];
        int i;
        snprintf(pre, sizeof(pre), "model.layers.%d.", l);
#define NM(sfx) (snprintf(name, sizeof(name), "%s%s", pre, sfx), name)
        d1[0] = H;
        if (add_bf16(w, &r, NM("input_layernorm.weight"), 1, d1, 1.0, 0.1) != 0 ||
            add_bf16(w, &r, NM("post_attention_layernorm.weight"), 1, d1, 1.0, 0.1) != 0)
            goto out;
        for (i = 0; i < 3; i++) {
            char m[64];
            d2[0] = i == 0 ? Q : KV;
            d2[1] = H;
            d1[0] = d2[0];
            snprintf(m, sizeof(m), "self_attn.%s_proj.weight", qkv[i]);
            if (add_bf16(w, &r, NM(m), 2, d2, 0.0, 0.02) != 0)
                goto out;
            snprintf(m, sizeof(m), "self_attn.%s_proj.bias", qkv[i]);
            if (add_bf16(w, &r, NM(m), 1, d1, 0.0, 0.02) != 0)
                goto out;
        }
        d2[0] = H;
        d2[1] = Q;
        d1[0] = H;
        if (add_bf16(w, &r, NM("self_attn.o_proj.weight"), 2, d2, 0.0, 0.02) != 0 ||
            add_bf16(w, &r, NM("self_attn.o_proj.bias"), 1, d1, 0.0, 0.02) != 0)
            goto out;
        d1[0] = s.heads;
        if (add_bf16(w, &r, NM("self_attn.sinks"), 1, d1, 0.0, 1.0) != 0)
            goto out;
        d2[0] = E;
        d2[1] = H;
        d1[0] = E;
        if (add_bf16(w, &r, NM("mlp.router.weight"), 2, d2, 0.0, 0.02) != 0 ||
            add_bf16(w, &r, NM("mlp.router.bias"), 1, d1, 0.0, 0.02) != 0)
            goto out;
        if (add_experts(w, &r, NM("mlp.experts.gate_up_proj"), E, 2 * I, H,
                        l == 0 ? s.bad : QBT_MX_OK) != 0 ||
            add_experts(w, &r, NM("mlp.experts.down_proj"), E, H, I, QBT_MX_OK) != 0)
            goto out;
#undef NM
    }
    d1[0] = H;
    if (add_bf16(w, &r, "model.norm.weight", 1, d1, 1.0, 0.1) != 0)
        goto out;
    d2[0] = s.vocab;
    d2[1] = H;
    if (add_bf16(w, &r, "lm_head.weight", 2, d2, 0.0, 0.02) != 0)
        goto out;
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    if (qbt_st_writer_save(w, path) != 0 || write_config(dir, &s) != 0)
        goto out;
    rc = 0;
out:
    qbt_st_writer_free(w);
    return rc;
}

#ifndef QBT_GEN_NO_MAIN
int main(int argc, char **argv)
{
    qbt_mx_spec s;
    int i;
    memset(&s, 0, sizeof(s));
    if (argc < 2) {
        fprintf(stderr, "usage: qb-gen-mxfp4 OUTDIR [--layers N] [--hidden N] [--intermediate N] "
                "[--experts N] [--vocab N] [--seed N] [--bad scales-shape|e8m0-255|block-bytes|no-bias]\n");
        return 2;
    }
    for (i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--layers")) s.layers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--hidden")) s.hidden = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--intermediate")) s.inter = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--experts")) s.experts = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--vocab")) s.vocab = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) s.seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--bad"))
            s.bad = !strcmp(argv[i + 1], "scales-shape") ? QBT_MX_BAD_SCALES_SHAPE
                    : !strcmp(argv[i + 1], "e8m0-255")   ? QBT_MX_BAD_E8M0
                    : !strcmp(argv[i + 1], "block-bytes") ? QBT_MX_BAD_BLOCK_BYTES
                    : !strcmp(argv[i + 1], "no-bias")     ? QBT_MX_NO_BIAS
                                                          : (qbt_mx_bad)-1;
        else {
            fprintf(stderr, "qb-gen-mxfp4: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if ((int)s.bad < 0 || i != argc) {
        fprintf(stderr, "qb-gen-mxfp4: bad arguments\n");
        return 2;
    }
    return qbt_mx_write(argv[1], &s) == 0 ? 0 : 1;
}
#endif
