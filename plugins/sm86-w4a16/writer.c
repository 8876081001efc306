/*
 * sm86-w4a16 — the writer: begin plans, write_tensor streams row blocks,
 * finish writes configs and the manifest.
 *
 * Memory: a tensor is processed in blocks of at most W4W_BLOCK_ELEMS
 * elements (and at most 256 rows), 2 * thread_count blocks at a time
 * through host->parallel_for, written in row order. Two sets of slots alternate:
 * while one batch is computed, one more parallel_for item writes (and so
 * hashes) the previous batch, so the serial write no longer idles the
 * other threads (perf: write + SHA-256 were ~15 % of the work). A linear's packed data streams
 * straight to the file; its fp16 scales (1/32 of the packed bytes at
 * group size 128) are held until the packed tensor is complete, because the
 * file stores the two tensors one after the other.
 *
 * Exact repack: when the reader's integer grid is symmetric with at most 4
 * bits (repack.c: codes minus zero 2^(bits-1) fit int4), in contiguous
 * groups such that every target group lies inside one source group, a
 * block's codes are copied and its scales converted to fp16
 * — if every scale survives float->fp16->float and the decoded block equals
 * read_rows bit for bit (the promise of qb_tensor.h). A block failing that
 * is requantized from its dense rows, with a WARN naming the tensor.
 *
 * act_order=permute: an act-order grid (GPTQ desc_act g_idx) is stored with
 * its columns in group order and `<path>.perm` (feature input_permutation,
 * the runtime gathers x[perm]); its codes are then copied the same way.
 */
#include "w4w.h"
#include "qbk_int4_eval.h"
#include "w4a16_int4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

#define W4W_BLOCK_ELEMS 262144
#define W4W_BLOCK_MAX_ROWS 256

typedef struct w4w_writer {
    const qb_host *h;
    const qb_sink *sink;
    const qb_model_src *src;
    w4w_plan *plan;
    size_t next;      /* position in plan->items of the next write */
    int32_t cur_file; /* file being written, -1 none */
    qbk_st_writer *cur;
    w4w_written_list written;
    /* parts of a fused expert source (w4w_item.view): the source rows of
     * one expert ([in, out] of a weight, one row of a bias), read once for
     * all its parts; memory is one expert's, not the tensor's */
    float *slab;
    size_t slab_cap, slab_src;
    int64_t slab_e, slab_rows, slab_cols; /* slab_e -1: empty */
} w4w_writer;

/* One row block handled by one parallel_for item. */
typedef struct w4w_slot {
    int64_t row0, n;
    float *w;       /* [n * cols] dense source rows */
    void *out;      /* LINEAR: packed [n * pcols]; F16: [n * cols] fp16 */
    int8_t *q;      /* [cols] codes of one row */
    uint8_t *codes; /* grid view, when exact repack is tried */
    float *gscales;
    int32_t *gzeros;
    float *row; /* [cols] a row in stored (permuted) column order */
    float *gw;     /* GPTQ: [n * cols] rows in stored order, updated in place */
    int8_t *gq;    /* GPTQ: [n * cols] codes */
    float *gerr;   /* GPTQ: [n * block] the batch's errors */
    double err2, ref2;
    int exact;
    char why[200]; /* why an exact repack was refused */
} w4w_slot;

typedef struct w4w_job {
    w4w_writer *w;
    const w4w_item *it;
    w4w_slot *slots;
    int64_t pcols, ng, gs;
    uint16_t *scales; /* LINEAR: [rows * ng] for the whole tensor */
    int grid;         /* exact repack is structurally possible */
    int64_t src_gs;   /* source group width (contiguous, no perm) */
    uint32_t src_ng;
    const int32_t *perm;   /* stored column c = source column perm[c], or NULL */
    const int32_t *colmap; /* with perm: the source's column-to-group map */
    int32_t zero;          /* the grid's zero point (w4w_repack_zero) */
    const w4w_slot *wslots; /* the previous batch, written by item 0, or NULL */
    size_t wn;
    float *imp;             /* LINEAR: importance of each stored column (qb_stats.h), or NULL */
    w4w_rule rule;          /* the rule of this linear's requantized groups */
    float *U;               /* GPTQ: [cols * cols] upper Cholesky factor of H^-1 (gptq.c) */
    uint8_t *dead;          /* GPTQ: [cols] columns no input used */
    float *gimp;            /* GPTQ with gptq_scale=weighted: diag H in stored order */
} w4w_job;

static const char *src_path(const w4w_writer *w)
{
    return w->src->source_path ? w->src->source_path : "source";
}

/* ---- exact repack -------------------------------------------------------- */

/* Decides whether the grid can be repacked without loss structurally
 * (decide.c: the one rule the plan also states); on no, writes the reason
 * into why. */
static int grid_usable(w4w_job *j, const qb_grid_info *gi, char *why, size_t why_len)
{
    const w4w_item *it = j->it;
    int64_t bound = 0, sgs;
    if (!w4w_grid_bound(gi, it->cols, 0, &bound, why, why_len))
        return 0;
    if (!w4w_bound_fits(bound, j->gs)) {
        snprintf(why, why_len, "source group size %lld is not a multiple of group_size %lld",
                 (long long)bound, (long long)j->gs);
        return 0;
    }
    if (gi->col_group) {
        /* w4w_grid_bound accepted a map without permute: the trivial c / sgs */
        for (sgs = 0; sgs < it->cols && gi->col_group[sgs] == 0; sgs++)
            ;
    } else {
        sgs = gi->group_size;
    }
    j->zero = w4w_repack_zero(gi, why, why_len);
    j->src_gs = sgs;
    j->src_ng = gi->n_groups;
    return 1;
}

/* Tries the exact repack of slot s; returns 1 on success (packed and scales
 * written), 0 when the block must be requantized (s->why says why), or a
 * negative status on a read failure. */
