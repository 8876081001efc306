/* AWQ reader — open(). See awq_open.h. */
#include "awq_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "awq_layout.h"
#include "qbk_str.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

enum { AWQ_GEMM = 1, AWQ_GEMV = 2 };

typedef struct awq_config {
    int bits;
    int64_t group_size;
    int zero_point;
    int version;
    char *source;
    char **skip; /* modules_to_not_convert substrings */
    size_t n_skip;
} awq_config;

static void awq_config_free(awq_config *c)
{
    size_t i;
    for (i = 0; i < c->n_skip; i++)
        qbk_free(c->skip[i]);
    qbk_free(c->skip);
    qbk_free(c->source);
    memset(c, 0, sizeof(*c));
}

static const cJSON *awq_get2(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    return v ? v : cJSON_GetObjectItemCaseSensitive(o, b);
}

/* Parses one AWQ config object (names per AutoAWQ AwqConfig: bits/w_bit,
 * group_size/q_group_size, zero_point, version, modules_to_not_convert). */
static qb_status awq_parse(const qb_host *h, const cJSON *o, awq_config *c)
{
    const cJSON *v;
    const char *src = c->source;
    if (!cJSON_IsObject(o))
        return h->set_error(h, QB_E_FORMAT, "%s: AWQ config is not an object", src);
    if ((v = awq_get2(o, "quant_method", "method")) && cJSON_IsString(v) &&
        strcasecmp(v->valuestring, "awq") != 0)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: quant_method \"%s\" is not AWQ", src, v->valuestring);
    v = awq_get2(o, "bits", "w_bit");
    if (!cJSON_IsNumber(v))
        return h->set_error(h, QB_E_FORMAT, "%s: bits missing", src);
    if (v->valuedouble != 4)
        /* WQLinear_GEMM/GEMV.__init__: "Only 4-bit are supported for now." */
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: AWQ bits %g not supported (4 only)", src,
                            v->valuedouble);
    c->bits = 4;
    v = awq_get2(o, "group_size", "q_group_size");
    /* (int64_t) of a double outside [-2^63, 2^63) (1e300, inf, nan) is undefined behaviour */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= -0x1p63 && v->valuedouble < 0x1p63) ||
        v->valuedouble != (double)(int64_t)v->valuedouble ||
        (v->valuedouble < 1 && v->valuedouble != -1))
        return h->set_error(h, QB_E_FORMAT, "%s: group_size missing or not > 0 / -1", src);
    c->group_size = (int64_t)v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(o, "zero_point");
    if (v && !cJSON_IsBool(v))
        return h->set_error(h, QB_E_FORMAT, "%s: zero_point is not a boolean", src);
    c->zero_point = v ? cJSON_IsTrue(v) : 1;
    v = cJSON_GetObjectItemCaseSensitive(o, "backend");
    if (cJSON_IsString(v) && strcasecmp(v->valuestring, "autoawq") != 0)
        /* transformers AwqBackendPackingMethod: llm-awq packs as gemv_fast */
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: AWQ backend \"%s\" is not supported (its packing is the gemv_fast "
                            "layout)",
                            src, v->valuestring);
    v = awq_get2(o, "version", "format");
    if (v && !cJSON_IsString(v))
        return h->set_error(h, QB_E_FORMAT, "%s: version is not a string", src);
    if (!v || strcasecmp(v->valuestring, "gemm") == 0) {
        c->version = AWQ_GEMM; /* AwqConfig default */
    } else if (strcasecmp(v->valuestring, "gemv") == 0) {
        c->version = AWQ_GEMV;
    } else if (strcasecmp(v->valuestring, "gemv_fast") == 0 || strcasecmp(v->valuestring, "marlin") == 0 ||
               strcasecmp(v->valuestring, "exllama") == 0 || strcasecmp(v->valuestring, "ipex") == 0) {
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: AWQ version \"%s\" is not supported by the awq reader (gemm, gemv)", src,
                            v->valuestring);
    } else {
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: unknown AWQ version \"%s\" (gemm, gemv)", src,
                            v->valuestring);
    }
    v = cJSON_GetObjectItemCaseSensitive(o, "modules_to_not_convert");
    if (v && !cJSON_IsNull(v)) {
        const cJSON *e;
        size_t n = (size_t)cJSON_GetArraySize(v);
        if (!cJSON_IsArray(v))
            return h->set_error(h, QB_E_FORMAT, "%s: modules_to_not_convert is not a list", src);
        c->skip = qbk_calloc(n ? n : 1, sizeof(char *));
        if (!c->skip)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
        cJSON_ArrayForEach(e, v)
        {
            if (!cJSON_IsString(e))
                return h->set_error(h, QB_E_FORMAT, "%s: modules_to_not_convert entry is not a string",
                                    src);
            if (!(c->skip[c->n_skip] = qbk_strdup(e->valuestring)))
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
            c->n_skip++;
        }
    }
    return QB_OK;
}

