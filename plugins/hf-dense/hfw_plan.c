/*
 * hf-dense writer: the output plan — which output tensor each source
 * tensor becomes, in which file, and the order the host writes them in.
 *
 * Fusion (phi3): transformers' Phi3Attention holds one qkv_proj whose rows
 * are [Q; K; V] (split as query_pos = n_heads * head_dim, then
 * n_kv_heads * head_dim each), and Phi3MLP one gate_up_proj whose rows are
 * [gate; up] (`gate, up = up_states.chunk(2, dim=-1)`), so a reader that
 * splits them (the GGUF reader does) is undone here by concatenating rows
 * in that order. Because the concatenated bytes are simply the parts one
 * after the other, writing the parts consecutively streams the fused
 * tensor without holding it.
 *
 * Shards: cut greedily in file order as transformers' save_pretrained
 * (huggingface_hub split_torch_state_dict_into_shards) does: a tensor
 * starts a new shard when it would push a non-empty one past the limit.
 */
#define _XOPEN_SOURCE 700 /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hfw.h"
#include "qbk_alloc.h"

/* Split module names and the fused name they form, per architecture
 * family (phi3 only today). */
typedef struct hfw_fusion {
    const char *module; /* "self_attn." / "mlp." */
    const char *parts[HFW_MAX_PARTS];
    unsigned n_parts;
    const char *fused;
} hfw_fusion;

static const hfw_fusion hfw_phi3_fusions[] = {
    {"self_attn.", {"q_proj", "k_proj", "v_proj"}, 3, "qkv_proj"},
    {"mlp.", {"gate_proj", "up_proj", NULL}, 2, "gate_up_proj"},
};

/* When `name` is "model.layers.<L>.<module><part>.<suffix>" for a part of
 * fusion f, returns the length of "model.layers.<L>.<module>" and sets
 * *which and *suffix; else 0. */
static size_t hfw_match_part(const char *name, const hfw_fusion *f, unsigned *which,
                             const char **suffix)
{
    static const char lay[] = "model.layers.";
    const char *s = name, *m;
    size_t ml = strlen(f->module);
    unsigned k;

    if (strncmp(s, lay, sizeof(lay) - 1) != 0)
        return 0;
    s += sizeof(lay) - 1;
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s++ != '.' || strncmp(s, f->module, ml) != 0)
        return 0;
    m = s + ml;
    for (k = 0; k < f->n_parts; k++) {
        size_t pl = strlen(f->parts[k]);
        if (strncmp(m, f->parts[k], pl) == 0 && m[pl] == '.' && m[pl + 1]) {
            *which = k;
            *suffix = m + pl + 1;
            return (size_t)(m - name);
        }
    }
    return 0;
}

static int hfw_cmp_name(const void *a, const void *b)
{
    const hfw_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

void hfw_plan_free(hfw_plan *p)
{
    size_t i;
    for (i = 0; p->t && i < p->n; i++)
        qbk_free(p->t[i].name);
    qbk_free(p->t);
    qbk_shards_free(&p->sh);
    qbk_free(p->out_of);
    memset(p, 0, sizeof(*p));
}

/* Adds output tensor from source parts idx[0..np) (all exist). Checks that
 * the parts agree in every dimension but the first. */
static qb_status hfw_add(const qb_host *h, const qb_model_src *src, hfw_plan *p, const char *name,
                         const size_t *idx, unsigned np, hfw_dtype dt)
{
    hfw_tensor *t = &p->t[p->n];
    const qb_tensor_info *first = NULL;
    uint64_t elems = 0;
    unsigned k;
    uint32_t d;
    qb_status st;

    memset(t, 0, sizeof(*t));
    for (k = 0; k < np; k++) {
        const qb_tensor_info *ti;
        uint64_t e = 1;
        if ((st = src->tensor_info(src->handle, idx[k], &ti)) != QB_OK)
            return st;
        if (ti->n_dims < 1 || ti->n_dims > QB_MAX_DIMS)
            return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': %u dimensions",
                                src->source_path, ti->name, ti->n_dims);
        for (d = 0; d < ti->n_dims; d++) {
            if (ti->dims[d] < 1)
                return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': dimension %u is %lld",
                                    src->source_path, ti->name, d, (long long)ti->dims[d]);
            e *= (uint64_t)ti->dims[d];
        }
        if (!first) {
            first = ti;
            t->n_dims = ti->n_dims;
            memcpy(t->dims, ti->dims, sizeof(t->dims));
        } else {
            int same = ti->n_dims == first->n_dims;
            for (d = 1; same && d < ti->n_dims; d++)
                same = ti->dims[d] == first->dims[d];
            if (!same)
                return h->set_error(h, QB_E_MISMATCH,
                                    "%s: tensors '%s' and '%s' cannot be fused into '%s': their "
                                    "shapes differ beyond the first dimension",
                                    src->source_path, first->name, ti->name, name);
            t->dims[0] += ti->dims[0];
        }
        t->part[k] = idx[k];
        elems += e;
        p->out_of[idx[k]] = p->n;
    }
    t->n_parts = np;
    t->n_bytes = elems * hfw_dtype_size(dt);
    t->name = qbk_strdup(name);
    if (!t->name)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    p->n++;
    return QB_OK;
}

