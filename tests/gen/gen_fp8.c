/*
 * Test fixtures: `quant_method: fp8` checkpoints from known FP8 bytes and
 * F32 scales (see gen_ct.h).
 *
 * Conventions mirrored from upstream:
 *   - deepseek-ai/DeepSeek-V3 inference/kernel.py (docs/formats/fp8.md)
 *     weight_dequant: <m>.weight F8_E4M3 [N, K], <m>.weight_scale_inv F32
 *     [ceil(N/bn), ceil(K/bk)] multiplied per block, partial edge blocks;
 *     config {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme":
 *     "dynamic", "weight_block_size": [bn, bk]};
 *   - vllm fp8.py (Fp8Config without block size): <m>.weight_scale F32
 *     scalar per tensor, <m>.input_scale with activation_scheme "static";
 *     per-channel weight_scale [N, 1] as llm-compressor/FBGEMM write it.
 *   - DeepSeek-V3's released FP8 weights (docs/formats/fp8.md,
 *     "DeepSeek-V3 checkpoints"; names from model.safetensors.index.json): 128x128
 *     block scales with partial edge blocks, BF16 norms / router /
 *     embeddings / heads, F32 e_score_correction_bias, the MTP layer as
 *     model.layers.{num_hidden_layers}.* (qbt_fp8_ds_write).
 * Built with QBT_GEN_NO_MAIN as a library; with main() as qb-gen-fp8.
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_ct.h"
#include "gen_hf_dense.h"
#include "qbt_st_writer.h"

#include <quantbridge/qb_half.h>

static int f8_add_scale(qbt_cq_writer *w, const char *name, const qbt_cq_lin *l, int broken_shape)
{
    int64_t dims[2] = {0, 0};
    int nd;

    if (l->strategy == QBT_CQ_TENSOR) {
        nd = 0; /* a 0-dim scalar, as torch.save of a scalar tensor gives */
        return qbt_cq_add(w, name, "F32", nd, dims, l->scale, 4);
    }
    if (l->strategy == QBT_CQ_CHANNEL) {
        dims[0] = l->N;
        dims[1] = 1;
        return qbt_cq_add(w, name, "F32", 2, dims, l->scale, (size_t)l->N * 4);
    }
    dims[0] = l->SR;
    dims[1] = l->G - (broken_shape ? 1 : 0);
    {
        /* row-major [SR, G - broken]: copy the leading columns */
        float *buf = malloc((size_t)(dims[0] * dims[1] + 1) * 4);
        int64_t r, c;
        int rc;
        if (!buf)
            return -1;
        for (r = 0; r < dims[0]; r++)
            for (c = 0; c < dims[1]; c++)
                buf[r * dims[1] + c] = l->scale[r * l->G + c];
        rc = qbt_cq_add(w, name, "F32", 2, dims, buf, (size_t)(dims[0] * dims[1]) * 4);
        free(buf);
        return rc;
    }
}

