/*
 * Test fixtures: 4-bit float checkpoints (see gen_fp4.h).
 *
 * Each linear starts from normal weights and is quantized the way its
 * producer does it, then stored in the producer's layout:
 *   - compressed-tensors 0.20.1 (docs/formats/nvfp4.md): global scale
 *     448 * 6 / amax(tensor) as F32 [1] (quantization/utils/helpers.py
 *     generate_gparam), group-16 scale amax(group) / 6 * global rounded to
 *     E4M3 (calculate_qparams), codes packed by
 *     compressors/nvfp4/helpers.py pack_fp4_to_uint8 (even column in the
 *     low nibble, sign from signbit so -0 is code 8); MXFP4: group-32 E8M0
 *     exponent 127 + floor(log2(amax)) - 2 as U8 (quantization/utils/
 *     mxfp_utils.py generate_mx_scales, without its round_to_power_2 step);
 *   - ModelOpt (modelopt/torch/quantization/qtensor/nvfp4_tensor.py
 *     NVFP4QTensor.quantize / get_weights_scaling_factor(_2)): weight_scale_2
 *     = amax / (6 * 448) as an F32 scalar, weight_scale = amax(group) /
 *     (6 * weight_scale_2) clamped at 2^-9 and cast to E4M3, codes packed
 *     `(q[..., 1::2] << 4) | q[..., 0::2]`; tensors weight (U8),
 *     weight_scale, weight_scale_2 and input_scale (an activation scale);
 *     hf_quant_config.json {"producer", "quantization": {"quant_algo":
 *     "NVFP4", "group_size": 16, "exclude_modules"}} and/or config.json
 *     quantization_config {"quant_method": "modelopt", ...}.
 * Row 0 of each linear is scaled by 1e-5 so its E4M3 scales are subnormal.
 * Built with QBT_GEN_NO_MAIN as a library; with main() as qb-gen-fp4.
 */
#define _XOPEN_SOURCE 700
#include "gen_fp4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <quantbridge/qb_half.h>

#include "qbt_st_writer.h"

double qbt_e2m1_value(uint8_t nib)
{
    int e = (nib >> 1) & 3, m = nib & 1;
    double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
    return (nib & 8) ? -v : v;
}

float qbt_fp4_value(const qbt_fp4_lin *l, int64_t n, int64_t k)
{
    uint8_t b = l->packed[(size_t)(n * (l->K / 2) + k / 2)];
    uint8_t nib = (k % 2) ? (uint8_t)(b >> 4) : (uint8_t)(b & 15);
    uint8_t s = l->scale[(size_t)(n * (l->K / l->gs) + k / l->gs)];
    float e2m1 = (float)qbt_e2m1_value(nib);
    float sc;

    switch (l->form) {
    case QBT_FP4_CT_NVFP4:
        sc = (float)qbt_fp8_value(s, 0) / l->second;
        break;
    case QBT_FP4_MODELOPT:
        sc = (float)qbt_fp8_value(s, 0) * l->second;
        break;
    default:
        sc = (float)ldexp(1.0, (int)s - 127);
        break;
    }
    return e2m1 * sc;
}

const qbt_fp4_lin *qbt_fp4_find(const qbt_fp4_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name))
            return &m->t[i];
    return NULL;
}

void qbt_fp4_model_free(qbt_fp4_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n; i++) {
        free(m->t[i].packed);
        free(m->t[i].scale);
    }
    qbt_cq_model_free(m->dense);
    free(m);
}

/* Nearest finite positive E4M3 byte to v (v >= 2^-9 after the clamp). */
static uint8_t f4_e4m3_nearest(double v)
{
    uint8_t best = 1;
    double bd = INFINITY;
    int b;
    for (b = 1; b < 0x7F; b++) {
        double d = fabs(qbt_fp8_value((uint8_t)b, 0) - v);
        if (d < bd) {
            bd = d;
            best = (uint8_t)b;
        }
    }
    return best;
}

/* Nearest E2M1 code to x (clamped to +-6); the sign of a zero result
 * follows x (signbit, as pack_fp4_to_uint8 takes it). */
static uint8_t f4_e2m1_nearest(double x)
{
    uint8_t best = 0, c;
    double bd = INFINITY, a = fabs(x);
    for (c = 0; c < 8; c++) {
        double d = fabs(qbt_e2m1_value(c) - a);
        if (d < bd) {
            bd = d;
            best = c;
        }
    }
    return (uint8_t)(best | (signbit(x) ? 8 : 0));
}

