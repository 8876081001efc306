/*
 * hf-dense reader: a Hugging Face directory with config.json (no
 * quantization) and safetensors weights in F32/F16/BF16, served tensor by
 * tensor under the Hugging Face names, rows converted from the mapped bytes.
 * MTP layers (DeepSeek's, the Qwen3-Next hybrids' mtp.*) are left out unless
 * the option mtp=keep says otherwise (kit qbk_mtp.h; docs/formats/fp8.md,
 * "DeepSeek-V3 MTP layers"; docs/w4a16-format.md, "Qwen3-Next layers").
 * A multimodal wrapper (config.json with text_config: Llama 4, Gemma 4,
 * Qwen3.5 as published) is served as its text model: text_config as the
 * config, the language model's tensors under the text model's names; its
 * towers are refused by name unless towers=drop (kit qbk_mm.h;
 * docs/formats/hf-dense.md, "Multimodal wrappers").
 *
 * Memory: the files stay mapped by the host's safetensors service; a
 * read_rows call touches only the bytes of its rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>

#include <quantbridge/base/qb_rows.h>

#include "hfd.h"
#include "qbk_path.h"
#include "qbk_alloc.h"
#include "qbk_reader.h"
#include "qbk_mtp.h"
#include "qbk_mm.h"

/* The model the reader base holds (qb_streader.h): the stored tensors
 * served, in file order, each under its own name. */
typedef struct hfd_model {
    const qb_st_tensor **t;
    size_t n;
    size_t n_mtp_dropped; /* DeepSeek MTP tensors not presented (mtp=drop) */
    /* a multimodal wrapper: names[i] the text model's name of t[i] (owned),
     * text_config the text model's config.json, its model_type; towers
     * dropped (towers=drop) */
    char **names;
    char *text_config;
    char *text_type;
    size_t n_towers_dropped;
} hfd_model;