static int repack_block(w4w_job *j, w4w_slot *s)
{
    w4w_writer *w = j->w;
    const w4w_item *it = j->it;
    qb_grid_rows gr;
    int64_t r, c, g, cols = it->cols;
    double r2;
    qb_status rc;

    memset(&gr, 0, sizeof gr);
    gr.struct_size = sizeof gr;
    gr.codes = s->codes;
    gr.scales = s->gscales;
    gr.zeros = s->gzeros;
    rc = w->src->read_grid(w->src->handle, it->src, it->row0 + s->row0, s->n, &gr);
    if (rc != QB_OK)
        return rc;
    for (r = 0; r < s->n; r++) {
        const float *gs_row = s->gscales + r * j->src_ng;
        const int32_t *z_row = s->gzeros + r * j->src_ng;
        uint16_t *sc = j->scales + (s->row0 + r) * j->ng;
        for (g = 0; g < (int64_t)j->src_ng; g++) {
            uint16_t h16 = qb_f32_to_f16(gs_row[g]);
            if (z_row[g] != j->zero) {
                snprintf(s->why, sizeof s->why, "row %lld group %lld: zero point %d, not %d",
                         (long long)(s->row0 + r), (long long)g, (int)z_row[g], (int)j->zero);
                return 0;
            }
            if (!isfinite(gs_row[g]) || qb_f32_bits(qb_f16_to_f32(h16)) != qb_f32_bits(gs_row[g])) {
                snprintf(s->why, sizeof s->why,
                         "row %lld group %lld: scale %.9g is not exact in fp16",
                         (long long)(s->row0 + r), (long long)g, (double)gs_row[g]);
                return 0;
            }
        }
        /* with a perm, stored group g holds source columns perm[g*gs ..],
         * all of one source group (checked by the plan) */
        for (g = 0; g < j->ng; g++)
            sc[g] = qb_f32_to_f16(
                gs_row[j->perm ? j->colmap[j->perm[g * j->gs]] : (g * j->gs) / j->src_gs]);
        /* group by group, the scale converted once, the sum of squares in
         * a local (s->q may alias s->ref2 for the compiler): perf showed
         * the per-element fp16 conversion, c / gs and the ref2 store
         * dominating the exact path */
        r2 = s->ref2;
        for (g = 0; g < j->ng; g++) {
            int64_t c1 = (g + 1) * j->gs < cols ? (g + 1) * j->gs : cols;
            float sf = qb_f16_to_f32(sc[g]);
            if (!j->perm && j->zero <= 8) {
                /* the common case, vectorised (qbk_int4_eval.c; perf: the
                 * element loop below was ~30 % of an exact GPTQ repack).
                 * ref is q * sf exactly, so ref^2 = q^2 sf^2 and the sum of
                 * squares follows from the integer sum of q^2. On any
                 * mismatch the loop below runs to name the element. */
                int64_t c0 = g * j->gs, qq;
                if (!qbk_i4e_check_group(QBK_I4E_AUTO, s->codes + r * cols + c0, s->w + r * cols + c0,
                                        (size_t)(c1 - c0), j->zero, sf, s->q + c0, &qq)) {
                    r2 += (double)sf * (double)sf * (double)qq;
                    continue;
                }
            }
            for (c = g * j->gs; c < c1; c++) {
                int64_t sc_col = j->perm ? j->perm[c] : c;
                uint8_t code = s->codes[r * cols + sc_col];
                float dec, ref = s->w[r * cols + sc_col];
                if (code >= 2 * j->zero) {
                    snprintf(s->why, sizeof s->why, "row %lld col %lld: code %u outside the grid",
                             (long long)(s->row0 + r), (long long)c, code);
                    return 0;
                }
                s->q[c] = (int8_t)((int)code - j->zero);
                dec = (float)s->q[c] * sf;
                if (qb_f32_bits(dec) != qb_f32_bits(ref)) {
                    snprintf(s->why, sizeof s->why,
                             "row %lld col %lld: decoded %.9g differs from read_rows %.9g",
                             (long long)(s->row0 + r), (long long)c, (double)dec, (double)ref);
                    return 0;
                }
                r2 += (double)ref * (double)ref;
            }
        }
        s->ref2 = r2;
        w4a16_int4_pack_row(s->q, cols, (uint8_t *)s->out + r * j->pcols);
    }
    return 1;
}

/* ---- the requantization rule ---------------------------------------------- */

static const char *rule_name(w4w_rule r)
{
    return r == W4W_RULE_ABSMAX ? "absmax" : r == W4W_RULE_SEARCH ? "search"
           : r == W4W_RULE_WEIGHTED ? "weighted" : r == W4W_RULE_KEEP ? "keep"
           : r == W4W_RULE_GPTQ ? "gptq" : "auto";
}

/* quant_rule=gptq: the Hessian of linear `it` from the host (qb_stats.h),
 * in stored column order, and its factor j->U (gptq.c). QB_OK with j->U
 * set and it->rule written; QB_OK with j->U NULL and `why` saying why GPTQ
 * cannot run for it (the caller falls back); or a hard error. Memory: the
 * Hessian (cols^2 floats) while U (the same) is made, 2 cols^2 doubles
 * inside w4w_gptq_prepare. */
