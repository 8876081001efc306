/*
 * qb-bench-gen: writes synthetic checkpoints with real model shapes for the
 * conversion benchmark (bench/convert/run.sh), streaming, so generating a
 * 14 GB checkpoint needs a few MB of memory.
 *
 * usage: qb-bench-gen KIND SHAPE OUTDIR
 *   KIND  gptq-sym | gptq-asym-act | awq-gemm | gguf-q4km | gguf-q4_0 | bf16
 *   SHAPE llama2-7b | qwen25-3b | llama2-7b-2l | qwen25-3b-2l   (-2l: 2 layers, to show scaling)
 *
 * Values are valid for their format (finite positive fp16 scales, codes in
 * range, a real act-order g_idx) but random: the benchmark measures speed
 * and memory; correctness lives in the tests. Layouts follow
 * docs/formats/gptq.md, docs/formats/awq.md, docs/formats/gguf.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <quantbridge/qb_half.h>

typedef struct shape {
    const char *name;
    int layers, hidden, inter, vocab, heads, kv_heads;
    const char *arch;
    int tied;
} shape;

static const shape g_shapes[] = {
    {"llama2-7b", 32, 4096, 11008, 32000, 32, 32, "llama", 0},
    {"llama2-7b-2l", 2, 4096, 11008, 32000, 32, 32, "llama", 0},
    {"qwen25-3b", 36, 2048, 11008, 151936, 16, 2, "qwen2", 1},
    {"qwen25-3b-2l", 2, 2048, 11008, 151936, 16, 2, "qwen2", 1},
};

static uint64_t g_rng = 0x1234567;
static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_normal(void)
{
    /* sum of 4 uniforms: cheap, bell-shaped enough for timing data */
    float s = 0;
    int i;
    for (i = 0; i < 4; i++)
        s += (float)(rng_next() >> 40) * (1.0f / 16777216.0f);
    return (s - 2.0f) * 1.7f;
}

/* ---- data kinds ------------------------------------------------------------ */
enum fill {
    F_RAND,        /* random bytes (packed codes) */
    F_ZEROS_SYM,   /* GPTQ v1 symmetric 4-bit zeros: stored 7 in every nibble */
    F_F16_SCALE,   /* fp16 in [0.002, 0.01) */
    F_BF16_W,      /* bf16 normal * 0.02 */
    F_BF16_NORM,   /* bf16 around 1 */
    F_F16_W,       /* f16 normal * 0.02 */
    F_F16_NORM,
    F_F32_NORM,
    F_GIDX_TRIVIAL,/* int32 k / gs */
    F_GIDX_ACT,    /* int32 act-order permutation map */
    F_Q4_0,        /* GGUF Q4_0 blocks */
    F_Q4_K,        /* GGUF Q4_K blocks */
    F_Q6_K         /* GGUF Q6_K blocks */
};

typedef struct tspec {
    char name[160];
    const char *dtype; /* safetensors dtype, or ggml type name for GGUF */
    int n_dims;
    int64_t dims[3];   /* safetensors order (GGUF: ggml order) */
    uint64_t bytes;
    enum fill fill;
    int64_t aux;       /* group size for g_idx */
} tspec;

static tspec *g_t;
static size_t g_n, g_cap;

static tspec *add(const char *name, const char *dtype, int n_dims, int64_t d0, int64_t d1, uint64_t bytes,
                  enum fill fill)
{
    tspec *t;
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 256;
        g_t = realloc(g_t, g_cap * sizeof(*g_t));
        if (!g_t) {
            perror("realloc");
            exit(1);
        }
    }
    t = &g_t[g_n++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->bytes = bytes;
    t->fill = fill;
    return t;
}

/* Chunk of emit: a multiple of every block size filled below (ggml
 * Q4_0 18, Q4_K 144, Q6_K 210 bytes; 8-byte words), so that no block
 * straddles two chunks (a straddling block got random bytes as its fp16
 * scale: values up to 1e5 that the writer rightly refused). */
#define EMIT_CHUNK (5040u * 200u)

