/*
 * modelopt reader — configuration, pairing and row decoding. See
 * mo_model.h; the facts and their upstream sources are in
 * docs/formats/nvfp4.md.
 */
#define _XOPEN_SOURCE 700
#include "mo_model.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbk_alloc.h"
#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"
#include "qbk_nvfp4_grid.h"
#include "qbk_path.h"
#include "qbk_reader.h"
#include "qbk_str.h"
#include "qbk_json.h"

#define MO_GROUP 16                 /* NVFP4 elements per E4M3 scale */
#define MO_SIDE_MAX (1u << 20)      /* hf_quant_config.json size limit */

static const char *const mo_partner[] = {".weight_scale", ".weight_scale_2", NULL};

/* Activation / KV-cache scales ModelOpt exports beside the weights: never
 * part of a weight's value. */
static int mo_is_activation_param(const char *name)
{
    static const char *const suf[] = {".input_scale", ".output_scale", ".k_scale", ".v_scale",
                                      NULL};
    size_t i, stem;
    for (i = 0; suf[i]; i++)
        if (qbk_split_suffix(name, suf[i], &stem))
            return 1;
    return 0;
}

static int mo_list_has(const char *const *names, const char *name)
{
    size_t i;
    for (i = 0; names && names[i]; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

int mo_probe(const char *config_json, const char *const *siblings)
{
    int has_qcfg, score = qbk_reader_probe_quant_method(config_json, "modelopt", &has_qcfg);
    if (has_qcfg == 0 && mo_list_has(siblings, "hf_quant_config.json"))
        score = 80;
    return score;
}

/* One configuration source (the "quantization" object of
 * hf_quant_config.json or config.json's quantization_config): quant_algo
 * must be NVFP4, group_size (when given) 16; exclude_modules (or `ignore`,
 * the name newer exports use in config.json) appended to m->exclude. */
static qb_status mo_config_one(const qb_host *h, mo_model *m, const char *where, const cJSON *q)
{
    static const char *const lists[] = {"exclude_modules", "ignore", NULL};
    const cJSON *it, *e;
    size_t i;

    it = cJSON_GetObjectItemCaseSensitive(q, "quant_algo");
    if (!cJSON_IsString(it))
        return h->set_error(h, QB_E_FORMAT, "%s: quant_algo missing or not a string", where);
    if (strcmp(it->valuestring, "NVFP4") != 0)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: quant_algo \"%s\" is not supported (the "
                            "modelopt reader reads NVFP4)", where, it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(q, "group_size");
    if (it && !cJSON_IsNull(it) && !(cJSON_IsNumber(it) && it->valuedouble == MO_GROUP))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: group_size is not %d (NVFP4 groups are %d "
                            "elements)", where, MO_GROUP, MO_GROUP);
    for (i = 0; lists[i]; i++) {
        it = cJSON_GetObjectItemCaseSensitive(q, lists[i]);
        if (!it || cJSON_IsNull(it))
            continue;
        if (!cJSON_IsArray(it))
            return h->set_error(h, QB_E_FORMAT, "%s: %s is not a list", where, lists[i]);
        cJSON_ArrayForEach(e, it) {
            char **nx;
            if (!cJSON_IsString(e))
                return h->set_error(h, QB_E_FORMAT, "%s: %s holds a non-string", where, lists[i]);
            nx = qbk_realloc(m->exclude, (m->n_exclude + 1) * sizeof(*nx));
            if (!nx)
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", where);
            m->exclude = nx;
            if (!(m->exclude[m->n_exclude] = qbk_strdup(e->valuestring)))
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", where);
            m->n_exclude++;
        }
    }
    return QB_OK;
}

static qb_status mo_parse_config(const qb_host *h, mo_model *m, int *from_side)
{
    const char *dir = m->b.d->dir;
    const cJSON *q = m->b.qcfg, *it;
    char *path = NULL, where[64];
    void *data = NULL;
    size_t len = 0;
    cJSON *side = NULL;
    qb_status st;

    *from_side = 0;
    path = qbk_path_join(dir, "hf_quant_config.json");
    if (!path)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    st = h->read_small_file(h, path, MO_SIDE_MAX, &data, &len);
    if (st != QB_OK && st != QB_E_NOT_FOUND)
        goto out;
    if (st == QB_OK) {
        const cJSON *qq;
        st = qbk_json_parse_object(h, path, data, len, &side);
        h->free(h, data);
        if (st != QB_OK)
            goto out;
        qq = cJSON_GetObjectItemCaseSensitive(side, "quantization");
        if (!cJSON_IsObject(qq)) {
            st = h->set_error(h, QB_E_FORMAT, "%s/hf_quant_config.json: no \"quantization\" "
                              "object", dir);
            goto out;
        }
        snprintf(where, sizeof(where), "hf_quant_config.json: quantization");
        {
            char w2[1100];
            snprintf(w2, sizeof(w2), "%s/%s", dir, where);
            st = mo_config_one(h, m, w2, qq);
        }
        if (st != QB_OK)
            goto out;
        *from_side = 1;
    }
    if (q) {
        char w2[1100];
        it = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
        if (!cJSON_IsString(it) || strcmp(it->valuestring, "modelopt") != 0) {
            st = h->set_error(h, QB_E_FORMAT, "%s/config.json: quantization_config.quant_method is "
                              "not \"modelopt\"", dir);
            goto out;
        }
        /* both sources read: a contradiction is an error in either */
        snprintf(w2, sizeof(w2), "%s/config.json: quantization_config", dir);
        st = mo_config_one(h, m, w2, q);
        if (st != QB_OK)
            goto out;
    } else if (!*from_side) {
        st = h->set_error(h, QB_E_FORMAT, "%s: neither hf_quant_config.json nor a config.json "
                          "quantization_config with quant_method \"modelopt\"", dir);
        goto out;
    }
    st = QB_OK;
out:
    qbk_free(path);
    cJSON_Delete(side);
    return st;
}

static int mo_excluded(const mo_model *m, const char *module)
{
    size_t i;
    for (i = 0; i < m->n_exclude; i++)
        if (fnmatch(m->exclude[i], module, 0) == 0)
            return 1;
    return 0;
}

/* The packed NVFP4 linear whose weight is w (U8), module name w->name[0..stem). */
static qb_status mo_quantized(const qb_host *h, mo_model *m, mo_tensor *t, const qb_st_tensor *w,
                              size_t stem)
{
    const qb_st_api *api = h->safetensors;
    const qb_st_tensor *p[2] = {NULL, NULL};
    char *nm = NULL;
    int64_t i, n;
    int k;

    for (k = 0; k < 2; k++) {
        if (!(nm = qbk_stem_cat(w->name, stem, mo_partner[k])))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
        p[k] = api->find(m->b.d->st, nm);
        qbk_free(nm);
    }
    if (!(nm = qbk_stem_cat(w->name, stem, "")))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
    if (mo_excluded(m, nm)) {
        qb_status st = h->set_error(h, QB_E_MISMATCH, "%s: %s: module %s is in exclude_modules "
                                    "but its weight is packed NVFP4", w->file, w->name, nm);
        qbk_free(nm);
        return st;
    }
    qbk_free(nm);
    if (w->n_dims != 2 || w->dims[0] < 1 || w->dims[1] < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: packed weight is not 2-D [out, in/2]",
                            w->file, w->name);
    if (!p[0])
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s: partner %.*s.weight_scale is missing",
                            w->file, w->name, (int)stem, w->name);
    if (!p[1])
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s: partner %.*s.weight_scale_2 is missing",
                            w->file, w->name, (int)stem, w->name);
    t->quant = 1;
    t->w = w;
    t->scale = p[0];
    t->scale2 = p[1];
    t->rows = w->dims[0];
    t->cols = 2 * w->dims[1];
    if (t->cols % MO_GROUP != 0)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: %lld columns are not a whole number of "
                            "%d-element groups", w->file, w->name, (long long)t->cols, MO_GROUP);
    t->n_groups = t->cols / MO_GROUP;
    if (p[0]->dtype != QB_DT_F8_E4M3 || p[0]->n_dims != 2 || p[0]->dims[0] != t->rows ||
        p[0]->dims[1] != t->n_groups)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: should be F8_E4M3 [%lld, %lld] for packed "
                            "weight [%lld, %lld] (found %s with %u dims)", p[0]->file, p[0]->name,
                            (long long)t->rows, (long long)t->n_groups, (long long)w->dims[0],
                            (long long)w->dims[1], p[0]->dtype_name, (unsigned)p[0]->n_dims);
    n = t->rows * t->n_groups;
    for (i = 0; i < n; i++)
        if ((p[0]->data[i] & 0x7Fu) == 0x7Fu) /* E4M3FN S.1111.111 is NaN */
            return h->set_error(h, QB_E_FORMAT, "%s: %s: scale [%lld, %lld] is NaN (byte 0x%02X)",
                                p[0]->file, p[0]->name, (long long)(i / t->n_groups),
                                (long long)(i % t->n_groups), p[0]->data[i]);
    if (p[1]->dtype != QB_DT_F32 || qbk_reader_numel(p[1]) != 1 || p[1]->n_dims > 1)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: should be one F32 value (found %s with %u "
                            "dims)", p[1]->file, p[1]->name, p[1]->dtype_name,
                            (unsigned)p[1]->n_dims);
    qbk_float_store_to_f32(QB_DT_F32, p[1]->data, 1, &t->s2);
    if (!isfinite(t->s2) || !(t->s2 > 0.0f))
        return h->set_error(h, QB_E_FORMAT, "%s: %s: weight_scale_2 %g is not a positive finite "
                            "number", p[1]->file, p[1]->name, (double)t->s2);
    return QB_OK;
}

