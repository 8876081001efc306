/*
 * sm86-w4a16 — the plan as the host sees it (qb_writer_vtable.plan, ABI
 * 1.2): what begin's plan (plan.c) will do with every source tensor, and
 * why, decided by the same rules write_tensor follows (decide.c for the
 * grids; an F16 item is a copy when the source stores f16, else a
 * conversion).
 */
#include "w4w.h"

#include <stdio.h>
#include <string.h>

static const char *dtype_text(qb_dtype d)
{
    switch (d) {
    case QB_DT_F32: return "f32";
    case QB_DT_F16: return "f16";
    case QB_DT_BF16: return "bf16";
    case QB_DT_F64: return "f64";
    case QB_DT_F8_E4M3: return "f8_e4m3";
    case QB_DT_F8_E5M2: return "f8_e5m2";
    default: return "other";
    }
}

/* Action and reason of a linear item. */
qb_status w4w_linear_action(const w4w_plan *p, const qb_model_src *src, const w4w_item *it,
                            uint32_t *action, char *why, size_t wn)
{
    const qb_tensor_info *ti = NULL;
    qb_grid_info gi;
    int64_t bound = 0, gs = p->opt.group_size;
    char sub[200];
    qb_status rc;

    rc = src->tensor_info(src->handle, it->src, &ti);
    if (rc != QB_OK)
        return rc;
    *action = QB_PLAN_REQUANT;
    if (it->perm_gptq) {
        snprintf(why, wn, "%s: requantized by GPTQ in descending-importance column order "
                 "(input_permutation), group size %lld", it->source_encoding, (long long)gs);
        return QB_OK;
    }
    if (!ti->has_grid || it->view) { /* a fused expert part: no grid view (w4w_item) */
        snprintf(why, wn, "dense %s: quantized to int4, group size %lld", it->source_encoding,
                 (long long)gs);
        return QB_OK;
    }
    memset(&gi, 0, sizeof gi);
    gi.struct_size = sizeof gi;
    rc = src->get_grid_info(src->handle, it->src, &gi);
    if (rc == QB_E_UNSUPPORTED) {
        snprintf(why, wn, "%s: the reader serves no integer grid", it->source_encoding);
        return QB_OK;
    }
    if (rc != QB_OK)
        return rc;
    if (it->perm) {
        /* plan.c already checked the permuted groups against group_size */
        if (!w4w_repack_zero(&gi, sub, sizeof sub)) {
            snprintf(why, wn, "%s in permuted order", sub);
            return QB_OK;
        }
        *action = QB_PLAN_EXACT;
        snprintf(why, wn, "%u-bit symmetric act-order grid stored in group order "
                 "(input_permutation): codes kept", gi.bits);
    } else if (!w4w_grid_bound(&gi, it->cols, 0, &bound, sub, sizeof sub)) {
        int64_t bp = 0;
        char tmp[200];
        int okp = !p->opt.act_order_permute && gi.col_group
                      ? w4w_grid_bound(&gi, it->cols, 1, &bp, tmp, sizeof tmp)
                      : 0;
        if (okp < 0)
            return QB_E_NOMEM;
        if (okp && w4w_bound_fits(bp, gs))
            snprintf(why, wn, "%s; act_order=permute keeps it exact", sub);
        else if (okp)
            snprintf(why, wn, "%s; act_order=permute with group size %lld (auto chooses it "
                     "then) keeps it exact", sub, (long long)bp);
        else
            snprintf(why, wn, "%s", sub);
        return QB_OK;
    } else if (!w4w_bound_fits(bound, gs)) {
        snprintf(why, wn, "source group size %lld is not a multiple of group_size %lld; "
                 "--group-size %lld keeps it exact", (long long)bound, (long long)gs,
                 (long long)bound);
        return QB_OK;
    } else {
        *action = QB_PLAN_EXACT;
        if (bound)
            snprintf(why, wn, "%u-bit symmetric grid, source groups of %lld columns hold "
                     "every group of %lld: codes kept", gi.bits, (long long)bound, (long long)gs);
        else
            snprintf(why, wn, "%u-bit symmetric grid, one source group per row: codes kept",
                     gi.bits);
    }
    if (gi.scale_dtype != QB_DT_F16) {
        size_t l = strlen(why);
        snprintf(why + l, wn - l, " (scales stored as %s: exact where each is an fp16 value, "
                 "checked while writing)", dtype_text(gi.scale_dtype));
    }
    return QB_OK;
}

qb_status w4w_plan_emit(const qb_host *h, const qb_model_src *src, const w4w_plan *p,
                        const qb_plan_sink *out)
{
    char gsv[32], why[512], target[320];
    size_t i;
    qb_status rc;

    snprintf(gsv, sizeof gsv, "%lld", (long long)p->opt.group_size);
    rc = out->setting(out->handle, "group_size", gsv, p->opt.group_reason);
    if (rc != QB_OK)
        return rc;
    for (i = 0; i < p->n_items; i++) {
        const w4w_item *it = &p->items[i];
        const qb_tensor_info *ti = NULL;
        qb_plan_entry e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        e.tensor = it->src;
        e.reason = why;
        rc = src->tensor_info(src->handle, it->src, &ti);
        if (rc != QB_OK)
            return rc;
        switch (it->kind) {
        case W4W_ITEM_LINEAR:
            rc = w4w_linear_action(p, src, it, &e.action, why, sizeof why);
            if (rc == QB_E_NOMEM)
                return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", W4W_PLUGIN_NAME,
                                    it->name);
            if (rc != QB_OK)
                return rc;
            e.target = it->key;
            e.group_size = p->opt.group_size;
            e.bytes_out = p->outs[it->out].n_bytes + p->outs[it->out + 1].n_bytes +
                          (it->perm ? p->outs[it->out + 2].n_bytes : 0);
            break;
        case W4W_ITEM_F16:
            snprintf(target, sizeof target, "%s:%s", p->files[it->file].name,
                     p->outs[it->out].name);
            e.target = target;
            e.bytes_out = p->outs[it->out].n_bytes;
            if (ti->source_dtype == QB_DT_F16) {
                e.action = QB_PLAN_COPY;
                snprintf(why, sizeof why, "f16 kept dense");
            } else {
                e.action = QB_PLAN_CONVERT;
                snprintf(why, sizeof why, "%s -> f16, kept dense", it->source_encoding);
            }
            break;
        case W4W_ITEM_F32:
            snprintf(target, sizeof target, "%s:%s", p->files[it->file].name,
                     p->outs[it->out].name);
            e.target = target;
            e.bytes_out = p->outs[it->out].n_bytes;
            e.action = ti->source_dtype == QB_DT_F32 ? QB_PLAN_COPY : QB_PLAN_CONVERT;
            /* gemma4's layer_scalar scales a whole layer's output; the
             * others are routing biases (docs/w4a16-format.md) */
            snprintf(why, sizeof why, "%s kept dense F32 (%s)", it->source_encoding,
                     strstr(it->name, "layer_scalar") ? "layer scalar" : "router bias");
            break;
        case W4W_ITEM_TIED:
            e.action = QB_PLAN_OMIT;
            snprintf(why, sizeof why, "tie_word_embeddings: checked equal to "
                     "model.embed_tokens.weight, not stored");
            break;
        }
        rc = out->tensor(out->handle, &e);
        if (rc != QB_OK)
            return rc;
    }
    return QB_OK;
}
