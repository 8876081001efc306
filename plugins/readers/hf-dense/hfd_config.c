/*
 * hf-dense: what config.json says about a checkpoint.
 *
 * Quantized checkpoints announce themselves with
 * config.json:quantization_config.quant_method (transformers
 * PreTrainedConfig; GPTQModel may write `method`), older compressed-tensors
 * ones with `compression_config` (formats.md §9). hf-dense understands no
 * quant_method yet, so any of them is refused by name.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfd.h"

/* The quantization object of a config, or NULL for a dense one. */
static const cJSON *hfd_quant_object(const cJSON *root, const char **key)
{
    static const char *const keys[] = {"quantization_config", "compression_config"};
    size_t i;
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        if (q && !cJSON_IsNull(q)) {
            *key = keys[i];
            return q;
        }
    }
    return NULL;
}

hfd_config_kind hfd_config_classify(const char *text)
{
    cJSON *root;
    const char *key;
    hfd_config_kind k;

    if (!text)
        return HFD_CONFIG_BROKEN;
    root = cJSON_Parse(text);
    if (!cJSON_IsObject(root))
        k = HFD_CONFIG_BROKEN;
    else if (hfd_quant_object(root, &key))
        k = HFD_CONFIG_QUANTIZED;
    else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "model_type")))
        k = HFD_CONFIG_INVALID;
    else
        k = HFD_CONFIG_DENSE;
    cJSON_Delete(root);
    return k;
}

qb_status hfd_config_check(const qb_host *h, const char *path, const char *text, char **model_type)
{
    cJSON *root = NULL;
    const cJSON *q, *mt;
    const char *key = NULL;
    qb_status st = QB_OK;

    *model_type = NULL;
    root = cJSON_Parse(text);
    if (!cJSON_IsObject(root)) {
        st = h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    q = hfd_quant_object(root, &key);
    if (q) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
        if (!cJSON_IsString(m))
            m = cJSON_GetObjectItemCaseSensitive(q, "method");
        st = h->set_error(h, QB_E_UNSUPPORTED,
                          "%s: %s with quant_method '%s': a quantized checkpoint, which hf-dense "
                          "does not read (use the reader for that method)",
                          path, key, cJSON_IsString(m) ? m->valuestring : "(none)");
        goto out;
    }
    mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt) || !mt->valuestring[0]) {
        st = h->set_error(h, QB_E_FORMAT, "%s: no model_type string", path);
        goto out;
    }
    *model_type = strdup(mt->valuestring);
    if (!*model_type)
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
out:
    cJSON_Delete(root);
    return st;
}

/* ---- config.json against the tensors ---- */

/* One tensor of a decoder layer: "model.layers.<layer>.<suffix>". */
typedef struct hfd_layer_tensor {
    int64_t layer;
    const char *suffix;
    const qb_st_tensor *t;
} hfd_layer_tensor;

/* Largest layer index taken as such (no model has near this many layers;
 * it bounds the per-layer arrays). */
#define HFD_MAX_LAYERS 65536

/* An integer config value: 1 with *v set, 0 when absent or not an integer
 * (the cast of a double outside int64_t would be undefined behaviour). */
static int hfd_json_int(const cJSON *root, const char *key, int64_t *v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= -0x1p63 && j->valuedouble < 0x1p63) ||
        j->valuedouble != (double)(int64_t)j->valuedouble)
        return 0;
    *v = (int64_t)j->valuedouble;
    return 1;
}

static int hfd_layer_cmp(const void *a, const void *b)
{
    const hfd_layer_tensor *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return strcmp(x->suffix, y->suffix);
}

/* 1 when name is "model.layers.<N>.<suffix>" with N a decimal without
 * leading zeros below HFD_MAX_LAYERS. */
static int hfd_layer_name(const char *name, int64_t *layer, const char **suffix)
{
    static const char prefix[] = "model.layers.";
    const char *p = name + sizeof(prefix) - 1;
    int64_t n = 0;
    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0 || *p < '0' || *p > '9')
        return 0;
    if (*p == '0' && p[1] != '.')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        n = n * 10 + (*p - '0');
        if (n >= HFD_MAX_LAYERS)
            return 0;
    }
    if (*p != '.' || !p[1])
        return 0;
    *layer = n;
    *suffix = p + 1;
    return 1;
}

/* Layer a (sorted range [a0, a1)) against layer b ([b0, b1)): when every
 * suffix of a is in b and b has more, returns the first suffix of b that a
 * lacks; otherwise NULL. */