static qb_status gptq_setup(w4w_writer *w, w4w_item *it, w4w_job *j, char *why, size_t wn)
{
    const qb_host *h = w->h;
    const int64_t n = it->cols;
    qb_stats_info info;
    float *H = NULL, *U = NULL;
    uint8_t *dead = NULL;
    int64_t nd = 0, a, b;
    qb_status rc;
    int g;

    if (it->view) {
        snprintf(why, wn, "an expert slice has no activation statistics");
        return QB_OK;
    }
    if (!QB_HAS_FIELD(h, qb_host, stats) || !h->stats ||
        !QB_HAS_FIELD(h->stats, qb_stats_api, hessian) || !h->stats->hessian) {
        snprintf(why, wn, "the host serves no Hessian");
        return QB_OK;
    }
    H = qbk_malloc((size_t)(n * n) * sizeof *H);
    U = qbk_malloc((size_t)(n * n) * sizeof *U);
    dead = qbk_malloc((size_t)n);
    if (!H || !U || !dead) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory for its Hessian (%lld x %lld)",
                          src_path(w), it->name, (long long)n, (long long)n);
        goto out;
    }
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    rc = h->stats->hessian(h, w->src, it->src, H, n, &info);
    if (rc == QB_E_NOT_FOUND || rc == QB_E_UNSUPPORTED) {
        snprintf(why, wn, "%s", rc == QB_E_NOT_FOUND
                 ? "no Hessian for it (--calibration gives one; an --imatrix holds none)"
                 : "its Hessian is over the host's budget (--hessian-budget)");
        h->log(h, QB_LOG_WARN, "%s: quant_rule=gptq: %s; weighted instead", it->name, why);
        rc = QB_OK;
        goto out;
    }
    if (rc != QB_OK)
        goto out;
    if (it->perm) {
        /* stored column c is source column perm[c] */
        float *P = U;
        for (a = 0; a < n; a++)
            for (b = 0; b < n; b++)
                P[a * n + b] = H[(int64_t)it->perm[a] * n + it->perm[b]];
        U = H;
        H = P;
    }
    if (w->plan->opt.gptq_weighted) {
        j->gimp = qbk_malloc((size_t)n * sizeof *j->gimp);
        if (!j->gimp) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
            goto out;
        }
        for (a = 0; a < n; a++)
            j->gimp[a] = H[a * n + a];
    }
    g = w4w_gptq_prepare(H, n, W4W_GPTQ_PERCDAMP, U, dead, &nd);
    if (g == W4W_GPTQ_NOMEM) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory for GPTQ (%lld columns)",
                          src_path(w), it->name, (long long)n);
        goto out;
    }
    if (g != 0) {
        snprintf(why, wn, "%s", g == W4W_GPTQ_NOT_PD ? "its dampened Hessian is not positive "
                 "definite" : "its Hessian is not finite");
        h->log(h, QB_LOG_WARN, "%s: quant_rule=gptq: %s; weighted instead", it->name, why);
        goto out;
    }
    j->U = U;
    j->dead = dead;
    U = NULL;
    dead = NULL;
    j->rule = W4W_RULE_GPTQ;
    snprintf(it->rule, sizeof it->rule, "gptq: columns in %s order, each one's error "
             "compensated through the inverse Hessian (%.48s, %llu tokens; damp %.2g of mean "
             "diag, batches of %lld, %lld dead column(s)%s)",
             it->perm_gptq ? "descending-importance (act)"
             : it->perm ? "stored (permuted)" : "source", info.origin ? info.origin : "?",
             (unsigned long long)info.n_tokens, W4W_GPTQ_PERCDAMP,
             (long long)w4w_gptq_block(j->gs), (long long)nd,
             j->gimp ? "; weighted scales" : "");
out:
    qbk_free(H);
    qbk_free(U);
    qbk_free(dead);
    return rc;
}

/* The rule of linear `it` and why (it->rule, for the manifest): the
 * importance-weighted search when the run has activation statistics for it
 * (qb_stats_api.importance) and quant_rule was not given otherwise, else
 * the plain rule (docs/fidelity.md, "Requantizing lossy sources": the
 * default chosen at the model's output). Loads j->imp in stored column
 * order. */
static qb_status choose_rule(w4w_writer *w, w4w_item *it, w4w_job *j)
{
    const qb_host *h = w->h;
    const w4w_options *o = &w->plan->opt;
    qb_stats_info info;
    float *imp = NULL;
    qb_status rc = QB_E_NOT_FOUND;
    int64_t c;
    char fallback[120] = "";

    j->rule = o->rule;
    if (o->rule == W4W_RULE_GPTQ) {
        if ((rc = gptq_setup(w, it, j, fallback, sizeof fallback)) != QB_OK || j->U)
            return rc;
        rc = QB_E_NOT_FOUND;
    }
    if ((!o->rule_explicit || o->rule == W4W_RULE_WEIGHTED || o->rule == W4W_RULE_GPTQ) &&
        !it->view &&
        QB_HAS_FIELD(h, qb_host, stats) && h->stats) {
        imp = qbk_malloc((size_t)it->cols * sizeof *imp);
        if (!imp)
            return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        rc = h->stats->importance(h, w->src, it->src, imp, it->cols, &info);
        if (rc != QB_OK && rc != QB_E_NOT_FOUND) {
            qbk_free(imp);
            return rc;
        }
    }
    if (rc == QB_OK) {
        if (it->perm) {
            float *pi = qbk_malloc((size_t)it->cols * sizeof *pi);
            if (!pi) {
                qbk_free(imp);
                return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w),
                                    it->name);
            }
            for (c = 0; c < it->cols; c++)
                pi[c] = imp[it->perm[c]];
            qbk_free(imp);
            imp = pi;
        }
        j->imp = imp;
        j->rule = W4W_RULE_WEIGHTED;
        /* the manifest's rule text is informative: a long fallback reason
         * and statistics file name are cut to fit */
        if (snprintf(it->rule, sizeof it->rule, "weighted%s%s%s: the least error weighted by "
                     "each input column's mean x^2 (%.80s, %llu tokens)",
                     fallback[0] ? " (gptq not used: " : "", fallback, fallback[0] ? ")" : "",
                     info.origin ? info.origin : "?",
                     (unsigned long long)info.n_tokens) >= (int)sizeof it->rule)
            it->rule[sizeof it->rule - 2] = '.';
        return QB_OK;
    }
    qbk_free(imp);
    if (o->rule == W4W_RULE_WEIGHTED || o->rule == W4W_RULE_GPTQ)
        return h->set_error(h, QB_E_INVALID, "%s: %s: quant_rule=%s needs activation "
                            "statistics for it (convert --calibration%s)",
                            src_path(w), it->name, rule_name(o->rule),
                            o->rule == W4W_RULE_GPTQ ? "; " : " or --imatrix");
    snprintf(it->rule, sizeof it->rule, "%s: %s", rule_name(j->rule),
             o->rule_explicit ? "quant_rule given"
                              : "the default without activation statistics (docs/fidelity.md)");
    return QB_OK;
}

/* ---- per-block work ------------------------------------------------------ */