/* Writes `bytes` of data of kind t->fill to f, in EMIT_CHUNK chunks. */
static void emit(FILE *f, const tspec *t)
{
    static uint8_t buf[EMIT_CHUNK];
    uint64_t left = t->bytes, pos = 0;
    int32_t *perm = NULL;
    if (t->fill == F_GIDX_ACT) {
        /* g_idx[c] = rank of c in a random permutation / gs: a real act-order map */
        int64_t k = t->dims[0], i;
        perm = malloc((size_t)k * sizeof(int32_t));
        for (i = 0; i < k; i++)
            perm[i] = (int32_t)i;
        for (i = k - 1; i > 0; i--) {
            int64_t j = (int64_t)(rng_next() % (uint64_t)(i + 1));
            int32_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
    }
    while (left) {
        size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf), i;
        switch (t->fill) {
        case F_RAND:
            for (i = 0; i + 8 <= n; i += 8) {
                uint64_t r = rng_next();
                memcpy(buf + i, &r, 8);
            }
            for (; i < n; i++)
                buf[i] = (uint8_t)rng_next();
            break;
        case F_ZEROS_SYM:
            memset(buf, 0x77, n);
            break;
        case F_F16_SCALE:
            for (i = 0; i + 2 <= n; i += 2) {
                uint16_t h = qb_f32_to_f16(0.002f + 0.008f * (float)(rng_next() >> 40) / 16777216.0f);
                memcpy(buf + i, &h, 2);
            }
            break;
        case F_BF16_W:
        case F_BF16_NORM:
        case F_F16_W:
        case F_F16_NORM:
            for (i = 0; i + 2 <= n; i += 2) {
                int norm = t->fill == F_BF16_NORM || t->fill == F_F16_NORM;
                float v = norm ? 1.0f + 0.05f * rng_normal() : 0.02f * rng_normal();
                uint16_t h = (t->fill == F_BF16_W || t->fill == F_BF16_NORM) ? qb_f32_to_bf16(v) : qb_f32_to_f16(v);
                memcpy(buf + i, &h, 2);
            }
            break;
        case F_F32_NORM:
            for (i = 0; i + 4 <= n; i += 4) {
                float v = 1.0f + 0.05f * rng_normal();
                memcpy(buf + i, &v, 4);
            }
            break;
        case F_GIDX_TRIVIAL:
        case F_GIDX_ACT:
            for (i = 0; i + 4 <= n; i += 4) {
                int64_t c = (int64_t)((pos + i) / 4);
                int32_t g = t->fill == F_GIDX_TRIVIAL ? (int32_t)(c / t->aux) : (int32_t)(perm[c] / t->aux);
                memcpy(buf + i, &g, 4);
            }
            break;
        case F_Q4_0: /* block: fp16 d, 16 bytes of nibbles (ggml block_q4_0) */
            for (i = 0; i + 18 <= n; i += 18) {
                uint16_t d = qb_f32_to_f16(0.001f + 0.004f * (float)(rng_next() >> 40) / 16777216.0f);
                size_t j;
                memcpy(buf + i, &d, 2);
                for (j = 0; j < 16; j++)
                    buf[i + 2 + j] = (uint8_t)rng_next();
            }
            break;
        case F_Q4_K: /* block: fp16 d, fp16 dmin, 12 bytes scales, 128 bytes qs (block_q4_K) */
            for (i = 0; i + 144 <= n; i += 144) {
                uint16_t d = qb_f32_to_f16(0.0005f), dm = qb_f32_to_f16(0.0003f);
                size_t j;
                memcpy(buf + i, &d, 2);
                memcpy(buf + i + 2, &dm, 2);
                for (j = 4; j < 144; j++)
                    buf[i + j] = (uint8_t)rng_next();
            }
            break;
        case F_Q6_K: /* block: ql[128], qh[64], int8 scales[16], fp16 d (block_q6_K) */
            for (i = 0; i + 210 <= n; i += 210) {
                uint16_t d = qb_f32_to_f16(0.0002f);
                size_t j;
                for (j = 0; j < 208; j++)
                    buf[i + j] = (uint8_t)rng_next();
                memcpy(buf + i + 208, &d, 2);
            }
            break;
        }
        if (fwrite(buf, 1, n, f) != n) {
            perror("write");
            exit(1);
        }
        left -= n;
        pos += n;
    }
    free(perm);
}

