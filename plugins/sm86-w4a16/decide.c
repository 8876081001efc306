/*
 * sm86-w4a16 — which linears keep their integer codes (exact), and the
 * group size that keeps the most of them (group_size=auto).
 *
 * A source grid carries over into the format when its codes fit int4
 * (repack.c) and no target group of `group_size` columns spans two source
 * groups: the format has one scale per target group (w4a16-format.md,
 * "Encoding of a packed linear"), so every column of a target group must
 * share the source's scale. With groups contiguous in stored column order
 * (the source's own order, or the group order act_order=permute stores),
 * that holds exactly when every source group boundary inside a row is a
 * multiple of group_size, i.e. when group_size divides the gcd of those
 * boundaries (docs/w4a16-format.md, "Choosing the group size"). The
 * writer (writer.c) and the plan (plan_emit.c) decide by this one rule;
 * the writer then still checks every block bit for bit.
 */
#include "w4w.h"

#include <stdio.h>
#include <string.h>
#include "qbk_alloc.h"

#define W4W_GROUP_DEFAULT 128
/* The CUDA mma kernel needs group_size % 32 == 0 (kernels/cuda/
 * w4a16_cuda_plan.c; docs/w4a16-format.md, "Choosing the group size"); any
 * other size falls back to the slower GEMV. */
#define W4W_GROUP_MMA 32

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Source group width when col_group is the contiguous map c / w, else 0. */
static int64_t trivial_width(const qb_grid_info *gi, int64_t cols)
{
    int64_t w, c;
    for (w = 0; w < cols && gi->col_group[w] == 0; w++)
        ;
    if (w < 1)
        return 0;
    for (c = 0; c < cols; c++)
        if (gi->col_group[c] != (int32_t)(c / w))
            return 0;
    return w;
}

int w4w_grid_bound(const qb_grid_info *gi, int64_t cols, int permute, int64_t *bound, char *why,
                   size_t why_len)
{
    int64_t sgs = 0, g = 0, c, cum;
    uint32_t k;
    size_t *count;

    if (!w4w_repack_zero(gi, why, why_len))
        return 0;
    if (gi->col_group)
        sgs = trivial_width(gi, cols);
    else
        sgs = gi->group_size;
    if (sgs >= 1 || !gi->col_group) {
        if (sgs < 1 || gi->n_groups != (uint32_t)w4a16_int4_n_groups(cols, sgs)) {
            snprintf(why, why_len, "grid group size %lld with %u groups does not match %lld columns",
                     (long long)sgs, gi->n_groups, (long long)cols);
            return 0;
        }
        *bound = sgs < cols ? sgs : 0;
        return 1;
    }
    if (!permute) {
        snprintf(why, why_len, "act-order column-to-group map (not contiguous groups)");
        return 0;
    }
    /* group order: group k occupies stored columns [cum_k, cum_k + count_k) */
    count = qbk_calloc(gi->n_groups ? gi->n_groups : 1, sizeof *count);
    if (!count) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    for (c = 0; c < cols; c++) {
        int32_t q = gi->col_group[c];
        if (q < 0 || (uint32_t)q >= gi->n_groups) {
            snprintf(why, why_len, "column %lld maps to group %d of %u", (long long)c, (int)q,
                     gi->n_groups);
            qbk_free(count);
            return 0;
        }
        count[q]++;
    }
    for (k = 0, cum = 0; k < gi->n_groups; k++) {
        cum += (int64_t)count[k];
        if (cum > 0 && cum < cols)
            g = gcd64(g, cum);
    }
    qbk_free(count);
    *bound = g;
    return 1;
}

int w4w_bound_fits(int64_t bound, int64_t gs)
{
    return bound == 0 || bound % gs == 0;
}

/* What the linears' grids allow, over every linear of the plan. */
typedef struct census {
    size_t n_lin;       /* linears */
    size_t n_ok;        /* grid repacks exactly at some group size (stored order) */
    int64_t g;          /* gcd of their bounds (0: any group size) */
    size_t n_perm;      /* not ok, but ok with act_order=permute */
    int64_t g_perm;     /* gcd of bounds of every grid ok with permute */
    int64_t bound_max;  /* for counting: linears exact at a size */
    char first_why[480]; /* why the first refused grid is refused */
    /* linears requantized from a source with a finer scale granularity
     * than a row: the finest, rounded up to W4W_GROUP_MMA (0: none) */
    size_t n_fine;       /* such linears */
    int64_t fine;        /* the finest, rounded */
    int64_t fine_raw;    /* ... as the source has it */
    char fine_name[200]; /* the first linear with it */
    int fine_declared;   /* 1: the reader declared it (qb_stats.h), 0: its grid */
} census;

