/*
 * fp8 reader — configuration, pairing and row decoding. See fp8_model.h.
 *
 * Conventions and where they come from:
 *   - block scales: deepseek-ai/DeepSeek-V3 inference/kernel.py
 *     weight_dequant_kernel (`y = x * s`, x the fp8 value cast to float32,
 *     s = weight_scale_inv[row / 128][col / 128] in float32) and
 *     docs/formats/fp8.md, "Block scales" (the scale multiplies);
 *     partial edge blocks as in transformers/llama.cpp dequant helpers
 *     (repeat_interleave the scale grid, then crop to [N, K]);
 *   - scale shape [ceil(N/bn), ceil(K/bk)] F32: vllm fp8.py
 *     Fp8LinearMethod.create_weights;
 *   - per-tensor `weight_scale` (a one-element F32) and per-channel
 *     `weight_scale` ([N] or [N, 1]): vllm fp8.py / llm-compressor FP8
 *     exports, W = fp8 * weight_scale;
 *   - `fmt`: "e4m3" (default, torch.float8_e4m3fn) or "e5m2".
 */
#include "fp8_model.h"
#include "qbk_mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_fp8_decode.h"
#include "qbk_str.h"
#include "qbk_alloc.h"
#include "qbk_reader.h"
#include <quantbridge/base/qb_rows.h>

int fp8_config_probe(const char *config_json)
{
    return qbk_reader_probe_quant_method(config_json, "fp8", NULL);
}

/* Module names listed as not converted (HF FineGrainedFP8Config
 * modules_to_not_convert, vLLM ignored_layers) are matched like
 * transformers' should_convert_module: the entry appears in the name. */
static int fp8_module_not_converted(const cJSON *qcfg, const char *module)
{
    static const char *const keys[] = {"modules_to_not_convert", "ignored_layers"};
    const cJSON *arr, *e;
    size_t i;

    for (i = 0; i < 2; i++) {
        arr = cJSON_GetObjectItemCaseSensitive(qcfg, keys[i]);
        if (!cJSON_IsArray(arr))
            continue;
        cJSON_ArrayForEach(e, arr)
            if (cJSON_IsString(e) && e->valuestring[0] && strstr(module, e->valuestring))
                return 1;
    }
    return 0;
}

static qb_status fp8_parse_config(const qb_host *h, fp8_model *m)
{
    static const char *const known[] = {"quant_method", "fmt", "activation_scheme",
                                        "weight_block_size", "modules_to_not_convert",
                                        "ignored_layers", "scale_fmt", "dequantize", NULL};
    const char *dir = m->b.d->dir;
    const cJSON *q = m->b.qcfg, *it, *e;
    size_t i;
    int n;

    if (!q)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: no quantization_config", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, "fp8") != 0)
        return h->set_error(h, QB_E_FORMAT, "%s/config.json: quant_method is not \"fp8\"", dir);
    cJSON_ArrayForEach(e, q) {
        for (i = 0; known[i] && strcmp(known[i], e->string); i++)
            ;
        if (!known[i])
            h->log(h, QB_LOG_WARN, "%s/config.json: quantization_config.%s not known to the fp8 "
                   "reader; it does not change how weights are read here", dir, e->string);
    }
    it = cJSON_GetObjectItemCaseSensitive(q, "fmt");
    m->fmt = QB_DT_F8_E4M3;
    if (it && !cJSON_IsNull(it)) {
        /* MiniMax-M2's published config spells the format as the torch
         * dtype name "float8_e4m3fn" (docs/formats/fp8.md, "MiniMax-M2 checkpoints") */
        if (cJSON_IsString(it) && (!strcmp(it->valuestring, "e4m3") ||
                                   !strcmp(it->valuestring, "float8_e4m3fn")))
            m->fmt = QB_DT_F8_E4M3;
        else if (cJSON_IsString(it) && !strcmp(it->valuestring, "e5m2"))
            m->fmt = QB_DT_F8_E5M2;
        else
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s/config.json: quantization_config.fmt is neither \"e4m3\" "
                                "(\"float8_e4m3fn\") nor \"e5m2\"", dir);
    }
    it = cJSON_GetObjectItemCaseSensitive(q, "dequantize");
    if (cJSON_IsTrue(it))
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s/config.json: quantization_config.dequantize is true (weights are "
                            "meant to be dequantized at load; not an FP8 checkpoint layout this "
                            "reader knows)", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "scale_fmt");
    if (it && !cJSON_IsNull(it) &&
        !(cJSON_IsString(it) && (!strcmp(it->valuestring, "ue8m0") ||
                                 !strcmp(it->valuestring, "float32"))))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s/config.json: unknown scale_fmt", dir);
    it = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
    if (it && !cJSON_IsNull(it)) {
        n = cJSON_GetArraySize(it);
        if (!cJSON_IsArray(it) || n != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(it, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(it, 1)) ||
            cJSON_GetArrayItem(it, 0)->valuedouble < 1 ||
            cJSON_GetArrayItem(it, 1)->valuedouble < 1 ||
            cJSON_GetArrayItem(it, 0)->valuedouble > 1e9 ||
            cJSON_GetArrayItem(it, 1)->valuedouble > 1e9)
            return h->set_error(h, QB_E_FORMAT,
                                "%s/config.json: weight_block_size is not two positive integers",
                                dir);
        m->bn = (int64_t)cJSON_GetArrayItem(it, 0)->valuedouble;
        m->bk = (int64_t)cJSON_GetArrayItem(it, 1)->valuedouble;
        if ((double)m->bn != cJSON_GetArrayItem(it, 0)->valuedouble ||
            (double)m->bk != cJSON_GetArrayItem(it, 1)->valuedouble)
            return h->set_error(h, QB_E_FORMAT,
                                "%s/config.json: weight_block_size is not two positive integers",
                                dir);
    }
    return QB_OK;
}