static qb_status mo_model_open(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    const char *path = r->dir->dir;
    mo_model *m;
    size_t n_st, i, stem;
    int from_side = 0;
    qb_status st;

    (void)params;
    st = qbk_reader_model_new(r, sizeof(*m), (void **)&m);
    if (st != QB_OK)
        goto out;
    st = mo_parse_config(h, m, &from_side);
    if (st != QB_OK)
        goto out;
    n_st = api->count(m->b.d->st);
    m->t = qbk_calloc(n_st ? n_st : 1, sizeof(*m->t));
    if (!m->t) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *x = api->tensor(m->b.d->st, i);
        mo_tensor *t = &m->t[m->n];
        size_t j;

        if (qbk_split_suffix(x->name, ".weight", &stem) && x->dtype == QB_DT_U8) {
            st = mo_quantized(h, m, t, x, stem);
            if (st != QB_OK)
                goto out;
            m->n++;
            m->n_quant++;
            continue;
        }
        for (j = 0; mo_partner[j]; j++)
            if (qbk_split_suffix(x->name, mo_partner[j], &stem))
                break;
        if (mo_partner[j]) {
            /* a partner: its packed U8 weight must exist */
            char *wn = qbk_stem_cat(x->name, stem, ".weight");
            const qb_st_tensor *w;
            if (!wn) {
                st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
                goto out;
            }
            w = api->find(m->b.d->st, wn);
            qbk_free(wn);
            if (w && w->dtype == QB_DT_U8)
                continue;
            st = h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover scale: no packed NVFP4 (U8) "
                              "weight uses it", x->file, x->name);
            goto out;
        }
        if (mo_is_activation_param(x->name)) {
            h->log(h, QB_LOG_DEBUG, "%s: %s: activation scale, not a weight; dropped", x->file,
                   x->name);
            m->n_input_scales++;
            continue;
        }
        if (!qb_streader_is_dense(x)) {
            st = h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: dtype %s is neither a packed NVFP4 "
                              "weight nor a float dense tensor", x->file, x->name, x->dtype_name);
            goto out;
        }
        t->w = x;
        m->n++;
    }
    if (m->n_quant == 0) {
        st = h->set_error(h, QB_E_FORMAT, "%s: the configuration says ModelOpt NVFP4 but no packed "
                          "NVFP4 weight was found", m->b.d->dir);
        goto out;
    }
    r->n_tensors = m->n;
    st = qb_streader_set_summary(r, "ModelOpt NVFP4 (%s): E2M1 weights, E4M3 group-16 scales "
                                 "times weight_scale_2; %zu quantized + %zu dense tensors; %zu "
                                 "activation scales (input_scale) ignored: the conversion is "
                                 "weight-only",
                                 from_side ? "hf_quant_config.json" : "config.json", m->n_quant,
                                 m->n - m->n_quant, m->n_input_scales);
