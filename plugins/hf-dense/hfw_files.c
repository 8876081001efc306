/*
 * hf-dense writer: the files around the weights — config.json and the
 * shard index — in the forms transformers' from_pretrained reads. The
 * tokenizer files and generation_config.json come from the kit
 * (qbk_hf_write_tokenizer_files), shared with every other writer.
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfw.h"
#include "qbk_json_edit.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_path.h"
#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_sink_text.h"

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
    (void)h;
    return qbk_sink_write_text(sink, name, text);
}

int hfw_config_bool(const qb_host *h, const char *source, const char *config_json,
                    const char *key, qb_status *st)
{
    cJSON *root = NULL;
    const cJSON *v;
    int r = -1;
    if ((*st = qbk_json_parse_config(h, source, config_json, &root)) != QB_OK)
        return -1;
    v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (cJSON_IsBool(v))
        r = cJSON_IsTrue(v) ? 1 : 0;
    else if (v && !cJSON_IsNull(v))
        *st = h->set_error(h, QB_E_FORMAT, "%s: config: %s is not a boolean", source, key);
    cJSON_Delete(root);
    return r;
}

qb_status hfw_config_text(const qb_host *h, const char *what, const char *config_json,
                          hfw_dtype dt, int tie, char **out)
{
    const char *keys[4], *values[4];
    char dtype[32];
    cJSON *root = NULL;
    int n = 0;
    qb_status st = qbk_json_parse_config(h, what, config_json, &root);

    if (st != QB_OK)
        return st;
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
    /* The one clean-up rule of every writer, the host's (qb_host.h,
     * hf_config_clean, ABI 1.3); the bundled writer ships with its host. */
    if (!QB_HAS_FIELD(h, qb_host, hf_config_clean) || !h->hf_config_clean)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: config.json: the host has no "
                            "hf_config_clean service (ABI 1.3)", what);
    {
        char *text = NULL;
        size_t len = 0;
        st = h->hf_config_clean(h, what, config_json, keys, values, &text, &len);
        if (st != QB_OK)
            return st;
        /* hfw_write_text adds the final newline itself */
        if (len && text[len - 1] == '\n')
            text[--len] = '\0';
        *out = qbk_malloc(len + 1);
        if (*out)
            memcpy(*out, text, len + 1);
        h->free(h, text);
        if (!*out)
            return h->set_error(h, QB_E_NOMEM, "%s: config.json: out of memory", what);
    }
    return QB_OK;
}

qb_status hfw_write_index(const qb_host *h, const qb_sink *sink, const hfw_plan *p)
{
    /* save_pretrained's sharded index: total_size, indent 2, a final
     * newline (docs/formats/hf-dense.md, "Sharding") */
    static const char *const keys[] = {"total_size"};
    const qbk_shard_index ix = {keys, &p->sh.total, 1, 2, 1};
    const char **names = qbk_malloc((p->n ? p->n : 1) * sizeof(*names));
    uint32_t *of = qbk_malloc((p->n ? p->n : 1) * sizeof(*of));
    qb_status st;
    size_t i;

    if (!names || !of) {
        qbk_free(names);
        qbk_free(of);
        return h->set_error(h, QB_E_NOMEM, "model.safetensors.index.json: out of memory");
    }
    for (i = 0; i < p->n; i++) {
        names[i] = p->t[i].name;
        of[i] = p->t[i].shard;
    }
    st = qbk_shards_write_index(h, sink, &p->sh, names, of, p->n, &ix);
    qbk_free(names);
    qbk_free(of);
    return st;
}