static qb_status requant_block(w4w_job *j, w4w_slot *s)
{
    w4w_writer *w = j->w;
    const w4w_item *it = j->it;
    int64_t r, c, g, cols = it->cols;
    s->err2 = s->ref2 = 0.0;
    for (r = 0; r < s->n; r++) {
        const float *row = s->w + r * cols;
        uint16_t *sc = j->scales + (s->row0 + r) * j->ng;
        if (j->perm) {
            for (c = 0; c < cols; c++)
                s->row[c] = row[j->perm[c]];
            row = s->row;
        }
        for (g = 0; g < j->ng; g++) {
            int64_t c0 = g * j->gs, n = (c0 + j->gs < cols ? j->gs : cols - c0);
            double e;
            int qr = j->imp ? w4w_quant_group_weighted(row + c0, j->imp + c0, (size_t)n, s->q + c0,
                                                       &sc[g], &e)
                            : w4w_quant_group(row + c0, (size_t)n, j->rule, s->q + c0, &sc[g], &e);
            if (qr == W4W_EQUANT_NONFINITE)
                return w->h->set_error(w->h, QB_E_FORMAT, "%s: %s: row %lld: NaN or infinity",
                                       src_path(w), it->name, (long long)(s->row0 + r));
            if (qr != 0)
                return w->h->set_error(w->h, QB_E_RANGE,
                                       "%s: %s: row %lld group %lld: magnitude too large for an "
                                       "fp16 scale",
                                       src_path(w), it->name, (long long)(s->row0 + r),
                                       (long long)g);
            s->err2 += e;
        }
        {
            /* four chains: one double-add chain per element was ~8 % of a
             * requantizing convert */
            double a[4] = {0.0, 0.0, 0.0, 0.0};
            for (c = 0; c + 4 <= cols; c += 4) {
                a[0] += (double)row[c] * (double)row[c];
                a[1] += (double)row[c + 1] * (double)row[c + 1];
                a[2] += (double)row[c + 2] * (double)row[c + 2];
                a[3] += (double)row[c + 3] * (double)row[c + 3];
            }
            for (; c < cols; c++)
                a[0] += (double)row[c] * (double)row[c];
            s->ref2 += (a[0] + a[1]) + (a[2] + a[3]);
        }
        w4a16_int4_pack_row(s->q, cols, (uint8_t *)s->out + r * j->pcols);
    }
    return QB_OK;
}

/* GPTQ of the slot's rows in stored order (gptq.c); the error measured
 * against the source's weights as for the other rules. */
static qb_status gptq_block(w4w_job *j, w4w_slot *s)
{
    w4w_writer *w = j->w;
    const w4w_item *it = j->it;
    int64_t r, c, cols = it->cols;
    const uint16_t *sc0 = j->scales + s->row0 * j->ng;
    int g;
    s->err2 = s->ref2 = 0.0;
    for (r = 0; r < s->n; r++)
        for (c = 0; c < cols; c++)
            s->gw[r * cols + c] = s->w[r * cols + (j->perm ? j->perm[c] : c)];
    g = w4w_gptq_rows(s->gw, s->n, cols, j->U, j->dead, j->gs, j->gimp, s->gq,
                      j->scales + s->row0 * j->ng, s->gerr);
    if (g == W4W_EQUANT_NONFINITE)
        return w->h->set_error(w->h, QB_E_FORMAT, "%s: %s: rows %lld..%lld: NaN or infinity "
                               "(in the weights or after GPTQ's updates)", src_path(w), it->name,
                               (long long)s->row0, (long long)(s->row0 + s->n - 1));
    if (g != 0)
        return w->h->set_error(w->h, QB_E_RANGE, "%s: %s: rows %lld..%lld: magnitude too large "
                               "for an fp16 scale", src_path(w), it->name, (long long)s->row0,
                               (long long)(s->row0 + s->n - 1));
    for (r = 0; r < s->n; r++) {
        const float *row = s->w + r * cols;
        const int8_t *q = s->gq + r * cols;
        const uint16_t *sc = sc0 + r * j->ng;
        for (c = 0; c < cols; c++) {
            double ref = (double)row[j->perm ? j->perm[c] : c];
            double d = (double)((float)q[c] * qb_f16_to_f32(sc[c / j->gs])) - ref;
            s->err2 += d * d;
            s->ref2 += ref * ref;
        }
        w4a16_int4_pack_row(q, cols, (uint8_t *)s->out + r * j->pcols);
    }
    return QB_OK;
}

static qb_status f16_block(w4w_job *j, w4w_slot *s)
{
    w4w_writer *w = j->w;
    const w4w_item *it = j->it;
    uint16_t *o = s->out;
    int64_t i, n = s->n * it->cols;
    /* vectorised when the CPU can; on any bad value the loop below finds
     * the first one for the message */
    if (qbk_i4e_to_f16(QBK_I4E_AUTO, s->w, (size_t)n, o) == 0)
        return QB_OK;
    for (i = 0; i < n; i++) {
        float v = s->w[i];
        uint16_t hv = qb_f32_to_f16(v);
        if (!isfinite(v) || (hv & 0x7c00u) == 0x7c00u)
            return w->h->set_error(w->h, isfinite(v) ? QB_E_RANGE : QB_E_FORMAT,
                                   "%s: %s: row %lld: value %g %s", src_path(w), it->name,
                                   (long long)(s->row0 + i / it->cols), (double)v,
                                   isfinite(v) ? "overflows fp16" : "is not finite");
        o[i] = hv;
    }
    return QB_OK;
}

/* Rows [s->row0, + s->n) of a view item from the writer's expert slab. */
static void view_rows(const w4w_job *j, w4w_slot *s)
{
    const w4w_writer *w = j->w;
    const w4w_item *it = j->it;
    int64_t r, c, cols = it->cols, R = w->slab_cols;
    for (r = 0; r < s->n; r++) {
        float *d = s->w + r * cols;
        if (it->vtrans) {
            const float *src = w->slab + (s->row0 + r) * it->vstride + it->voff;
            for (c = 0; c < cols; c++)
                d[c] = src[c * R];
        } else {
            for (c = 0; c < cols; c++)
                d[c] = w->slab[c * it->vstride + it->voff];
        }
    }
}

typedef struct slab_job {
    w4w_writer *w;
    size_t src;
    int64_t row0, n, chunk;
} slab_job;