out:
    return st;
}

static void mo_model_close(qb_streader *r)
{
    mo_model *m = r->model;
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n_exclude; i++)
        qbk_free(m->exclude[i]);
    qbk_free(m->exclude);
    qbk_free(m->t);
    qbk_reader_model_free(r);
}

static void mo_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const mo_tensor *t = &((const mo_model *)r->model)->t[i];
    qb_streader_describe_dense(t->w, out); /* its name and data */
    if (!t->quant)
        return;
    out->n_dims = 2;
    out->dims[0] = t->rows;
    out->dims[1] = t->cols;
    out->source_dtype = QB_DT_QUANTIZED;
    out->encoding = "modelopt nvfp4 e2m1 g16 e4m3*scale_2";
    out->stored[1] = t->scale;
    out->stored[2] = t->scale2;
    /* codes and both scale levels as an e2m1 grid (ABI 1.5), so a writer
     * with an NVFP4 target keeps them; mo_read_rows is its promise */
    out->grid_codes = QB_CODES_BIT(QB_CODE_F4_E2M1);
}

static qb_status mo_read_rows(const qb_streader *rd, size_t i, int64_t row0, int64_t n_rows,
                              float *dst)
{
    const qb_host *h = rd->host;
    const mo_tensor *t = &((const mo_model *)rd->model)->t[i];
    const qb_st_tensor *w = t->w;
    int64_t r, g;

    if (!t->quant)
        return qb_streader_dense_rows(h, w, row0, n_rows, dst);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)", w->file,
                            w->name, (long long)row0, (long long)n_rows, (long long)t->rows);
    for (r = row0; r < row0 + n_rows; r++) {
        const uint8_t *codes = w->data + (size_t)(r * (t->cols / 2));
        const uint8_t *sc = t->scale->data + (size_t)(r * t->n_groups);
        float *d = dst + (size_t)((r - row0) * t->cols);
        for (g = 0; g < t->n_groups; g++) {
            /* NVFP4QTensor.dequantize: per_block_scale = e4m3 * scale_2 in
             * float32, then each E2M1 value times it */
            float s = qbk_fp8_e4m3fn_to_f32(sc[g]) * t->s2;
            qbk_fp4_e2m1_row_to_f32(codes + (size_t)(g * MO_GROUP / 2), MO_GROUP, s,
                                    d + (size_t)(g * MO_GROUP));
        }
    }
    return QB_OK;
}

