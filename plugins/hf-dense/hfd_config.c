/*
 * hf-dense: what config.json says about a checkpoint.
 *
 * Quantized checkpoints announce themselves with
 * config.json:quantization_config.quant_method (transformers
 * PreTrainedConfig; GPTQModel may write `method`), older compressed-tensors
 * ones with `compression_config` (docs/formats/hf-dense.md "Quantized checkpoints"). hf-dense understands no
 * quant_method yet, so any of them is refused by name.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfd.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

/* The quantization object of a config, or NULL for a dense one. */
static const cJSON *hfd_quant_object(const cJSON *root, const char **key)
{
    /* the keys every writer strips: what a writer removes, a reader must see */
    const char *const *keys = qbk_hf_quant_config_keys;
    size_t i;
    for (i = 0; keys[i]; i++) {
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
    root = qbk_json_parse_quiet(text, strlen(text));
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

qb_status hfd_config_check(const qb_host *h, const char *path, const cJSON *root)
{
    const char *key = NULL;
    const cJSON *q = hfd_quant_object(root, &key), *m;

    if (!q)
        return QB_OK;
    m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsString(m))
        m = cJSON_GetObjectItemCaseSensitive(q, "method");
    return h->set_error(h, QB_E_UNSUPPORTED,
                        "%s: %s with quant_method '%s': a quantized checkpoint, which hf-dense "
                        "does not read (use the reader for that method)",
                        path, key, cJSON_IsString(m) ? m->valuestring : "(none)");
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

/* Checks that the decoder layers are 0..K-1 and as many as num_hidden_layers.
 * Layers are not compared with each other: a tensor missing from one layer
 * is left to the consumer, which names it in its own terms (the
 * sm86-w4a16 plan knows each architecture's tensors; `quantbridge verify`
 * opens an incomplete output to report exactly what is missing), and
 * layer kinds differ legitimately anyway (dense/MoE MLPs, attention/Mamba
 * mixers). */
static qb_status hfd_check_layers(const qb_host *h, const char *path, const cJSON *root,
                                  hfd_layer_tensor *lt, size_t n)
{
    size_t *start = NULL, i;
    int64_t k, nhl, nextn = 0, l;
    qb_status st = QB_OK;

    qsort(lt, n, sizeof(*lt), hfd_layer_cmp);
    k = lt[n - 1].layer + 1;
    start = qbk_malloc(((size_t)k + 1) * sizeof(*start));
    if (!start) {
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
out:
    qbk_free(start);
    return st;
}

/* A module with gate_proj and down_proj is a gated MLP (transformers
 * LlamaMLP and its copies: down_proj(act(gate_proj(x)) * up_proj(x))), which
 * has up_proj. Only this combination is certain: up_proj without gate_proj
 * is a non-gated MLP (NemotronMLP), Phi-3 fuses gate_up_proj, and a lone
 * gate_proj is left to the consumer to explain. */
static const struct {
    const char *has, *also, *needs;
} hfd_proj_rules[] = {
    {"gate_proj.weight", "down_proj.weight", "up_proj.weight"},
};

/* Checks hfd_proj_rules for tensor t: returns QB_OK or QB_E_FORMAT naming
 * the missing tensor and t's file. */
static qb_status hfd_check_projections(const qb_host *h, const qb_st_set *set,
                                       const qb_st_tensor *t)
{
    const qb_st_api *api = h->safetensors;
    size_t r, len = strlen(t->name), plen;
    char *want = NULL;
    qb_status st = QB_OK;

    for (r = 0; r < sizeof(hfd_proj_rules) / sizeof(hfd_proj_rules[0]); r++) {
        size_t hl = strlen(hfd_proj_rules[r].has);
        /* the whole last module name: "up_proj.weight" is not "gate_up_proj.weight" */
        if (len < hl || strcmp(t->name + len - hl, hfd_proj_rules[r].has) != 0 ||
            (len > hl && t->name[len - hl - 1] != '.'))
            continue;
        plen = len - hl;
        want = qbk_malloc(plen + 32);
        if (!want)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", t->file);
        memcpy(want, t->name, plen);
        strcpy(want + plen, hfd_proj_rules[r].also);
        if (api->find(set, want)) {
            strcpy(want + plen, hfd_proj_rules[r].needs);
            if (!api->find(set, want))
                st = h->set_error(h, QB_E_FORMAT,
                                  "%s: tensor '%s' is missing (the module has %s and %s: a gated "
                                  "MLP)",
                                  t->file, want, hfd_proj_rules[r].has, hfd_proj_rules[r].also);
        }
        qbk_free(want);
        if (st != QB_OK)
            return st;
    }
    return QB_OK;
}

/* transformers PretrainedConfig size fields (LlamaConfig names). */
static const char *const hfd_size_keys[] = {"num_hidden_layers", "hidden_size", "vocab_size",
                                            "intermediate_size", "num_attention_heads",
                                            "num_key_value_heads", "head_dim"};

qb_status hfd_config_check_tensors(const qb_host *h, const char *path, const cJSON *root,
                                   const qb_st_set *set)
{
    const qb_st_api *api = h->safetensors;
    hfd_layer_tensor *lt = NULL;
    const qb_st_tensor *embed = NULL;
    size_t i, n = api->count(set), n_lt = 0;
    int64_t hidden, vocab, unused;
    qb_status st = QB_OK;

    /* Size fields that writers turn into integers: a number that is no
     * int64_t (1e300, 4096.5, -1) is refused here, naming config.json,
     * rather than cast later (undefined behaviour) or misread. */
    for (i = 0; i < sizeof(hfd_size_keys) / sizeof(hfd_size_keys[0]); i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, hfd_size_keys[i]);
        if (cJSON_IsNumber(j) && (!hfd_json_int(root, hfd_size_keys[i], &unused) || unused < 0)) {
            st = h->set_error(h, QB_E_FORMAT, "%s: %s is %g, not a non-negative integer", path,
                              hfd_size_keys[i], j->valuedouble);
            goto out;
        }
    }
    lt = qbk_malloc((n ? n : 1) * sizeof(*lt));
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
    qbk_free(lt);
    return st;
}