/* ---- safetensors ------------------------------------------------------------- */
static void write_safetensors(const char *path, size_t t0, size_t t1)
{
    size_t cap = 1 << 20, len = 0, i;
    char *h = malloc(cap);
    uint64_t off = 0, hl;
    FILE *f;
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = t0; i < t1; i++) {
        const tspec *t = &g_t[i];
        int d;
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, t->dtype);
        for (d = 0; d < t->n_dims; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%" PRId64, d ? "," : "", t->dims[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off,
                                off + t->bytes);
        off += t->bytes;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8)
        h[len++] = ' ';
    f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    hl = len;
    fwrite(&hl, 8, 1, f); /* little-endian host assumed (x86-64/aarch64) */
    fwrite(h, 1, len, f);
    for (i = t0; i < t1; i++)
        emit(f, &g_t[i]);
    if (fclose(f)) {
        perror(path);
        exit(1);
    }
    free(h);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[4096];
    FILE *f;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        perror(p);
        exit(1);
    }
}

static void hf_config(const char *dir, const shape *s, const char *qcfg)
{
    char c[4096];
    snprintf(c, sizeof(c),
             "{\"architectures\":[\"%s\"],\"model_type\":\"%s\",\"hidden_size\":%d,\"intermediate_size\":%d,"
             "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"num_key_value_heads\":%d,"
             "\"vocab_size\":%d,\"rms_norm_eps\":1e-06,\"rope_theta\":10000.0,"
             "\"max_position_embeddings\":4096,\"tie_word_embeddings\":%s,\"bos_token_id\":1,"
             "\"eos_token_id\":2,\"torch_dtype\":\"bfloat16\"%s%s}\n",
             strcmp(s->arch, "qwen2") ? "LlamaForCausalLM" : "Qwen2ForCausalLM", s->arch, s->hidden, s->inter,
             s->layers, s->heads, s->kv_heads, s->vocab, s->tied ? "true" : "false", qcfg ? "," : "",
             qcfg ? qcfg : "");
    write_text(dir, "config.json", c);
}

/* The linear layers of one decoder layer: HF name suffix, out, in. */
typedef struct lin {
    const char *n;
    int64_t out, in;
} lin;
static int layer_linears(const shape *s, lin *l)
{
    int64_t hd = s->hidden / s->heads;
    lin v[7] = {{"self_attn.q_proj", s->hidden, s->hidden},
                {"self_attn.k_proj", s->kv_heads * hd, s->hidden},
                {"self_attn.v_proj", s->kv_heads * hd, s->hidden},
                {"self_attn.o_proj", s->hidden, s->hidden},
                {"mlp.gate_proj", s->inter, s->hidden},
                {"mlp.up_proj", s->inter, s->hidden},
                {"mlp.down_proj", s->hidden, s->inter}};
    memcpy(l, v, sizeof(v));
    return 7;
}

/* Dense (non-linear) HF tensors in BF16/F16. */
static void add_dense_common(const shape *s, int f16)
{
    char n[160];
    int l;
    const char *dt = f16 ? "F16" : "BF16";
    enum fill w = f16 ? F_F16_W : F_BF16_W, nm = f16 ? F_F16_NORM : F_BF16_NORM;
    add("model.embed_tokens.weight", dt, 2, s->vocab, s->hidden, (uint64_t)s->vocab * s->hidden * 2, w);
    add("model.norm.weight", dt, 1, s->hidden, 0, (uint64_t)s->hidden * 2, nm);
    if (!s->tied)
        add("lm_head.weight", dt, 2, s->vocab, s->hidden, (uint64_t)s->vocab * s->hidden * 2, w);
    for (l = 0; l < s->layers; l++) {
        snprintf(n, sizeof(n), "model.layers.%d.input_layernorm.weight", l);
        add(n, dt, 1, s->hidden, 0, (uint64_t)s->hidden * 2, nm);
        snprintf(n, sizeof(n), "model.layers.%d.post_attention_layernorm.weight", l);
        add(n, dt, 1, s->hidden, 0, (uint64_t)s->hidden * 2, nm);
    }
}