/* Checks the scale partner of FP8 weight w and fills t's geometry. */
static qb_status fp8_pair(const qb_host *h, fp8_model *m, const qb_st_tensor *w,
                          const qb_st_tensor *s, fp8_tensor *t)
{
    const char *fmt = m->fmt == QB_DT_F8_E4M3 ? "e4m3" : "e5m2";
    int64_t n_el;

    t->rows = w->dims[0];
    t->cols = w->dims[1];
    if (!qbk_float_store_ok(s->dtype) || qbk_float_store_size(s->dtype) < 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: scale dtype %s is not F32/BF16/F16",
                            s->file, s->name, s->dtype_name);
    n_el = qbk_reader_numel(s);
    if (m->bn) {
        t->kind = FP8_K_BLOCK;
        t->bn = m->bn;
        t->bk = m->bk;
        t->sc_cols = (t->cols + m->bk - 1) / m->bk;
        if (s->n_dims != 2 || s->dims[0] != (t->rows + m->bn - 1) / m->bn ||
            s->dims[1] != t->sc_cols)
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: block scale shape disagrees with weight [%lld, %lld] and "
                                "weight_block_size [%lld, %lld] (expected [%lld, %lld])",
                                s->file, s->name, (long long)t->rows, (long long)t->cols,
                                (long long)m->bn, (long long)m->bk,
                                (long long)((t->rows + m->bn - 1) / m->bn), (long long)t->sc_cols);
        snprintf(m->enc[FP8_K_BLOCK], sizeof(m->enc[0]), "fp8 %s block%lldx%lld", fmt,
                 (long long)m->bn, (long long)m->bk);
    } else if (n_el == 1 && s->n_dims <= 2) {
        t->kind = FP8_K_TENSOR;
        snprintf(m->enc[FP8_K_TENSOR], sizeof(m->enc[0]), "fp8 %s tensor", fmt);
    } else if ((s->n_dims == 1 && s->dims[0] == t->rows) ||
               (s->n_dims == 2 && s->dims[0] == t->rows && s->dims[1] == 1)) {
        t->kind = FP8_K_CHANNEL;
        snprintf(m->enc[FP8_K_CHANNEL], sizeof(m->enc[0]), "fp8 %s channel", fmt);
    } else {
        return h->set_error(h, QB_E_MISMATCH,
                            "%s: %s: scale of %lld elements is neither per-tensor (1) nor "
                            "per-channel ([%lld] or [%lld, 1]) for weight [%lld, %lld]",
                            s->file, s->name, (long long)n_el, (long long)t->rows,
                            (long long)t->rows, (long long)t->rows, (long long)t->cols);
    }
    t->w = w;
    t->scale = s;
    return QB_OK;
}

