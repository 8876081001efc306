/*
 * Test fixtures: GPTQ checkpoints from known codes (see gen_gptq.h).
 *
 * Conventions mirrored from the upstream packers (facts, no code copied):
 *   - qweight [K*bits/32, N] I32, codes packed along K, lowest index in the
 *     lowest bits; 2/4/8 bits: `qweight[row] |= intweight[j] << (bits*(j-i))`;
 *     3 bits: ten values per word plus one value split across words
 *     (value 10: low 2 bits at 30..31 of word 0, high bit at 0 of word 1;
 *     value 21: low bit at 31 of word 1, high 2 bits at 0..1 of word 2)
 *     — AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py
 *     QuantLinear.pack;
 *   - qzeros [G, N*bits/32] I32 packed the same way along N, after
 *     `zeros -= 1` in uint32 for v1 (QuantLinear.pack); v2 (gptq_v2) stores
 *     the zeros as is (GPTQModel convert_gptq_v1_to_v2_format adds one per
 *     field, i.e. v2 = v1 + 1);
 *   - scales [G, N] F16; g_idx [K] I32, k // gs, or with act-order
 *     (perm position of k) // gs (AutoGPTQ auto_gptq/quantization/gptq.py
 *     GPTQ.fasterquant: g_idx computed in perm order then `[invperm]`);
 *   - symmetric zero = 2^(bits-1) (AutoGPTQ quantizer.py Quantizer.find_params).
 */
#include "gen_gptq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/qb_half.h>

#include "qbt_st_writer.h"

#define HID 128
#define INTER 256
#define LAYERS 2
#define VOCAB 64

static const char *const proj_names[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                          "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                          "mlp.down_proj"};

void qbt_qmodel_free(qbt_qmodel *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n_lin; i++) {
        free(m->lin[i].codes);
        free(m->lin[i].scales);
        free(m->lin[i].zeros);
        free(m->lin[i].g_idx);
        free(m->lin[i].dense);
    }
    for (i = 0; i < m->n_dense; i++)
        free(m->dense[i].data);
    free(m);
}

float qbt_qlin_value(const qbt_qlin *l, int64_t n, int64_t k)
{
    if (!l->quantized)
        return qb_f16_to_f32(l->dense[n * l->K + k]);
    {
        int32_t g = l->g_idx[k];
        int32_t q = l->codes[n * l->K + k];
        float s = qb_f16_to_f32(l->scales[n * l->G + (uint32_t)g]);
        return (float)(q - l->zeros[n * l->G + (uint32_t)g]) * s;
    }
}

int qbt_qmodel_find_lin(const qbt_qmodel *m, const char *tensor_name)
{
    size_t i, n;
    for (i = 0; i < m->n_lin; i++) {
        n = strlen(m->lin[i].name);
        if (strncmp(tensor_name, m->lin[i].name, n) == 0 && strcmp(tensor_name + n, ".weight") == 0)
            return (int)i;
    }
    return -1;
}

int qbt_qmodel_find_dense(const qbt_qmodel *m, const char *tensor_name)
{
    size_t i;
    for (i = 0; i < m->n_dense; i++)
        if (strcmp(m->dense[i].name, tensor_name) == 0)
            return (int)i;
    return -1;
}