static const char *hfd_strict_subset(const hfd_layer_tensor *a0, const hfd_layer_tensor *a1,
                                     const hfd_layer_tensor *b0, const hfd_layer_tensor *b1)
{
    const char *lack = NULL;
    if (a1 - a0 >= b1 - b0)
        return NULL;
    while (b0 < b1) {
        int c = a0 < a1 ? strcmp(a0->suffix, b0->suffix) : 1;
        if (c < 0)
            return NULL; /* a has a suffix b lacks */
        if (c == 0) {
            a0++;
        } else if (!lack) {
            lack = b0->suffix;
        }
        b0++;
    }
    return a0 == a1 ? lack : NULL;
}

/* Compares the decoder layers with each other and with num_hidden_layers. */
static qb_status hfd_check_layers(const qb_host *h, const char *path, const cJSON *root,
                                  hfd_layer_tensor *lt, size_t n)
{
    size_t *start = NULL, *rep = NULL, n_rep = 0, i, j;
    int64_t k, nhl, nextn = 0, l;
    qb_status st = QB_OK;

    qsort(lt, n, sizeof(*lt), hfd_layer_cmp);
    k = lt[n - 1].layer + 1;
    start = malloc(((size_t)k + 1) * sizeof(*start));
    rep = malloc((size_t)k * sizeof(*rep));
    if (!start || !rep) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    /* start[l] .. start[l + 1]: layer l's tensors, sorted by suffix */
    for (l = 0, i = 0; l < k; l++) {
        start[l] = i;
        if (i == n || lt[i].layer != l) {
            st = h->set_error(h, QB_E_FORMAT,
                              "%s: model.layers.%" PRId64 " has no tensor but model.layers.%" PRId64
                              " has (%s): layer missing",
                              lt[n - 1].t->file, l, k - 1, lt[n - 1].t->name);
            goto out;
        }
        while (i < n && lt[i].layer == l)
            i++;
    }
    start[k] = n;
    /* DeepSeek-V3 / GLM-4.5 store their multi-token-prediction layers after
     * the num_hidden_layers decoder layers, as model.layers.<num_hidden_layers + i> */
    if (hfd_json_int(root, "num_hidden_layers", &nhl)) {
        if (hfd_json_int(root, "num_nextn_predict_layers", &nextn) && (nextn < 0 || nextn > 64))
            nextn = 0;
        if (nhl != k && nhl + nextn != k) {
            st = h->set_error(h, QB_E_FORMAT,
                              "%s: num_hidden_layers is %" PRId64 " but the tensors have %" PRId64
                              " layers (model.layers.0 .. model.layers.%" PRId64 ")",
                              path, nhl, k, k - 1);
            goto out;
        }
    }
    /* Layers of one kind carry the same tensor suffixes, but kinds differ
     * legitimately (dense and MoE MLPs with first_k_dense_replace,
     * mlp_only_layers or decoder_sparse_step; attention and Mamba or linear
     * attention mixers in hybrids), so no per-layer set is required. What is
     * certain: a layer whose suffixes are a strict subset of another layer's
     * lacks a tensor, since no layer kind is another kind minus tensors. */
    for (l = 0; l < k; l++) {
        for (j = 0; j < n_rep; j++) {
            size_t r = rep[j];
            if (start[l + 1] - start[l] != start[r + 1] - start[r])
                continue;
            for (i = 0; i < start[l + 1] - start[l]; i++)
                if (strcmp(lt[start[l] + i].suffix, lt[start[r] + i].suffix) != 0)
                    break;
            if (i == start[l + 1] - start[l])
                break;
        }
        if (j == n_rep)
            rep[n_rep++] = (size_t)l;
    }
    for (i = 0; i < n_rep; i++) {
        for (j = 0; j < n_rep; j++) {
            size_t a = rep[i], b = rep[j];
            const char *lack;
            if (i == j)
                continue;
            lack = hfd_strict_subset(lt + start[a], lt + start[a + 1], lt + start[b],
                                     lt + start[b + 1]);
            if (lack) {
                st = h->set_error(h, QB_E_FORMAT,
                                  "%s: model.layers.%zu.%s is missing (model.layers.%zu.%s exists "
                                  "and layer %zu has no tensor layer %zu lacks)",
                                  lt[start[a]].t->file, a, lack, b, lack, a, b);
                goto out;
            }
        }
    }
out:
    free(start);
    free(rep);
    return st;
}

/* Projections that come together in every Hugging Face module using these
 * names: a gated MLP (transformers LlamaMLP and its copies) computes
 * down_proj(act(gate_proj(x)) * up_proj(x)), so gate_proj never comes
 * without up_proj. Nothing else is required: up_proj without gate_proj is a
 * non-gated MLP (NemotronMLP), Phi-3 fuses them into gate_up_proj, and
 * down_proj is left to the writer, which knows the architecture. */
