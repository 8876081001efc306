/*
 * Test fixtures: compressed-tensors checkpoints from known codes (see
 * gen_ct.h), and the llama skeleton shared with gen_fp8.c.
 *
 * Conventions mirrored from neuralmagic/compressed-tensors (checked at the
 * upstream source):
 *   - pack_quantized.py pack_to_int32: u = q + 2^(b-1) (signed -> unsigned),
 *     value i of each word at bits [b*i, b*i+b), rows zero-padded to a
 *     multiple of 32/b; packed_dim=0 for asymmetric group/channel zero
 *     points (compress_weight), shape [ceil(N/pf), G];
 *   - compress_weight: weight_shape = torch.tensor(weight.shape) (I64);
 *   - naive_quantized.py: unpacked I8 weights (int) / F8_E4M3 (float),
 *     zero points I8 in the scale's shape;
 *   - initialize.py initialize_qparams: scale shapes tensor [1], channel
 *     [N, 1], group [N, ceil(K/gs)], block [ceil(N/bh), ceil(K/bw)];
 *   - calculate_range: signed codes in [-2^(b-1), 2^(b-1)-1];
 *   - forward.py _dequantize: (q - zero_point) * scale.
 * Built with QBT_GEN_NO_MAIN as a library; with main() as qb-gen-ct.
 */
#define _XOPEN_SOURCE 700
#include "gen_ct.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <quantbridge/qb_half.h>

#include "qbt_st_writer.h"

#define CQ_HIDDEN 64
#define CQ_INTER 128
#define CQ_LAYERS 2
#define CQ_VOCAB 96
#define CQ_MAX_SHARDS 8

/* ---- skeleton ---------------------------------------------------------- */

void qbt_cq_join(char *out, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= cap)
        la = cap - 1;
    if (la + lb >= cap)
        lb = cap - 1 - la;
    memcpy(out, a, la);
    memcpy(out + la, b, lb);
    out[la + lb] = '\0';
}

struct qbt_cq_writer {
    qbt_st_writer *w[CQ_MAX_SHARDS];
    int shards;
    size_t count;
};

qbt_cq_writer *qbt_cq_writer_new(int shards)
{
    qbt_cq_writer *w;
    int i;
    if (shards < 1 || shards > CQ_MAX_SHARDS)
        return NULL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->shards = shards;
    for (i = 0; i < shards; i++)
        if (!(w->w[i] = qbt_st_writer_new())) {
            for (; i >= 0; i--)
                qbt_st_writer_free(w->w[i]);
            free(w);
            return NULL;
        }
    return w;
}

void qbt_cq_writer_free(qbt_cq_writer *w)
{
    int s;
    if (!w)
        return;
    for (s = 0; s < w->shards; s++)
        qbt_st_writer_free(w->w[s]);
    free(w);
}

int qbt_cq_add(qbt_cq_writer *w, const char *name, const char *dtype, int n_dims,
               const int64_t *dims, const void *data, size_t n_bytes)
{
    /* consecutive tensors (a module's partners) land in different shards */
    int s = (int)(w->count++ % (size_t)w->shards);
    return qbt_st_writer_add(w->w[s], name, dtype, n_dims, dims, data, n_bytes);
}

int qbt_cq_shard_of(const qbt_cq_writer *w, const char *name)
{
    int s;
    size_t i;
    for (s = 0; s < w->shards; s++)
        for (i = 0; i < qbt_st_writer_count(w->w[s]); i++)
            if (!strcmp(qbt_st_writer_name(w->w[s], i), name))
                return s;
    return -1;
}

static int cq_mkdir(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_ct: mkdir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int cq_write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return qbt_write_text(path, text);
}