static void gen_gptq(const shape *s, const char *dir, int act)
{
    const int64_t gs = 128;
    char n[200];
    lin L[7];
    int l, k, nl = layer_linears(s, L);
    add_dense_common(s, 1);
    for (l = 0; l < s->layers; l++)
        for (k = 0; k < nl; k++) {
            int64_t K = L[k].in, N = L[k].out, G = (K + gs - 1) / gs;
            tspec *t;
            snprintf(n, sizeof(n), "model.layers.%d.%s.qweight", l, L[k].n);
            add(n, "I32", 2, K / 8, N, (uint64_t)(K / 8) * N * 4, F_RAND);
            snprintf(n, sizeof(n), "model.layers.%d.%s.qzeros", l, L[k].n);
            add(n, "I32", 2, G, N / 8, (uint64_t)G * (N / 8) * 4, act ? F_RAND : F_ZEROS_SYM);
            snprintf(n, sizeof(n), "model.layers.%d.%s.scales", l, L[k].n);
            add(n, "F16", 2, G, N, (uint64_t)G * N * 2, F_F16_SCALE);
            snprintf(n, sizeof(n), "model.layers.%d.%s.g_idx", l, L[k].n);
            t = add(n, "I32", 1, K, 0, (uint64_t)K * 4, act ? F_GIDX_ACT : F_GIDX_TRIVIAL);
            t->aux = gs;
        }
    hf_config(dir, s,
              act ? "\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":128,"
                    "\"desc_act\":true,\"sym\":false,\"checkpoint_format\":\"gptq\"}"
                  : "\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":128,"
                    "\"desc_act\":false,\"sym\":true,\"checkpoint_format\":\"gptq\"}");
    snprintf(n, sizeof(n), "%s/model.safetensors", dir);
    write_safetensors(n, 0, g_n);
}

static void gen_awq(const shape *s, const char *dir)
{
    const int64_t gs = 128;
    char n[200];
    lin L[7];
    int l, k, nl = layer_linears(s, L);
    add_dense_common(s, 1);
    for (l = 0; l < s->layers; l++)
        for (k = 0; k < nl; k++) {
            int64_t K = L[k].in, N = L[k].out, G = K / gs;
            snprintf(n, sizeof(n), "model.layers.%d.%s.qweight", l, L[k].n);
            add(n, "I32", 2, K, N / 8, (uint64_t)K * (N / 8) * 4, F_RAND);
            snprintf(n, sizeof(n), "model.layers.%d.%s.qzeros", l, L[k].n);
            add(n, "I32", 2, G, N / 8, (uint64_t)G * (N / 8) * 4, F_RAND);
            snprintf(n, sizeof(n), "model.layers.%d.%s.scales", l, L[k].n);
            add(n, "F16", 2, G, N, (uint64_t)G * N * 2, F_F16_SCALE);
        }
    hf_config(dir, s,
              "\"quantization_config\":{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":128,"
              "\"zero_point\":true,\"version\":\"gemm\"}");
    snprintf(n, sizeof(n), "%s/model.safetensors", dir);
    write_safetensors(n, 0, g_n);
}

static void gen_bf16(const shape *s, const char *dir)
{
    char n[200];
    lin L[7];
    int l, k, nl = layer_linears(s, L);
    size_t half;
    add_dense_common(s, 0);
    for (l = 0; l < s->layers; l++)
        for (k = 0; k < nl; k++) {
            snprintf(n, sizeof(n), "model.layers.%d.%s.weight", l, L[k].n);
            add(n, "BF16", 2, L[k].out, L[k].in, (uint64_t)L[k].out * L[k].in * 2, F_BF16_W);
            if (!strcmp(s->arch, "qwen2") && k < 3) {
                snprintf(n, sizeof(n), "model.layers.%d.%s.bias", l, L[k].n);
                add(n, "BF16", 1, L[k].out, 0, (uint64_t)L[k].out * 2, F_BF16_W);
            }
        }
    hf_config(dir, s, NULL);
    /* Two shards with an index, as Hugging Face writes checkpoints > 5 GB. */
    half = g_n / 2;
    {
        char idx_path[4096];
        FILE *f;
        size_t i;
        uint64_t total = 0;
        for (i = 0; i < g_n; i++)
            total += g_t[i].bytes;
        snprintf(n, sizeof(n), "%s/model-00001-of-00002.safetensors", dir);
        write_safetensors(n, 0, half);
        snprintf(n, sizeof(n), "%s/model-00002-of-00002.safetensors", dir);
        write_safetensors(n, half, g_n);
        snprintf(idx_path, sizeof(idx_path), "%s/model.safetensors.index.json", dir);
        f = fopen(idx_path, "w");
        fprintf(f, "{\"metadata\":{\"total_size\":%" PRIu64 "},\"weight_map\":{", total);
        for (i = 0; i < g_n; i++)
            fprintf(f, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"", i ? "," : "", g_t[i].name,
                    i < half ? 1 : 2);
        fprintf(f, "}}\n");
        fclose(f);
    }
}

