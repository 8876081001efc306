/*
 * quantbridge host — the model facts (qb_tensor.h, qb_model_facts) a writer
 * sees, from the reader's config text and tensor list, each fact from the
 * one source the header names. Nothing is derived from another fact or
 * from a default: head_dim is not hidden_size / n_heads, a missing
 * num_key_value_heads is not n_heads. The config is read with the host's
 * strict parser (json_parse.c): a config that means two things (a key
 * twice) states nothing.
 */
#include <assert.h>
#include <stdarg.h>
#include <string.h>

#include "qbh.h"

#define EMBED "model.embed_tokens.weight"
#define LM_HEAD "lm_head.weight"
#define LAYER_PREFIX "model.layers."

typedef enum stated { ABSENT, VALID, INVALID } stated;

/* What the config object says about integer `key`: absent (or null),
 * a valid value (an exact integer >= 0, qb_json.h get_int), or invalid. */
static stated config_int(const qb_json_api *J, const qb_json *cfg, const char *key, int64_t *v)
{
    const qb_json *n = J->get(cfg, key);
    *v = 0;
    if (!n || J->type(n) == QB_JSON_NULL)
        return ABSENT;
    if (!J->get_int(n, v) || *v < 0) {
        *v = 0;
        return INVALID;
    }
    return VALID;
}

/* N of "model.layers.N.<rest>" (canonical decimal), or -1. */
static int64_t layer_index(const char *name)
{
    const char *p;
    int64_t n = 0;
    size_t digits = 0;
    if (strncmp(name, LAYER_PREFIX, sizeof LAYER_PREFIX - 1) != 0)
        return -1;
    p = name + sizeof LAYER_PREFIX - 1;
    if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
        return -1; /* "01" is not a canonical index */
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++digits > 18)
            return -1;
        n = n * 10 + (*p - '0');
    }
    return digits && *p == '.' ? n : -1;
}

/* n_experts and n_experts_used (qb_tensor.h): known when the config names
 * an expert count (all that it names agreeing) and experts per token, or
 * when it names none of those keys and no tensor is an expert's. */
static void experts(const qb_json_api *J, const qb_json *cfg, int expert_tensors,
                    qb_model_facts *f)
{
    static const char *const count_keys[] = {"num_local_experts", "num_experts",
                                             "n_routed_experts"};
    int64_t count = -1, used, v;
    stated per_tok;
    size_t i;

    for (i = 0; i < sizeof count_keys / sizeof count_keys[0]; i++) {
        stated s = config_int(J, cfg, count_keys[i], &v);
        if (s == INVALID || (s == VALID && count >= 0 && v != count))
            return; /* not an integer, or two keys disagree */
        if (s == VALID)
            count = v;
    }
    per_tok = config_int(J, cfg, "num_experts_per_tok", &used);
    if (count < 0 && per_tok == ABSENT) {
        if (expert_tensors)
            return; /* expert weights with no count in the config */
        f->n_experts = 0;
        f->n_experts_used = 0;
        f->known |= QB_FACT_EXPERTS;
        return;
    }
    if (count >= 0 && per_tok == VALID) {
        f->n_experts = count;
        f->n_experts_used = used;
        f->known |= QB_FACT_EXPERTS;
    }
}

