/*
 * GGUF writer — rope factor tensors: the F32 vectors llama.cpp's converter
 * makes from config.json's rope scaling instead of keys (docs/formats/gguf.md
 * "Writing GGUF", metadata). llama3 scaling becomes rope_freqs.weight as
 * LlamaModel.generate_extra_tensors computes it (float32 arithmetic, as
 * its torch code); phi3 longrope becomes rope_factors_long/short.weight
 * (Phi3MiniModel.generate_extra_tensors). Other types need no tensor;
 * llama3 or longrope on another architecture is refused by name.
 */
#include "gguf_writer.h"

#include "qbk_alloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const cJSON *ggw_rope_dict(const cJSON *cfg)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
    if (cJSON_IsObject(rs))
        return rs;
    rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
    if (cJSON_IsObject(rs) && (cJSON_GetObjectItemCaseSensitive(rs, "rope_type") ||
                               cJSON_GetObjectItemCaseSensitive(rs, "type")))
        return rs;
    return NULL;
}

static double num_or(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void ggw_rope_factors_free(ggw_rope_factors *f)
{
    size_t i;
    for (i = 0; i < 2; i++)
        qbk_free(f->v[i]);
    memset(f, 0, sizeof(*f));
}

static qb_status llama3(const qb_host *h, const char *source, const cJSON *cfg, const cJSON *rs,
                        ggw_rope_factors *f)
{
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
    const double hidden = num_or(cfg, "hidden_size", 0), heads = num_or(cfg, "num_attention_heads", 0);
    int64_t dim = (int64_t)num_or(cfg, "head_dim", 0), i, n;
    const double base = num_or(cfg, "rope_theta", num_or(rs, "rope_theta", num_or(rp, "rope_theta", 10000.0)));
    const float factor = (float)num_or(rs, "factor", 8.0), lo = (float)num_or(rs, "low_freq_factor", 1.0),
                hi = (float)num_or(rs, "high_freq_factor", 4.0),
                old = (float)num_or(rs, "original_max_position_embeddings", 8192.0);
    if (dim <= 0)
        dim = heads > 0 ? (int64_t)hidden / (int64_t)heads : 0;
    if (dim < 2 || dim % 2 || !(hi > lo))
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json rope_scaling llama3: head dimension %lld / frequency factors "
                            "(high_freq_factor must exceed low_freq_factor)",
                            source, (long long)dim);
    n = dim / 2;
    if (!(f->v[0] = qbk_malloc((size_t)n * sizeof(float))))
        return h->set_error(h, QB_E_NOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        /* freqs = 1 / base ** (arange(0, dim, 2, float32) / dim); the rest
         * elementwise on float32 tensors */
        float freq = 1.0f / powf((float)base, (float)(2 * i) / (float)dim);
        float wavelen = (float)(2.0 * M_PI) / freq;
        if (wavelen < old / hi) {
            f->v[0][i] = 1.0f;
        } else if (wavelen > old / lo) {
            f->v[0][i] = factor;
        } else {
            float smooth = (old / wavelen - lo) / (hi - lo);
            f->v[0][i] = 1.0f / ((1.0f - smooth) / factor + smooth);
        }
    }
    f->n = 1;
    f->len = n;
    f->name[0] = "rope_freqs.weight";
    f->why = "llama3 rope scaling: factors computed from config.json rope_scaling "
             "(LlamaModel.generate_extra_tensors)";
    return QB_OK;
}

static qb_status longrope(const qb_host *h, const char *source, const cJSON *cfg, const cJSON *rs, const char *type,
                          ggw_rope_factors *f)
{
    const cJSON *arr[2] = {cJSON_GetObjectItemCaseSensitive(rs, "long_factor"),
                           cJSON_GetObjectItemCaseSensitive(rs, "short_factor")};
    const double prf = num_or(rs, "partial_rotary_factor", num_or(cfg, "partial_rotary_factor", 1.0));
    const int64_t hidden = (int64_t)num_or(cfg, "hidden_size", 0), heads = (int64_t)num_or(cfg, "num_attention_heads", 0);
    const int64_t n = (heads > 0 ? (int64_t)(prf * (double)hidden) / heads : 0) / 2;
    static const char *const names[2] = {"rope_factors_long.weight", "rope_factors_short.weight"};
    int k;
    if (n < 1 || !cJSON_IsArray(arr[0]) || !cJSON_IsArray(arr[1]) || cJSON_GetArraySize(arr[0]) != n ||
        cJSON_GetArraySize(arr[1]) != n)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json rope_scaling %s: long_factor and short_factor must each hold %lld "
                            "numbers (rope dimensions / 2)",
                            source, type, (long long)n);
    for (k = 0; k < 2; k++) {
        const cJSON *it;
        int64_t i = 0;
        if (!(f->v[k] = qbk_malloc((size_t)n * sizeof(float))))
            return h->set_error(h, QB_E_NOMEM, "out of memory");
        cJSON_ArrayForEach(it, arr[k])
        {
            if (!cJSON_IsNumber(it) || !isfinite((float)it->valuedouble))
                return h->set_error(h, QB_E_FORMAT, "%s: config.json rope_scaling %s: element %lld is not a number",
                                    source, k ? "short_factor" : "long_factor", (long long)i);
            f->v[k][i++] = (float)it->valuedouble;
        }
        f->name[k] = names[k];
    }
    f->n = 2;
    f->len = n;
    f->why = "longrope factors from config.json rope_scaling (Phi3MiniModel)";
    return QB_OK;
}

qb_status ggw_rope_factors_make(const qb_host *h, const char *source, const cJSON *cfg, const gguf_arch *arch,
                                ggw_rope_factors *f)
{
    const cJSON *rs = ggw_rope_dict(cfg), *ty;
    const char *type;
    qb_status st = QB_OK;
    memset(f, 0, sizeof(*f));
    if (!rs)
        return QB_OK;
    ty = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(ty))
        ty = cJSON_GetObjectItemCaseSensitive(rs, "type");
    type = cJSON_IsString(ty) ? ty->valuestring : "";
    if (strcmp(type, "llama3") == 0) {
        if (arch->bit != GGUF_A_LLAMA)
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: config.json rope_scaling llama3 on architecture '%s': the gguf writer writes "
                                "its rope_freqs tensor for llama only",
                                source, arch->gguf_name);
        st = llama3(h, source, cfg, rs, f);
    } else if (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) {
        if (arch->bit != GGUF_A_PHI3)
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: config.json rope_scaling %s on architecture '%s': the gguf writer writes rope "
                                "factor tensors for phi3 only",
                                source, type, arch->gguf_name);
        st = longrope(h, source, cfg, rs, type, f);
    }
    if (st)
        ggw_rope_factors_free(f);
    return st;
}