static int f4_fill(qbt_fp4_lin *l, qbt_rng *rng)
{
    int64_t n, k, g, G = l->K / l->gs;
    double *w = malloc((size_t)(l->N * l->K) * sizeof(double)), amax = 0.0;

    l->packed = calloc((size_t)(l->N * l->K / 2), 1);
    l->scale = calloc((size_t)(l->N * G), 1);
    if (!w || !l->packed || !l->scale) {
        free(w);
        return -1;
    }
    for (n = 0; n < l->N; n++)
        for (k = 0; k < l->K; k++) {
            double v = 0.02 * qbt_rng_normal(rng) * (n == 0 ? 1e-5 : 1.0);
            w[n * l->K + k] = v;
            if (fabs(v) > amax)
                amax = fabs(v);
        }
    if (l->form == QBT_FP4_CT_NVFP4)
        l->second = (float)(448.0 * 6.0 / amax);
    else if (l->form == QBT_FP4_MODELOPT)
        l->second = l->pow2_second ? (float)ldexp(1.0, (int)floor(log2(amax / (6.0 * 448.0))))
                                   : (float)(amax / (6.0 * 448.0));
    for (n = 0; n < l->N; n++)
        for (g = 0; g < G; g++) {
            double ga = 0.0, s;
            uint8_t sb;
            for (k = g * l->gs; k < (g + 1) * l->gs; k++)
                if (fabs(w[n * l->K + k]) > ga)
                    ga = fabs(w[n * l->K + k]);
            if (ga == 0.0)
                ga = 1e-30;
            if (l->form == QBT_FP4_CT_MXFP4) {
                int e = (int)floor(log2(ga / 4.0));
                sb = (uint8_t)(127 + e);
                s = ldexp(1.0, e);
            } else if (l->form == QBT_FP4_CT_NVFP4) {
                sb = f4_e4m3_nearest(fmax(ga / 6.0 * l->second, ldexp(1.0, -9)));
                s = qbt_fp8_value(sb, 0) / l->second;
            } else {
                sb = f4_e4m3_nearest(fmax(ga / (6.0 * l->second), ldexp(1.0, -9)));
                s = qbt_fp8_value(sb, 0) * l->second;
            }
            l->scale[n * G + g] = sb;
            for (k = g * l->gs; k < (g + 1) * l->gs; k++) {
                uint8_t c = f4_e2m1_nearest(w[n * l->K + k] / s);
                size_t byte = (size_t)((n * l->K + k) / 2);
                l->packed[byte] |= (uint8_t)((k % 2) ? c << 4 : c);
            }
        }
    free(w);
    return 0;
}

/* A BF16 linear left dense (ignore list / exclude_modules). */
static int f4_dense_linear(qbt_cq_writer *w, qbt_cq_model *dense, const qbt_cq_module *mod,
                           qbt_rng *rng)
{
    char name[192];
    qbt_cq_lin *l;
    int64_t e, dims[2];

    qbt_cq_join(name, sizeof(name), mod->name, ".weight");
    l = qbt_cq_new(dense, name);
    if (!l)
        return -1;
    l->quant = QBT_CQ_DENSE;
    l->n_dims = 2;
    l->N = mod->N;
    l->K = mod->K;
    l->bf16 = malloc((size_t)(l->N * l->K) * 2);
    if (!l->bf16)
        return -1;
    for (e = 0; e < l->N * l->K; e++)
        l->bf16[e] = qb_f32_to_bf16((float)(0.02 * qbt_rng_normal(rng)));
    dims[0] = l->N;
    dims[1] = l->K;
    return qbt_cq_add(w, l->name, "BF16", 2, dims, l->bf16, (size_t)(l->N * l->K) * 2);
}