int qbt_cq_finish(qbt_cq_writer *w, const char *dir, const char *qc_json, int skip_shard)
{
    char path[1024], *cfg = NULL, *idx = NULL;
    size_t cap, len, i;
    int s, rc = -1;

    if (cq_mkdir(dir) != 0)
        goto out;
    cap = strlen(qc_json) + 4096;
    cfg = malloc(cap);
    if (!cfg)
        goto out;
    /* transformers LlamaConfig fields of a tiny model */
    snprintf(cfg, cap,
             "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
             "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
             "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": 4,\n"
             "  \"num_key_value_heads\": 2,\n  \"head_dim\": 16,\n  \"hidden_act\": \"silu\",\n"
             "  \"max_position_embeddings\": 2048,\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_theta\": 500000.0,\n  \"vocab_size\": %d,\n"
             "  \"tie_word_embeddings\": false,\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n"
             "  \"torch_dtype\": \"bfloat16\",\n  \"quantization_config\": %s\n}\n",
             CQ_HIDDEN, CQ_INTER, CQ_LAYERS, CQ_VOCAB, qc_json);
    if (cq_write_file(dir, "config.json", cfg) != 0 ||
        cq_write_file(dir, "generation_config.json",
                      "{\"bos_token_id\": 1, \"eos_token_id\": 2}\n") != 0 ||
        cq_write_file(dir, "tokenizer_config.json", "{\"model_max_length\": 2048}\n") != 0)
        goto out;
    if (w->shards == 1) {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        if (skip_shard != 0 && qbt_st_writer_save(w->w[0], path) != 0)
            goto out;
        rc = 0;
        goto out;
    }
    cap = 1 << 20;
    idx = malloc(cap);
    if (!idx)
        goto out;
    len = 0;
    {
        size_t total = 0;
        for (s = 0; s < w->shards; s++)
            total += qbt_st_writer_total_bytes(w->w[s]);
        len += (size_t)snprintf(idx + len, cap - len,
                                "{\n  \"metadata\": {\"total_size\": %zu},\n  \"weight_map\": {",
                                total);
    }
    {
        int first = 1;
        for (s = 0; s < w->shards; s++) {
            for (i = 0; i < qbt_st_writer_count(w->w[s]); i++) {
                len += (size_t)snprintf(idx + len, cap - len,
                                        "%s\n    \"%s\": \"model-%05d-of-%05d.safetensors\"",
                                        first ? "" : ",", qbt_st_writer_name(w->w[s], i), s + 1,
                                        w->shards);
                first = 0;
            }
        }
    }
    len += (size_t)snprintf(idx + len, cap - len, "\n  }\n}\n");
    if (len >= cap || cq_write_file(dir, "model.safetensors.index.json", idx) != 0)
        goto out;
    for (s = 0; s < w->shards; s++) {
        if (s == skip_shard)
            continue;
        snprintf(path, sizeof(path), "%s/model-%05d-of-%05d.safetensors", dir, s + 1, w->shards);
        if (qbt_st_writer_save(w->w[s], path) != 0)
            goto out;
    }
    rc = 0;
out:
    qbt_cq_writer_free(w);
    free(cfg);
    free(idx);
    return rc;
}

size_t qbt_cq_modules(qbt_cq_module *out, size_t cap)
{
    static const struct { const char *p; int64_t N, K; } proj[] = {
        {"self_attn.q_proj", 64, 64}, {"self_attn.k_proj", 32, 64},
        {"self_attn.v_proj", 32, 64}, {"self_attn.o_proj", 64, 64},
        {"mlp.gate_proj", CQ_INTER, CQ_HIDDEN}, {"mlp.up_proj", CQ_INTER, CQ_HIDDEN},
        {"mlp.down_proj", CQ_HIDDEN, CQ_INTER}};
    size_t n = 0, j;
    int l;
    for (l = 0; l < CQ_LAYERS; l++)
        for (j = 0; j < sizeof(proj) / sizeof(proj[0]) && n < cap; j++, n++) {
            snprintf(out[n].name, sizeof(out[n].name), "model.layers.%d.%s", l, proj[j].p);
            out[n].N = proj[j].N;
            out[n].K = proj[j].K;
        }
    return n;
}

qbt_cq_lin *qbt_cq_new(qbt_cq_model *m, const char *name)
{
    qbt_cq_lin *l;
    if (m->n >= sizeof(m->t) / sizeof(m->t[0]))
        return NULL;
    l = &m->t[m->n++];
    memset(l, 0, sizeof(*l));
    qbt_cq_join(l->name, sizeof(l->name), name, "");
    return l;
}

