/*
 * hf-dense reader: a Hugging Face directory with config.json (no
 * quantization) and safetensors weights in F32/F16/BF16, served tensor by
 * tensor under the Hugging Face names, rows converted from the mapped bytes.
 * DeepSeek's MTP layers are left out unless the option mtp=keep says otherwise
 * (kit qbk_mtp.h; docs/formats/fp8.md, "DeepSeek-V3 MTP layers").
 *
 * Memory: the files stay mapped by the host's safetensors service; a
 * read_rows call touches only the bytes of its rows.
 */
#define _XOPEN_SOURCE 700 /* strdup */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>

#include "qbk_raw_st.h"
#include "hfd.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_path.h"
#include "qbk_alloc.h"
#include "qbk_reader.h"
#include "qbk_mtp.h"
#include "qbk_pages.h"
#include "qbk_json.h"

/* Largest config.json / generation_config.json accepted (as probe's 4 MiB
 * config_json, with room for long chat templates in generation configs). */
#define HFD_MAX_JSON (16u * 1024u * 1024u)

typedef struct hfd_tensor {
    const qb_st_tensor *st;
    const char *encoding;
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    int64_t rows, cols;
    size_t esize;
} hfd_tensor;

typedef struct hfd_reader {
    char *dir;
    char *config_text;
    char *gen_text;
    char *model_type;
    int has_tokenizer;
    qb_st_set *set;
    hfd_tensor *t;
    size_t n;
    size_t n_mtp_dropped; /* DeepSeek MTP tensors not presented (mtp=drop) */
    char summary[200];
} hfd_reader;

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
        if (!hfd_dtype_encoding(api->tensor(set, i)->dtype))
            score = QB_PROBE_WEAK;
    if (api->count(set) == 0)
        score = QB_PROBE_WEAK;
    api->close(set);
    return score;
}