static int hfd_has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int hfd_list_has(const char *const *names, const char *name)
{
    size_t i;
    for (i = 0; names && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* Side files that mark a quantized checkpoint even without
 * config.json:quantization_config: AutoGPTQ/GPTQModel quantize_config.json,
 * AutoAWQ before 2023-10 quant_config.json (docs/formats/hf-dense.md, "Quantized checkpoints"),
 * NVIDIA ModelOpt hf_quant_config.json (docs/formats/nvfp4.md). */
static const char *const hfd_quant_sidecars[] = {"quantize_config.json", "quant_config.json",
                                                 "hf_quant_config.json", NULL};

static int hfd_probe(void *ctx, const qb_probe_input *in)
{
    const qb_st_api *api = hfd_host->safetensors;
    qb_st_set *set = NULL;
    const char *const *sib;
    size_t i;
    int score;
    hfd_config_kind kind;

    (void)ctx;
    if (!in || !in->path)
        return QB_PROBE_NONE;
    sib = in->siblings;
    if (!in->is_dir && !hfd_has_suffix(in->path, ".safetensors"))
        return QB_PROBE_NONE;
    for (i = 0; hfd_quant_sidecars[i]; i++)
        if (hfd_list_has(sib, hfd_quant_sidecars[i]))
            return QB_PROBE_NONE;
    if (!in->config_json)
        /* A lone .safetensors file: maybe ours, but nothing says which model. */
        return in->is_dir ? QB_PROBE_NONE : QB_PROBE_WEAK;
    kind = hfd_config_classify(in->config_json);
    if (kind == HFD_CONFIG_QUANTIZED)
        return QB_PROBE_NONE;
    if (in->is_dir) {
        int any = 0;
        for (i = 0; sib && sib[i]; i++)
            if (hfd_has_suffix(sib[i], ".safetensors") ||
                strcmp(sib[i], "model.safetensors.index.json") == 0)
                any = 1;
        if (!any)
            return QB_PROBE_NONE;
    }
    /* config.json beside safetensors but unparsable or not an object: most
     * likely ours and damaged. POSSIBLE lets open() name config.json and the
     * JSON error; WEAK would leave the host naming only the directory. */
    if (kind == HFD_CONFIG_BROKEN)
        return QB_PROBE_POSSIBLE;
    if (kind == HFD_CONFIG_INVALID)
        return QB_PROBE_WEAK;

    /* Dense by config; the dtypes decide how sure. A broken file still
     * scores POSSIBLE so that open() reports the parser's precise error. */
    if (in->is_dir) {
        if (api->open_dir(hfd_host, in->path, &set) != QB_OK)
            return QB_PROBE_POSSIBLE;
    } else {
        if (api->open_file(hfd_host, in->path, &set) != QB_OK)
            return QB_PROBE_POSSIBLE;
    }
    score = QB_PROBE_LIKELY;
    for (i = 0; i < api->count(set); i++)
        if (!qb_rows_dense_encoding(api->tensor(set, i)->dtype))
            score = QB_PROBE_WEAK;
    if (api->count(set) == 0)
        score = QB_PROBE_WEAK;
    api->close(set);
    return score;
}

static int hfd_file_exists(const char *dir, const char *name)
{
    char *p = qbk_path_join(dir, name);
    struct stat sb;
    int ok = p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    qbk_free(p);
    return ok;
}

/* Validates every tensor up front: dense float dtype, at least one
 * element (the parser checked the byte count against the shape). Tensors
 * of layers at or past mtp_first (DeepSeek MTP, qbk_mtp.h; -1: none) are
 * not presented. */
static qb_status hfd_describe_all(const qb_streader *r, hfd_model *m, int64_t mtp_first,
                                  int towers_drop)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    size_t i, n = api->count(r->dir->st);
    uint32_t d;
    char name[512];

    if (n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: the checkpoint has no tensors", r->dir->dir);
    m->t = qbk_calloc(n, sizeof(*m->t));
    if (!m->t || (m->text_type && !(m->names = qbk_calloc(n, sizeof(*m->names)))))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    for (i = 0; i < n; i++) {
        const qb_st_tensor *st = api->tensor(r->dir->st, i);
        const char *tn = st->name;
        if (m->text_type) {
            int k = qbk_mm_text_name(st->name, name, sizeof name);
            if (k < 0)
                return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': name too long", st->file,
                                    st->name);
            if (k == 0 && !towers_drop)
                return h->set_error(h, QB_E_UNSUPPORTED,
                                    "%s: tensor '%s': a tower of the multimodal wrapper %s, which "
                                    "the text model %s does not hold; read the source with "
                                    "--option towers=drop to convert the text model alone",
                                    st->file, st->name, r->dir->model_type, m->text_type);
            if (k == 0) {
                m->n_towers_dropped++;
                continue;
            }
            tn = name;
        }
        if (qbk_mtp_is_mtp(tn, mtp_first)) {
            m->n_mtp_dropped++;
            continue;
        }
        if (!qb_streader_is_dense(st))
            return h->set_error(h, QB_E_FORMAT,
                                "%s: tensor '%s': dtype %s is not a dense float type (hf-dense "
                                "reads F32, F16 and BF16)",
                                st->file, st->name, st->dtype_name);
        for (d = 0; d < st->n_dims; d++)
            if (st->dims[d] < 1)
                return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': dimension %u is 0 (empty tensor)",
                                    st->file, st->name, d);
        if (m->names && !(m->names[m->n] = qbk_strdup(tn)))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
        m->t[m->n++] = st;
    }
    if (m->n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: the checkpoint has no tensors outside MTP layers",
                            r->dir->dir);
    return QB_OK;
}