int qbt_cq_add_dense(qbt_cq_writer *w, qbt_cq_model *truth, uint64_t seed)
{
    static const struct { const char *name; int n_dims; int64_t N, K; int norm; } d[] = {
        {"model.embed_tokens.weight", 2, CQ_VOCAB, CQ_HIDDEN, 0},
        {"model.layers.0.input_layernorm.weight", 1, 1, CQ_HIDDEN, 1},
        {"model.layers.0.post_attention_layernorm.weight", 1, 1, CQ_HIDDEN, 1},
        {"model.layers.1.input_layernorm.weight", 1, 1, CQ_HIDDEN, 1},
        {"model.layers.1.post_attention_layernorm.weight", 1, 1, CQ_HIDDEN, 1},
        {"model.norm.weight", 1, 1, CQ_HIDDEN, 1},
        {"lm_head.weight", 2, CQ_VOCAB, CQ_HIDDEN, 0}};
    qbt_rng rng = {seed ^ 0xd1b54a32d192ed03ULL};
    size_t i;
    int64_t e, dims[2];

    for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        qbt_cq_lin *l = qbt_cq_new(truth, d[i].name);
        if (!l)
            return -1;
        l->quant = QBT_CQ_DENSE;
        l->n_dims = d[i].n_dims;
        l->N = d[i].N;
        l->K = d[i].K;
        l->bf16 = malloc((size_t)(l->N * l->K) * 2);
        if (!l->bf16)
            return -1;
        for (e = 0; e < l->N * l->K; e++)
            l->bf16[e] = qb_f32_to_bf16(d[i].norm ? (float)(1.0 + 0.1 * qbt_rng_normal(&rng))
                                                  : (float)(0.02 * qbt_rng_normal(&rng)));
        dims[0] = l->N;
        dims[1] = l->K;
        if (qbt_cq_add(w, l->name, "BF16", l->n_dims, l->n_dims == 1 ? dims + 1 : dims, l->bf16,
                       (size_t)(l->N * l->K) * 2) != 0)
            return -1;
    }
    return 0;
}

/* ---- truth ------------------------------------------------------------- */

void qbt_cq_model_free(qbt_cq_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n; i++) {
        free(m->t[i].q);
        free(m->t[i].f8);
        free(m->t[i].scale);
        free(m->t[i].zq);
        free(m->t[i].g_idx);
        free(m->t[i].bf16);
    }
    free(m);
}

double qbt_fp8_value(uint8_t b, int e5m2)
{
    int sign = b >> 7, e, m;
    double v;
    if (!e5m2) {
        e = (b >> 3) & 15;
        m = b & 7;
        if (e == 15 && m == 7)
            return NAN;
        v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    } else {
        e = (b >> 2) & 31;
        m = b & 3;
        if (e == 31)
            return m ? NAN : (sign ? -INFINITY : INFINITY);
        v = e == 0 ? ldexp(m / 4.0, -14) : ldexp(1.0 + m / 4.0, e - 15);
    }
    return sign ? -v : v;
}

static int64_t cq_col_group(const qbt_cq_lin *l, int64_t k)
{
    if (l->g_idx)
        return l->g_idx[k];
    if (l->strategy == QBT_CQ_GROUP)
        return k / l->gs;
    if (l->strategy == QBT_CQ_BLOCK)
        return k / l->bw;
    return 0;
}

static int64_t cq_scale_row(const qbt_cq_lin *l, int64_t n)
{
    if (l->strategy == QBT_CQ_TENSOR)
        return 0;
    if (l->strategy == QBT_CQ_BLOCK)
        return n / l->bh;
    return n;
}

float qbt_cq_value(const qbt_cq_lin *l, int64_t n, int64_t k)
{
    int64_t si;
    if (l->quant == QBT_CQ_DENSE)
        return qb_bf16_to_f32(l->bf16[n * l->K + k]);
    si = cq_scale_row(l, n) * l->G + cq_col_group(l, k);
    if (l->quant == QBT_CQ_FP8)
        /* exact product in double, rounded once to float = the float32 product */
        return (float)(qbt_fp8_value(l->f8[n * l->K + k], l->e5m2) * (double)l->scale[si]);
    return (float)((double)(l->q[n * l->K + k] - (l->zq ? l->zq[si] : 0)) * (double)l->scale[si]);
}

const qbt_cq_lin *qbt_cq_find(const qbt_cq_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name))
            return &m->t[i];
    return NULL;
}

/* Nearest FP8 code to v (by the bit definition; ties to the lower code). */
static uint8_t cq_fp8_nearest(double v, int e5m2)
{
    int c, best = 0;
    double bd = INFINITY, x, d;
    for (c = 0; c < 256; c++) {
        x = qbt_fp8_value((uint8_t)c, e5m2);
        if (isnan(x) || isinf(x))
            continue;
        d = fabs(x - v);
        if (d < bd) {
            bd = d;
            best = c;
        }
    }
    return (uint8_t)best;
}