static void hfd_reader_free(hfd_reader *r)
{
    if (!r)
        return;
    if (r->set)
        hfd_host->safetensors->close(r->set);
    qbk_free(r->t);
    qbk_free(r->dir);
    hfd_host->free(hfd_host, r->config_text);
    hfd_host->free(hfd_host, r->gen_text);
    qbk_free(r->model_type);
    qbk_free(r);
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
 * element, matrix view sizes that fit the byte count. Tensors of layers at
 * or past mtp_first (DeepSeek MTP, qbk_mtp.h; -1: none) are not presented. */
static qb_status hfd_describe(hfd_reader *r, int64_t mtp_first)
{
    const qb_host *h = hfd_host;
    const qb_st_api *api = h->safetensors;
    size_t i, n = api->count(r->set), k = 0;
    uint32_t d;

    if (n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: the checkpoint has no tensors", r->dir);
    r->t = qbk_calloc(n, sizeof(*r->t));
    if (!r->t)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
    for (i = 0; i < n; i++) {
        const qb_st_tensor *st = api->tensor(r->set, i);
        hfd_tensor *t = &r->t[k];
        if (qbk_mtp_is_mtp(st->name, mtp_first)) {
            r->n_mtp_dropped++;
            continue;
        }
        k++;
        t->st = st;
        t->encoding = hfd_dtype_encoding(st->dtype);
        if (!t->encoding)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: tensor '%s': dtype %s is not a dense float type (hf-dense "
                                "reads F32, F16 and BF16)",
                                st->file, st->name, st->dtype_name);
        t->esize = st->dtype == QB_DT_F32 ? 4 : 2;
        /* a scalar is served as a 1-element vector (qb_tensor_info needs n_dims >= 1) */
        t->n_dims = st->n_dims ? st->n_dims : 1;
        t->dims[0] = 1;
        for (d = 0; d < st->n_dims; d++) {
            if (st->dims[d] < 1)
                return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': dimension %u is 0 (empty tensor)",
                                    st->file, st->name, d);
            t->dims[d] = st->dims[d];
        }
        t->cols = t->dims[t->n_dims - 1];
        t->rows = 1;
        for (d = 0; d + 1 < t->n_dims; d++)
            t->rows *= t->dims[d]; /* cannot overflow: the parser bounded the product */
        if ((uint64_t)t->rows * (uint64_t)t->cols * t->esize != st->n_bytes)
            return h->set_error(h, QB_E_INTERNAL, "%s: tensor '%s': size disagrees with its shape",
                                st->file, st->name);
    }
    r->n = k;
    if (k == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: the checkpoint has no tensors outside MTP layers",
                            r->dir);
    return QB_OK;
}

static qb_status hfd_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    const qb_host *h = hfd_host;
    const qb_st_api *api = h->safetensors;
    hfd_reader *r = NULL;
    struct stat sb;
    char *cfg_path = NULL;
    qb_status st = QB_OK;
    size_t i;
    int is_dir, mtp_drop;
    int64_t mtp_first = -1;

    (void)ctx;
    *out = NULL;
    if (qbk_mtp_mode(h, params, &mtp_drop) != QB_OK)
        return QB_E_INVALID;
    if (stat(path, &sb) != 0)
        return h->set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                            strerror(errno));
    is_dir = S_ISDIR(sb.st_mode);
    r = qbk_calloc(1, sizeof(*r));
    if (!r)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    if (is_dir) {
        r->dir = qbk_strdup(path);
    } else {
        const char *slash = strrchr(path, '/');
        r->dir = slash ? qbk_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : qbk_strdup(".");
    }
    if (!r->dir) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }

    /* The data first, so a broken file reports the parser's exact error.
     * A named shard of an indexed checkpoint stands for the checkpoint. */
    if (is_dir || hfd_file_exists(r->dir, "model.safetensors.index.json"))
        st = api->open_dir(h, r->dir, &r->set);
    else
        st = api->open_file(h, path, &r->set);
    if (st != QB_OK)
        goto out;

    for (i = 0; hfd_quant_sidecars[i]; i++) {
        if (hfd_file_exists(r->dir, hfd_quant_sidecars[i])) {
            st = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s/%s: a quantized checkpoint, which hf-dense does not read", r->dir,
                              hfd_quant_sidecars[i]);
            goto out;
        }
    }
    st = qbk_read_side_text(h, r->dir, "config.json", HFD_MAX_JSON,
                            "missing (a Hugging Face checkpoint needs it)", 1, &r->config_text);
    if (st != QB_OK)
        goto out;
    cfg_path = qbk_path_join(r->dir, "config.json");
    if (!cfg_path) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    st = hfd_config_check(h, cfg_path, r->config_text, &r->model_type);
    if (st != QB_OK)
        goto out;
    st = qbk_read_side_text(h, r->dir, "generation_config.json", HFD_MAX_JSON, NULL, 1, &r->gen_text);
    if (st != QB_OK)
        goto out;
    st = qbk_hf_dir_has_tokenizer(h, r->dir, &r->has_tokenizer);
    if (st != QB_OK)
        goto out;
    if (mtp_drop) {
        cJSON *cfg = NULL;
        st = qbk_json_parse(h, cfg_path, r->config_text, strlen(r->config_text), &cfg);
        mtp_first = qbk_mtp_first_layer(cfg);
        cJSON_Delete(cfg);
        if (st != QB_OK)
            goto out;
    }
    st = hfd_describe(r, mtp_first);
    if (st != QB_OK)
        goto out;
    st = hfd_config_check_tensors(h, cfg_path, r->config_text, r->set);
    if (st != QB_OK)
        goto out;
    snprintf(r->summary, sizeof(r->summary),
             "Hugging Face dense safetensors, %zu tensors (%s first)", r->n, r->t[0].encoding);
    if (r->n_mtp_dropped)
        snprintf(r->summary + strlen(r->summary), sizeof(r->summary) - strlen(r->summary),
                 "; %zu MTP tensors dropped (mtp=drop)", r->n_mtp_dropped);
    if (r->n_mtp_dropped)
        h->log(h, QB_LOG_INFO, "%s: mtp=drop: %zu tensors of the MTP layers (model.layers.%lld+) "
               "not read", r->dir, r->n_mtp_dropped, (long long)mtp_first);