static qb_status slab_worker(void *arg, size_t i)
{
    slab_job *sj = arg;
    int64_t r0 = (int64_t)i * sj->chunk, n = sj->n - r0 < sj->chunk ? sj->n - r0 : sj->chunk;
    return sj->w->src->read_rows(sj->w->src->handle, sj->src, sj->row0 + r0, n,
                                 sj->w->slab + r0 * sj->w->slab_cols);
}

/* Loads the source rows item `it` views (expert it->vexp) unless the slab
 * holds them already: a weight [E, in, out] gives rows [e * in, + in), a
 * bias [E, out] row e. Reads in parallel row chunks. */
static qb_status view_load(w4w_writer *w, const w4w_item *it)
{
    const qb_host *h = w->h;
    const qb_tensor_info *ti = NULL;
    slab_job sj;
    int64_t rows, cols;
    size_t need, nchunk;
    qb_status rc;

    if (w->slab_e == it->vexp && w->slab_src == it->src)
        return QB_OK;
    rc = w->src->tensor_info(w->src->handle, it->src, &ti);
    if (rc != QB_OK)
        return rc;
    rows = it->vtrans ? ti->dims[1] : 1;
    cols = ti->dims[ti->n_dims - 1];
    need = (size_t)(rows * cols);
    if (need > w->slab_cap) {
        qbk_free(w->slab);
        w->slab_cap = 0;
        w->slab = qbk_malloc(need * sizeof *w->slab);
        if (!w->slab)
            return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory for one expert (%lld x "
                                "%lld)", src_path(w), it->name, (long long)rows, (long long)cols);
        w->slab_cap = need;
    }
    w->slab_e = -1;
    w->slab_rows = rows;
    w->slab_cols = cols;
    sj.w = w;
    sj.src = it->src;
    sj.row0 = it->vexp * rows;
    sj.n = rows;
    sj.chunk = W4W_BLOCK_ELEMS / cols < 1 ? 1 : W4W_BLOCK_ELEMS / cols;
    if (sj.chunk > 64)
        sj.chunk = 64;
    /* the last chunk after the others: a reader may release the expert's
     * source pages once its last rows are read (mxfp4 does) */
    nchunk = (size_t)((rows + sj.chunk - 1) / sj.chunk);
    rc = h->parallel_for(h, nchunk - 1, slab_worker, &sj);
    if (rc == QB_OK)
        rc = slab_worker(&sj, nchunk - 1);
    if (rc != QB_OK)
        return rc;
    w->slab_e = it->vexp;
    w->slab_src = it->src;
    return QB_OK;
}

static qb_status block_worker(void *arg, size_t i)
{
    w4w_job *j = arg;
    w4w_slot *s = &j->slots[i];
    const w4w_item *it = j->it;
    qb_status rc;
    int ok;

    s->err2 = s->ref2 = 0.0;
    s->exact = 0;
    s->why[0] = '\0';
    if (s->n == 0)
        return QB_OK;
    if (it->view)
        view_rows(j, s);
    else if ((rc = j->w->src->read_rows(j->w->src->handle, it->src, it->row0 + s->row0, s->n,
                                        s->w)) != QB_OK)
        return rc;
    if (it->kind == W4W_ITEM_F16)
        return f16_block(j, s);
    if (it->kind == W4W_ITEM_F32) {
        /* read_rows gives float32: the stored bytes are these values */
        memcpy(s->out, s->w, (size_t)(s->n * it->cols) * sizeof(float));
        return QB_OK;
    }
    if (j->grid) {
        ok = repack_block(j, s);
        if (ok < 0)
            return ok;
        if (ok) {
            s->exact = 1;
            return QB_OK;
        }
        s->ref2 = 0.0;
    }
    return j->U ? gptq_block(j, s) : requant_block(j, s);
}

/* Bytes of slot s's output. */
static size_t slot_bytes(const w4w_job *j, const w4w_slot *s)
{
    return j->it->kind == W4W_ITEM_LINEAR ? (size_t)(s->n * j->pcols)
                                          : (size_t)(s->n * j->it->cols) *
                                                (j->it->kind == W4W_ITEM_F32 ? 4 : 2);
}

/* One parallel_for item of a batch: with a previous batch pending, item 0
 * writes it (in row order; the only writer of the file meanwhile) and items
 * 1.. compute the current blocks; else every item computes. */
static qb_status batch_worker(void *arg, size_t i)
{
    w4w_job *j = arg;
    size_t k;
    if (j->wslots) {
        if (i == 0) {
            for (k = 0; k < j->wn; k++) {
                qb_status rc = qbk_st_writer_write(j->w->cur, j->wslots[k].out, slot_bytes(j, &j->wslots[k]));
                if (rc != QB_OK)
                    return rc;
            }
            return QB_OK;
        }
        i--;
    }
    return block_worker(arg, i);
}

/* ---- items --------------------------------------------------------------- */

static void free_slots(w4w_slot *slots, size_t n)
{
    size_t i;
    if (!slots)
        return;
    for (i = 0; i < n; i++) {
        qbk_free(slots[i].w);
        qbk_free(slots[i].out);
        qbk_free(slots[i].q);
        qbk_free(slots[i].codes);
        qbk_free(slots[i].gscales);
        qbk_free(slots[i].gzeros);
        qbk_free(slots[i].row);
        qbk_free(slots[i].gw);
        qbk_free(slots[i].gq);
        qbk_free(slots[i].gerr);
    }
    qbk_free(slots);
}