/* Names of activation / KV-cache parameters: not weights, dropped. */
static int fp8_is_activation_param(const char *name)
{
    static const char *const suf[] = {".input_scale", ".k_scale", ".v_scale", ".kv_scale",
                                      ".q_scale", ".prob_scale", NULL};
    size_t stem, i;
    for (i = 0; suf[i]; i++)
        if (qbk_split_suffix(name, suf[i], &stem))
            return 1;
    return 0;
}

/* Pass 1, stored tensor i an FP8 weight w: its one scale (weight_scale_inv
 * with weight_block_size, else weight_scale) paired into m->t[i]. */
static qb_status fp8_take_weight(const qb_host *h, fp8_model *m, size_t i, const qb_st_tensor *w)
{
    const qb_st_api *api = h->safetensors;
    const qb_st_tensor *s_inv, *s_plain;
    char *module = NULL, *n_inv = NULL, *n_plain = NULL;
    size_t stem;
    qb_status st;

    if (!qbk_split_suffix(w->name, ".weight", &stem))
        return h->set_error(h, QB_E_FORMAT, "%s: %s: FP8 tensor that is not a <module>.weight",
                            w->file, w->name);
    if (w->dtype != m->fmt)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: dtype %s but config fmt says %s", w->file,
                            w->name, w->dtype_name, m->fmt == QB_DT_F8_E4M3 ? "e4m3" : "e5m2");
    if (w->n_dims != 2 || w->dims[0] < 1 || w->dims[1] < 1)
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: %s: FP8 weight is not a 2-D [out, in] matrix", w->file, w->name);
    module = qbk_stem_cat(w->name, stem, NULL);
    n_inv = qbk_stem_cat(w->name, stem, ".weight_scale_inv");
    n_plain = qbk_stem_cat(w->name, stem, ".weight_scale");
    if (!module || !n_inv || !n_plain) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
        goto out;
    }
    if (fp8_module_not_converted(m->b.qcfg, module)) {
        st = h->set_error(h, QB_E_MISMATCH,
                          "%s: %s: FP8 weight in a module the config lists as not converted",
                          w->file, w->name);
        goto out;
    }
    s_inv = api->find(m->b.d->st, n_inv);
    s_plain = api->find(m->b.d->st, n_plain);
    if (s_inv && s_plain)
        st = h->set_error(h, QB_E_MISMATCH,
                          "%s: %s: both weight_scale_inv and weight_scale present; which one "
                          "applies is ambiguous", w->file, w->name);
    else if (m->bn && !s_inv)
        st = h->set_error(h, s_plain ? QB_E_MISMATCH : QB_E_NOT_FOUND,
                          "%s: %s: weight_block_size is set but %s.weight_scale_inv is %s",
                          w->file, w->name, module,
                          s_plain ? "replaced by weight_scale" : "missing");
    else if (!m->bn && !s_plain)
        st = h->set_error(h, s_inv ? QB_E_MISMATCH : QB_E_NOT_FOUND,
                          "%s: %s: no weight_block_size in config, so %s.weight_scale is "
                          "needed but %s", w->file, w->name, module,
                          s_inv ? "weight_scale_inv was found" : "it is missing");
    else if ((st = fp8_pair(h, m, w, m->bn ? s_inv : s_plain, &m->t[i])) == QB_OK)
        m->t[i].name = w->name;
out:
    qbk_free(module);
    qbk_free(n_inv);
    qbk_free(n_plain);
    return st;
}

/* Pass 2, stored tensor x not taken in pass 1: a scale its FP8 weight took
 * (*used stays 0), an activation parameter (dropped, *used 3) or a dense
 * float tensor (m->t[i], *used 4); anything else is an error. */