/* Tries to fuse the part `name` (source index i) belongs to. *done = 1 when
 * it was a fusable part (then the fused tensor was added). */
static qb_status hfw_try_fuse(const qb_host *h, const qb_model_src *src, hfw_plan *p, size_t i,
                              const char *name, hfw_dtype dt, int *done)
{
    size_t f;
    *done = 0;
    for (f = 0; f < sizeof(hfw_phi3_fusions) / sizeof(hfw_phi3_fusions[0]); f++) {
        const hfw_fusion *fu = &hfw_phi3_fusions[f];
        const char *suffix = NULL;
        unsigned which = 0, k;
        size_t pre = hfw_match_part(name, fu, &which, &suffix), idx[HFW_MAX_PARTS];
        char buf[512];
        if (!pre)
            continue;
        for (k = 0; k < fu->n_parts; k++) {
            if (snprintf(buf, sizeof buf, "%.*s%s.%s", (int)pre, name, fu->parts[k], suffix) >=
                (int)sizeof buf)
                return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': name too long",
                                    src->source_path, name);
            if (k == which) {
                idx[k] = i;
                continue;
            }
            if (src->find(src->handle, buf, &idx[k]) != QB_OK)
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: tensor '%s' has no partner '%s': phi3 needs all of "
                                    "them to fuse into %s",
                                    src->source_path, name, buf, fu->fused);
        }
        snprintf(buf, sizeof buf, "%.*s%s.%s", (int)pre, name, fu->fused, suffix);
        *done = 1;
        return hfw_add(h, src, p, buf, idx, fu->n_parts, dt);
    }
    return QB_OK;
}

qb_status hfw_plan_build(const qb_host *h, const qb_model_src *src, hfw_dtype dt, int fuse_phi3,
                         size_t drop, uint64_t max_shard, size_t *order, hfw_plan *p)
{
    size_t n_src = src->info->n_tensors, i, k, pos = 0;
    const hfw_tensor **sorted = NULL;
    uint64_t *sizes = NULL;
    qb_status st = QB_OK;

    memset(p, 0, sizeof(*p));
    p->n_src = n_src;
    p->t = qbk_calloc(n_src ? n_src : 1, sizeof(*p->t));
    p->out_of = qbk_malloc((n_src ? n_src : 1) * sizeof(*p->out_of));
    if (!p->t || !p->out_of) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    for (i = 0; i < n_src; i++)
        p->out_of[i] = HFW_DROPPED;

    for (i = 0; i < n_src; i++) {
        const qb_tensor_info *ti;
        int done = 0;
        if (i == drop || p->out_of[i] != HFW_DROPPED)
            continue; /* dropped, or already a part of a fused tensor */
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            goto out;
        if (fuse_phi3 && (st = hfw_try_fuse(h, src, p, i, ti->name, dt, &done)) != QB_OK)
            goto out;
        if (!done && (st = hfw_add(h, src, p, ti->name, &i, 1, dt)) != QB_OK)
            goto out;
    }
    if (p->n == 0) {
        st = h->set_error(h, QB_E_FORMAT, "%s: nothing to write (no tensors)", src->source_path);
        goto out;
    }

    /* A fused name could meet a tensor the source already had fused. */
    sorted = qbk_malloc(p->n * sizeof(*sorted));
    if (!sorted) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    for (i = 0; i < p->n; i++)
        sorted[i] = &p->t[i];
    qsort(sorted, p->n, sizeof(*sorted), hfw_cmp_name);
    for (i = 1; i < p->n; i++) {
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
            st = h->set_error(h, QB_E_FORMAT,
                              "%s: tensor '%s' would be written twice (the source has it both "
                              "fused and split)",
                              src->source_path, sorted[i]->name);
            goto out;
        }
    }

    sizes = qbk_malloc((p->n ? p->n : 1) * sizeof(*sizes));
    if (!sizes) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    for (i = 0; i < p->n; i++)
        sizes[i] = p->t[i].n_bytes;
    if ((st = qbk_shards_cut(h, "hf-dense writer", sizes, p->n, max_shard,
                             QBK_SHARD_CUT_IF_BYTES, &p->sh)) != QB_OK)
        goto out;
    for (i = 0; i < p->n; i++)
        p->t[i].shard = qbk_shards_of(&p->sh, i);

    for (i = 0; i < p->n; i++)
        for (k = 0; k < p->t[i].n_parts; k++)
            order[pos++] = p->t[i].part[k];
    for (i = 0; i < n_src; i++)
        if (p->out_of[i] == HFW_DROPPED)
            order[pos++] = i;
    if (pos != n_src)
        st = h->set_error(h, QB_E_INTERNAL, "%s: write order covers %zu of %zu tensors",
                          src->source_path, pos, n_src);
out:
    qbk_free(sorted);
    qbk_free(sizes);
    if (st != QB_OK)
        hfw_plan_free(p);
    return st;
}