static int f4_add_linear(qbt_cq_writer *w, const qbt_fp4_lin *l, const char *module)
{
    char name[192];
    int64_t dims[2] = {l->N, l->K / 2}, sd[2] = {l->N, l->K / l->gs}, one = 1;
    int64_t scalar[1] = {1}; /* unused by a 0-dim tensor */
    size_t nsc = (size_t)(l->N * (l->K / l->gs));
    const char *sdt = l->form == QBT_FP4_CT_MXFP4 ? "U8" : "F8_E4M3";

    if (l->form == QBT_FP4_MODELOPT) {
        float in_scale = 0.0123f; /* an activation scale: not a weight */
        qbt_cq_join(name, sizeof(name), module, ".weight");
        if (qbt_cq_add(w, name, "U8", 2, dims, l->packed, (size_t)(l->N * l->K / 2)) != 0)
            return -1;
        qbt_cq_join(name, sizeof(name), module, ".weight_scale");
        if (qbt_cq_add(w, name, sdt, 2, sd, l->scale, nsc) != 0)
            return -1;
        qbt_cq_join(name, sizeof(name), module, ".weight_scale_2");
        if (qbt_cq_add(w, name, "F32", 0, scalar, &l->second, 4) != 0)
            return -1;
        qbt_cq_join(name, sizeof(name), module, ".input_scale");
        return qbt_cq_add(w, name, "F32", 0, scalar, &in_scale, 4);
    }
    if (l->form == QBT_FP4_CT_NVFP4) {
        qbt_cq_join(name, sizeof(name), module, ".weight_global_scale");
        if (qbt_cq_add(w, name, "F32", 1, &one, &l->second, 4) != 0)
            return -1;
    }
    qbt_cq_join(name, sizeof(name), module, ".weight_packed");
    if (qbt_cq_add(w, name, "U8", 2, dims, l->packed, (size_t)(l->N * l->K / 2)) != 0)
        return -1;
    qbt_cq_join(name, sizeof(name), module, ".weight_scale");
    return qbt_cq_add(w, name, sdt, 2, sd, l->scale, nsc);
}

static const char *const f4_excluded = "model.layers.1.mlp.down_proj";

static void f4_ct_config(char *qc, size_t cap, const qbt_fp4_spec *spec)
{
    int nv = spec->form == QBT_FP4_CT_NVFP4;
    const char *fmt = nv ? "nvfp4-pack-quantized" : "mxfp4-pack-quantized";
    /* the quantization_config compressed-tensors 0.20.1 writes for NVFP4A16 / MXFP4A16 */
    snprintf(qc, cap,
             "{\"config_groups\": {\"group_0\": {\"format\": \"%s\", \"input_activations\": null, "
             "\"output_activations\": null, \"targets\": [\"Linear\"], \"weights\": {\"dynamic\": "
             "false, \"group_size\": %d, \"num_bits\": 4, \"scale_dtype\": \"%s\", \"strategy\": "
             "\"%s\", \"symmetric\": true, \"type\": \"float\"}}}, \"format\": \"%s\", "
             "\"global_compression_ratio\": null, \"ignore\": [\"lm_head\"%s%s%s], "
             "\"kv_cache_scheme\": null, \"quant_method\": \"compressed-tensors\", "
             "\"quantization_status\": \"compressed\", \"sparsity_config\": {}, "
             "\"transform_config\": {}, \"version\": \"0.20.1\"}",
             fmt, nv ? 16 : 32, nv ? "torch.float8_e4m3fn" : "torch.uint8",
             nv ? "tensor_group" : "group", fmt, spec->exclude ? ", \"" : "",
             spec->exclude ? f4_excluded : "", spec->exclude ? "\"" : "");
}

static int f4_write_text(const char *dir, const char *file, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return qbt_write_text(path, text);
}

/* ModelOpt's older exports have no quantization_config key at all:
 * remove the placeholder line qbt_cq_finish wrote. */
static int f4_drop_qc(const char *dir)
{
    static const char key[] = ",\n  \"quantization_config\": null";
    char path[1024], buf[8192], *at;
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    if (!(f = fopen(path, "rb")))
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!(at = strstr(buf, key)))
        return -1;
    memmove(at, at + sizeof(key) - 1, strlen(at + sizeof(key) - 1) + 1);
    return f4_write_text(dir, "config.json", buf);
}

