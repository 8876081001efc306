/* compressed-tensors reader — quantization_config. See ct_config.h. */
#include "ct_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"
#include "qbk_reader.h"

int ct_config_probe(const char *config_json)
{
    return qbk_reader_probe_quant_method(config_json, "compressed-tensors", NULL);
}

/* CompressionFormat value -> what this reader does with it. */
static qb_status ct_format_from(const qb_host *h, const char *dir, const char *where,
                                const char *name, ct_format *out)
{
    if (!strcmp(name, "pack-quantized"))
        *out = CT_F_PACK;
    else if (!strcmp(name, "naive-quantized") || !strcmp(name, "int-quantized") ||
             !strcmp(name, "float-quantized"))
        *out = CT_F_NAIVE; /* NaiveQuantizationCompressor and its aliases */
    else if (!strcmp(name, "mixed-precision"))
        *out = CT_F_MIXED;
    else if (!strcmp(name, "nvfp4-pack-quantized"))
        *out = CT_F_NVFP4;
    else if (!strcmp(name, "mxfp4-pack-quantized"))
        *out = CT_F_MXFP4;
    else
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s/config.json: %s: compressed-tensors format \"%s\" is not supported "
                            "(pack-quantized, naive-quantized, int-quantized, float-quantized, "
                            "nvfp4-pack-quantized, mxfp4-pack-quantized, mixed-precision are)", dir, where, name);
    return QB_OK;
}

static int ct_num(const cJSON *j, int64_t *v)
{
    /* (int64_t) of a double outside [-2^63, 2^63) is undefined behaviour */
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= -0x1p63 && j->valuedouble < 0x1p63) ||
        j->valuedouble != (double)(int64_t)j->valuedouble)
        return 0;
    *v = (int64_t)j->valuedouble;
    return 1;
}

static qb_status ct_patterns(const qb_host *h, const char *dir, const char *where,
                             const cJSON *arr, ct_pattern **out, size_t *n_out)
{
    const cJSON *e;
    char why[128];
    size_t n = 0;
    int cnt = cJSON_GetArraySize(arr);

    if (!cJSON_IsArray(arr))
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: %s is not a list", dir, where);
    *out = qbk_calloc(cnt > 0 ? (size_t)cnt : 1, sizeof(ct_pattern));
    if (!*out)
        return h->set_error(h, QB_E_NOMEM, "%s/config.json: out of memory", dir);
    cJSON_ArrayForEach(e, arr) {
        if (!cJSON_IsString(e))
            return h->set_error(h, QB_E_FORMAT, "%s/config.json: %s holds a non-string", dir,
                                where);
        *n_out = ++n;
        if (ct_pattern_init(&(*out)[n - 1], e->valuestring, why, sizeof(why)) != 0)
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: %s: \"%s\": %s", dir, where,
                                e->valuestring, why);
    }
    return QB_OK;
}