int qbt_fp8_write(const char *dir, const qbt_fp8_spec *spec, qbt_cq_model **truth)
{
    qbt_cq_module mods[16];
    size_t n_mod = qbt_cq_modules(mods, 16), i;
    qbt_cq_model *m = calloc(1, sizeof(*m));
    qbt_cq_writer *w = qbt_cq_writer_new(spec->shards > 0 ? spec->shards : 1);
    qbt_rng rng = {spec->seed ? spec->seed : 11};
    char qc[1024], name[192], victim[192] = "";
    int rc = -1, skip = -1;

    if (!m || !w)
        goto out;
    if (qbt_cq_add_dense(w, m, spec->seed) != 0)
        goto out;
    for (i = 0; i < n_mod; i++) {
        qbt_cq_lin *l;
        int64_t dims[2];
        qbt_cq_join(name, sizeof(name), mods[i].name, ".weight");
        l = qbt_cq_new(m, name);
        if (!l)
            goto out;
        l->N = mods[i].N;
        l->K = mods[i].K;
        if (qbt_cq_fill(l, &rng, QBT_CQ_FP8, 8, 1, spec->strategy, 0, spec->bh, spec->bw, 0,
                        spec->e5m2, 0) != 0)
            goto out;
        dims[0] = l->N;
        dims[1] = l->K;
        if (qbt_cq_add(w, name, spec->e5m2 ? "F8_E5M2" : "F8_E4M3", 2, dims, l->f8,
                       (size_t)(l->N * l->K)) != 0)
            goto out;
        qbt_cq_join(name, sizeof(name), mods[i].name,
                    spec->strategy == QBT_CQ_BLOCK ? ".weight_scale_inv" : ".weight_scale");
        if (!(spec->broken == QBT_FP8_BROKEN_MISSING_SCALE && i == 0) &&
            f8_add_scale(w, name, l, spec->broken == QBT_FP8_BROKEN_SCALE_SHAPE && i == 4) != 0)
            goto out;
        if (i == 3)
            qbt_cq_join(victim, sizeof(victim), name, "");
        if (spec->input_scale) {
            float one = 0.5f;
            int64_t d1 = 1;
            qbt_cq_join(name, sizeof(name), mods[i].name, ".input_scale");
            if (qbt_cq_add(w, name, "F32", 1, &d1, &one, 4) != 0)
                goto out;
        }
    }
    if (spec->broken == QBT_FP8_BROKEN_LEFTOVER_SCALE) {
        float s[4] = {1, 1, 1, 1};
        int64_t d2[2] = {1, 1};
        if (qbt_cq_add(w, "lm_head.weight_scale_inv", "F32", 2, d2, s, 4) != 0)
            goto out;
    }
    if (spec->broken == QBT_FP8_BROKEN_MISSING_SHARD)
        skip = qbt_cq_shard_of(w, victim);
    if (spec->strategy == QBT_CQ_BLOCK)
        snprintf(qc, sizeof(qc),
                 "{\"quant_method\": \"fp8\", \"fmt\": \"%s\", \"activation_scheme\": \"%s\", "
                 "\"weight_block_size\": [%lld, %lld], \"modules_to_not_convert\": [\"lm_head\"]}",
                 spec->e5m2 ? "e5m2" : "e4m3", spec->input_scale ? "static" : "dynamic",
                 (long long)spec->bh, (long long)spec->bw);
    else
        snprintf(qc, sizeof(qc),
                 "{\"quant_method\": \"fp8\", \"fmt\": \"%s\", \"activation_scheme\": \"%s\", "
                 "\"ignored_layers\": [\"lm_head\"]}",
                 spec->e5m2 ? "e5m2" : "e4m3", spec->input_scale ? "static" : "dynamic");
    rc = qbt_cq_finish(w, dir, qc, skip);
    w = NULL;
out:
    qbt_cq_writer_free(w); /* unfinished: release the shard writers */
    if (rc == 0 && truth)
        *truth = m;
    else
        qbt_cq_model_free(m);
    return rc;
}

/* ---- DeepSeek-V3 FP8 ------------------------------------------------------ */

#define DS_BLOCK 128 /* weight_block_size [128, 128] of DeepSeek-V3 */
#define E4M3_MAX 448.0

/* Nearest E4M3FN code of v (|v| <= 448) given tab[c] = value of code c
 * for c = 0 .. 0x7e (increasing), ties to the even code. */
