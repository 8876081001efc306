/*
 * sm86-w4a16 — the reader's metadata view (qb_reader_vtable.get_metadata,
 * ABI 1.2): what the writer declared about each tensor it served, in the
 * entries every reader may serve for verify (docs/plugin-design.md,
 * "Declarations for verify"):
 *   quantbridge.exact:NAME        bool  "true"/"false": the manifest's
 *                                 per-linear "exact" flag (the decoded
 *                                 weights equal the source's bit for bit:
 *                                 w4a16-format.md, "manifest.json")
 *   quantbridge.expert_grid:NAME  grid  "bits=4 group_size=G scale_dtype=F16":
 *                                 a fused expert tensor [E, in, out] served
 *                                 whole, each expert's out columns a W4A16
 *                                 linear row in groups of G inputs
 *                                 (w4a16-format.md, "gpt-oss")
 *   quantbridge.quant_rule:NAME   string the rule a requantized linear's scales
 *                                 were chosen by: the word before the ':' of
 *                                 the manifest's "quant_rule" ("weighted",
 *                                 "gptq", "absmax", ...), so verify judges an
 *                                 activation-aware rule at the model's output
 *                                 (docs/verify.md, "The rule")
 * manifest.json is read again through the host's strict JSON parser; the
 * manifest check (manifest_in.c) has already accepted it.
 */
#include "w4w.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_path.h"

#define W4W_META_MANIFEST_MAX (64u << 20)

/* One linear's "exact" flag under its canonical name. */
typedef struct exact_flag {
    char *name;
    int exact;
    char rule[32]; /* the manifest's quant_rule up to its ':' ("" none) */
} exact_flag;

static int flag_cmp(const void *a, const void *b)
{
    return strcmp(((const exact_flag *)a)->name, ((const exact_flag *)b)->name);
}

/* "<file>:<base>" -> canonical weight name: a layer file's linears live
 * under model.layers.N, anything else (lm_head.safetensors) at the top
 * (w4a16-format.md, "manifest.json"). NULL when not of that form. */
static char *canonical(const char *key)
{
    const char *colon = strchr(key, ':');
    char buf[512];
    int layer = -1, used = 0;
    if (!colon || !colon[1])
        return NULL;
    if (sscanf(key, "layer_%d.safetensors:%n", &layer, &used) == 1 && used > 0 && layer >= 0)
        snprintf(buf, sizeof buf, "model.layers.%d.%s.weight", layer, colon + 1);
    else
        snprintf(buf, sizeof buf, "%s.weight", colon + 1);
    return qbk_strdup(buf);
}

/* The manifest's "tensors" flags, sorted by canonical name. */
static qb_status read_flags(const qb_host *h, const char *dir, exact_flag **out, size_t *n_out)
{
    const qb_json_api *J = h->json;
    char *path = qbk_path_join(dir, "manifest.json");
    void *text = NULL;
    size_t len = 0, i, n = 0, count;
    qb_json *root = NULL;
    const qb_json *tensors;
    exact_flag *f = NULL;
    qb_status rc;

    *out = NULL;
    *n_out = 0;
    if (!path)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    if ((rc = h->read_small_file(h, path, W4W_META_MANIFEST_MAX, &text, &len)) ||
        (rc = J->parse(h, path, text, len, &root)))
        goto out;
    tensors = J->get(root, "tensors");
    count = J->type(tensors) == QB_JSON_OBJECT ? J->count(tensors) : 0;
    f = qbk_calloc(count ? count : 1, sizeof *f);
    if (!f) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    for (i = 0; i < count; i++) {
        const char *key = NULL;
        const qb_json *t = J->at(tensors, i, &key);
        int32_t exact = 0;
        const char *rule = J->get_string(J->get(t, "quant_rule"));
        if (!key || !(f[n].name = canonical(key)))
            continue;
        f[n].exact = J->get_bool(J->get(t, "exact"), &exact) && exact;
        if (rule && !f[n].exact) {
            size_t len = strcspn(rule, ":");
            if (len < sizeof f[n].rule) {
                memcpy(f[n].rule, rule, len);
                f[n].rule[len] = '\0';
            }
        }
        n++;
    }
    qsort(f, n, sizeof *f, flag_cmp);
    *out = f;
    *n_out = n;
    f = NULL;
out:
    for (i = 0; f && i < n; i++)
        qbk_free(f[i].name);
    qbk_free(f);
    J->free(root);
    h->free(h, text);
    qbk_free(path);
    return rc;
}

qb_status w4w_meta_build(const qb_host *h, const char *dir, int64_t group_size,
                         const char *const *linears, size_t n_linears, const char *const *experts,
                         size_t n_experts, w4w_meta **out, size_t *n_out)
{
    exact_flag *flags = NULL;
    size_t n_flags = 0, i, n = 0;
    w4w_meta *m = NULL;
    qb_status rc;

    *out = NULL;
    *n_out = 0;
    if (!QB_HAS_FIELD(h, qb_host, json) || !h->json)
        return QB_OK; /* a 1.0 host: no JSON service, no declarations */
    if ((rc = read_flags(h, dir, &flags, &n_flags)))
        return rc;
    m = qbk_calloc(2 * n_linears + n_experts + 1, sizeof *m);
    if (!m) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    for (i = 0; i < n_linears; i++) {
        exact_flag key = {(char *)linears[i], 0, ""};
        const exact_flag *hit = bsearch(&key, flags, n_flags, sizeof *flags, flag_cmp);
        if (!hit) /* the manifest says nothing of it: nothing declared */
            continue;
        if (!(m[n].key = qbk_malloc(strlen(linears[i]) + 32))) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        sprintf(m[n].key, "quantbridge.exact:%s", linears[i]);
        m[n].type = "bool";
        snprintf(m[n].value, sizeof m[n].value, "%s", hit->exact ? "true" : "false");
        n++;
        if (!hit->rule[0])
            continue;
        if (!(m[n].key = qbk_malloc(strlen(linears[i]) + 32))) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        sprintf(m[n].key, "quantbridge.quant_rule:%s", linears[i]);
        m[n].type = "string";
        snprintf(m[n].value, sizeof m[n].value, "%s", hit->rule);
        n++;
    }
    for (i = 0; i < n_experts; i++) {
        if (!(m[n].key = qbk_malloc(strlen(experts[i]) + 32))) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        sprintf(m[n].key, "quantbridge.expert_grid:%s", experts[i]);
        m[n].type = "grid";
        snprintf(m[n].value, sizeof m[n].value, "bits=4 group_size=%lld scale_dtype=F16",
                 (long long)group_size);
        n++;
    }
    *out = m;
    *n_out = n;
    m = NULL;
out:
    w4w_meta_free(m, n);
    for (i = 0; i < n_flags; i++)
        qbk_free(flags[i].name);
    qbk_free(flags);
    return rc;
}

void w4w_meta_free(w4w_meta *m, size_t n)
{
    size_t i;
    for (i = 0; m && i < n; i++)
        qbk_free(m[i].key);
    qbk_free(m);
}

qb_status w4w_meta_entry(const w4w_meta *m, size_t n, size_t index, qb_meta_entry *out)
{
    if (index >= n)
        return QB_E_RANGE;
    out->key = m[index].key;
    out->type = m[index].type;
    if (out->value && out->value_cap)
        snprintf(out->value, out->value_cap, "%s", m[index].value);
    return QB_OK;
}