static qb_status ct_weights(const qb_host *h, const char *dir, const char *g, const cJSON *w,
                            ct_scheme *s)
{
    static const char *const known[] = {"num_bits", "type", "symmetric", "strategy",
                                        "group_size", "block_structure", "dynamic", "actorder",
                                        "observer", "observer_kwargs", "scale_dtype",
                                        "zp_dtype", NULL};
    const cJSON *it, *e;
    int64_t v;
    size_t i;

    cJSON_ArrayForEach(e, w) {
        for (i = 0; known[i] && strcmp(known[i], e->string); i++)
            ;
        if (!known[i])
            h->log(h, QB_LOG_WARN, "%s/config.json: config_groups.%s.weights.%s is not known to "
                   "this reader; ignored", dir, g, e->string);
    }
    it = cJSON_GetObjectItemCaseSensitive(w, "num_bits");
    if (!ct_num(it, &v) || v < 1 || v > 8)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s.weights."
                            "num_bits is not an integer in 1..8", dir, g);
    s->bits = (int)v;
    it = cJSON_GetObjectItemCaseSensitive(w, "type");
    if (!it || cJSON_IsNull(it) || (cJSON_IsString(it) && !strcmp(it->valuestring, "int"))) {
        s->is_float = 0;
    } else if (cJSON_IsString(it) && !strcmp(it->valuestring, "float")) {
        s->is_float = 1;
        if (s->bits != 8 && s->bits != 4)
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: %d-bit "
                                "float weights are not supported (8-bit FP8, 4-bit NVFP4/MXFP4 "
                                "are)", dir, g, s->bits);
    } else {
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s.weights.type "
                            "is neither \"int\" nor \"float\"", dir, g);
    }
    it = cJSON_GetObjectItemCaseSensitive(w, "symmetric");
    s->symmetric = !it || cJSON_IsNull(it) || cJSON_IsTrue(it); /* QuantizationArgs default True */
    if (it && !cJSON_IsNull(it) && !cJSON_IsBool(it))
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s.weights.symmetric "
                            "is not a boolean", dir, g);
    it = cJSON_GetObjectItemCaseSensitive(w, "dynamic");
    if (it && !cJSON_IsNull(it) && !cJSON_IsFalse(it))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: dynamic "
                            "weight quantization stores no weight scales", dir, g);
    /* group_size / strategy inference: QuantizationArgs.validate_model_after */
    s->group_size = 0;
    it = cJSON_GetObjectItemCaseSensitive(w, "group_size");
    if (it && !cJSON_IsNull(it) && (!ct_num(it, &s->group_size) || s->group_size == 0 ||
                                    s->group_size < -1))
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s.weights.group_size "
                            "is not a positive integer or -1", dir, g);
    it = cJSON_GetObjectItemCaseSensitive(w, "strategy");
    if (!it || cJSON_IsNull(it)) {
        s->strategy = s->group_size > 0 ? CT_S_GROUP
                      : s->group_size == -1 ? CT_S_CHANNEL : CT_S_TENSOR;
    } else if (!cJSON_IsString(it)) {
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s.weights.strategy "
                            "is not a string", dir, g);
    } else if (!strcmp(it->valuestring, "tensor")) {
        s->strategy = CT_S_TENSOR;
    } else if (!strcmp(it->valuestring, "channel")) {
        s->strategy = CT_S_CHANNEL;
    } else if (!strcmp(it->valuestring, "group")) {
        s->strategy = CT_S_GROUP;
    } else if (!strcmp(it->valuestring, "block")) {
        s->strategy = CT_S_BLOCK;
    } else if (!strcmp(it->valuestring, "tensor_group")) {
        s->strategy = CT_S_TENSOR_GROUP;
    } else {
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: weight "
                            "strategy \"%s\" is not supported", dir, g, it->valuestring);
    }
    if ((s->strategy == CT_S_GROUP || s->strategy == CT_S_TENSOR_GROUP) && s->group_size < 1)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s: strategy group "
                            "without a positive group_size", dir, g);
    if (s->strategy == CT_S_BLOCK) {
        it = cJSON_GetObjectItemCaseSensitive(w, "block_structure");
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 ||
            !ct_num(cJSON_GetArrayItem(it, 0), &s->bh) ||
            !ct_num(cJSON_GetArrayItem(it, 1), &s->bw) || s->bh < 1 || s->bw < 1)
            return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s: strategy block "
                                "needs block_structure [rows, cols]", dir, g);
    }
    /* actorder: None/"weight"/"static" keep contiguous groups; "group"/
     * "dynamic"/True store weight_g_idx (quant_args.py ActivationOrdering) */
    it = cJSON_GetObjectItemCaseSensitive(w, "actorder");
    if (!it || cJSON_IsNull(it) || cJSON_IsFalse(it)) {
        s->act_group = 0;
    } else if (cJSON_IsTrue(it) ||
               (cJSON_IsString(it) && (!strcmp(it->valuestring, "group") ||
                                       !strcmp(it->valuestring, "dynamic")))) {
        s->act_group = 1;
    } else if (cJSON_IsString(it) && (!strcmp(it->valuestring, "weight") ||
                                      !strcmp(it->valuestring, "static"))) {
        s->act_group = 0;
    } else {
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: unknown "
                            "actorder value", dir, g);
    }
    if (s->act_group && s->strategy != CT_S_GROUP)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s: actorder group "
                            "needs strategy group", dir, g);
    if (s->is_float && (!s->symmetric || s->act_group))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: float weights "
                            "must be symmetric without act-order", dir, g);
    return QB_OK;
}

/* The FP4 formats and the weights they hold agree exactly as the
 * compressors' can_compress demands (compressed-tensors 0.20.1
 * compressors/nvfp4/base.py, compressors/mxfp4/base.py); 4-bit floats in
 * any other format, or tensor_group outside NVFP4, have no decompressor. */