/* Fills the truth of one quantized linear. Scales: int -> BF16-exact,
 * fp8 -> F32 (fp8 plugin) or BF16 (compressed-tensors float-quantized). */
int qbt_cq_fill(qbt_cq_lin *l, qbt_rng *rng, int quant, int bits, int sym, int strategy,
                   int64_t gs, int64_t bh, int64_t bw, int act_order, int e5m2, int scale_bf16)
{
    int64_t e, k, n, i;
    int half = 1 << (bits - 1);
    double fmax = e5m2 ? 57344.0 : 448.0;

    l->quant = quant;
    l->n_dims = 2;
    l->bits = bits;
    l->sym = sym;
    l->strategy = strategy;
    l->gs = gs;
    l->bh = bh;
    l->bw = bw;
    l->e5m2 = e5m2;
    switch (strategy) {
    case QBT_CQ_TENSOR: l->SR = 1; l->G = 1; break;
    case QBT_CQ_CHANNEL: l->SR = l->N; l->G = 1; break;
    case QBT_CQ_GROUP: l->SR = l->N; l->G = (l->K + gs - 1) / gs; break;
    default: l->SR = (l->N + bh - 1) / bh; l->G = (l->K + bw - 1) / bw; break;
    }
    l->scale = malloc((size_t)(l->SR * l->G) * sizeof(float));
    if (!l->scale)
        return -1;
    for (i = 0; i < l->SR * l->G; i++) {
        float s = (float)(0.004 * (1.0 + qbt_rng_uniform(rng)));
        l->scale[i] = scale_bf16 ? qb_bf16_to_f32(qb_f32_to_bf16(s)) : s;
    }
    if (quant == QBT_CQ_INT) {
        l->q = malloc((size_t)(l->N * l->K));
        if (!l->q)
            return -1;
        for (e = 0; e < l->N * l->K; e++)
            l->q[e] = (int8_t)((int)(qbt_rng_u64(rng) % (uint64_t)(2 * half)) - half);
        if (!sym) {
            l->zq = malloc((size_t)(l->SR * l->G));
            if (!l->zq)
                return -1;
            for (i = 0; i < l->SR * l->G; i++)
                l->zq[i] = (int8_t)((int)(qbt_rng_u64(rng) % (uint64_t)(2 * half)) - half);
        }
        if (act_order) {
            /* a group map as GPTQ act-order leaves it: column k in group
             * perm[k] / gs for a random permutation perm */
            int32_t *perm = malloc((size_t)l->K * sizeof(int32_t));
            l->g_idx = malloc((size_t)l->K * sizeof(int32_t));
            if (!perm || !l->g_idx) {
                free(perm);
                return -1;
            }
            for (k = 0; k < l->K; k++)
                perm[k] = (int32_t)k;
            for (k = l->K - 1; k > 0; k--) {
                int64_t j = (int64_t)(qbt_rng_u64(rng) % (uint64_t)(k + 1));
                int32_t t = perm[k];
                perm[k] = perm[j];
                perm[j] = t;
            }
            for (k = 0; k < l->K; k++)
                l->g_idx[k] = (int32_t)(perm[k] / gs);
            free(perm);
        }
    } else {
        l->f8 = malloc((size_t)(l->N * l->K));
        if (!l->f8)
            return -1;
        /* normal weights quantized as upstream FP8 quantizers do: x / scale
         * rounded to the nearest FP8 value, scale = absmax / fmax of the
         * block (here: a random scale and values within the FP8 range) */
        for (n = 0; n < l->N; n++)
            for (k = 0; k < l->K; k++) {
                double x = qbt_rng_normal(rng) * fmax / 4.0;
                if (x > fmax)
                    x = fmax;
                if (x < -fmax)
                    x = -fmax;
                l->f8[n * l->K + k] = cq_fp8_nearest(x, e5m2);
            }
    }
    return 0;
}

/* ---- compressed-tensors ------------------------------------------------ */