int qbt_fp4_write(const char *dir, const qbt_fp4_spec *spec, qbt_fp4_model **truth)
{
    qbt_cq_module mods[16];
    size_t n_mod = qbt_cq_modules(mods, 16), i;
    qbt_fp4_model *m = calloc(1, sizeof(*m));
    qbt_cq_writer *w = qbt_cq_writer_new(spec->shards > 0 ? spec->shards : 1);
    qbt_rng rng = {spec->seed ? spec->seed : 21};
    char qc[2048], excl[160], hq[1024];
    int rc = -1, mo = spec->form == QBT_FP4_MODELOPT;

    if (!m || !w || !(m->dense = calloc(1, sizeof(*m->dense))))
        goto out;
    if (qbt_cq_add_dense(w, m->dense, spec->seed) != 0)
        goto out;
    for (i = 0; i < n_mod; i++) {
        qbt_fp4_lin *l;
        if (spec->exclude && !strcmp(mods[i].name, f4_excluded)) {
            if (f4_dense_linear(w, m->dense, &mods[i], &rng) != 0)
                goto out;
            continue;
        }
        l = &m->t[m->n++];
        qbt_cq_join(l->name, sizeof(l->name), mods[i].name, ".weight");
        l->form = spec->form;
        l->N = mods[i].N;
        l->K = mods[i].K;
        l->gs = spec->form == QBT_FP4_CT_MXFP4 ? 32 : 16;
        l->pow2_second = spec->pow2_second;
        if (f4_fill(l, &rng) != 0 || f4_add_linear(w, l, mods[i].name) != 0)
            goto out;
    }
    if (!mo) {
        f4_ct_config(qc, sizeof(qc), spec);
    } else {
        /* exclusions as ModelOpt writes them: exact names and wildcards */
        snprintf(excl, sizeof(excl), "[\"lm_head\"%s]",
                 spec->exclude ? ", \"model.layers.1.mlp.down*\"" : "");
        if (spec->mo_config == 0)
            snprintf(qc, sizeof(qc), "null");
        else
            snprintf(qc, sizeof(qc), "{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", "
                     "\"kv_cache_quant_algo\": null, \"group_size\": 16, \"exclude_modules\": %s, "
                     "\"producer\": {\"name\": \"modelopt\", \"version\": \"0.37.0\"}}", excl);
        snprintf(hq, sizeof(hq), "{\n  \"producer\": {\"name\": \"modelopt\", \"version\": "
                 "\"0.37.0\"},\n  \"quantization\": {\"quant_algo\": \"NVFP4\", "
                 "\"kv_cache_quant_algo\": null, \"group_size\": 16, \"exclude_modules\": %s}\n}\n",
                 excl);
    }
    rc = qbt_cq_finish(w, dir, qc, -1);
    w = NULL;
    if (rc == 0 && mo && spec->mo_config == 0)
        rc = f4_drop_qc(dir);
    if (rc == 0 && mo && spec->mo_config != 1)
        rc = f4_write_text(dir, "hf_quant_config.json", hq);
out:
    qbt_cq_writer_free(w);
    if (rc == 0 && truth)
        *truth = m;
    else
        qbt_fp4_model_free(m);
    return rc;
}

#ifndef QBT_GEN_NO_MAIN
/* qb-gen-fp4 OUTDIR: writes the demo set of 4-bit float fixtures. */
int main(int argc, char **argv)
{
    static const struct { const char *name; qbt_fp4_spec s; } v[] = {
        {"ct-nvfp4", {.form = QBT_FP4_CT_NVFP4, .shards = 1, .seed = 31}},
        {"ct-nvfp4-exclude", {.form = QBT_FP4_CT_NVFP4, .exclude = 1, .shards = 2, .seed = 32}},
        {"ct-mxfp4", {.form = QBT_FP4_CT_MXFP4, .shards = 1, .seed = 33}},
        {"mo-nvfp4", {.form = QBT_FP4_MODELOPT, .mo_config = 0, .shards = 1, .seed = 34}},
        {"mo-nvfp4-config", {.form = QBT_FP4_MODELOPT, .mo_config = 1, .shards = 1, .seed = 35}},
        {"mo-nvfp4-both-exclude", {.form = QBT_FP4_MODELOPT, .mo_config = 2, .exclude = 1,
                                   .shards = 2, .seed = 36}},
    };
    char path[1024];
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: qb-gen-fp4 OUTDIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && access(argv[1], F_OK) != 0) {
        perror(argv[1]);
        return 1;
    }
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", argv[1], v[i].name);
        if (qbt_fp4_write(path, &v[i].s, NULL) != 0)
            return 1;
    }
    return 0;
}
#endif