static qb_status fp8_take_rest(const qb_host *h, fp8_model *m, const qb_st_tensor *x,
                               fp8_tensor *t, unsigned char *used)
{
    size_t stem;

    if (qbk_split_suffix(x->name, ".weight_scale_inv", &stem) ||
        qbk_split_suffix(x->name, ".weight_scale", &stem)) {
        /* consumed when its module's FP8 weight exists: pass 1 paired
         * exactly this scale (the other kind present is an error there) */
        const qb_st_tensor *w;
        char *wn = qbk_stem_cat(x->name, stem, ".weight");
        if (!wn)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", x->file);
        w = h->safetensors->find(m->b.d->st, wn);
        qbk_free(wn);
        if (w && (w->dtype == QB_DT_F8_E4M3 || w->dtype == QB_DT_F8_E5M2))
            return QB_OK;
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover scale: no FP8 weight uses it",
                            x->file, x->name);
    }
    if (fp8_is_activation_param(x->name)) {
        h->log(h, QB_LOG_DEBUG, "%s: %s: activation parameter, not a weight; dropped", x->file,
               x->name);
        *used = 3;
        return QB_OK;
    }
    if (!qb_streader_is_dense(x))
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: %s: dtype %s is neither FP8 weight nor a float dense tensor",
                            x->file, x->name, x->dtype_name);
    t->kind = FP8_K_DENSE;
    t->w = x;
    t->name = x->name;
    qb_streader_matrix(x->n_dims, x->dims, &t->rows, &t->cols);
    *used = 4;
    return QB_OK;
}

/* inspect's line: the format, the scale kinds, the counts. */
static qb_status fp8_summary(qb_streader *r, const fp8_model *m)
{
    const char *fmt = m->fmt == QB_DT_F8_E4M3 ? "e4m3" : "e5m2";
    char buf[160];
    size_t i, n_tensor = 0, n_channel = 0;

    for (i = 0; i < m->n; i++) {
        n_tensor += m->t[i].kind == FP8_K_TENSOR;
        n_channel += m->t[i].kind == FP8_K_CHANNEL;
    }
    if (m->bn)
        snprintf(buf, sizeof(buf), "FP8 %s block %lldx%lld, %zu quantized + %zu dense tensors", fmt,
                 (long long)m->bn, (long long)m->bk, m->n_quant, m->n - m->n_quant);
    else
        snprintf(buf, sizeof(buf), "FP8 %s %s scales, %zu quantized + %zu dense tensors", fmt,
                 n_channel == 0 ? "per-tensor" : n_tensor == 0 ? "per-channel"
                                                               : "per-tensor and per-channel",
                 m->n_quant, m->n - m->n_quant);
    if (m->n_mtp_dropped)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
                 "; %zu MTP tensors dropped (mtp=drop)", m->n_mtp_dropped);
    return qb_streader_set_summary(r, "%s", buf);
}

static qb_status fp8_model_open(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    fp8_model *m;
    unsigned char *used = NULL; /* per stored tensor: 1 FP8 weight, 3 dropped, 4 dense */
    size_t n_st, i, j;
    int64_t mtp_first;
    qb_status st;
    int mtp_drop;

    if ((st = qbk_mtp_mode(h, params, &mtp_drop)) != QB_OK)
        return st;
    if ((st = qbk_reader_model_new(r, sizeof(*m), (void **)&m)) != QB_OK ||
        (st = fp8_parse_config(h, m)) != QB_OK)
        return st;
    n_st = api->count(m->b.d->st);
    used = qbk_calloc(n_st ? n_st : 1, 1);
    m->t = qbk_calloc(n_st ? n_st : 1, sizeof(*m->t));
    if (!used || !m->t) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
        goto out;
    }
    /* Pass 1: every FP8 weight takes its scale. */
    for (i = 0; i < n_st && st == QB_OK; i++) {
        const qb_st_tensor *w = api->tensor(m->b.d->st, i);
        if (w->dtype == QB_DT_F8_E4M3 || w->dtype == QB_DT_F8_E5M2) {
            st = fp8_take_weight(h, m, i, w);
            used[i] = 1;
        }
    }
    /* Pass 2: what is left is dense, an activation parameter, or an error. */
    for (i = 0; i < n_st && st == QB_OK; i++)
        if (!used[i])
            st = fp8_take_rest(h, m, api->tensor(m->b.d->st, i), &m->t[i], &used[i]);
    if (st != QB_OK)
        goto out;
    /* Compact to the canonical list (source order, scales and activation
     * parameters removed). */
    mtp_first = mtp_drop ? qbk_mtp_first_layer(m->b.config) : -1;
    for (i = 0, j = 0; i < n_st; i++) {
        fp8_tensor tmp = m->t[i];
        if (used[i] != 1 && used[i] != 4)
            continue;
        memset(&m->t[i], 0, sizeof(m->t[i]));
        if (qbk_mtp_is_mtp(tmp.name, mtp_first)) {
            m->n_mtp_dropped++; /* mtp=drop (qbk_mtp.h): checked above, not presented */
            continue;
        }
        m->n_quant += used[i] == 1;
        m->t[j++] = tmp;
    }
    m->n = j;
    if ((st = fp8_summary(r, m)) != QB_OK)
        goto out;
    if (m->n_quant == 0) {
        st = h->set_error(h, QB_E_FORMAT, "%s: config says fp8 but no FP8 weight was found",
                          m->b.d->dir);
        goto out;
    }
    r->n_tensors = m->n;