static qb_status hfd_open_model(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const char *dir = r->dir->dir;
    hfd_model *m;
    cJSON *cfg = NULL;
    const cJSON *qcfg;
    qb_status st;
    size_t i;
    int mtp_drop, towers_drop = 0;
    int64_t mtp_first = -1;

    if (qbk_mtp_mode(h, params, &mtp_drop) != QB_OK)
        return QB_E_INVALID;
    m = qbk_calloc(1, sizeof(*m));
    if (!m)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    r->model = m;
    for (i = 0; hfd_quant_sidecars[i]; i++)
        if (hfd_file_exists(dir, hfd_quant_sidecars[i]))
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s/%s: a quantized checkpoint, which hf-dense does not read", dir,
                                hfd_quant_sidecars[i]);
    if ((st = qbk_reader_config(r->dir, &cfg, &qcfg)) != QB_OK ||
        (st = hfd_config_check(h, r->dir->config_path, cfg)) != QB_OK)
        goto out;
    if (qbk_mm_is_wrapper(cfg)) {
        /* the text model: its config and model_type (qbk_mm.h) */
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
        if ((st = qbk_towers_mode(h, params, &towers_drop)) != QB_OK ||
            (st = qbk_mm_text_config(h, r->dir->config_path, r->dir->config_text, cfg,
                                     &m->text_config)) != QB_OK)
            goto out;
        if (!(m->text_type = qbk_strdup(
                  cJSON_GetObjectItemCaseSensitive(tc, "model_type")->valuestring))) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        if (mtp_drop)
            mtp_first = qbk_mtp_first_layer(tc);
    } else if (mtp_drop) {
        mtp_first = qbk_mtp_first_layer(cfg);
    }
    if ((st = hfd_describe_all(r, m, mtp_first, towers_drop)) != QB_OK ||
        /* the stored names of a wrapper are not the text model's: its
         * layers are checked by the consumers, as an incomplete layer is */
        (!m->text_type &&
         (st = hfd_config_check_tensors(h, r->dir->config_path, cfg, r->dir->st)) != QB_OK))
        goto out;
    r->n_tensors = m->n;
    if (m->n_mtp_dropped)
        st = qb_streader_set_summary(r, "Hugging Face dense safetensors, %zu tensors (%s first); "
                                     "%zu MTP tensors dropped (mtp=drop)", m->n,
                                     qb_rows_dense_encoding(m->t[0]->dtype), m->n_mtp_dropped);
    else
        st = qb_streader_set_summary(r, "Hugging Face dense safetensors, %zu tensors (%s first)",
                                     m->n, qb_rows_dense_encoding(m->t[0]->dtype));
    if (st == QB_OK && m->text_type)
        st = qb_streader_set_summary(r, "Hugging Face dense safetensors, %zu tensors (%s first): "
                                     "the text model %s of the multimodal wrapper %s%s",
                                     m->n, qb_rows_dense_encoding(m->t[0]->dtype), m->text_type,
                                     r->dir->model_type,
                                     m->n_towers_dropped ? ", towers dropped (towers=drop)" : "");
    if (st == QB_OK && m->n_towers_dropped)
        h->log(h, QB_LOG_WARN, "%s: towers=drop: %zu tensors of the %s wrapper's towers not read; "
               "the output is the text model %s alone", dir, m->n_towers_dropped,
               r->dir->model_type, m->text_type);
    if (st == QB_OK && m->n_mtp_dropped)
        h->log(h, QB_LOG_INFO, "%s: mtp=drop: %zu tensors of the MTP layers (model.layers.%lld+) "
               "not read", dir, m->n_mtp_dropped, (long long)mtp_first);
out:
    cJSON_Delete(cfg);
    return st;
}

static void hfd_close_model(qb_streader *r)
{
    hfd_model *m = r->model;
    size_t i;
    if (!m)
        return;
    if (m->names)
        for (i = 0; i < m->n; i++)
            qbk_free(m->names[i]);
    qbk_free(m->names);
    qbk_free(m->text_config);
    qbk_free(m->text_type);
    qbk_free(m->t);
    qbk_free(m);
    r->model = NULL;
}

/* Stored tensors are the canonical ones, one to one. */
static void hfd_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const hfd_model *m = r->model;
    qb_streader_describe_dense(m->t[i], out);
    if (m->names) /* a wrapper's tensor under the text model's name */
        out->name = m->names[i];
}

/* The base's model info; a wrapper's is its text model's config. */
static qb_status hfd_model_info(qb_reader_handle handle, qb_model_info *out)
{
    const qb_streader *r = handle;
    const hfd_model *m = r->model;
    qb_status st = qb_streader_vt_model_info(handle, out);
    if (st == QB_OK && m && m->text_type) {
        out->architecture = m->text_type;
        out->config_json = m->text_config;
    }
    return st;
}

/* A directory, or one .safetensors file (the whole checkpoint when an
 * index is beside it): the data is the first thing checked after
 * config.json, so a broken file reports the parser's exact error. */
static const qb_streader_class hfd_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "hf-dense",
    .dir_flags = QB_STDIR_FILE_OK,
    .open = hfd_open_model,
    .close = hfd_close_model,
    .describe = hfd_describe,
    /* read_rows NULL: every tensor is dense, read by the base */
};

static qb_status hfd_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    (void)ctx;
    return qb_streader_open(hfd_host, &hfd_class, path, params, out);
}

const qb_reader_vtable hfd_reader_vtable = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = hfd_probe,
    .open = hfd_open,
    /* no get_grid_info/read_grid: dense tensors never have an integer grid;
     * QB_STREADER_VT_ENTRIES but for get_model_info (a wrapper's text model) */
    .close = qb_streader_vt_close,
    .get_model_info = hfd_model_info,
    .get_tensor_info = qb_streader_vt_tensor_info,
    .read_rows = qb_streader_vt_read_rows,
    .get_raw_tensor_info = qb_streader_vt_raw_tensor,
};