static qb_status ct_fp4_args(const qb_host *h, const char *dir, const char *g, const ct_scheme *s)
{
    int fp4 = s->is_float && s->bits == 4;

    if (s->format == CT_F_NVFP4 || s->format == CT_F_MXFP4) {
        int nv = s->format == CT_F_NVFP4;
        if (!fp4 || !s->symmetric || s->act_group ||
            s->strategy != (nv ? CT_S_TENSOR_GROUP : CT_S_GROUP) ||
            s->group_size != (nv ? 16 : 32))
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: format "
                                "\"%s\" holds symmetric 4-bit float weights with strategy %s and "
                                "group_size %d only", dir, g, s->format_name,
                                nv ? "tensor_group" : "group", nv ? 16 : 32);
        return QB_OK;
    }
    if (fp4)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: 4-bit float "
                            "weights need format nvfp4-pack-quantized or mxfp4-pack-quantized, "
                            "not \"%s\"", dir, g, s->format_name);
    if (s->strategy == CT_S_TENSOR_GROUP)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: strategy "
                            "tensor_group is read only with format nvfp4-pack-quantized", dir, g);
    return QB_OK;
}

qb_status ct_config_parse(const qb_host *h, const char *dir, const cJSON *q, ct_config *cfg)
{
    const cJSON *it, *groups, *g;
    ct_format global = CT_F_NONE;
    qb_status st;
    size_t n = 0;

    if (!q)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: no quantization_config", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, "compressed-tensors") != 0)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: quant_method is not "
                            "\"compressed-tensors\"", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "format");
    if (cJSON_IsString(it)) {
        cfg->global_format = qbk_strdup(it->valuestring);
        if (!cfg->global_format)
            return h->set_error(h, QB_E_NOMEM, "%s/config.json: out of memory", dir);
        st = ct_format_from(h, dir, "format", it->valuestring, &global);
        if (st != QB_OK)
            return st;
    } else if (it && !cJSON_IsNull(it)) {
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: format is not a string", dir);
    }
    it = cJSON_GetObjectItemCaseSensitive(q, "quantization_status");
    if (it && !cJSON_IsNull(it) && !(cJSON_IsString(it) && !strcmp(it->valuestring, "compressed")))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: quantization_status is not "
                            "\"compressed\" (weights were not saved compressed)", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "transform_config");
    if (cJSON_IsObject(it) && it->child)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: transform_config is set: stored "
                            "weights are in a rotated basis that a runtime must undo online", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "sparsity_config");
    if (cJSON_IsObject(it) && it->child) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "format");
        if (!(cJSON_IsString(f) && !strcmp(f->valuestring, "dense")))
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: sparsity_config format "
                                "\"%s\" (sparse-compressed weights) is not supported", dir,
                                cJSON_IsString(f) ? f->valuestring : "?");
    }
    it = cJSON_GetObjectItemCaseSensitive(q, "ignore");
    if (it && !cJSON_IsNull(it)) {
        st = ct_patterns(h, dir, "ignore", it, &cfg->ignore, &cfg->n_ignore);
        if (st != QB_OK)
            return st;
    }
    groups = cJSON_GetObjectItemCaseSensitive(q, "config_groups");
    if (!cJSON_IsObject(groups) || !groups->child)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups missing or empty", dir);
    cfg->s = qbk_calloc((size_t)cJSON_GetArraySize(groups), sizeof(ct_scheme));
    if (!cfg->s)
        return h->set_error(h, QB_E_NOMEM, "%s/config.json: out of memory", dir);
    cJSON_ArrayForEach(g, groups) {
        ct_scheme *s = &cfg->s[n];
        const cJSON *w, *f;
        char where[160];

        cfg->n = ++n;
        s->name = qbk_strdup(g->string);
        if (!s->name)
            return h->set_error(h, QB_E_NOMEM, "%s/config.json: out of memory", dir);
        if (!cJSON_IsObject(g))
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s is not a "
                                "scheme object (preset-name entries are not supported)", dir,
                                g->string);
        snprintf(where, sizeof(where), "config_groups.%s.targets", g->string);
        st = ct_patterns(h, dir, where, cJSON_GetObjectItemCaseSensitive(g, "targets"),
                         &s->targets, &s->n_targets);
        if (st != QB_OK)
            return st;
        f = cJSON_GetObjectItemCaseSensitive(g, "format");
        if (cJSON_IsString(f)) {
            snprintf(where, sizeof(where), "config_groups.%s.format", g->string);
            st = ct_format_from(h, dir, where, f->valuestring, &s->format);
            if (st != QB_OK)
                return st;
            s->format_name = qbk_strdup(f->valuestring);
        } else if (global != CT_F_NONE && global != CT_F_MIXED) {
            s->format = global;
            s->format_name = qbk_strdup(cfg->global_format);
        }
        if (s->format == CT_F_MIXED || (s->format == CT_F_NONE))
            return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s has no concrete "
                                "format (global format is \"%s\")", dir, g->string,
                                cfg->global_format ? cfg->global_format : "unset");
        if (!s->format_name)
            return h->set_error(h, QB_E_NOMEM, "%s/config.json: out of memory", dir);
        w = cJSON_GetObjectItemCaseSensitive(g, "weights");
        if (!w || cJSON_IsNull(w))
            continue; /* activation-only scheme: weights stay dense */
        if (!cJSON_IsObject(w))
            return h->set_error(h, QB_E_FORMAT, "%s/config.json: config_groups.%s.weights is not "
                                "an object", dir, g->string);
        s->has_weights = 1;
        st = ct_weights(h, dir, g->string, w, s);
        if (st != QB_OK)
            return st;
        st = ct_fp4_args(h, dir, g->string, s);
        if (st != QB_OK)
            return st;
        if (s->format == CT_F_PACK && (s->is_float || s->strategy == CT_S_BLOCK || 32 % s->bits))
            return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: config_groups.%s: "
                                "pack-quantized with %s weights is not supported", dir, g->string,
                                s->is_float ? "float" : s->strategy == CT_S_BLOCK ? "block" :
                                "these");
        /* float-quantized holds FP8, int-quantized integers; naive-quantized
         * either (config/format.py _get_quant_compression_format) */
        if ((!strcmp(s->format_name, "float-quantized") && !s->is_float) ||
            (!strcmp(s->format_name, "int-quantized") && s->is_float))
            return h->set_error(h, QB_E_MISMATCH, "%s/config.json: config_groups.%s: format "
                                "\"%s\" disagrees with weights type \"%s\"", dir, g->string,
                                s->format_name, s->is_float ? "float" : "int");
    }
    return QB_OK;
}