/* pack_to_int32 along the last dim (packed_dim=1): [rows, ceil(cols/pf)]. */
static int32_t *cq_pack_cols(const int8_t *q, int64_t rows, int64_t cols, int bits, int64_t *wc)
{
    int64_t pf = 32 / bits, r, c;
    uint32_t *p;
    *wc = (cols + pf - 1) / pf;
    p = calloc((size_t)(rows * *wc), 4);
    if (!p)
        return NULL;
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) {
            uint32_t u = (uint32_t)(q[r * cols + c] + (1 << (bits - 1))) & ((1u << bits) - 1u);
            p[r * *wc + c / pf] |= u << (bits * (c % pf));
        }
    return (int32_t *)p;
}

/* pack_to_int32(packed_dim=0): [ceil(rows/pf), cols]. */
static int32_t *cq_pack_rows(const int8_t *q, int64_t rows, int64_t cols, int bits, int64_t *wr)
{
    int64_t pf = 32 / bits, r, c;
    uint32_t *p;
    *wr = (rows + pf - 1) / pf;
    p = calloc((size_t)(*wr * cols), 4);
    if (!p)
        return NULL;
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) {
            uint32_t u = (uint32_t)(q[r * cols + c] + (1 << (bits - 1))) & ((1u << bits) - 1u);
            p[(r / pf) * cols + c] |= u << (bits * (r % pf));
        }
    return (int32_t *)p;
}

static int cq_add_scale(qbt_cq_writer *w, const char *name, const qbt_cq_lin *l, int bf16)
{
    int64_t dims[2], i, n = l->SR * l->G;
    int nd = 2, rc;
    void *buf;

    dims[0] = l->SR;
    dims[1] = l->G;
    if (l->strategy == QBT_CQ_TENSOR) {
        nd = 1;
        dims[0] = 1;
    }
    buf = malloc((size_t)n * 4);
    if (!buf)
        return -1;
    for (i = 0; i < n; i++) {
        if (bf16)
            ((uint16_t *)buf)[i] = qb_f32_to_bf16(l->scale[i]);
        else
            ((float *)buf)[i] = l->scale[i];
    }
    rc = qbt_cq_add(w, name, bf16 ? "BF16" : "F32", nd, dims, buf, (size_t)n * (bf16 ? 2 : 4));
    free(buf);
    return rc;
}

static const char *cq_strategy_name(int s)
{
    static const char *const n[] = {"tensor", "channel", "group", "block"};
    return n[s];
}

/* One weights-args JSON object. */
static void cq_args_json(char *buf, size_t cap, int fp8, int bits, int sym, int strategy,
                         int64_t gs, int64_t bh, int64_t bw, int act_order)
{
    char gsb[32], bsb[48];
    if (strategy == QBT_CQ_GROUP)
        snprintf(gsb, sizeof(gsb), "%lld", (long long)gs);
    else if (strategy == QBT_CQ_CHANNEL)
        snprintf(gsb, sizeof(gsb), "null");
    else
        snprintf(gsb, sizeof(gsb), "null");
    if (strategy == QBT_CQ_BLOCK)
        snprintf(bsb, sizeof(bsb), "[%lld, %lld]", (long long)bh, (long long)bw);
    else
        snprintf(bsb, sizeof(bsb), "null");
    snprintf(buf, cap,
             "{\"num_bits\": %d, \"type\": \"%s\", \"symmetric\": %s, \"strategy\": \"%s\", "
             "\"group_size\": %s, \"block_structure\": %s, \"dynamic\": false, \"actorder\": %s, "
             "\"observer\": \"minmax\", \"observer_kwargs\": {}}",
             fp8 ? 8 : bits, fp8 ? "float" : "int", sym ? "true" : "false",
             cq_strategy_name(strategy), gsb, bsb, act_order ? "\"group\"" : "null");
}