static const struct {
    const char *has, *needs[2];
} hfd_proj_rules[] = {
    {"gate_proj.weight", {"up_proj.weight", NULL}},
};

/* Checks hfd_proj_rules for tensor t: returns QB_OK or QB_E_FORMAT naming
 * the missing tensor and t's file. */
static qb_status hfd_check_projections(const qb_host *h, const qb_st_set *set,
                                       const qb_st_tensor *t)
{
    const qb_st_api *api = h->safetensors;
    size_t r, k, len = strlen(t->name), plen;
    char *want = NULL;
    qb_status st = QB_OK;

    for (r = 0; r < sizeof(hfd_proj_rules) / sizeof(hfd_proj_rules[0]); r++) {
        size_t hl = strlen(hfd_proj_rules[r].has);
        /* the whole last module name: "up_proj.weight" is not "gate_up_proj.weight" */
        if (len < hl || strcmp(t->name + len - hl, hfd_proj_rules[r].has) != 0 ||
            (len > hl && t->name[len - hl - 1] != '.'))
            continue;
        plen = len - hl;
        for (k = 0; k < 2 && hfd_proj_rules[r].needs[k]; k++) {
            size_t nl = strlen(hfd_proj_rules[r].needs[k]);
            want = malloc(plen + nl + 1);
            if (!want)
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", t->file);
            memcpy(want, t->name, plen);
            memcpy(want + plen, hfd_proj_rules[r].needs[k], nl + 1);
            if (!api->find(set, want)) {
                st = h->set_error(h, QB_E_FORMAT,
                                  "%s: tensor '%s' is missing (the module has '%s', which never "
                                  "comes without it)",
                                  t->file, want, t->name);
                free(want);
                return st;
            }
            free(want);
        }
    }
    return QB_OK;
}

qb_status hfd_config_check_tensors(const qb_host *h, const char *path, const char *text,
                                   const qb_st_set *set)
{
    const qb_st_api *api = h->safetensors;
    cJSON *root = NULL;
    hfd_layer_tensor *lt = NULL;
    const qb_st_tensor *embed = NULL;
    size_t i, n = api->count(set), n_lt = 0;
    int64_t hidden, vocab, unused;
    qb_status st = QB_OK;

    root = cJSON_Parse(text);
    if (!cJSON_IsObject(root)) {
        st = h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    lt = malloc((n ? n : 1) * sizeof(*lt));
    if (!lt) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    for (i = 0; i < n; i++) {
        const qb_st_tensor *t = api->tensor(set, i);
        st = hfd_check_projections(h, set, t);
        if (st != QB_OK)
            goto out;
        if (hfd_layer_name(t->name, &lt[n_lt].layer, &lt[n_lt].suffix)) {
            lt[n_lt++].t = t;
        } else if (strcmp(t->name, "model.embed_tokens.weight") == 0 && t->n_dims == 2) {
            embed = t;
        }
    }
    if (n_lt) {
        st = hfd_check_layers(h, path, root, lt, n_lt);
        if (st != QB_OK)
            goto out;
    }
    if (embed) {
        /* transformers builds nn.Embedding(vocab_size, hidden_size) for
         * model.embed_tokens; configs with a separate embedding width
         * (OPT word_embed_proj_dim, ALBERT embedding_size) are left alone */
        if (hfd_json_int(root, "hidden_size", &hidden) &&
            !hfd_json_int(root, "embedding_size", &unused) &&
            !hfd_json_int(root, "word_embed_proj_dim", &unused) && embed->dims[1] != hidden) {
            st = h->set_error(h, QB_E_FORMAT,
                              "%s: tensor 'model.embed_tokens.weight' has %" PRId64
                              " columns but config.json hidden_size is %" PRId64,
                              embed->file, embed->dims[1], hidden);
            goto out;
        }
        /* rows beyond vocab_size have no token id; fewer rows than
         * vocab_size is left alone (only the certain contradiction) */
        if (hfd_json_int(root, "vocab_size", &vocab) && embed->dims[0] > vocab) {
            st = h->set_error(h, QB_E_FORMAT,
                              "%s: tensor 'model.embed_tokens.weight' has %" PRId64
                              " rows but config.json vocab_size is %" PRId64,
                              embed->file, embed->dims[0], vocab);
            goto out;
        }
    }
out:
    free(lt);
    cJSON_Delete(root);
    return st;
}
