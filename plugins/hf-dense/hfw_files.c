/*
 * hf-dense writer: the files around the weights — config.json,
 * generation_config.json, tokenizer files and the shard index — in the
 * forms transformers' from_pretrained reads.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfw.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_path.h"
#include "qbk_alloc.h"

/* Largest tokenizer_config.json edited in memory. */
#define HFW_MAX_TOKCFG (64u * 1024u * 1024u)
#define HFW_COPY_BLOCK (1u << 20)

size_t hfw_dtype_size(hfw_dtype dt)
{
    return dt == HFW_F32 ? 4 : 2;
}

const char *hfw_dtype_st_name(hfw_dtype dt)
{
    return dt == HFW_F32 ? "F32" : dt == HFW_F16 ? "F16" : "BF16";
}

const char *hfw_dtype_torch_name(hfw_dtype dt)
{
    return dt == HFW_F32 ? "float32" : dt == HFW_F16 ? "float16" : "bfloat16";
}

qb_status hfw_write_text(const qb_host *h, const qb_sink *sink, const char *name, const char *text)
{
    qb_sink_file *f = NULL;
    qb_status st = sink->create(sink->handle, name, &f);
    (void)h;
    if (st != QB_OK)
        return st;
    st = sink->write(f, text, strlen(text));
    if (st == QB_OK)
        st = sink->write(f, "\n", 1);
    if (st == QB_OK)
        st = sink->close(f, NULL, NULL);
    else
        sink->close(f, NULL, NULL);
    return st;
}

int hfw_config_bool(const char *config_json, const char *key, qb_status *st)
{
    cJSON *root = cJSON_Parse(config_json);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    int r = -1;
    *st = QB_OK;
    if (!cJSON_IsObject(root))
        *st = QB_E_FORMAT;
    else if (cJSON_IsBool(v))
        r = cJSON_IsTrue(v) ? 1 : 0;
    else if (v && !cJSON_IsNull(v))
        *st = QB_E_FORMAT;
    cJSON_Delete(root);
    return r;
}

qb_status hfw_config_text(const qb_host *h, const char *what, const char *config_json,
                          hfw_dtype dt, int tie, char **out)
{
    const char *keys[4], *values[4];
    char dtype[32];
    cJSON *root = cJSON_Parse(config_json);
    int n = 0;
    qb_status st;

    snprintf(dtype, sizeof(dtype), "\"%s\"", hfw_dtype_torch_name(dt));
    keys[n] = "torch_dtype";
    values[n++] = dtype;
    /* transformers >= 4.56 writes `dtype` instead of torch_dtype; keep a
     * source's `dtype` consistent rather than stale. */
    if (cJSON_GetObjectItemCaseSensitive(root, "dtype")) {
        keys[n] = "dtype";
        values[n++] = dtype;
    }
    if (tie >= 0) {
        keys[n] = "tie_word_embeddings";
        values[n++] = tie ? "true" : "false";
    }
    keys[n] = values[n] = NULL;
    cJSON_Delete(root);
    /* The one clean-up rule of every writer (qbk_hf_sidefiles.h). */
    st = hfw_json_edit(h, what, config_json, qbk_hf_quant_config_keys, keys, values, out);
    return st;
}