out:
    qbk_free(used);
    return st;
}

static void fp8_model_close(qb_streader *r)
{
    fp8_model *m = r->model;
    if (m)
        qbk_free(m->t);
    qbk_reader_model_free(r);
}

static void fp8_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const fp8_tensor *t = &((const fp8_model *)r->model)->t[i];
    qb_streader_describe_dense(t->w, out); /* its name, shape, dtype and data */
    if (t->kind != FP8_K_DENSE) {
        out->encoding = ((const fp8_model *)r->model)->enc[t->kind];
        out->stored[1] = t->scale;
        /* the e4m3 bytes and their scales as a float-coded grid (ABI 1.4):
         * read_rows' value is that code times its scale, one product */
        if (t->w->dtype == QB_DT_F8_E4M3)
            out->grid_codes = QB_CODES_BIT(QB_CODE_F8_E4M3);
    }
}

static qb_status fp8_grid_info(const qb_streader *r, size_t i, qb_grid_info *out)
{
    const fp8_tensor *t = &((const fp8_model *)r->model)->t[i];
    if (t->kind == FP8_K_DENSE || t->w->dtype != QB_DT_F8_E4M3 ||
        !QB_HAS_FIELD(out, qb_grid_info, scale_rows) ||
        !(out->accept_codes & QB_CODES_BIT(QB_CODE_F8_E4M3)))
        return r->host->set_error(r->host, QB_E_UNSUPPORTED, "%s: %s: no integer grid (its "
                                  "e4m3 grid goes to callers that accept float codes)",
                                  t->w->file, t->name);
    out->bits = 8;
    out->col_group = NULL;
    out->symmetric = 1;
    out->scale_dtype = t->scale->dtype;
    out->code_kind = QB_CODE_F8_E4M3;
    if (t->kind == FP8_K_BLOCK) {
        out->n_groups = (uint32_t)t->sc_cols;
        out->group_size = t->bk;
        out->scale_rows = t->bn;
    } else {
        out->n_groups = 1;
        out->group_size = t->cols;
        out->scale_rows = t->kind == FP8_K_TENSOR ? t->rows : 1;
    }
    return QB_OK;
}

static qb_status fp8_read_grid(const qb_streader *rd, size_t i, int64_t row0, int64_t n_rows,
                               qb_grid_rows *out)
{
    const fp8_tensor *t = &((const fp8_model *)rd->model)->t[i];
    const qb_st_tensor *w = t->w, *s = t->scale;
    int64_t G = t->kind == FP8_K_BLOCK ? t->sc_cols : 1, r;
    size_t ss;

    if (t->kind == FP8_K_DENSE || w->dtype != QB_DT_F8_E4M3)
        return rd->host->set_error(rd->host, QB_E_UNSUPPORTED, "%s: %s: no e4m3 grid", w->file,
                                   t->name);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return rd->host->set_error(rd->host, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside "
                                   "[0, %lld)", w->file, t->name, (long long)row0,
                                   (long long)n_rows, (long long)t->rows);
    ss = qbk_float_store_size(s->dtype);
    memcpy(out->codes, w->data + (size_t)(row0 * t->cols), (size_t)(n_rows * t->cols));
    for (r = 0; r < n_rows; r++) {
        size_t at = t->kind == FP8_K_TENSOR    ? 0
                    : t->kind == FP8_K_CHANNEL ? (size_t)(row0 + r)
                                               : (size_t)(((row0 + r) / t->bn) * t->sc_cols);
        qbk_float_store_to_f32(s->dtype, s->data + at * ss, (size_t)G, out->scales + r * G);
        memset(out->zeros + r * G, 0, (size_t)G * sizeof(int32_t));
    }
    return QB_OK;
}