int qbt_ct_write(const char *dir, const qbt_ct_spec *spec, qbt_cq_model **truth)
{
    qbt_cq_module mods[16];
    size_t n_mod = qbt_cq_modules(mods, 16), i;
    qbt_cq_model *m = calloc(1, sizeof(*m));
    qbt_cq_writer *w = qbt_cq_writer_new(spec->shards > 0 ? spec->shards : 1);
    qbt_rng rng = {spec->seed ? spec->seed : 7};
    const char *fmt = spec->broken == QBT_CT_BROKEN_UNKNOWN_FORMAT ? "marlin-24"
                      : spec->broken == QBT_CT_BROKEN_SPARSE     ? "sparse-24-bitmask"
                                                                 : spec->format;
    char qc[4096], a1[512], a2[512], name[192];
    int pack = !strcmp(spec->format, "pack-quantized"), skip = -1, rc = -1;
    char scale_victim[192] = "";

    if (!m || !w)
        goto out;
    if (qbt_cq_add_dense(w, m, spec->seed) != 0)
        goto out;
    for (i = 0; i < n_mod; i++) {
        qbt_cq_lin *l;
        int is_mlp = strstr(mods[i].name, ".mlp.") != NULL;
        int fp8 = spec->fp8, bits = spec->bits, sym = spec->sym, strategy = spec->strategy;
        int64_t gs = spec->gs, dims[2], wc;
        int act = spec->act_order;

        qbt_cq_join(name, sizeof(name), mods[i].name, ".weight");
        l = qbt_cq_new(m, name);
        if (!l)
            goto out;
        l->N = mods[i].N;
        l->K = mods[i].K;
        if (spec->mixed) {
            if (!strcmp(mods[i].name, "model.layers.1.mlp.down_proj")) {
                /* in the ignore list: stays dense BF16 */
                int64_t e;
                l->quant = QBT_CQ_DENSE;
                l->n_dims = 2;
                l->bf16 = malloc((size_t)(l->N * l->K) * 2);
                if (!l->bf16)
                    goto out;
                for (e = 0; e < l->N * l->K; e++)
                    l->bf16[e] = qb_f32_to_bf16((float)(0.02 * qbt_rng_normal(&rng)));
                dims[0] = l->N;
                dims[1] = l->K;
                if (qbt_cq_add(w, name, "BF16", 2, dims, l->bf16, (size_t)(l->N * l->K) * 2) != 0)
                    goto out;
                continue;
            }
            fp8 = 0;
            act = 0;
            if (is_mlp) {
                bits = 8;
                sym = 1;
                strategy = QBT_CQ_CHANNEL;
            } else {
                bits = 4;
                sym = 1;
                strategy = QBT_CQ_GROUP;
                gs = 32;
            }
        }
        if (qbt_cq_fill(l, &rng, fp8 ? QBT_CQ_FP8 : QBT_CQ_INT, fp8 ? 8 : bits, sym, strategy, gs,
                    spec->bh, spec->bw, act, 0, 1) != 0)
            goto out;
        if (spec->zero_zp && l->zq)
            memset(l->zq, 0, (size_t)(l->SR * l->G));
        dims[0] = l->N;
        dims[1] = l->K;
        if (pack) {
            int32_t *p = cq_pack_cols(l->q, l->N, l->K, l->bits, &wc);
            int64_t shp[2] = {l->N, l->K}, d2[2] = {l->N, wc}, one = 2;
            int32_t shp32[2] = {(int32_t)l->N, (int32_t)l->K};
            if (!p)
                goto out;
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_packed");
            rc = qbt_cq_add(w, name, "I32", 2, d2, p, (size_t)(l->N * wc) * 4);
            free(p);
            if (rc != 0)
                goto out;
            rc = -1;
            if (spec->broken == QBT_CT_BROKEN_SHAPE && i == 2) {
                shp[1] = l->K + 8; /* ceil(72/8) = 9 != 8 packed columns */
                shp32[1] = (int32_t)shp[1];
            }
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_shape");
            if (spec->shape_i32 ? qbt_cq_add(w, name, "I32", 1, &one, shp32, 8)
                                : qbt_cq_add(w, name, "I64", 1, &one, shp, 16))
                goto out;
        } else {
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight");
            if (fp8 ? qbt_cq_add(w, name, "F8_E4M3", 2, dims, l->f8, (size_t)(l->N * l->K))
                    : qbt_cq_add(w, name, "I8", 2, dims, l->q, (size_t)(l->N * l->K)))
                goto out;
        }
        qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_scale");
        if (!(spec->broken == QBT_CT_BROKEN_MISSING_SCALE && i == 0) &&
            cq_add_scale(w, name, l, 1) != 0)
            goto out;
        if (i == 5)
            qbt_cq_join(scale_victim, sizeof(scale_victim), name, "");
        if (l->zq) {
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_zero_point");
            if (pack && !spec->zp_i8 &&
                (l->strategy == QBT_CQ_GROUP || l->strategy == QBT_CQ_CHANNEL)) {
                int64_t wr, d2[2];
                int32_t *p = cq_pack_rows(l->zq, l->SR, l->G, l->bits, &wr);
                if (!p)
                    goto out;
                d2[0] = wr;
                d2[1] = l->G;
                rc = qbt_cq_add(w, name, "I32", 2, d2, p, (size_t)(wr * l->G) * 4);
                free(p);
                if (rc != 0)
                    goto out;
                rc = -1;
            } else {
                int64_t d2[2] = {l->SR, l->G};
                if (qbt_cq_add(w, name, "I8", l->strategy == QBT_CQ_TENSOR ? 1 : 2,
                               l->strategy == QBT_CQ_TENSOR ? d2 + 1 : d2, l->zq,
                               (size_t)(l->SR * l->G)) != 0)
                    goto out;
            }
        } else if (spec->broken == QBT_CT_BROKEN_LEFTOVER_ZP && i == 13) {
            int64_t d2[2] = {(l->SR + 7) / 8, l->G};
            int32_t *z = calloc((size_t)(d2[0] * d2[1]), 4);
            if (!z)
                goto out;
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_zero_point");
            rc = qbt_cq_add(w, name, "I32", 2, d2, z, (size_t)(d2[0] * d2[1]) * 4);
            free(z);
            if (rc != 0)
                goto out;
            rc = -1;
        }
        if (l->g_idx) {
            int64_t d1 = l->K;
            qbt_cq_join(name, sizeof(name), mods[i].name, ".weight_g_idx");
            if (qbt_cq_add(w, name, "I32", 1, &d1, l->g_idx, (size_t)l->K * 4) != 0)
                goto out;
        }
        if (spec->act_quant) {
            float one = 1.0f;
            int64_t d1 = 1;
            qbt_cq_join(name, sizeof(name), mods[i].name, ".input_scale");
            if (qbt_cq_add(w, name, "F32", 1, &d1, &one, 4) != 0)
                goto out;
        }
    }
    if (spec->broken == QBT_CT_BROKEN_LEFTOVER_PACKED) {
        int64_t d2[2] = {CQ_VOCAB, CQ_HIDDEN / 8};
        int32_t *z = calloc((size_t)(d2[0] * d2[1]), 4);
        if (!z)
            goto out;
        rc = qbt_cq_add(w, "lm_head.weight_packed", "I32", 2, d2, z, (size_t)(d2[0] * d2[1]) * 4);
        free(z);
        if (rc != 0)
            goto out;
        rc = -1;
    }
    if (spec->broken == QBT_CT_BROKEN_MISSING_SHARD)
        skip = qbt_cq_shard_of(w, scale_victim);
    /* quantization_config as ModelCompressor.update_config writes it */
    if (spec->mixed) {
        cq_args_json(a1, sizeof(a1), 0, 4, 1, QBT_CQ_GROUP, 32, 0, 0, 0);
        cq_args_json(a2, sizeof(a2), 0, 8, 1, QBT_CQ_CHANNEL, 0, 0, 0, 0);
        snprintf(qc, sizeof(qc),
                 "{\"quant_method\": \"compressed-tensors\", \"version\": \"0.12.2\", "
                 "\"format\": \"%s\", \"quantization_status\": \"compressed\", "
                 "\"global_compression_ratio\": null, "
                 "\"ignore\": [\"lm_head\", \"re:.*layers\\\\.1\\\\.mlp\\\\.down_proj$\"], "
                 "\"kv_cache_scheme\": null, \"sparsity_config\": {}, \"transform_config\": {}, "
                 "\"config_groups\": {"
                 "\"group_0\": {\"targets\": [\"re:.*self_attn\\\\.(q|k|v|o)_proj$\"], "
                 "\"format\": \"%s\", \"weights\": %s, \"input_activations\": null, "
                 "\"output_activations\": null}, "
                 "\"group_1\": {\"targets\": [\"re:.*mlp\\\\.\\\\w+_proj\"], \"format\": \"%s\", "
                 "\"weights\": %s, \"input_activations\": null, \"output_activations\": null}}}",
                 fmt, fmt, a1, fmt, a2);
    } else {
        cq_args_json(a1, sizeof(a1), spec->fp8, spec->bits, spec->sym, spec->strategy, spec->gs,
                     spec->bh, spec->bw, spec->act_order);
        snprintf(qc, sizeof(qc),
                 "{\"quant_method\": \"compressed-tensors\", \"version\": \"0.12.2\", "
                 "\"format\": \"%s\", \"quantization_status\": \"compressed\", "
                 "\"global_compression_ratio\": null, \"ignore\": [\"lm_head\"], "
                 "\"kv_cache_scheme\": null, \"sparsity_config\": {}, \"transform_config\": {}, "
                 "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"format\": \"%s\", "
                 "\"weights\": %s, \"input_activations\": %s, \"output_activations\": null}}}",
                 fmt, fmt, a1,
                 spec->act_quant ? "{\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, "
                                   "\"strategy\": \"token\", \"dynamic\": true}"
                                 : "null");
    }
    rc = qbt_cq_finish(w, dir, qc, skip);
    w = NULL;
out:
    qbt_cq_writer_free(w); /* not finished: release the shard writers */
    if (rc == 0 && truth)
        *truth = m;
    else
        qbt_cq_model_free(m);
    return rc;
}