static qb_status mo_grid_info(const qb_streader *r, size_t i, qb_grid_info *out)
{
    const mo_tensor *t = &((const mo_model *)r->model)->t[i];
    if (!QB_HAS_FIELD(out, qb_grid_info, tensor_scale) ||
        !(out->accept_codes & QB_CODES_BIT(QB_CODE_F4_E2M1)))
        return r->host->set_error(r->host, QB_E_UNSUPPORTED, "%s: %s: no integer grid (its e2m1 "
                                  "grid goes to callers that accept e2m1 codes and a tensor "
                                  "scale, ABI 1.5)", t->w->file, t->w->name);
    qbk_nvfp4_grid_info(out, (uint32_t)t->n_groups, QB_TENSOR_SCALE_MUL, t->s2);
    return QB_OK;
}

static qb_status mo_read_grid(const qb_streader *rd, size_t i, int64_t row0, int64_t n_rows,
                              qb_grid_rows *out)
{
    const qb_host *h = rd->host;
    const mo_tensor *t = &((const mo_model *)rd->model)->t[i];
    int64_t r;

    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)",
                            t->w->file, t->w->name, (long long)row0, (long long)n_rows,
                            (long long)t->rows);
    for (r = row0; r < row0 + n_rows; r++)
        qbk_nvfp4_grid_row(t->w->data + (size_t)(r * (t->cols / 2)),
                           t->scale->data + (size_t)(r * t->n_groups), t->cols,
                           out->codes + (size_t)((r - row0) * t->cols),
                           out->scales + (size_t)((r - row0) * t->n_groups),
                           out->zeros + (size_t)((r - row0) * t->n_groups));
    return QB_OK;
}

const qb_streader_class mo_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "modelopt",
    .open = mo_model_open,
    .close = mo_model_close,
    .describe = mo_describe,
    .read_rows = mo_read_rows,
    /* no integer grid (FP4 under E4M3 scales is not uniform): the e2m1
     * grid goes only to callers that accept it */
    .grid_info = mo_grid_info,
    .read_grid = mo_read_grid,
};