static qb_status write_dense_item(w4w_writer *w, w4w_item *it)
{
    const qb_host *h = w->h;
    w4w_job j;
    w4w_slot *slots = NULL;
    qb_grid_info gi;
    int64_t br, nblocks, b0, rows = it->rows, cols = it->cols;
    size_t nslot, i, batch, pn = 0;
    w4w_slot *pend = NULL;
    double err2 = 0.0, ref2 = 0.0;
    int warned = 0, lin = it->kind == W4W_ITEM_LINEAR;
    qb_status rc = QB_OK;

    memset(&j, 0, sizeof j);
    j.w = w;
    j.it = it;
    j.gs = w->plan->opt.group_size;
    j.pcols = w4a16_int4_packed_bytes(cols);
    j.ng = w4a16_int4_n_groups(cols, j.gs);
    br = W4W_BLOCK_ELEMS / cols;
    /* a multiple of 8 rows: packed sources store 8 output rows per word
     * (AWQ GEMM), and blocks starting inside a word decode it twice */
    br = br < 8 ? (br < 1 ? 1 : br) : (br + 4) / 8 * 8;
    br = br > W4W_BLOCK_MAX_ROWS ? W4W_BLOCK_MAX_ROWS : br;
    nblocks = (rows + br - 1) / br;
    /* two blocks per thread and batch: the items vary in cost (the write
     * item most), and more of them per batch even out the threads' ends */
    nslot = 2 * (size_t)(h->thread_count(h) < 1 ? 1 : h->thread_count(h));
    if ((int64_t)nslot > nblocks)
        nslot = (size_t)nblocks;

    if (it->view && (rc = view_load(w, it)) != QB_OK)
        goto out;
    if (lin) {
        const qb_tensor_info *ti = NULL;
        rc = w->src->tensor_info(w->src->handle, it->src, &ti);
        if (rc != QB_OK)
            goto out;
        if (it->perm_gptq) {
            j.perm = it->perm; /* GPTQ's act order: requantized in stored order */
        } else if (ti->has_grid && !it->view) {
            char why[200];
            memset(&gi, 0, sizeof gi);
            gi.struct_size = sizeof gi;
            rc = w->src->get_grid_info(w->src->handle, it->src, &gi);
            if (rc == QB_E_UNSUPPORTED) {
                rc = QB_OK;
            } else if (rc != QB_OK) {
                goto out;
            } else if (it->perm) {
                /* the plan checked this grid's map against group_size */
                j.grid = (j.zero = w4w_repack_zero(&gi, why, sizeof why)) != 0;
                j.perm = it->perm;
                j.colmap = gi.col_group;
                j.src_ng = gi.n_groups;
                if (!j.grid)
                    h->log(h, QB_LOG_INFO, "%s: requantizing in permuted order (%u-bit %s grid)",
                           it->name, gi.bits, gi.symmetric ? "symmetric" : "asymmetric");
            } else if (grid_usable(&j, &gi, why, sizeof why)) {
                j.grid = 1;
            } else {
                h->log(h, QB_LOG_INFO, "%s: requantizing (%s)", it->name, why);
            }
        }
        if ((rc = choose_rule(w, it, &j)) != QB_OK)
            goto out;
        j.scales = qbk_malloc((size_t)(rows * j.ng) * sizeof *j.scales);
        if (!j.scales) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory for scales", src_path(w),
                              it->name);
            goto out;
        }
    }
    slots = qbk_calloc(2 * nslot, sizeof *slots);
    if (!slots) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
        goto out;
    }
    for (i = 0; i < 2 * nslot; i++) {
        w4w_slot *s = &slots[i];
        s->w = qbk_malloc((size_t)(br * cols) * sizeof *s->w);
        s->out = qbk_malloc(lin ? (size_t)(br * j.pcols)
                                : (size_t)(br * cols) * (it->kind == W4W_ITEM_F32 ? 4 : 2));
        s->q = qbk_malloc((size_t)cols);
        s->row = qbk_malloc((size_t)cols * sizeof *s->row);
        if (!s->w || !s->out || !s->q || !s->row) {
            rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
            goto out;
        }
        if (j.U) {
            s->gw = qbk_malloc((size_t)(br * cols) * sizeof *s->gw);
            s->gq = qbk_malloc((size_t)(br * cols));
            s->gerr = qbk_malloc((size_t)(br * w4w_gptq_block(j.gs)) * sizeof *s->gerr);
            if (!s->gw || !s->gq || !s->gerr) {
                rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
                goto out;
            }
        }
        if (j.grid) {
            s->codes = qbk_malloc((size_t)(br * cols));
            s->gscales = qbk_malloc((size_t)br * j.src_ng * sizeof *s->gscales);
            s->gzeros = qbk_malloc((size_t)br * j.src_ng * sizeof *s->gzeros);
            if (!s->codes || !s->gscales || !s->gzeros) {
                rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
                goto out;
            }
        }
    }

    /* batches alternate between the two halves of slots; one more round
     * after the last batch writes it */
    for (b0 = 0, batch = 0; b0 < nblocks || pn; b0 += (int64_t)nslot, batch++) {
        w4w_slot *cur = slots + (batch % 2) * nslot;
        size_t nb = 0;
        if (h->cancelled(h)) {
            rc = h->set_error(h, QB_E_CANCELLED, "%s: cancelled", it->name);
            goto out;
        }
        for (i = 0; i < nslot; i++) {
            int64_t r0 = (b0 + (int64_t)i) * br;
            cur[i].row0 = r0;
            cur[i].n = r0 >= rows ? 0 : (r0 + br <= rows ? br : rows - r0);
            if (cur[i].n)
                nb = i + 1;
        }
        j.slots = cur;
        j.wslots = pn ? pend : NULL;
        j.wn = pn;
        rc = h->parallel_for(h, nb + (pn ? 1 : 0), batch_worker, &j);
        if (rc != QB_OK)
            goto out;
        for (i = 0; i < pn; i++) {
            const w4w_slot *s = &pend[i];
            err2 += s->err2;
            ref2 += s->ref2;
            if (j.grid && !s->exact && !warned) {
                h->log(h, QB_LOG_WARN,
                       "%s: %s: integer grid not repacked exactly (%s); requantizing such blocks",
                       src_path(w), it->name, s->why);
                warned = 1;
            }
        }
        pend = cur;
        pn = nb;
    }
    if (lin) {
        rc = qbk_st_writer_write(w->cur, j.scales, (size_t)(rows * j.ng) * sizeof *j.scales);
        if (rc == QB_OK && it->perm)
            rc = qbk_st_writer_write(w->cur, it->perm, (size_t)cols * sizeof *it->perm);
        if (rc != QB_OK)
            goto out;
        /* exact means decoded == source for every element: the grid path
         * checked bits; a requantized tensor with zero error is equal too */
        it->exact = err2 == 0.0;
        it->rel_rmse = ref2 > 0.0 ? sqrt(err2 / ref2) : 0.0;
    }
out:
    free_slots(slots, 2 * nslot);
    qbk_free(j.scales);
    qbk_free(j.imp);
    qbk_free(j.U);
    qbk_free(j.dead);
    qbk_free(j.gimp);
    return rc;
}