#ifndef QBT_GEN_NO_MAIN
/* qb-gen-ct OUTDIR: writes the demo set of compressed-tensors fixtures. */
int main(int argc, char **argv)
{
    static const struct { const char *name; qbt_ct_spec s; } v[] = {
        {"ct-w4a16-g32-sym", {.format = "pack-quantized", .bits = 4, .sym = 1,
                              .strategy = QBT_CQ_GROUP, .gs = 32, .shards = 1, .seed = 1}},
        {"ct-w4a16-g32-asym", {.format = "pack-quantized", .bits = 4, .sym = 0,
                               .strategy = QBT_CQ_GROUP, .gs = 32, .shards = 1, .seed = 2}},
        {"ct-w8a16-channel", {.format = "pack-quantized", .bits = 8, .sym = 1,
                              .strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 3}},
        {"ct-fp8-dynamic", {.format = "float-quantized", .fp8 = 1, .bits = 8, .sym = 1,
                            .strategy = QBT_CQ_CHANNEL, .act_quant = 1, .shards = 1, .seed = 4}},
        {"ct-w4a16-g32-asym-i8zp", {.format = "pack-quantized", .bits = 4, .sym = 0,
                                    .strategy = QBT_CQ_GROUP, .gs = 32, .zp_i8 = 1, .shards = 1,
                                    .seed = 5}},
        {"ct-w4a16-g32-actorder", {.format = "pack-quantized", .bits = 4, .sym = 1,
                                   .strategy = QBT_CQ_GROUP, .gs = 32, .act_order = 1,
                                   .shards = 1, .seed = 6}},
        {"ct-w4a16-tensor-sym", {.format = "pack-quantized", .bits = 4, .sym = 1,
                                 .strategy = QBT_CQ_TENSOR, .shards = 1, .seed = 7}},
        {"ct-w4a16-channel-sym", {.format = "pack-quantized", .bits = 4, .sym = 1,
                                  .strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 8}},
        {"ct-w8a8-int-quantized", {.format = "int-quantized", .bits = 8, .sym = 1,
                                   .strategy = QBT_CQ_CHANNEL, .act_quant = 1, .shards = 1,
                                   .seed = 9}},
        {"ct-w4-naive-g32-asym", {.format = "naive-quantized", .bits = 4, .sym = 0,
                                  .strategy = QBT_CQ_GROUP, .gs = 32, .shards = 1, .seed = 10}},
        {"ct-fp8-block32", {.format = "float-quantized", .fp8 = 1, .bits = 8, .sym = 1,
                            .strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1, .seed = 11}},
        {"ct-mixed", {.format = "pack-quantized", .mixed = 1, .shards = 1, .seed = 12}},
        {"ct-w4a16-g32-sym-3shards", {.format = "pack-quantized", .bits = 4, .sym = 1,
                                      .strategy = QBT_CQ_GROUP, .gs = 32, .shape_i32 = 1,
                                      .shards = 3, .seed = 13}},
    };
    char path[1024];
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: qb-gen-ct OUTDIR\n");
        return 2;
    }
    if (cq_mkdir(argv[1]) != 0)
        return 1;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", argv[1], v[i].name);
        if (qbt_ct_write(path, &v[i].s, NULL) != 0)
            return 1;
    }
    return 0;
}
#endif