int qbt_qlin_fill(qbt_qlin *l, uint64_t seed, int bits, int64_t group_size, int sym, int zmin,
                  int act_order)
{
    qbt_rng r = {seed};
    int64_t i, K = l->K, N = l->N;
    int maxq = (1 << bits) - 1;
    int64_t *perm = NULL;
    free(l->codes);
    free(l->scales);
    free(l->zeros);
    free(l->g_idx);
    free(l->dense);
    l->dense = NULL;
    l->quantized = 1;
    l->bits = bits;
    l->gs = group_size == -1 ? K : group_size;
    l->G = (uint32_t)((K + l->gs - 1) / l->gs);
    l->codes = malloc((size_t)(N * K));
    l->scales = malloc((size_t)N * l->G * 2);
    l->zeros = malloc((size_t)N * l->G * 4);
    l->g_idx = malloc((size_t)K * 4);
    perm = malloc((size_t)K * sizeof(int64_t));
    if (!l->codes || !l->scales || !l->zeros || !l->g_idx || !perm) {
        free(perm);
        return -1;
    }
    for (i = 0; i < N * K; i++)
        l->codes[i] = (uint8_t)(qbt_rng_u64(&r) % (uint64_t)(maxq + 1));
    for (i = 0; i < N * (int64_t)l->G; i++) {
        /* positive and negative fp16 scales of realistic magnitude */
        double s = (0.002 + 0.02 * qbt_rng_uniform(&r)) * ((qbt_rng_u64(&r) & 7) == 0 ? -1.0 : 1.0);
        l->scales[i] = qb_f32_to_f16((float)s);
        l->zeros[i] = sym ? (1 << (bits - 1)) : zmin + (int32_t)(qbt_rng_u64(&r) % (uint64_t)(maxq - zmin + 1));
    }
    for (i = 0; i < K; i++)
        perm[i] = i;
    if (act_order) {
        /* Fisher-Yates: the quantization order (argsort of the Hessian diagonal) */
        for (i = K - 1; i > 0; i--) {
            int64_t j = (int64_t)(qbt_rng_u64(&r) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    /* g_idx[perm[p]] = p // gs: groups are consecutive in quantization order */
    for (i = 0; i < K; i++)
        l->g_idx[perm[i]] = (int32_t)(i / l->gs);
    free(perm);
    return 0;
}

static int add_dense(qbt_qmodel *m, qbt_rng *r, const char *name, int n_dims, int64_t d0, int64_t d1,
                     int f32, float base)
{
    qbt_qdense *d = &m->dense[m->n_dense];
    int64_t n = n_dims == 1 ? d0 : d0 * d1, i;
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->n_dims = n_dims;
    d->dims[0] = d0;
    d->dims[1] = d1;
    d->dtype = f32 ? "F32" : "F16";
    d->n_bytes = (size_t)n * (f32 ? 4 : 2);
    d->data = malloc(d->n_bytes);
    if (!d->data)
        return -1;
    for (i = 0; i < n; i++) {
        float v = base + (float)(0.05 * qbt_rng_normal(r));
        if (f32)
            ((float *)d->data)[i] = v;
        else
            ((uint16_t *)d->data)[i] = qb_f32_to_f16(v);
    }
    m->n_dense++;
    return 0;
}

qbt_qmodel *qbt_qmodel_build(uint64_t seed, int bits, int64_t group_size, int sym, int zmin,
                             int act_order)
{
    qbt_qmodel *m = calloc(1, sizeof(*m));
    qbt_rng r = {seed ^ 0x5eedULL};
    int L, p;
    char name[128];
    if (!m)
        return NULL;
    if (add_dense(m, &r, "model.embed_tokens.weight", 2, VOCAB, HID, 0, 0.0f))
        goto fail;
    for (L = 0; L < LAYERS; L++) {
        for (p = 0; p < 7; p++) {
            qbt_qlin *l = &m->lin[m->n_lin++];
            snprintf(l->name, sizeof(l->name), "model.layers.%d.%s", L, proj_names[p]);
            l->N = p >= 4 && p < 6 ? INTER : HID;
            l->K = p == 6 ? INTER : HID;
            if (qbt_qlin_fill(l, seed * 131 + (uint64_t)(L * 7 + p) + 1, bits, group_size, sym, zmin,
                              act_order))
                goto fail;
        }
        snprintf(name, sizeof(name), "model.layers.%d.self_attn.q_proj.bias", L);
        if (add_dense(m, &r, name, 1, HID, 1, 0, 0.0f))
            goto fail;
        snprintf(name, sizeof(name), "model.layers.%d.input_layernorm.weight", L);
        if (add_dense(m, &r, name, 1, HID, 1, 1, 1.0f))
            goto fail;
        snprintf(name, sizeof(name), "model.layers.%d.post_attention_layernorm.weight", L);
        if (add_dense(m, &r, name, 1, HID, 1, 1, 1.0f))
            goto fail;
    }
    if (add_dense(m, &r, "model.norm.weight", 1, HID, 1, 1, 1.0f))
        goto fail;
    if (add_dense(m, &r, "lm_head.weight", 2, VOCAB, HID, 0, 0.0f))
        goto fail;
    return m;
fail:
    qbt_qmodel_free(m);
    return NULL;
}

int qbt_write_llama_config(const char *dir, const char *qc_json)
{
    char path[1024], *text;
    int rc;
    size_t n = strlen(qc_json) + 1024;
    text = malloc(n);
    if (!text)
        return -1;
    snprintf(text, n,
             "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
             "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
             "  \"num_attention_heads\": 4,\n  \"num_key_value_heads\": 4,\n  \"vocab_size\": %d,\n"
             "  \"rms_norm_eps\": 1e-05,\n  \"max_position_embeddings\": 256,\n"
             "  \"hidden_act\": \"silu\",\n  \"rope_theta\": 10000.0,\n"
             "  \"tie_word_embeddings\": false,\n  \"torch_dtype\": \"float16\",\n"
             "  \"quantization_config\": %s\n}\n",
             HID, INTER, LAYERS, VOCAB, qc_json);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    rc = qbt_write_text(path, text);
    free(text);
    return rc;
}

/* ---- sharded output ---------------------------------------------------- */

typedef struct gen_out {
    qbt_st_writer *w[2];
    int n_shards;
} gen_out;

static int gen_out_init(gen_out *o, int n_shards)
{
    o->n_shards = n_shards < 2 ? 1 : 2;
    o->w[0] = qbt_st_writer_new();
    o->w[1] = qbt_st_writer_new();
    return o->w[0] && o->w[1] ? 0 : -1;
}

static void gen_out_free(gen_out *o)
{
    qbt_st_writer_free(o->w[0]);
    qbt_st_writer_free(o->w[1]);
}

static int gen_add(gen_out *o, int shard, const char *name, const char *dtype, int n_dims,
                   const int64_t *dims, const void *data, size_t n_bytes)
{
    return qbt_st_writer_add(o->w[o->n_shards == 1 ? 0 : shard], name, dtype, n_dims, dims, data, n_bytes);
}

/* Saves the shards and the index. remap_name (or NULL) is written into the
 * index as living in file remap_file instead of its real shard. */
static int gen_out_save(const gen_out *o, const char *dir, const char *remap_name, const char *remap_file)
{
    char path[1024], fname[2][64];
    size_t cap = 1 << 20, len = 0, i;
    int s, first = 1, rc = -1;
    char *idx;
    if (o->n_shards == 1) {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        return qbt_st_writer_save(o->w[0], path);
    }
    idx = malloc(cap);
    if (!idx)
        return -1;
    len += (size_t)snprintf(idx + len, cap - len, "{\n  \"metadata\": {\"total_size\": %zu},\n  \"weight_map\": {\n",
                            qbt_st_writer_total_bytes(o->w[0]) + qbt_st_writer_total_bytes(o->w[1]));
    for (s = 0; s < 2; s++) {
        snprintf(fname[s], sizeof(fname[s]), "model-%05d-of-%05d.safetensors", s + 1, 2);
        snprintf(path, sizeof(path), "%s/%s", dir, fname[s]);
        if (qbt_st_writer_save(o->w[s], path))
            goto out;
    }
    for (s = 0; s < 2; s++)
        for (i = 0; i < qbt_st_writer_count(o->w[s]); i++) {
            const char *nm = qbt_st_writer_name(o->w[s], i);
            const char *f = remap_name && strcmp(nm, remap_name) == 0 ? remap_file : fname[s];
            if (len + strlen(nm) + strlen(f) + 32 > cap)
                goto out;
            len += (size_t)snprintf(idx + len, cap - len, "%s    \"%s\": \"%s\"", first ? "" : ",\n", nm, f);
            first = 0;
        }
    snprintf(idx + len, cap - len, "\n  }\n}\n");
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    rc = qbt_write_text(path, idx);
out:
    free(idx);
    return rc;
}

/* ---- GPTQ packing ------------------------------------------------------ */

/* Packs vals[0..count) (count a multiple of 32 for 3 bits, of 32/bits
 * otherwise) into 32-bit words the way QuantLinear.pack does for one
 * qweight column / one qzeros row. */
static void gptq_pack_stream(const uint32_t *vals, int64_t count, int bits, uint32_t *words)
{
    int64_t i = 0, row = 0, j;
    while (i < count) {
        if (bits != 3) {
            int pf = 32 / bits;
            words[row] = 0;
            for (j = i; j < i + pf && j < count; j++)
                words[row] |= vals[j] << (bits * (j - i));
            i += pf;
            row++;
        } else {
            words[row] = words[row + 1] = words[row + 2] = 0;
            for (j = i; j < i + 10; j++)
                words[row] |= vals[j] << (3 * (j - i));
            i += 10;
            words[row] |= vals[i] << 30;
            row++;
            words[row] |= (vals[i] >> 2) & 1;
            i += 1;
            for (j = i; j < i + 10; j++)
                words[row] |= vals[j] << (3 * (j - i) + 1);
            i += 10;
            words[row] |= vals[i] << 31;
            row++;
            words[row] |= (vals[i] >> 1) & 3;
            i += 1;
            for (j = i; j < i + 10; j++)
                words[row] |= vals[j] << (3 * (j - i) + 2);
            i += 10;
            row++;
        }
    }
}

/* GPTQModel pack_dtype (gptqmodel/nn_modules/qlinear/__init__.py
 * pack_cols / _register_gptq_buffers): the same sequential rule with
 * pf = word_bits / bits values per word, ceil(count / pf) words. Writes
 * words little-endian into out at word stride `stride` (in words). */
static void gptq_pack_wide(const uint32_t *vals, int64_t count, int bits, uint32_t W, uint8_t *out,
                           uint64_t first, uint64_t stride)
{
    int64_t pf = W / bits, nw = (count + pf - 1) / pf, w, j;
    uint32_t b;
    for (w = 0; w < nw; w++) {
        uint64_t v = 0, at = (first + (uint64_t)w * stride) * (W / 8);
        for (j = 0; j < pf && w * pf + j < count; j++)
            v |= (uint64_t)vals[w * pf + j] << (bits * j);
        for (b = 0; b < W / 8; b++)
            out[at + b] = (uint8_t)(v >> (8 * b));
    }
}

static const char *gptq_word_dtype(uint32_t W)
{
    return W == 8 ? "I8" : W == 16 ? "I16" : W == 64 ? "I64" : "I32";
}

static int64_t gptq_words(int64_t count, int bits)
{
    return bits == 3 ? count / 32 * 3 : (count * bits + 31) / 32;
}

/* gptq_write_lin for a pack_dtype other than int32 (col: K or N scratch). */
static int gptq_write_wide(gen_out *o, const qbt_qlin *l, const qbt_gptq_spec *sp, uint32_t *col,
                           int with_gidx)
{
    uint32_t W = (uint32_t)sp->word_bits;
    int64_t N = l->N, K = l->K, G = l->G, n, k, g, pf = W / l->bits;
    int64_t kw = (K + pf - 1) / pf, zw = (N + pf - 1) / pf;
    uint8_t *qweight = calloc((size_t)(kw * N), W / 8), *qzeros = calloc((size_t)(G * zw), W / 8);
    uint16_t *scales = malloc((size_t)(G * N) * 2);
    char name[192];
    int64_t dims[2];
    int rc = -1, sshard = o->n_shards > 1 ? 1 : 0;
    if (!qweight || !qzeros || !scales)
        goto out;
    for (n = 0; n < N; n++) {
        for (k = 0; k < K; k++)
            col[k] = l->codes[n * K + k];
        gptq_pack_wide(col, K, l->bits, W, qweight, (uint64_t)n, (uint64_t)N);
    }
    for (g = 0; g < G; g++) {
        for (n = 0; n < N; n++) {
            /* v1 stores zero - 1 masked to the field (GPTQModel pack) */
            col[n] = ((uint32_t)l->zeros[n * G + g] - (sp->v2 ? 0u : 1u)) & ((1u << l->bits) - 1);
            scales[g * N + n] = l->scales[n * G + g];
        }
        gptq_pack_wide(col, N, l->bits, W, qzeros, (uint64_t)(g * zw), 1);
    }
    snprintf(name, sizeof(name), "%s.qweight", l->name);
    dims[0] = kw;
    dims[1] = N;
    if (gen_add(o, 0, name, gptq_word_dtype(W), 2, dims, qweight, (size_t)(kw * N) * (W / 8)))
        goto out;
    snprintf(name, sizeof(name), "%s.qzeros", l->name);
    dims[0] = G;
    dims[1] = zw;
    if (gen_add(o, 0, name, gptq_word_dtype(W), 2, dims, qzeros, (size_t)(G * zw) * (W / 8)))
        goto out;
    snprintf(name, sizeof(name), "%s.scales", l->name);
    dims[0] = G;
    dims[1] = N;
    if (gen_add(o, sshard, name, "F16", 2, dims, scales, (size_t)(G * N) * 2))
        goto out;
    if (with_gidx) {
        snprintf(name, sizeof(name), "%s.g_idx", l->name);
        dims[0] = K;
        if (gen_add(o, 0, name, "I32", 1, dims, l->g_idx, (size_t)K * 4))
            goto out;
    }
    rc = 0;
out:
    free(qweight);
    free(qzeros);
    free(scales);
    return rc;
}

/* Writes qweight/qzeros/scales/g_idx of one linear. pack_bits != l->bits
 * only for the broken "shape disagrees with bits" variant. */
static int gptq_write_lin(gen_out *o, const qbt_qlin *l, const qbt_gptq_spec *sp, int pack_bits, int with_gidx,
                          int with_qzeros)
{
    int64_t N = l->N, K = l->K, G = l->G, n, k, g;
    int64_t kw = gptq_words(K, pack_bits), zw = gptq_words(N, pack_bits);
    uint32_t *col = malloc((size_t)(K > N ? K : N) * 4), *cw = malloc((size_t)kw * 4);
    uint32_t *qweight = malloc((size_t)(kw * N) * 4), *qzeros = malloc((size_t)(G * zw) * 4);
    uint16_t *scales = malloc((size_t)(G * N) * 2);
    char name[192];
    int64_t dims[2];
    int rc = -1, sshard = o->n_shards > 1 ? 1 : 0, wshard = 0;
    uint32_t vmask = (1u << pack_bits) - 1;
    if (!col || !cw || !qweight || !qzeros || !scales)
        goto out;
    if (sp->word_bits && sp->word_bits != 32) {
        rc = gptq_write_wide(o, l, sp, col, with_gidx);
        goto out;
    }
    for (n = 0; n < N; n++) {
        for (k = 0; k < K; k++)
            col[k] = l->codes[n * K + k] & vmask;
        gptq_pack_stream(col, K, pack_bits, cw);
        for (k = 0; k < kw; k++)
            qweight[k * N + n] = cw[k];
    }
    for (g = 0; g < G; g++) {
        for (n = 0; n < N; n++) {
            /* v1: `zeros -= 1` on uint32 before packing (QuantLinear.pack) */
            uint32_t z = (uint32_t)l->zeros[n * G + g] - (sp->v2 ? 0u : 1u);
            col[n] = pack_bits == l->bits ? z : (z & vmask);
            scales[g * N + n] = l->scales[n * G + g];
        }
        gptq_pack_stream(col, N, pack_bits, qzeros + g * zw);
    }
    snprintf(name, sizeof(name), "%s.qweight", l->name);
    dims[0] = kw;
    dims[1] = N;
    if (gen_add(o, wshard, name, "I32", 2, dims, qweight, (size_t)(kw * N) * 4))
        goto out;
    if (with_qzeros) {
        snprintf(name, sizeof(name), "%s.qzeros", l->name);
        dims[0] = G;
        dims[1] = zw;
        if (gen_add(o, wshard, name, "I32", 2, dims, qzeros, (size_t)(G * zw) * 4))
            goto out;
    }
    snprintf(name, sizeof(name), "%s.scales", l->name);
    dims[0] = G;
    dims[1] = N;
    if (gen_add(o, sshard, name, "F16", 2, dims, scales, (size_t)(G * N) * 2))
        goto out;
    if (with_gidx) {
        snprintf(name, sizeof(name), "%s.g_idx", l->name);
        dims[0] = K;
        if (gen_add(o, wshard, name, "I32", 1, dims, l->g_idx, (size_t)K * 4))
            goto out;
    }
    rc = 0;
out:
    free(col);
    free(cw);
    free(qweight);
    free(qzeros);
    free(scales);
    return rc;
}

int qbt_gptq_write(const char *dir, const qbt_gptq_spec *sp, qbt_qmodel **truth)
{
    qbt_qmodel *m;
    gen_out o;
    size_t i;
    int rc = -1;
    char qc[2048], dyn[512] = "", label[96] = "", path[1024];
    /* v1 cannot store a real zero of 0 intact (docs/formats/gptq.md, "Zero points") */
    int zmin = sp->v2 || sp->v1_zero0 ? 0 : 1;
    int conv_v2 = sp->wrong_label ? !sp->v2 : sp->v2;

    if (gen_out_init(&o, sp->n_shards)) {
        gen_out_free(&o);
        return -1;
    }
    m = qbt_qmodel_build(sp->seed, sp->bits, sp->group_size, sp->sym, zmin,
                         sp->act_order || sp->broken == QBT_BROKEN_DESC_ACT_NO_GIDX);
    if (!m)
        goto out;
    if (sp->broken == QBT_BROKEN_BAD_GIDX)
        m->lin[0].g_idx[0] = (int32_t)m->lin[0].G; /* one group id out of range */
    if (sp->broken == QBT_BROKEN_GIDX_COUNTS)
        m->lin[0].g_idx[0] = (m->lin[0].g_idx[0] + 1) % (int32_t)m->lin[0].G;
    if (sp->dynamic) {
        /* GPTQModel dynamic: first match wins; "-:" leaves a module dense */
        for (i = 0; i < m->n_lin; i++) {
            qbt_qlin *l = &m->lin[i];
            if (strncmp(l->name, "model.layers.1.", 15) == 0 &&
                qbt_qlin_fill(l, sp->seed * 977 + i, 8, 32, sp->sym, zmin, 0))
                goto out;
            if (strcmp(l->name, "model.layers.0.mlp.down_proj") == 0) {
                int64_t e;
                qbt_rng r = {sp->seed + 99};
                l->quantized = 0;
                l->dense = malloc((size_t)(l->N * l->K) * 2);
                if (!l->dense)
                    goto out;
                for (e = 0; e < l->N * l->K; e++)
                    l->dense[e] = qb_f32_to_f16((float)(0.02 * qbt_rng_normal(&r)));
            }
        }
        snprintf(dyn, sizeof(dyn),
                 ",\n    \"dynamic\": {\"-:model\\\\.layers\\\\.0\\\\.mlp\\\\.down_proj\": {}, "
                 "\"+:model\\\\.layers\\\\.1\\\\..*\": {\"bits\": 8, \"group_size\": 32}}");
    }
    if (sp->label)
        snprintf(label, sizeof(label), ",\n    \"checkpoint_format\": \"%s\"", conv_v2 ? "gptq_v2" : "gptq");
    snprintf(qc, sizeof(qc),
             "{\n    \"quant_method\": \"gptq\",\n    \"bits\": %d,\n    \"group_size\": %lld,\n"
             "    \"desc_act\": %s,\n    \"sym\": %s,\n    \"static_groups\": false,\n"
             "    \"true_sequential\": true,\n    \"damp_percent\": 0.01%s%s\n  }",
             sp->bits, (long long)sp->group_size,
             sp->act_order || sp->broken == QBT_BROKEN_DESC_ACT_NO_GIDX ? "true" : "false",
             sp->sym ? "true" : "false", label, dyn);
    if (qbt_write_llama_config(dir, qc))
        goto out;
    if (sp->side_file) {
        snprintf(path, sizeof(path), "%s/quantize_config.json", dir);
        if (qbt_write_text(path, qc))
            goto out;
    }
    /* tensors in HF order: embed, per layer linears + bias + norms, norm, head */
    for (i = 0; i < m->n_dense; i++) {
        const qbt_qdense *d = &m->dense[i];
        if (strstr(d->name, "layers."))
            continue;
        if (strcmp(d->name, "model.embed_tokens.weight") != 0)
            continue;
        if (gen_add(&o, 0, d->name, d->dtype, d->n_dims, d->dims, d->data, d->n_bytes))
            goto out;
    }
    for (i = 0; i < m->n_lin; i++) {
        const qbt_qlin *l = &m->lin[i];
        int broken_mod = i == 0; /* the module a broken variant breaks */
        if (!l->quantized) {
            char name[160];
            int64_t dims[2] = {l->N, l->K};
            snprintf(name, sizeof(name), "%s.weight", l->name);
            if (gen_add(&o, 0, name, "F16", 2, dims, l->dense, (size_t)(l->N * l->K) * 2))
                goto out;
            continue;
        }
        if (gptq_write_lin(&o, l, sp,
                           sp->broken == QBT_BROKEN_QWEIGHT_BITS ? 8 : l->bits,
                           sp->broken != QBT_BROKEN_DESC_ACT_NO_GIDX,
                           !(sp->broken == QBT_BROKEN_MISSING_QZEROS && broken_mod)))
            goto out;
    }
    for (i = 0; i < m->n_dense; i++) {
        const qbt_qdense *d = &m->dense[i];
        if (strcmp(d->name, "model.embed_tokens.weight") == 0)
            continue;
        if (gen_add(&o, strstr(d->name, "layers.1.") || !strstr(d->name, "layers.") ? 1 : 0, d->name,
                    d->dtype, d->n_dims, d->dims, d->data, d->n_bytes))
            goto out;
    }
    if (sp->v1_zero0 && !sp->v2 && (sp->bits == 2 || sp->bits == 4 || sp->bits == 8)) {
        /* the packed -1 set every higher field of its word to all-ones;
         * AutoGPTQ QuantLinear.forward reads those as (maxq + 1) & maxq = 0 */
        for (i = 0; i < m->n_lin; i++) {
            qbt_qlin *l = &m->lin[i];
            int64_t pf = 32 / l->bits, n, g;
            for (g = 0; g < (int64_t)l->G; g++)
                for (n = 0; n < l->N; n++) {
                    int64_t n0 = n / pf * pf, j;
                    for (j = n0; j < n; j++)
                        if (l->zeros[j * l->G + g] == 0)
                            break;
                    if (j < n)
                        l->zeros[n * l->G + g] = 0;
                }
        }
    }
    if (sp->broken == QBT_BROKEN_SCALE_MISSING_SHARD)
        rc = gen_out_save(&o, dir, "model.layers.0.self_attn.q_proj.scales", "model-00003-of-00003.safetensors");
    else if (sp->broken == QBT_BROKEN_MISMATCHED_SHARDS)
        rc = gen_out_save(&o, dir, "model.layers.0.self_attn.q_proj.scales", "model-00001-of-00002.safetensors");
    else
        rc = gen_out_save(&o, dir, NULL, NULL);
out:
    gen_out_free(&o);
    if (rc == 0 && truth)
        *truth = m;
    else
        qbt_qmodel_free(m);
    return rc;
}