/* A tied model whose source still has lm_head.weight: it must equal the
 * embeddings bit for bit, since the output keeps only the embeddings. */
static qb_status check_tied(w4w_writer *w, const w4w_item *it)
{
    const qb_host *h = w->h;
    int64_t br = W4W_BLOCK_ELEMS / it->cols, r0, i;
    float *a = NULL, *b = NULL;
    qb_status rc = QB_OK;
    if (br < 1)
        br = 1;
    a = qbk_malloc((size_t)(br * it->cols) * sizeof *a);
    b = qbk_malloc((size_t)(br * it->cols) * sizeof *b);
    if (!a || !b) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src_path(w), it->name);
        goto out;
    }
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t n = r0 + br <= it->rows ? br : it->rows - r0;
        if ((rc = w->src->read_rows(w->src->handle, it->src, r0, n, a)) != QB_OK ||
            (rc = w->src->read_rows(w->src->handle, it->peer, r0, n, b)) != QB_OK)
            goto out;
        for (i = 0; i < n * it->cols; i++)
            if (qb_f32_bits(a[i]) != qb_f32_bits(b[i])) {
                rc =
                    h->set_error(h, QB_E_MISMATCH,
                                 "%s: %s: row %lld differs from model.embed_tokens.weight although "
                                 "tie_word_embeddings is true",
                                 src_path(w), it->name, (long long)(r0 + i / it->cols));
                goto out;
            }
    }
out:
    qbk_free(a);
    qbk_free(b);
    return rc;
}

/* Closes the current file if it is complete and records it. */
static qb_status close_current(w4w_writer *w)
{
    w4w_file *f;
    qb_status rc;
    if (!w->cur)
        return QB_OK;
    f = &w->plan->files[w->cur_file];
    rc = qbk_st_writer_close(w->cur, &f->bytes, f->sha256);
    w->cur = NULL;
    if (rc != QB_OK)
        return rc;
    f->closed = 1;
    return w4w_written_add(w->h, &w->written, f->name, f->bytes, f->sha256);
}

/* ---- vtable -------------------------------------------------------------- */

static int w4w_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    return mi && w4w_arch_find(mi->architecture) ? 90 : 0;
}

static qb_status parse_options(const qb_host *h, const qb_param *params, w4w_options *o)
{
    const qb_param *p;
    memset(o, 0, sizeof *o);
    o->group_size = 128;
    o->group_auto = 1;
    o->rule = W4W_RULE_AUTO;
    if ((p = qb_param_find(params, "group_size")) && p->is_set) {
        const char *v = p->type == QB_PARAM_STRING ? p->v.s : NULL;
        char *end = NULL;
        long long g = 0;
        if (p->type == QB_PARAM_INT) /* a host that parsed it as a 1.x integer option */
            g = p->v.i;
        else if (v && strcmp(v, "auto") != 0)
            g = strtoll(v, &end, 10);
        if (p->type == QB_PARAM_INT || (v && strcmp(v, "auto") != 0)) {
            if (g < 1 || g > (1 << 20) || (end && (*end || end == v)))
                return h->set_error(h, QB_E_INVALID, "%s: option group_size must be auto or "
                                    "1..%d", W4W_PLUGIN_NAME, 1 << 20);
            o->group_size = g;
            o->group_auto = 0;
        } else if (!v) {
            return h->set_error(h, QB_E_INVALID, "%s: option group_size must be auto or 1..%d",
                                W4W_PLUGIN_NAME, 1 << 20);
        }
    }
    if ((p = qb_param_find(params, "quant_rule")) && p->is_set) {
        const char *v = p->type == QB_PARAM_STRING ? p->v.s : NULL;
        if (v && strcmp(v, "auto") == 0)
            o->rule = W4W_RULE_AUTO;
        else if (v && strcmp(v, "absmax") == 0)
            o->rule = W4W_RULE_ABSMAX;
        else if (v && strcmp(v, "search") == 0)
            o->rule = W4W_RULE_SEARCH;
        else if (v && strcmp(v, "weighted") == 0)
            o->rule = W4W_RULE_WEIGHTED;
        else if (v && strcmp(v, "keep") == 0)
            o->rule = W4W_RULE_KEEP;
        else if (v && strcmp(v, "gptq") == 0)
            o->rule = W4W_RULE_GPTQ;
        else
            return h->set_error(h, QB_E_INVALID,
                                "%s: option quant_rule must be auto|absmax|search|keep|weighted|gptq",
                                W4W_PLUGIN_NAME);
        o->rule_explicit = 1;
    }
    if ((p = qb_param_find(params, "gptq_scale")) && p->is_set) {
        const char *v = p->type == QB_PARAM_STRING ? p->v.s : NULL;
        if (v && strcmp(v, "weighted") == 0)
            o->gptq_weighted = 1;
        else if (!v || strcmp(v, "absmax") != 0)
            return h->set_error(h, QB_E_INVALID, "%s: option gptq_scale must be absmax|weighted",
                                W4W_PLUGIN_NAME);
    }
    if ((p = qb_param_find(params, "act_order")) && p->is_set) {
        const char *v = p->type == QB_PARAM_STRING ? p->v.s : NULL;
        if (v && strcmp(v, "permute") == 0)
            o->act_order_permute = 1;
        else if (!v || strcmp(v, "requant") != 0)
            return h->set_error(h, QB_E_INVALID, "%s: option act_order must be requant|permute",
                                W4W_PLUGIN_NAME);
    }
    if ((p = qb_param_find(params, "lm_head")) && p->is_set) {
        const char *v = p->type == QB_PARAM_STRING ? p->v.s : NULL;
        if (v && strcmp(v, "quantized") == 0)
            o->quantized_head = 1;
        else if (!v || strcmp(v, "f16") != 0)
            return h->set_error(h, QB_E_INVALID, "%s: option lm_head must be f16|quantized",
                                W4W_PLUGIN_NAME);
    }
    return QB_OK;
}

/* The plan at the chosen group size: built once with the group size the
 * options give (128 for auto), then, when decide.c picks another, again
 * (the scales' shapes and act-order permutations depend on it). warn:
 * log the group-size warnings (plan() does; begin, which a 1.2 host calls
 * after plan, logs the choice at INFO only). */