/* ---- GGUF v3 ----------------------------------------------------------------- */
static void gw_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void gw_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void gw_str(FILE *f, const char *s) { gw_u64(f, strlen(s)); fwrite(s, 1, strlen(s), f); }
static void gw_kv_u32(FILE *f, const char *k, uint32_t v) { gw_str(f, k); gw_u32(f, 4 /* UINT32 */); gw_u32(f, v); }
static void gw_kv_f32(FILE *f, const char *k, float v) { gw_str(f, k); gw_u32(f, 6 /* FLOAT32 */); fwrite(&v, 4, 1, f); }
static void gw_kv_str(FILE *f, const char *k, const char *v) { gw_str(f, k); gw_u32(f, 8 /* STRING */); gw_str(f, v); }

/* ggml type ids and block geometry (ggml.h enum ggml_type; ggml-common.h blocks). */
static uint32_t ggml_id(const char *t) { return !strcmp(t, "F32") ? 0 : !strcmp(t, "Q4_0") ? 2 : !strcmp(t, "Q4_K") ? 12 : 14; }
static uint64_t ggml_bytes(const char *t, uint64_t n)
{
    if (!strcmp(t, "F32")) return n * 4;
    if (!strcmp(t, "Q4_0")) return n / 32 * 18;
    if (!strcmp(t, "Q4_K")) return n / 256 * 144;
    return n / 256 * 210; /* Q6_K */
}
static enum fill ggml_fill(const char *t) { return !strcmp(t, "F32") ? F_F32_NORM : !strcmp(t, "Q4_0") ? F_Q4_0 : !strcmp(t, "Q4_K") ? F_Q4_K : F_Q6_K; }

static void gadd(const char *name, const char *type, int64_t ne0, int64_t ne1)
{
    tspec *t = add(name, type, ne1 ? 2 : 1, ne0, ne1, ggml_bytes(type, (uint64_t)ne0 * (ne1 ? ne1 : 1)), ggml_fill(type));
    (void)t;
}