out:
    qbk_free(cfg_path);
    if (st != QB_OK) {
        hfd_reader_free(r);
        return st;
    }
    *out = r;
    return QB_OK;
}

static void hfd_close(qb_reader_handle h)
{
    hfd_reader_free(h);
}

static qb_status hfd_get_model_info(qb_reader_handle handle, qb_model_info *out)
{
    hfd_reader *r = handle;
    out->architecture = r->model_type;
    out->config_json = r->config_text;
    out->generation_config_json = r->gen_text;
    out->n_tensors = r->n;
    out->source_format = "hf-dense";
    out->source_summary = r->summary;
    out->tokenizer_dir = r->has_tokenizer ? r->dir : NULL;
    if (QB_HAS_FIELD(out, qb_model_info, chat_template))
        out->chat_template = NULL;
    return QB_OK;
}

static qb_status hfd_get_tensor_info(qb_reader_handle handle, size_t index, qb_tensor_info *out)
{
    hfd_reader *r = handle;
    const hfd_tensor *t;
    uint32_t d;

    if (qbk_reader_check_index(hfd_host, r->dir, index, r->n) != QB_OK)
        return QB_E_RANGE;
    t = &r->t[index];
    out->name = t->st->name;
    out->n_dims = t->n_dims;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < t->n_dims ? t->dims[d] : 0;
    out->source_dtype = t->st->dtype;
    out->source_encoding = t->encoding;
    out->has_grid = 0;
    return QB_OK;
}

static qb_status hfd_read_rows(qb_reader_handle handle, size_t index, int64_t row0, int64_t n_rows,
                               float *dst)
{
    hfd_reader *r = handle;
    const hfd_tensor *t;
    size_t row_bytes;

    if (qbk_reader_check_index(hfd_host, r->dir, index, r->n) != QB_OK)
        return QB_E_RANGE;
    t = &r->t[index];
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return hfd_host->set_error(hfd_host, QB_E_RANGE,
                                   "%s: tensor '%s': rows [%lld, +%lld) outside its %lld rows",
                                   t->st->file, t->st->name, (long long)row0, (long long)n_rows,
                                   (long long)t->rows);
    if (n_rows == 0)
        return QB_OK;
    row_bytes = (size_t)t->cols * t->esize;
    if (hfd_to_f32(t->st->dtype, t->st->data + (size_t)row0 * row_bytes,
                   (size_t)n_rows * (size_t)t->cols, dst) != 0)
        return hfd_host->set_error(hfd_host, QB_E_INTERNAL, "%s: tensor '%s': dtype %s", t->st->file,
                                   t->st->name, t->st->dtype_name);
    qbk_pages_drop(t->st->data + (size_t)row0 * row_bytes, (size_t)n_rows * row_bytes);
    return QB_OK;
}

/* Stored tensors are the canonical ones, one to one (hfd_describe). */
static qb_status hfd_raw_tensor(qb_reader_handle handle, size_t index, qb_raw_tensor_info *out)
{
    const hfd_reader *r = handle;
    if (index >= r->n)
        return QB_E_RANGE;
    qbk_raw_from_st(r->t[index].st, (int64_t)index, out);
    return QB_OK;
}

const qb_reader_vtable hfd_reader_vtable = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = hfd_probe,
    .open = hfd_open,
    .close = hfd_close,
    .get_model_info = hfd_get_model_info,
    .get_tensor_info = hfd_get_tensor_info,
    .read_rows = hfd_read_rows,
    /* no get_grid_info/read_grid: dense tensors never have an integer grid */
    .get_raw_tensor_info = hfd_raw_tensor,
};