static qb_status awq_config_load(const qb_host *h, const char *dir, const char *config_json,
                                 awq_config *c)
{
    cJSON *main_cfg = NULL, *side = NULL;
    const cJSON *qc;
    char *text = NULL;
    qb_status st = QB_OK;
    if (config_json &&
        (st = qbk_json_parse_file(h, dir, "config.json", config_json, strlen(config_json),
                                  &main_cfg)) != QB_OK)
        goto out;
    qc = cJSON_GetObjectItemCaseSensitive(main_cfg, "quantization_config");
    if (qc) {
        c->source = qbk_strdupf("%s/config.json", dir);
        if (!c->source) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        st = awq_parse(h, qc, c);
        goto out;
    }
    /* AutoAWQ before 2023-10-31 wrote quant_config.json (docs/formats/awq.md, "Config") */
    if ((st = qbk_read_text(h, dir, "quant_config.json", &text)) != QB_OK)
        goto out;
    if (!text) {
        st = h->set_error(h, QB_E_NOT_FOUND,
                          "%s: no AWQ config (config.json:quantization_config or quant_config.json)", dir);
        goto out;
    }
    c->source = qbk_strdupf("%s/quant_config.json", dir);
    if (!c->source) {
        st = h->set_error(h, QB_E_NOMEM, "%s/quant_config.json: out of memory", dir);
        goto out;
    }
    if ((st = qbk_json_parse_file(h, dir, "quant_config.json", text, strlen(text), &side)) != QB_OK)
        goto out;
    st = awq_parse(h, side, c);
out:
    h->free(h, text);
    cJSON_Delete(side);
    cJSON_Delete(main_cfg);
    return st;
}

/* qlinear_config_fn for awq_config_load */
static qb_status awq_load_cb(const qb_host *h, const char *dir, const char *config_json, void *cfg)
{
    return awq_config_load(h, dir, config_json, cfg);
}

static const char *const awq_suffixes[] = {".qweight", ".qzeros", ".scales"};