qb_status qbh_model_facts_compute(const char *what, const char *config_json,
                                  const qb_tensor_info *tensors, size_t n_tensors,
                                  qb_model_facts *out)
{
    const qb_json_api *J = qbh_json_api();
    const qb_tensor_info *embed = NULL;
    qb_json *cfg = NULL;
    int64_t max_layer = -1, v;
    int lm_head = 0, expert_tensors = 0;
    qb_status rc = QB_OK;
    size_t i;

    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    for (i = 0; i < n_tensors; i++) {
        const char *name = tensors[i].name;
        int64_t l = layer_index(name);
        if (l > max_layer)
            max_layer = l;
        if (strcmp(name, EMBED) == 0)
            embed = &tensors[i];
        else if (strcmp(name, LM_HEAD) == 0)
            lm_head = 1;
        if (strstr(name, ".experts."))
            expert_tensors = 1;
    }
    if (embed) {
        if (embed->n_dims == 2) {
            out->vocab_size = embed->dims[0];
            out->hidden_size = embed->dims[1];
            out->known |= QB_FACT_VOCAB | QB_FACT_HIDDEN;
        }
        out->tied_embeddings = !lm_head;
        out->known |= QB_FACT_TIED_EMBEDDINGS;
    }

    if (!config_json)
        return QB_OK; /* nothing stated; nothing concluded from its silence */
    rc = qbh_json_parse(what, config_json, strlen(config_json), &cfg);
    if (rc)
        return rc;
    if (J->type(cfg) != QB_JSON_OBJECT) {
        rc = qbh_error_set(QB_E_FORMAT, "%s: not a JSON object", what ? what : "config");
        goto out;
    }
    switch (config_int(J, cfg, "num_hidden_layers", &v)) {
    case VALID:
        out->n_layers = v;
        out->known |= QB_FACT_LAYERS;
        break;
    case ABSENT:
        if (max_layer >= 0) {
            out->n_layers = max_layer + 1;
            out->known |= QB_FACT_LAYERS;
        }
        break;
    case INVALID: break;
    }
    if (config_int(J, cfg, "num_attention_heads", &out->n_heads) == VALID)
        out->known |= QB_FACT_HEADS;
    if (config_int(J, cfg, "num_key_value_heads", &out->n_kv_heads) == VALID)
        out->known |= QB_FACT_KV_HEADS;
    if (config_int(J, cfg, "head_dim", &out->head_dim) == VALID)
        out->known |= QB_FACT_HEAD_DIM;
    if (config_int(J, cfg, "intermediate_size", &out->intermediate_size) == VALID)
        out->known |= QB_FACT_INTERMEDIATE;
    experts(J, cfg, expert_tensors, out);
out:
    J->free(cfg);
    return rc;
}

/* Appends ", " (after the first item) and one formatted item; the text
 * is cut at n - 1 bytes. */
static void put_item(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put_item(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (*len && *len + 2 < n) {
        memcpy(buf + *len, ", ", 3);
        *len += 2;
    }
    va_start(ap, fmt);
    w = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    if (w > 0)
        *len = (size_t)w < n - *len ? *len + (size_t)w : n - 1;
}

size_t qbh_model_facts_text(const qb_model_facts *f, char *buf, size_t n)
{
    size_t len = 0;
    assert(buf && n > 0);
    buf[0] = '\0';
    if (f->known & QB_FACT_LAYERS)
        put_item(buf, n, &len, "layers %lld", (long long)f->n_layers);
    if (f->known & QB_FACT_HIDDEN)
        put_item(buf, n, &len, "hidden %lld", (long long)f->hidden_size);
    if (f->known & QB_FACT_VOCAB)
        put_item(buf, n, &len, "vocab %lld", (long long)f->vocab_size);
    if (f->known & QB_FACT_HEADS)
        put_item(buf, n, &len, "heads %lld", (long long)f->n_heads);
    if (f->known & QB_FACT_KV_HEADS)
        put_item(buf, n, &len, "kv heads %lld", (long long)f->n_kv_heads);
    if (f->known & QB_FACT_HEAD_DIM)
        put_item(buf, n, &len, "head dim %lld", (long long)f->head_dim);
    if (f->known & QB_FACT_INTERMEDIATE)
        put_item(buf, n, &len, "intermediate %lld", (long long)f->intermediate_size);
    if (f->known & QB_FACT_TIED_EMBEDDINGS)
        put_item(buf, n, &len, "tied %s", f->tied_embeddings ? "yes" : "no");
    if ((f->known & QB_FACT_EXPERTS) && !f->n_experts && !f->n_experts_used)
        put_item(buf, n, &len, "experts 0");
    else if (f->known & QB_FACT_EXPERTS)
        put_item(buf, n, &len, "experts %lld (%lld per token)", (long long)f->n_experts,
                 (long long)f->n_experts_used);
    if (!len)
        snprintf(buf, n, "none known");
    return len;
}
