/*
 * hf-dense reader: a Hugging Face directory with config.json (no
 * quantization) and safetensors weights in F32/F16/BF16, served tensor by
 * tensor under the Hugging Face names, rows converted from the mapped bytes.
 * MTP layers (DeepSeek's, the Qwen3-Next hybrids' mtp.*) are left out unless
 * the option mtp=keep says otherwise (kit qbk_mtp.h; docs/formats/fp8.md,
 * "DeepSeek-V3 MTP layers"; docs/w4a16-format.md, "Qwen3-Next layers").
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

/* The model the reader base holds (qb_streader.h): the stored tensors
 * served, in file order, each under its own name. */
typedef struct hfd_model {
    const qb_st_tensor **t;
    size_t n;
    size_t n_mtp_dropped; /* DeepSeek MTP tensors not presented (mtp=drop) */
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
static qb_status hfd_describe_all(const qb_streader *r, hfd_model *m, int64_t mtp_first)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    size_t i, n = api->count(r->dir->st);
    uint32_t d;

    if (n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: the checkpoint has no tensors", r->dir->dir);
    m->t = qbk_calloc(n, sizeof(*m->t));
    if (!m->t)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir->dir);
    for (i = 0; i < n; i++) {
        const qb_st_tensor *st = api->tensor(r->dir->st, i);
        if (qbk_mtp_is_mtp(st->name, mtp_first)) {
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
    int mtp_drop;
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
    if (mtp_drop)
        mtp_first = qbk_mtp_first_layer(cfg);
    if ((st = hfd_describe_all(r, m, mtp_first)) != QB_OK ||
        (st = hfd_config_check_tensors(h, r->dir->config_path, cfg, r->dir->st)) != QB_OK)
        goto out;
    r->n_tensors = m->n;
    if (m->n_mtp_dropped)
        st = qb_streader_set_summary(r, "Hugging Face dense safetensors, %zu tensors (%s first); "
                                     "%zu MTP tensors dropped (mtp=drop)", m->n,
                                     qb_rows_dense_encoding(m->t[0]->dtype), m->n_mtp_dropped);
    else
        st = qb_streader_set_summary(r, "Hugging Face dense safetensors, %zu tensors (%s first)",
                                     m->n, qb_rows_dense_encoding(m->t[0]->dtype));
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
    if (!m)
        return;
    qbk_free(m->t);
    qbk_free(m);
    r->model = NULL;
}

/* Stored tensors are the canonical ones, one to one. */
static void hfd_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    qb_streader_describe_dense(((const hfd_model *)r->model)->t[i], out);
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
    /* no get_grid_info/read_grid: dense tensors never have an integer grid */
    QB_STREADER_VT_ENTRIES,
};