/* Per-read drops round inward to whole pages, so the pages shared by two
 * row blocks stay mapped (a few KB per block: ~1 % of an FP8 source at
 * 1 MiB blocks). A writer streams tensor after tensor, so dropping the
 * previous tensor whole at the first read of the next one bounds what stays
 * mapped to about one tensor, and the small scale tensors go with it. */
static void fp8_model_note_read(fp8_model *m, size_t index)
{
    size_t prev = __atomic_exchange_n(&m->last_read, index + 1, __ATOMIC_RELAXED);
    const fp8_tensor *t;
    if (prev == 0 || prev == index + 1 || prev - 1 >= m->n)
        return;
    t = &m->t[prev - 1];
    qb_rows_drop_pages(t->w->data, t->w->n_bytes);
    if (t->scale)
        qb_rows_drop_pages(t->scale->data, t->scale->n_bytes);
}

static qb_status fp8_read_rows(const qb_streader *rd, size_t i, int64_t row0, int64_t n_rows,
                               float *dst)
{
    const qb_host *h = rd->host;
    fp8_model *m = rd->model;
    const fp8_tensor *t = &m->t[i];
    const qb_st_tensor *w = t->w, *s = t->scale;
    size_t ss;
    float *srow = NULL;
    int64_t r, k;
    float sc = 0.0f;

    fp8_model_note_read(m, i);
    if (t->kind == FP8_K_DENSE)
        return qb_streader_dense_rows(h, w, row0, n_rows, dst);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)", w->file,
                            t->name, (long long)row0, (long long)n_rows, (long long)t->rows);
    ss = qbk_float_store_size(s->dtype);
    if (t->kind == FP8_K_TENSOR)
        qbk_float_store_to_f32(s->dtype, s->data, 1, &sc);
    if (t->kind == FP8_K_BLOCK) {
        srow = qbk_malloc((size_t)t->sc_cols * sizeof(float));
        if (!srow)
            return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->file, t->name);
    }
    for (r = row0; r < row0 + n_rows; r++) {
        const uint8_t *src = w->data + (size_t)(r * t->cols);
        float *d = dst + (size_t)((r - row0) * t->cols);
        if (t->kind == FP8_K_CHANNEL)
            qbk_float_store_to_f32(s->dtype, s->data + (size_t)r * ss, 1, &sc);
        if (t->kind == FP8_K_BLOCK)
            qbk_float_store_to_f32(s->dtype, s->data + (size_t)((r / t->bn) * t->sc_cols) * ss,
                             (size_t)t->sc_cols, srow);
        qbk_float_store_to_f32(w->dtype, src, (size_t)t->cols, d);
        /* value = (float)fp8 * scale, one float32 product (weight_dequant_kernel) */
        if (t->kind == FP8_K_BLOCK)
            for (k = 0; k < t->cols; k++)
                d[k] = d[k] * srow[k / t->bk];
        else
            for (k = 0; k < t->cols; k++)
                d[k] = d[k] * sc;
    }
    qbk_free(srow);
    /* FP8 weights are one byte per element */
    qb_rows_drop_pages(w->data + (size_t)(row0 * t->cols), (uint64_t)(n_rows * t->cols));
    return QB_OK;
}

const qb_streader_class fp8_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "fp8",
    .open = fp8_model_open,
    .close = fp8_model_close,
    .describe = fp8_describe,
    .read_rows = fp8_read_rows,
    /* no integer grid (FP8 values are not uniform); e4m3 weights offer the
     * float-coded grid to a caller that accepts it */
    .grid_info = fp8_grid_info,
    .read_grid = fp8_read_grid,
};