static void gen_gguf(const shape *s, const char *dir, int q4km)
{
    const uint64_t align = 32;
    char n[200], path[4096];
    int l;
    FILE *f;
    uint64_t off = 0;
    size_t i;
    const char *q = q4km ? "Q4_K" : "Q4_0";
    int64_t hd = s->hidden / s->heads;
    gadd("token_embd.weight", q, s->hidden, s->vocab);
    gadd("output_norm.weight", "F32", s->hidden, 0);
    if (!s->tied)
        gadd("output.weight", q4km ? "Q6_K" : "Q4_0", s->hidden, s->vocab);
    for (l = 0; l < s->layers; l++) {
        /* llama.cpp Q4_K_M: Q6_K for attn_v and ffn_down in about half of the layers
         * (llama_tensor_get_type, use_more_bits); here every other layer. */
        const char *more = (q4km && l % 2 == 0) ? "Q6_K" : q;
        snprintf(n, sizeof(n), "blk.%d.attn_norm.weight", l); gadd(n, "F32", s->hidden, 0);
        snprintf(n, sizeof(n), "blk.%d.ffn_norm.weight", l); gadd(n, "F32", s->hidden, 0);
        snprintf(n, sizeof(n), "blk.%d.attn_q.weight", l); gadd(n, q, s->hidden, s->hidden);
        snprintf(n, sizeof(n), "blk.%d.attn_k.weight", l); gadd(n, q, s->hidden, s->kv_heads * hd);
        snprintf(n, sizeof(n), "blk.%d.attn_v.weight", l); gadd(n, more, s->hidden, s->kv_heads * hd);
        snprintf(n, sizeof(n), "blk.%d.attn_output.weight", l); gadd(n, q, s->hidden, s->hidden);
        snprintf(n, sizeof(n), "blk.%d.ffn_gate.weight", l); gadd(n, q, s->hidden, s->inter);
        snprintf(n, sizeof(n), "blk.%d.ffn_up.weight", l); gadd(n, q, s->hidden, s->inter);
        snprintf(n, sizeof(n), "blk.%d.ffn_down.weight", l); gadd(n, more, s->inter, s->hidden);
    }
    snprintf(path, sizeof(path), "%s/model.gguf", dir);
    f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite("GGUF", 1, 4, f);
    gw_u32(f, 3);
    gw_u64(f, g_n);
    gw_u64(f, 12);
    gw_kv_str(f, "general.architecture", s->arch);
    gw_kv_str(f, "general.name", s->name);
    gw_kv_u32(f, "general.alignment", (uint32_t)align);
    snprintf(n, sizeof(n), "%s.block_count", s->arch); gw_kv_u32(f, n, (uint32_t)s->layers);
    snprintf(n, sizeof(n), "%s.context_length", s->arch); gw_kv_u32(f, n, 4096);
    snprintf(n, sizeof(n), "%s.embedding_length", s->arch); gw_kv_u32(f, n, (uint32_t)s->hidden);
    snprintf(n, sizeof(n), "%s.feed_forward_length", s->arch); gw_kv_u32(f, n, (uint32_t)s->inter);
    snprintf(n, sizeof(n), "%s.attention.head_count", s->arch); gw_kv_u32(f, n, (uint32_t)s->heads);
    snprintf(n, sizeof(n), "%s.attention.head_count_kv", s->arch); gw_kv_u32(f, n, (uint32_t)s->kv_heads);
    snprintf(n, sizeof(n), "%s.attention.layer_norm_rms_epsilon", s->arch); gw_kv_f32(f, n, 1e-6f);
    snprintf(n, sizeof(n), "%s.rope.freq_base", s->arch); gw_kv_f32(f, n, 10000.0f);
    snprintf(n, sizeof(n), "%s.vocab_size", s->arch); gw_kv_u32(f, n, (uint32_t)s->vocab);
    for (i = 0; i < g_n; i++) {
        const tspec *t = &g_t[i];
        gw_str(f, t->name);
        gw_u32(f, (uint32_t)t->n_dims);
        gw_u64(f, (uint64_t)t->dims[0]);
        if (t->n_dims > 1)
            gw_u64(f, (uint64_t)t->dims[1]);
        gw_u32(f, ggml_id(t->dtype));
        gw_u64(f, off);
        off = (off + t->bytes + align - 1) / align * align;
    }
    {
        long pos = ftell(f);
        static const uint8_t zero[64];
        fwrite(zero, 1, (size_t)((align - (uint64_t)pos % align) % align), f);
    }
    for (i = 0; i < g_n; i++) {
        static const uint8_t zero[64];
        emit(f, &g_t[i]);
        fwrite(zero, 1, (size_t)((align - g_t[i].bytes % align) % align), f);
    }
    if (fclose(f)) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const shape *s = NULL;
    size_t i;
    if (argc != 4) {
        fprintf(stderr, "usage: qb-bench-gen gptq-sym|gptq-asym-act|awq-gemm|gguf-q4km|gguf-q4_0|bf16 SHAPE OUTDIR\n");
        return 2;
    }
    for (i = 0; i < sizeof(g_shapes) / sizeof(g_shapes[0]); i++)
        if (!strcmp(argv[2], g_shapes[i].name))
            s = &g_shapes[i];
    if (!s) {
        fprintf(stderr, "qb-bench-gen: unknown shape %s\n", argv[2]);
        return 2;
    }
    if (mkdir(argv[3], 0755) != 0 && errno != EEXIST) {
        perror(argv[3]);
        return 1;
    }
    if (!strcmp(argv[1], "gptq-sym"))
        gen_gptq(s, argv[3], 0);
    else if (!strcmp(argv[1], "gptq-asym-act"))
        gen_gptq(s, argv[3], 1);
    else if (!strcmp(argv[1], "awq-gemm"))
        gen_awq(s, argv[3]);
    else if (!strcmp(argv[1], "gguf-q4km"))
        gen_gguf(s, argv[3], 1);
    else if (!strcmp(argv[1], "gguf-q4_0"))
        gen_gguf(s, argv[3], 0);
    else if (!strcmp(argv[1], "bf16"))
        gen_bf16(s, argv[3]);
    else {
        fprintf(stderr, "qb-bench-gen: unknown kind %s\n", argv[1]);
        return 2;
    }
    {
        /* Logical weights = elements of the canonical tensors, for weights/s. */
        lin L[7];
        int k, nl = layer_linears(s, L);
        uint64_t w = (uint64_t)s->vocab * s->hidden * (s->tied ? 1 : 2) + s->hidden;
        for (k = 0; k < nl; k++)
            w += (uint64_t)s->layers * (uint64_t)(L[k].out * L[k].in);
        w += (uint64_t)s->layers * 2 * s->hidden;
        printf("%" PRIu64 "\n", w);
    }
    return 0;
}