/* The scale granularity of a linear's source that its codes do not carry
 * over from: the grid's contiguous group width, else the block the reader
 * declares (qb_stats_api.scale_block); 0 when none or one per row.
 * *declared says which. Errors of scale_block other than QB_E_NOT_FOUND
 * are returned. */
static qb_status lossy_block(const qb_host *h, const qb_model_src *src, const w4w_item *it,
                             const qb_grid_info *gi, int64_t *block, int *declared)
{
    qb_status rc;
    *block = 0;
    *declared = 0;
    if (gi) {
        int64_t w = gi->col_group ? trivial_width(gi, it->cols) : gi->group_size;
        *block = w > 0 && w < it->cols ? w : 0;
        return QB_OK;
    }
    if (it->view || !QB_HAS_FIELD(h, qb_host, stats) || !h->stats)
        return QB_OK;
    rc = h->stats->scale_block(h, src, it->src, block);
    if (rc == QB_E_NOT_FOUND) {
        *block = 0;
        return QB_OK;
    }
    if (rc != QB_OK)
        return rc;
    if (*block >= it->cols)
        *block = 0;
    *declared = 1;
    return QB_OK;
}

static void note_fine(census *cs, const w4w_item *it, int64_t block, int declared)
{
    int64_t r;
    if (block < 1)
        return;
    r = (block + W4W_GROUP_MMA - 1) / W4W_GROUP_MMA * W4W_GROUP_MMA;
    cs->n_fine++;
    if (cs->fine == 0 || r < cs->fine) {
        cs->fine = r;
        cs->fine_raw = block;
        cs->fine_declared = declared;
        snprintf(cs->fine_name, sizeof cs->fine_name, "%s", it->name);
    }
}

static qb_status take_census(const qb_host *h, const qb_model_src *src, const w4w_plan *p,
                             int permute, census *cs, int64_t *bounds)
{
    size_t i;
    memset(cs, 0, sizeof *cs);
    for (i = 0; i < p->n_items; i++) {
        const w4w_item *it = &p->items[i];
        const qb_tensor_info *ti = NULL;
        qb_grid_info gi;
        int64_t b = 0, bp = 0;
        char why[200], whyp[200];
        qb_status rc;
        int ok, okp;
        if (it->kind != W4W_ITEM_LINEAR)
            continue;
        bounds[i] = -1;
        cs->n_lin++;
        if (src->tensor_info(src->handle, it->src, &ti) != QB_OK || !ti->has_grid || it->view) {
            int64_t blk;
            int decl;
            if (!cs->first_why[0])
                snprintf(cs->first_why, sizeof cs->first_why, "%s: dense %s", it->name,
                         it->source_encoding);
            if ((rc = lossy_block(h, src, it, NULL, &blk, &decl)) != QB_OK)
                return rc;
            note_fine(cs, it, blk, decl);
            continue;
        }
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        rc = src->get_grid_info(src->handle, it->src, &gi);
        if (rc == QB_E_UNSUPPORTED)
            continue;
        if (rc != QB_OK)
            return rc;
        ok = w4w_grid_bound(&gi, it->cols, permute, &b, why, sizeof why);
        okp = ok < 0 ? ok : w4w_grid_bound(&gi, it->cols, 1, &bp, whyp, sizeof whyp);
        if (ok < 0 || okp < 0)
            return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", W4W_PLUGIN_NAME,
                                it->name);
        if (ok) {
            cs->n_ok++;
            cs->g = gcd64(cs->g, b);
            bounds[i] = b;
        } else {
            int64_t blk;
            int decl;
            if (!cs->first_why[0])
                snprintf(cs->first_why, sizeof cs->first_why, "%s: %s", it->name, why);
            lossy_block(h, src, it, &gi, &blk, &decl);
            note_fine(cs, it, blk, decl);
        }
        if (okp) {
            cs->g_perm = gcd64(cs->g_perm, bp);
            if (bounds[i] < 0)
                cs->n_perm++;
        }
    }
    return QB_OK;
}

static size_t exact_at(const w4w_plan *p, const int64_t *bounds, int64_t gs)
{
    size_t i, n = 0;
    for (i = 0; i < p->n_items; i++)
        if (p->items[i].kind == W4W_ITEM_LINEAR && bounds[i] >= 0 && w4w_bound_fits(bounds[i], gs))
            n++;
    return n;
}