static qb_status plan_with_group(const qb_host *h, const qb_model_src *src, w4w_options *opt,
                                 int warn, w4w_plan **out)
{
    int64_t first = opt->group_size;
    qb_status rc = w4w_plan_build(h, src, opt, out);
    if (rc != QB_OK)
        return rc;
    rc = w4w_group_choose(h, src, *out, opt, warn);
    if (rc == QB_OK && opt->group_size != first) {
        w4w_plan_free(*out);
        *out = NULL;
        rc = w4w_plan_build(h, src, opt, out);
    }
    if (rc != QB_OK) {
        w4w_plan_free(*out);
        *out = NULL;
        return rc;
    }
    (*out)->opt = *opt;
    h->log(h, QB_LOG_INFO, "group size %lld (%s)", (long long)opt->group_size, opt->group_reason);
    return QB_OK;
}

static qb_status w4w_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                           const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_host *h = ((const w4w_ctx *)ctx)->host;
    const uint16_t one = 1;
    w4w_writer *w = NULL;
    w4w_options opt;
    qb_status rc;
    size_t i, n;

    *out = NULL;
    /* the fp16/U8 arrays are written as they lie in memory; safetensors is
     * little-endian */
    if (*(const uint8_t *)&one != 1)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: big-endian hosts are not supported",
                            W4W_PLUGIN_NAME);
    if (!sink || !src || !src->info || !order)
        return h->set_error(h, QB_E_INVALID, "%s: begin: missing sink, source or order",
                            W4W_PLUGIN_NAME);
    rc = parse_options(h, params, &opt);
    if (rc != QB_OK)
        return rc;
    w = qbk_calloc(1, sizeof *w);
    if (!w)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", W4W_PLUGIN_NAME);
    w->h = h;
    w->sink = sink;
    w->src = src;
    w->cur_file = -1;
    w->slab_e = -1;
    rc = plan_with_group(h, src, &opt, 0, &w->plan);
    if (rc != QB_OK) {
        qbk_free(w);
        return rc;
    }
    /* one entry per source tensor: a fused one's parts are consecutive */
    for (i = 0, n = 0; i < w->plan->n_items; i++)
        if (i == 0 || w->plan->items[i].src != w->plan->items[i - 1].src)
            order[n++] = w->plan->items[i].src;
    *out = w;
    return QB_OK;
}

static qb_status w4w_write_tensor(qb_writer_handle hw, size_t index)
{
    w4w_writer *w = hw;
    w4w_plan *p = w->plan;
    w4w_item *it;
    qb_status rc;

    if (index >= w->src->info->n_tensors || p->item_of_src[index] != w->next)
        return w->h->set_error(w->h, QB_E_INVALID,
                               "%s: write_tensor(%zu) called out of the planned order",
                               W4W_PLUGIN_NAME, index);
    /* every item of this source: several for a fused tensor (plan.c) */
    do {
        it = &p->items[w->next];
        if (it->kind != W4W_ITEM_TIED && it->file != w->cur_file) {
            const w4w_file *f = &p->files[it->file];
            rc = close_current(w);
            if (rc != QB_OK)
                return rc;
            /* the file's tensors are outs[f->first_out .. + f->n_out) */
            rc = qbk_st_writer_open(w->h, w->sink, f->name, p->outs + f->first_out, f->n_out,
                                    &w->cur);
            if (rc != QB_OK)
                return rc;
            w->cur_file = it->file;
        }
        rc = it->kind == W4W_ITEM_TIED ? check_tied(w, it) : write_dense_item(w, it);
        if (rc != QB_OK)
            return rc;
        it->written = 1;
        w->next++;
        if (w->cur && qbk_st_writer_remaining(w->cur) == 0 && (rc = close_current(w)) != QB_OK)
            return rc;
    } while (w->next < p->n_items && p->items[w->next].src == index);
    return QB_OK;
}

static void writer_free(w4w_writer *w)
{
    if (!w)
        return;
    qbk_st_writer_discard(w->cur);
    w4w_plan_free(w->plan);
    qbk_free(w->written.v);
    qbk_free(w->slab);
    qbk_free(w);
}

static qb_status w4w_finish(qb_writer_handle hw)
{
    w4w_writer *w = hw;
    qb_status rc = QB_OK;
    if (w->next != w->plan->n_items) {
        rc = w->h->set_error(w->h, QB_E_INVALID, "%s: finish after %zu of %zu tensors",
                             W4W_PLUGIN_NAME, w->next, w->plan->n_items);
        goto out;
    }
    if ((rc = close_current(w)) != QB_OK)
        goto out;
    if ((rc = w4w_config_write(w->h, w->sink, w->src, w->plan, &w->written)) != QB_OK)
        goto out;
    rc = w4w_manifest_write(w->h, w->sink, w->src, w->plan, &w->written);
out:
    writer_free(w);
    return rc;
}

static void w4w_abort(qb_writer_handle hw)
{
    writer_free(hw);
}

static qb_status w4w_plan_entry(void *ctx, const qb_model_src *src, const qb_param *params,
                          const qb_plan_sink *out)
{
    const qb_host *h = ((const w4w_ctx *)ctx)->host;
    w4w_plan *p = NULL;
    w4w_options opt;
    qb_status rc;

    if (!src || !src->info || !out || out->struct_size < QB_PLAN_SINK_SIZE_1_2)
        return h->set_error(h, QB_E_INVALID, "%s: plan: missing source or plan sink",
                            W4W_PLUGIN_NAME);
    rc = parse_options(h, params, &opt);
    if (rc != QB_OK)
        return rc;
    rc = plan_with_group(h, src, &opt, 1, &p);
    if (rc != QB_OK)
        return rc;
    rc = w4w_plan_emit(h, src, p, out);
    w4w_plan_free(p);
    return rc;
}

const qb_writer_vtable w4w_writer_vtable = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = w4w_supports,
    .begin = w4w_begin,
    .write_tensor = w4w_write_tensor,
    .finish = w4w_finish,
    .abort = w4w_abort,
    .plan = w4w_plan_entry,
};
