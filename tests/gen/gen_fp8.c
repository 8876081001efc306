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
 * Built with QBT_GEN_NO_MAIN as a library; with main() as qb-gen-fp8.
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_ct.h"

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

#ifndef QBT_GEN_NO_MAIN
/* qb-gen-fp8 OUTDIR: writes the demo set of FP8 fixtures. */
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
    if (argc != 2) {
        fprintf(stderr, "usage: qb-gen-fp8 OUTDIR\n");
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