static uint8_t ds_e4m3(const double *tab, double v)
{
    double a = v < 0 ? -v : v;
    int lo = 0, hi = 0x7e, c;
    while (hi - lo > 1) { /* tab[lo] <= a <= tab[hi] */
        int mid = (lo + hi) / 2;
        if (tab[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    c = a - tab[lo] < tab[hi] - a || (a - tab[lo] == tab[hi] - a && (lo & 1) == 0) ? lo : hi;
    return (uint8_t)(c | (v < 0 ? 0x80 : 0));
}

int qbt_fp8_ds_is_fp8(const qbt_hfd_tensor *t)
{
    static const char *const bf16_linears[] = {"lm_head.weight", ".mlp.gate.weight",
                                               ".shared_head.head.weight", NULL};
    size_t i, n = strlen(t->name);
    if (t->kind != QBT_HFD_LINEAR)
        return 0;
    for (i = 0; bf16_linears[i]; i++) {
        size_t m = strlen(bf16_linears[i]);
        if (n >= m && strcmp(t->name + n - m, bf16_linears[i]) == 0)
            return 0;
    }
    return 1;
}

/* Codes, block scales ([ceil(N/128), ceil(K/128)]) and dequantized values
 * of an FP8 tensor; any output may be NULL. scale_inv = block amax / 448 as
 * float (1 for an all-zero block), code = nearest E4M3 of v / scale_inv. */
static int ds_quant(const qbt_hfd_spec *s, const qbt_hfd_tensor *t, uint8_t *codes, float *scales,
                    float *vals)
{
    int64_t N = t->dims[0], K = t->dims[1], SR = (N + DS_BLOCK - 1) / DS_BLOCK;
    int64_t G = (K + DS_BLOCK - 1) / DS_BLOCK, br, bc, r, c;
    float *v = malloc((size_t)(N * K) * sizeof *v);
    double tab[0x7f];
    if (!v)
        return -1;
    for (c = 0; c <= 0x7e; c++)
        tab[c] = qbt_fp8_value((uint8_t)c, 0);
    qbt_hfd_fill(s, t, v);
    for (br = 0; br < SR; br++)
        for (bc = 0; bc < G; bc++) {
            float amax = 0.0f, sc;
            for (r = br * DS_BLOCK; r < N && r < (br + 1) * DS_BLOCK; r++)
                for (c = bc * DS_BLOCK; c < K && c < (bc + 1) * DS_BLOCK; c++)
                    amax = fabsf(v[r * K + c]) > amax ? fabsf(v[r * K + c]) : amax;
            sc = amax > 0.0f ? (float)(amax / E4M3_MAX) : 1.0f;
            if (scales)
                scales[br * G + bc] = sc;
            for (r = br * DS_BLOCK; r < N && r < (br + 1) * DS_BLOCK; r++)
                for (c = bc * DS_BLOCK; c < K && c < (bc + 1) * DS_BLOCK; c++) {
                    double x = (double)v[r * K + c] / sc;
                    uint8_t q = ds_e4m3(tab, x > E4M3_MAX ? E4M3_MAX : x < -E4M3_MAX ? -E4M3_MAX : x);
                    if (codes)
                        codes[r * K + c] = q;
                    if (vals)
                        vals[r * K + c] = (float)qbt_fp8_value(q, 0) * sc;
                }
        }
    free(v);
    return 0;
}

int qbt_fp8_ds_values(const qbt_hfd_spec *s, const qbt_hfd_tensor *t, float *out)
{
    size_t i, n = qbt_hfd_numel(t);
    if (qbt_fp8_ds_is_fp8(t))
        return ds_quant(s, t, NULL, NULL, out);
    qbt_hfd_fill(s, t, out);
    for (i = 0; i < n; i++)
        out[i] = qbt_hfd_round(qbt_hfd_storage(s, t), out[i]);
    return 0;
}

/* Adds tensor t as the FP8 checkpoint stores it. */
static int ds_add(const qbt_hfd_spec *s, const qbt_hfd_tensor *t, qbt_st_writer *w)
{
    size_t n = qbt_hfd_numel(t), i;
    int rc = -1;
    if (qbt_fp8_ds_is_fp8(t)) {
        int64_t sd[2] = {(t->dims[0] + DS_BLOCK - 1) / DS_BLOCK,
                         (t->dims[1] + DS_BLOCK - 1) / DS_BLOCK};
        uint8_t *q = malloc(n);
        float *sc = malloc((size_t)(sd[0] * sd[1]) * sizeof *sc);
        char name[128];
        size_t stem = strlen(t->name) - strlen(".weight");
        snprintf(name, sizeof name, "%.*s.weight_scale_inv", (int)stem, t->name);
        if (q && sc && ds_quant(s, t, q, sc, NULL) == 0 &&
            qbt_st_writer_add(w, t->name, "F8_E4M3", 2, t->dims, q, n) == 0 &&
            qbt_st_writer_add(w, name, "F32", 2, sd, sc, (size_t)(sd[0] * sd[1]) * 4) == 0)
            rc = 0;
        free(q);
        free(sc);
        return rc;
    }
    {
        const char *dt = qbt_hfd_storage(s, t);
        int f32 = strcmp(dt, "f32") == 0;
        float *f = malloc(n * sizeof *f);
        uint8_t *b = malloc(n * (f32 ? 4 : 2));
        if (f && b) {
            qbt_hfd_fill(s, t, f);
            for (i = 0; i < n; i++) {
                if (f32) {
                    memcpy(b + 4 * i, &f[i], 4);
                } else {
                    uint16_t h = qb_f32_to_bf16(f[i]);
                    memcpy(b + 2 * i, &h, 2);
                }
            }
            rc = qbt_st_writer_add(w, t->name, f32 ? "F32" : "BF16", t->n_dims, t->dims, b,
                                   n * (f32 ? 4 : 2));
        }
        free(f);
        free(b);
        return rc;
    }
}

int qbt_fp8_ds_write(const char *dir, const qbt_hfd_spec *spec)
{
    qbt_hfd_spec s = *spec;
    qbt_hfd_tensor *t = NULL;
    qbt_st_writer *w = NULL;
    size_t n = 0, i, len;
    char path[4096], *cfg = NULL, *end;
    FILE *fp;
    int rc = -1;

    if (strcmp(s.arch, "deepseek_v3") != 0 && strcmp(s.arch, "deepseek_v2") != 0)
        return -1;
    /* the side files and config.json of the bf16 checkpoint, then its
     * weights replaced by the FP8 ones */
    s.dtype = "bf16";
    s.shards = 1;
    if (qbt_hfd_spec_check(&s) || qbt_hfd_write(&s, dir) || qbt_hfd_tensors(&s, &t, &n))
        goto out;
    w = qbt_st_writer_new();
    if (!w)
        goto out;
    for (i = 0; i < n; i++)
        if (ds_add(&s, &t[i], w))
            goto out;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (qbt_st_writer_add_meta(w, "format", "pt") || qbt_st_writer_save(w, path))
        goto out;
    snprintf(path, sizeof path, "%s/config.json", dir);
    fp = fopen(path, "rb");
    if (!fp)
        goto out;
    cfg = malloc(1 << 16);
    len = cfg ? fread(cfg, 1, (1 << 16) - 512, fp) : 0;
    fclose(fp);
    if (!cfg || len == 0)
        goto out;
    cfg[len] = '\0';
    end = strrchr(cfg, '}');
    if (!end)
        goto out;
    snprintf(end, 512,
             ",\n  \"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": "
             "\"e4m3\", \"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}\n}\n");
    /* the key goes after the last member: drop the newline before '}' */
    if (end > cfg && end[-1] == '\n')
        memmove(end - 1, end, strlen(end) + 1);
    rc = qbt_write_text(path, cfg);
out:
    qbt_st_writer_free(w);
    free(cfg);
    free(t);
    return rc;
}

#ifndef QBT_GEN_NO_MAIN
/* qb-gen-fp8 OUTDIR: writes the demo set of FP8 fixtures.
 * qb-gen-fp8 --deepseek-v3 OUTDIR: a small DeepSeek-V3 FP8 checkpoint
 * (3 layers, 1 dense, 4 routed experts, the MTP layer; hidden 160 so
 * every 128x128 grid has partial edge blocks). */
int main(int argc, char **argv)
{
    static const struct { const char *name; qbt_fp8_spec s; } v[] = {
        {"fp8-block128", {.strategy = QBT_CQ_BLOCK, .bh = 128, .bw = 128, .shards = 1, .seed = 1}},
        {"fp8-block48x40", {.strategy = QBT_CQ_BLOCK, .bh = 48, .bw = 40, .shards = 2, .seed = 2}},
        {"fp8-tensor", {.strategy = QBT_CQ_TENSOR, .input_scale = 1, .shards = 1, .seed = 3}},
        {"fp8-channel", {.strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 4}},
        {"fp8-e5m2-block32", {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .e5m2 = 1,
                              .shards = 1, .seed = 5}},
    };
    char path[1024];
    size_t i;
    if (argc == 3 && strcmp(argv[1], "--deepseek-v3") == 0) {
        qbt_hfd_spec ds = {.arch = "deepseek_v3", .dtype = "bf16", .layers = 3, .hidden = 160,
                           .intermediate = 200, .vocab = 64, .shards = 1, .seed = 3,
                           .n_routed_experts = 4, .first_k_dense = 1, .mtp_layers = 1};
        return qbt_fp8_ds_write(argv[2], &ds) == 0 ? 0 : 1;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: qb-gen-fp8 OUTDIR | qb-gen-fp8 --deepseek-v3 OUTDIR\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", argv[1], v[i].name);
        if (qbt_fp8_write(path, &v[i].s, NULL) != 0)
            return 1;
    }
    return 0;
}
#endif