qb_status w4w_group_choose(const qb_host *h, const qb_model_src *src, const w4w_plan *p,
                           w4w_options *opt, int warn)
{
    census cs;
    int64_t *bounds, best = W4W_GROUP_DEFAULT;
    char *r = opt->group_reason;
    size_t rn = sizeof opt->group_reason, len, n_best;
    int fine_wins = 0;
    qb_status rc;

    bounds = qbk_calloc(p->n_items ? p->n_items : 1, sizeof *bounds);
    if (!bounds)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", W4W_PLUGIN_NAME);
    rc = take_census(h, src, p, opt->act_order_permute, &cs, bounds);
    if (rc != QB_OK)
        goto out;
    /* the size auto would take: the exact linears' group size; a
     * requantized linear's source granularity when finer and it keeps
     * those exact (docs/w4a16-format.md, "Choosing the group size") */
    if (cs.n_ok && cs.g > 0 && cs.g % W4W_GROUP_MMA == 0)
        best = cs.g;
    if (cs.fine > 0 && cs.fine < best && (best == W4W_GROUP_DEFAULT || best % cs.fine == 0))
        fine_wins = 1;
    if (fine_wins)
        best = cs.fine;
    n_best = exact_at(p, bounds, best);
    if (opt->group_auto) {
        opt->group_size = best;
        if (fine_wins)
            snprintf(r, rn, "auto: %zu of %zu linears are requantized from a source with one "
                     "scale per %lld columns or fewer (%s: %lld, %s%s); group size %lld keeps "
                     "that resolution (%zu of %zu linears exact)", cs.n_fine, cs.n_lin,
                     (long long)cs.fine, cs.fine_name, (long long)cs.fine_raw,
                     cs.fine_declared ? "declared by its reader" : "its grid's groups",
                     cs.fine_raw != cs.fine ? ", rounded up to a multiple of 32, the CUDA mma "
                                              "kernel's need" : "",
                     (long long)best, n_best, cs.n_lin);
        else if (cs.n_ok == 0)
            snprintf(r, rn, "auto: no linear's integer grid carries over into int4 exactly (%s); "
                     "the default %d", cs.first_why[0] ? cs.first_why : "no grid", W4W_GROUP_DEFAULT);
        else if (cs.g == 0)
            snprintf(r, rn, "auto: %zu of %zu linears keep their codes at any group size (one "
                     "source group per row); the default %d", cs.n_ok, cs.n_lin, W4W_GROUP_DEFAULT);
        else if (best == cs.g)
            snprintf(r, rn, "auto: the source's group size %lld keeps %zu of %zu linears exact",
                     (long long)cs.g, n_best, cs.n_lin);
        else
            snprintf(r, rn, "auto: the source's group size %lld is not a multiple of %d (the "
                     "CUDA mma kernel's need); the default %d keeps %zu of %zu "
                     "linears exact", (long long)cs.g, W4W_GROUP_MMA, W4W_GROUP_DEFAULT, n_best,
                     cs.n_lin);
    } else {
        size_t n_now = exact_at(p, bounds, opt->group_size);
        snprintf(r, rn, "explicit: %zu of %zu linears exact at group size %lld", n_now, cs.n_lin,
                 (long long)opt->group_size);
        if (n_now < n_best && warn)
            h->log(h, QB_LOG_WARN,
                   "group_size %lld requantizes %zu linear(s) that group_size %lld keeps exact "
                   "(--group-size auto chooses it)",
                   (long long)opt->group_size, n_best - n_now, (long long)best);
    }
    if (cs.n_perm && !opt->act_order_permute) {
        len = strlen(r);
        if (cs.g_perm > 0 && cs.g_perm % W4W_GROUP_MMA == 0)
            snprintf(r + len, rn - len, "; act_order=permute keeps %zu act-order linear(s) exact "
                     "(with group size %lld)", cs.n_perm, (long long)cs.g_perm);
        else
            snprintf(r + len, rn - len, "; act_order=permute keeps %zu act-order linear(s) "
                     "exact", cs.n_perm);
        if (warn)
            h->log(h, QB_LOG_WARN,
                   "%zu act-order linear(s) will be requantized; --option act_order=permute "
                   "keeps their codes exact (feature input_permutation)", cs.n_perm);
    }
out:
    qbk_free(bounds);
    return rc;
}
