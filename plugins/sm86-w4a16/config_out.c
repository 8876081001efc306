/*
 * sm86-w4a16 — the non-tensor files: config.json, generation_config.json
 * and the tokenizer files (w4a16-format.md, "Directory").
 */
#include "w4w.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_hf_sidefiles.h"
#include "qbk_path.h"
#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_json_edit.h"

/* The source config without its quantization description (the kit's one
 * rule, qbk_hf_sidefiles.h), torch_dtype float16, and the keys a runtime
 * needs made explicit (tie_word_embeddings, architectures, model_type).
 * Edited as text (qbk_json_edit.h): every other member keeps its bytes, so
 * a float written 0.0 stays a float (transformers' strict configuration
 * classes refuse an int there: Llama4TextConfig.router_jitter_noise). */
static qb_status write_config(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                              const w4w_plan *plan, w4w_written_list *list)
{
    cJSON *cfg = NULL;
    const char *keys[8], *values[8];
    char mt[160], arch[200], *text = NULL;
    size_t n = 0;
    qb_status rc = qbk_json_parse_config(h, src->source_path, src->info->config_json, &cfg);
    if (rc != QB_OK)
        goto out;
    keys[n] = "torch_dtype";
    values[n++] = "\"float16\"";
    keys[n] = "tie_word_embeddings";
    values[n++] = plan->tied ? "true" : "false";
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "model_type")) {
        snprintf(mt, sizeof mt, "\"%s\"", plan->arch->model_type);
        keys[n] = "model_type";
        values[n++] = mt;
    }
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "architectures")) {
        snprintf(arch, sizeof arch, "[\"%s\"]", plan->arch->hf_class);
        keys[n] = "architectures";
        values[n++] = arch;
    }
    keys[n] = values[n] = NULL;
    rc = qbk_json_edit(h, "config.json", src->info->config_json, qbk_hf_quant_config_keys, keys,
                       values, &text);
    if (rc == QB_OK)
        rc = w4w_write_whole(h, sink, "config.json", text, strlen(text), list);
out:
    qbk_free(text);
    cJSON_Delete(cfg);
    return rc;
}

/* The kit writes the tokenizer files and generation_config.json (one
 * implementation for every writer and the host, qbk_hf_sidefiles.h);
 * this sink in front of the real one records each file it closes, with
 * size and SHA-256, for the manifest. */
typedef struct rec_sink {
    const qb_host *h;
    const qb_sink *inner;
    w4w_written_list *list;
} rec_sink;

typedef struct rec_file {
    rec_sink *owner;
    qb_sink_file *f;
    char name[256];
} rec_file;

static qb_status rec_create(void *handle, const char *name, qb_sink_file **out)
{
    rec_sink *r = handle;
    rec_file *rf;
    qb_status rc;
    /* The manifest's name field holds 255 bytes; no list file is longer. */
    if (strlen(name) >= sizeof rf->name)
        return r->h->set_error(r->h, QB_E_INVALID, "%s: name too long", name);
    if (!(rf = qbk_calloc(1, sizeof *rf)))
        return r->h->set_error(r->h, QB_E_NOMEM, "%s: out of memory", name);
    rc = r->inner->create(r->inner->handle, name, &rf->f);
    if (rc != QB_OK) {
        qbk_free(rf);
        return rc;
    }
    rf->owner = r;
    memcpy(rf->name, name, strlen(name) + 1);
    *out = (qb_sink_file *)rf;
    return QB_OK;
}

static qb_status rec_write(qb_sink_file *f, const void *buf, size_t len)
{
    rec_file *rf = (rec_file *)f;
    return rf->owner->inner->write(rf->f, buf, len);
}

static qb_status rec_close(qb_sink_file *f, uint64_t *bytes, uint8_t sha256[32])
{
    rec_file *rf = (rec_file *)f;
    rec_sink *r = rf->owner;
    uint64_t n = 0;
    uint8_t sha[32];
    qb_status rc = r->inner->close(rf->f, &n, sha);
    if (rc == QB_OK && r->list)
        rc = w4w_written_add(r->h, r->list, rf->name, n, sha);
    if (bytes)
        *bytes = n;
    if (sha256)
        memcpy(sha256, sha, 32);
    qbk_free(rf);
    return rc;
}

qb_status w4w_config_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                           const w4w_plan *plan, w4w_written_list *list)
{
    rec_sink r;
    qb_sink t;
    qb_status rc = write_config(h, sink, src, plan, list);
    if (rc != QB_OK)
        return rc;
    r.h = h;
    r.inner = sink;
    r.list = list;
    t = *sink;
    t.handle = &r;
    t.create = rec_create;
    t.write = rec_write;
    t.close = rec_close;
    /* the copy's write_file would reach the real sink with this handle:
     * the kit writes through create/write/close only */
    t.write_file = NULL;
    return qbk_hf_write_tokenizer_files(h, &t, src->info);
}