qb_status hfw_write_generation_config(const qb_host *h, const qb_sink *sink,
                                      const qb_model_info *mi)
{
    cJSON *src = NULL, *gen = NULL;
    char *text = NULL;
    qb_status st = QB_OK;

    if (mi->generation_config_json) {
        gen = cJSON_Parse(mi->generation_config_json);
        if (!cJSON_IsObject(gen)) {
            st = h->set_error(h, QB_E_FORMAT,
                              "generation_config.json of the source: not a JSON object");
            goto out;
        }
        st = hfw_write_text(h, sink, "generation_config.json", mi->generation_config_json);
        goto out;
    }
    src = cJSON_Parse(mi->config_json);
    gen = qbk_hf_generation_from_config(src);
    if (!gen) {
        st = h->set_error(h, QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    text = cJSON_Print(gen);
    if (!text) {
        st = h->set_error(h, QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    st = hfw_write_text(h, sink, "generation_config.json", text);
out:
    cJSON_free(text); /* cJSON_Print memory */
    cJSON_Delete(src);
    cJSON_Delete(gen);
    return st;
}

/* Streams file dir/name into the sink under the same name. */
static qb_status hfw_copy_file(const qb_host *h, const qb_sink *sink, const char *dir,
                               const char *name)
{
    char *path = qbk_path_join(dir, name), *buf = NULL;
    FILE *in = NULL;
    qb_sink_file *f = NULL;
    qb_status st = QB_OK;
    size_t r;

    if (!path || !(buf = qbk_malloc(HFW_COPY_BLOCK))) {
        st = h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
        goto out;
    }
    in = fopen(path, "rb");
    if (!in) {
        st = h->set_error(h, QB_E_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if ((st = sink->create(sink->handle, name, &f)) != QB_OK) {
        f = NULL;
        goto out;
    }
    while ((r = fread(buf, 1, HFW_COPY_BLOCK, in)) > 0)
        if ((st = sink->write(f, buf, r)) != QB_OK)
            goto out;
    if (ferror(in)) {
        st = h->set_error(h, QB_E_IO, "%s: read error", path);
        goto out;
    }
    st = sink->close(f, NULL, NULL);
    f = NULL;
out:
    if (f)
        sink->close(f, NULL, NULL);
    if (in)
        fclose(in);
    qbk_free(buf);
    qbk_free(path);
    return st;
}

/* tokenizer_config.json with chat_template set: the source's (dir may be
 * NULL or lack it) or a new object; the other members kept as written. */
static qb_status hfw_write_tokenizer_config(const qb_host *h, const qb_sink *sink, const char *dir,
                                            int have, const char *chat_template)
{
    static const char *const keys[] = {"chat_template", NULL};
    const char *values[2] = {NULL, NULL};
    char *path = NULL, *text = NULL;
    void *data = NULL;
    size_t len = 0;
    qbk_text lit = {0};
    qb_status st = QB_OK;

    if (have) {
        path = qbk_path_join(dir, "tokenizer_config.json");
        if (!path) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        if ((st = h->read_small_file(h, path, HFW_MAX_TOKCFG, &data, &len)) != QB_OK)
            goto out;
        if (strlen(data) != len) {
            st = h->set_error(h, QB_E_FORMAT, "%s: contains a NUL byte", path);
            goto out;
        }
    }
    qbk_text_json_str(&lit, chat_template);
    if (lit.oom) {
        st = h->set_error(h, QB_E_NOMEM, "tokenizer_config.json: out of memory");
        goto out;
    }
    values[0] = lit.p;
    st = hfw_json_edit(h, path ? path : "tokenizer_config.json", have ? (const char *)data : "{}",
                       NULL, keys, values, &text);
    if (st == QB_OK)
        st = hfw_write_text(h, sink, "tokenizer_config.json", text);
out:
    qbk_free(text);
    qbk_text_free(&lit);
    h->free(h, data);
    qbk_free(path);
    return st;
}

qb_status hfw_write_tokenizer(const qb_host *h, const qb_sink *sink, const qb_model_info *mi)
{
    const char *tmpl = QB_HAS_FIELD(mi, qb_model_info, chat_template) ? mi->chat_template : NULL;
    char **names = NULL;
    int have_cfg = 0;
    qb_status st = QB_OK;
    size_t i;

    if (mi->tokenizer_dir) {
        if ((st = h->list_dir(h, mi->tokenizer_dir, &names)) != QB_OK)
            goto out;
        for (i = 0; names[i]; i++) {
            if (!qbk_hf_is_tokenizer_file(names[i]))
                continue;
            if (tmpl && strcmp(names[i], "tokenizer_config.json") == 0) {
                have_cfg = 1;
                continue; /* rewritten below with the template */
            }
            /* A template file beside the config would override the
             * source's template on load (transformers >= 4.43 prefers
             * chat_template.jinja). */
            if (tmpl && strncmp(names[i], "chat_template.", 14) == 0)
                continue;
            if ((st = hfw_copy_file(h, sink, mi->tokenizer_dir, names[i])) != QB_OK)
                goto out;
        }
    }
    if (tmpl)
        st = hfw_write_tokenizer_config(h, sink, mi->tokenizer_dir, have_cfg, tmpl);
out:
    if (names)
        h->free_list(h, names);
    return st;
}

static int hfw_cmp_tensor_name(const void *a, const void *b)
{
    const hfw_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

qb_status hfw_write_index(const qb_host *h, const qb_sink *sink, const hfw_plan *p)
{
    qbk_text b = {0};
    const hfw_tensor **sorted = NULL;
    qb_status st = QB_OK;
    size_t i;
    char shard[64];

    sorted = qbk_malloc(p->n * sizeof(*sorted));
    if (!sorted) {
        st = h->set_error(h, QB_E_NOMEM, "model.safetensors.index.json: out of memory");
        goto out;
    }
    /* weight_map sorted by name, as save_pretrained writes it. */
    for (i = 0; i < p->n; i++)
        sorted[i] = &p->t[i];
    qsort(sorted, p->n, sizeof(*sorted), hfw_cmp_tensor_name);
    qbk_text_str(&b, "{\n  \"metadata\": {\n    \"total_size\": ");
    qbk_text_u64(&b, p->total_bytes);
    qbk_text_str(&b, "\n  },\n  \"weight_map\": {");
    for (i = 0; i < p->n; i++) {
        hfw_plan_shard_name(p, sorted[i]->shard, shard, sizeof(shard));
        qbk_text_str(&b, i ? ",\n    " : "\n    ");
        qbk_text_json_str(&b, sorted[i]->name);
        qbk_text_str(&b, ": ");
        qbk_text_json_str(&b, shard);
    }
    qbk_text_str(&b, "\n  }\n}");
    if (b.oom) {
        st = h->set_error(h, QB_E_NOMEM, "model.safetensors.index.json: out of memory");
        goto out;
    }
    st = hfw_write_text(h, sink, "model.safetensors.index.json", b.p);
out:
    qbk_free(sorted);
    qbk_text_free(&b);
    return st;
}