static qb_status awq_add_linear(qlinear_model *m, const awq_config *c, const char *module)
{
    const qb_host *h = m->host;
    const qb_st_tensor *qw = qlinear_find(h, m->set, module, ".qweight");
    const qb_st_tensor *qz = qlinear_find(h, m->set, module, ".qzeros");
    const qb_st_tensor *sc = qlinear_find(h, m->set, module, ".scales");
    const char *ver = c->version == AWQ_GEMM ? "gemm" : "gemv";
    int64_t K, N, gs, G, zr, zc, sr, scl;
    qlinear_tensor *t;
    size_t i;
    qb_status st;

    for (i = 0; i < c->n_skip; i++)
        if (strstr(module, c->skip[i]))
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s.qweight: modules_to_not_convert lists \"%s\" but the module is "
                                "quantized",
                                qw->file, module, c->skip[i]);
    if (!sc)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s.qweight has no partner %s.scales in any shard",
                            qw->file, module, module);
    if (!qz && c->zero_point)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s.qweight has no partner %s.qzeros in any shard",
                            qw->file, module, module);
    if (qlinear_find(h, m->set, module, ".g_idx"))
        return h->set_error(h, QB_E_FORMAT, "%s: %s.g_idx: AWQ checkpoints have no g_idx (GPTQ?)", qw->file,
                            module);
    if (qlinear_find(h, m->set, module, ".weight"))
        return h->set_error(h, QB_E_MISMATCH, "%s: %s has both .weight and .qweight", qw->file, module);
    if ((qw->dtype != QB_DT_I32 && qw->dtype != QB_DT_U32) || qw->n_dims != 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qweight: expected 2-D I32, got %s/%u-D", qw->file, module,
                            qw->dtype_name, qw->n_dims);
    if (qz && ((qz->dtype != QB_DT_I32 && qz->dtype != QB_DT_U32) || qz->n_dims != 2))
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qzeros: expected 2-D I32, got %s/%u-D", qz->file, module,
                            qz->dtype_name, qz->n_dims);
    if ((sc->dtype != QB_DT_F16 && sc->dtype != QB_DT_BF16 && sc->dtype != QB_DT_F32) || sc->n_dims != 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.scales: expected a 2-D float tensor, got %s/%u-D",
                            sc->file, module, sc->dtype_name, sc->n_dims);
    if (c->version == AWQ_GEMM) {
        K = qw->dims[0];
        N = qw->dims[1] * 8;
    } else {
        N = qw->dims[0];
        K = qw->dims[1] * 8;
    }
    gs = c->group_size == -1 ? K : c->group_size;
    if (K % gs != 0)
        /* WQLinear_GEMM/GEMV.__init__ assert in_features % group_size == 0 */
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qweight: %lld inputs not a multiple of group size %lld",
                            qw->file, module, (long long)K, (long long)gs);
    G = K / gs;
    if (c->version == AWQ_GEMM) {
        zr = G;
        zc = N / 8;
        sr = G;
        scl = N;
    } else {
        int64_t wz = awq_gemv_zeros_width(K, gs);
        if (wz < 0)
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: %s: AWQ gemv has no layout for group size %lld (32, 64, >= 128)",
                                qw->file, module, (long long)gs);
        zr = N;
        zc = wz;
        sr = N;
        scl = wz * 8;
    }
    if (sc->dims[0] != sr || sc->dims[1] != scl)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s.scales: shape [%lld, %lld], AWQ %s expects [%lld, %lld] for "
                            "qweight [%lld, %lld] at group size %lld",
                            sc->file, module, (long long)sc->dims[0], (long long)sc->dims[1], ver,
                            (long long)sr, (long long)scl, (long long)qw->dims[0], (long long)qw->dims[1],
                            (long long)c->group_size);
    if (qz && (qz->dims[0] != zr || qz->dims[1] != zc))
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qzeros: shape [%lld, %lld], AWQ %s expects [%lld, %lld]",
                            qz->file, module, (long long)qz->dims[0], (long long)qz->dims[1], ver,
                            (long long)zr, (long long)zc);
    t = qlinear_append_quant(m, module,
                                 &(qlinear_tensor){.N = N, .K = K, .bits = 4, .G = (uint32_t)G, .gs = gs,
                                                       .per_channel = c->group_size == -1,
                                                       .scale_dtype = sc->dtype, .qweight = qw,
                                                       .qzeros = qz, .scales = sc, .word_bits = 32,
                                                       .implicit_zero = 8,
                                                       .dec = c->version == AWQ_GEMM ? &awq_gemm_decoder
                                                                                     : &awq_gemv_decoder});
    if (!t)
        return QB_E_NOMEM;
    if ((st = qlinear_compute_symmetric(h, t)) != QB_OK)
        return st;
    if (!c->zero_point && !t->symmetric)
        return h->set_error(h, QB_E_MISMATCH,
                            "%s: %s.qzeros: config says zero_point false (symmetric, zero 8) but the "
                            "stored zero points are not all 8",
                            qz->file, module);
    t->encoding = t->per_channel ? qbk_strdupf("awq int4 per-channel %s %s", t->symmetric ? "sym" : "asym", ver)
                                    : qbk_strdupf("awq int4 g%lld %s %s", (long long)gs,
                                                  t->symmetric ? "sym" : "asym", ver);
    if (!t->encoding)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", module);
    return QB_OK;
}