void ct_config_free(ct_config *cfg)
{
    size_t i, j;
    for (i = 0; i < cfg->n; i++) {
        for (j = 0; j < cfg->s[i].n_targets; j++)
            ct_pattern_free(&cfg->s[i].targets[j]);
        qbk_free(cfg->s[i].targets);
        qbk_free(cfg->s[i].name);
        qbk_free(cfg->s[i].format_name);
    }
    qbk_free(cfg->s);
    for (i = 0; i < cfg->n_ignore; i++)
        ct_pattern_free(&cfg->ignore[i]);
    qbk_free(cfg->ignore);
    qbk_free(cfg->global_format);
    memset(cfg, 0, sizeof(*cfg));
}

static int ct_same_weights(const ct_scheme *a, const ct_scheme *b)
{
    return a->format == b->format && a->has_weights == b->has_weights &&
           a->is_float == b->is_float && a->bits == b->bits && a->symmetric == b->symmetric &&
           a->strategy == b->strategy && a->group_size == b->group_size && a->bh == b->bh &&
           a->bw == b->bw && a->act_group == b->act_group;
}

const ct_scheme *ct_config_lookup(const ct_config *cfg, const char *module, int is_linear,
                                  int *ignored, int *n_match, int *by_name)
{
    const ct_scheme *found = NULL;
    size_t i, j;

    *ignored = 0;
    *n_match = 0;
    *by_name = 0;
    for (i = 0; i < cfg->n_ignore; i++)
        if (ct_pattern_match(&cfg->ignore[i], module, is_linear))
            *ignored = 1;
    for (i = 0; i < cfg->n; i++) {
        const ct_scheme *s = &cfg->s[i];
        int hit = 0;
        for (j = 0; j < s->n_targets; j++) {
            if (ct_pattern_match(&s->targets[j], module, is_linear)) {
                hit = 1;
                if (s->targets[j].kind != CT_PAT_LINEAR)
                    *by_name = 1;
            }
        }
        if (!hit)
            continue;
        if (!found || !ct_same_weights(found, s)) {
            if (found)
                (*n_match)++;
            else
                *n_match = 1;
            found = s;
        }
    }
    return found;
}