/* Walk state of awq_open_model. */
typedef struct awq_walk {
    const awq_config *c;
    size_t nq; /* quantized linears added */
} awq_walk;

/* qlinear_part_fn: a qweight becomes a linear; dense tensors need
 * nothing more; a leftover part gets the generic error unless it is one
 * AWQ cannot convert at all. */
static qb_status awq_part(void *ctx, qlinear_model *m, const qb_st_tensor *tt, const char *module,
                          int which)
{
    awq_walk *w = ctx;
    qb_status st;
    if (!module)
        return QB_OK;
    if (which != 0) {
        if (qbk_ends_with(tt->name, ".act.scales"))
            /* AutoAWQ ScaledActivation (awq/modules/act.py): the activation
             * output is divided by it; folding it is not implemented */
            return m->host->set_error(m->host, QB_E_UNSUPPORTED,
                                      "%s: %s: AWQ ScaledActivation scales are not supported", tt->file,
                                      tt->name);
        return QB_OK;
    }
    if ((st = awq_add_linear(m, w->c, module)) == QB_OK)
        w->nq++;
    return st;
}

qb_status awq_open_model(const qb_host *h, const char *path, qlinear_model **out)
{
    qlinear_model *m = NULL;
    awq_config c;
    awq_walk w;
    qb_status st;
    const char *dir = NULL;
    size_t nq = 0;

    memset(&c, 0, sizeof(c));
    *out = NULL;
    if ((st = qlinear_open(h, path, awq_load_cb, &c, &m)) != QB_OK)
        goto out;
    dir = m->dir;
    w.c = &c;
    w.nq = 0;
    if ((st = qlinear_each(m, awq_suffixes, sizeof(awq_suffixes) / sizeof(awq_suffixes[0]), awq_part,
                               &w)) != QB_OK)
        goto out;
    nq = w.nq;
    m->source_format = "awq";
    {
        char gtxt[32] = "per-channel";
        if (c.group_size != -1)
            snprintf(gtxt, sizeof(gtxt), "g%lld", (long long)c.group_size);
        m->summary = qbk_strdupf("AWQ 4-bit %s %s %s (%zu quantized linears)", gtxt,
                                 c.zero_point ? "asym (zero_point)" : "sym (zero_point false)",
                                 c.version == AWQ_GEMM ? "gemm" : "gemv", nq);
    }
    if (!m->summary) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    *out = m;
    m = NULL;
    st = QB_OK;
out:
    awq_config_free(&c);
    qlinear_free(m);
    return st;
}

int awq_probe_config(const char *config_json, int has_quant_config)
{
    int score = has_quant_config ? 40 : 0;
    cJSON *c;
    const cJSON *qc, *m;
    if (!config_json)
        return score;
    if (!(c = qbk_json_parse_quiet(config_json, strlen(config_json))))
        return score;
    qc = cJSON_GetObjectItemCaseSensitive(c, "quantization_config");
    if (cJSON_IsObject(qc)) {
        m = awq_get2(qc, "quant_method", "method");
        if (cJSON_IsString(m))
            score = strcasecmp(m->valuestring, "awq") == 0 ? 90 : 0;
    }
    cJSON_Delete(c);
    return score;
}
