/*
 * quantbridge model library — DeepSeek-V2/V3 expert routing, as
 * transformers 5.24's DeepseekV2TopkRouter and DeepseekV3TopkRouter
 * compute it (docs/forward.md, "DeepSeek routing"):
 *   V2 greedy               softmax scores, the top_k best;
 *   V2 group_limited_greedy softmax scores; the topk_group groups with the
 *                           best maximum keep their scores, the others
 *                           count 0; the top_k best;
 *   V3 (noaux_tc)           sigmoid scores; the choice adds
 *                           e_score_correction_bias; the topk_group groups
 *                           with the best sum of their two best choices
 *                           stay eligible; the top_k best choices; their
 *                           weights are the unbiased scores, divided by
 *                           their sum (+1e-20) when norm_topk_prob.
 * Every weight is then multiplied by routed_scaling_factor.
 */
#include "fwd.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* Index of the largest v[i] with !skip[i] (ties: the lower index), -1 if
 * none. */
static int64_t best_of(const double *v, const unsigned char *skip, int64_t n)
{
    int64_t i, b = -1;
    for (i = 0; i < n; i++)
        if (!skip[i] && (b < 0 || v[i] > v[b]))
            b = i;
    return b;
}

qb_status qbh_fwd_route_deepseek(const qb_host *h, const qbh_fwd_cfg *c, const float *r,
                                 const float *bias, int64_t T, double *wt)
{
    int64_t E = c->n_experts, K = c->top_k, t, e, k, g;
    int64_t G = c->ds_route == QBH_DS_GREEDY ? 1 : c->n_group, per = E / G;
    int v3 = c->ds_route == QBH_DS_NOAUX_TC;
    double *sc = h->alloc(h, (size_t)E * sizeof *sc), *ch = h->alloc(h, (size_t)E * sizeof *ch);
    double *gs = h->alloc(h, (size_t)G * sizeof *gs);
    unsigned char *skip = h->alloc(h, (size_t)E), *gskip = h->alloc(h, (size_t)G);
    qb_status rc = QB_OK;

    assert((c->moe == QBH_MOE_DEEPSEEK || c->moe == QBH_MOE_MINIMAX) && (!v3 || bias) &&
           E % G == 0);
    if (!sc || !ch || !gs || !skip || !gskip) {
        rc = h->set_error(h, QB_E_NOMEM, "forward: out of memory for the routing");
        goto out;
    }
    memset(wt, 0, (size_t)(T * E) * sizeof *wt);
    for (t = 0; t < T; t++) {
        const float *rt = r + t * E;
        double sum = 0;
        if (v3) {
            for (e = 0; e < E; e++) {
                sc[e] = 1.0 / (1.0 + exp(-(double)rt[e]));
                ch[e] = sc[e] + (double)bias[e]; /* the bias steers the choice only */
            }
        } else {
            double mx = rt[0], z = 0;
            for (e = 1; e < E; e++)
                mx = rt[e] > mx ? rt[e] : mx;
            for (e = 0; e < E; e++)
                z += (sc[e] = exp((double)rt[e] - mx));
            for (e = 0; e < E; e++)
                ch[e] = (sc[e] /= z);
        }
        memset(skip, 0, (size_t)E);
        if (c->ds_route != QBH_DS_GREEDY) {
            /* Group scores: V3 the sum of a group's two best choices, V2
             * its best score; the topk_group best groups stay. */
            for (g = 0; g < G; g++) {
                const double *cg = ch + g * per;
                int64_t b1 = 0, b2 = -1, i;
                for (i = 1; i < per; i++)
                    if (cg[i] > cg[b1])
                        b1 = i;
                for (i = 0; i < per; i++)
                    if (i != b1 && (b2 < 0 || cg[i] > cg[b2]))
                        b2 = i;
                gs[g] = v3 ? cg[b1] + cg[b2] : cg[b1];
            }
            memset(gskip, 0, (size_t)G);
            for (k = 0; k < c->topk_group; k++)
                gskip[best_of(gs, gskip, G)] = 2; /* 2: kept */
            for (e = 0; e < E; e++)
                if (gskip[e / per] != 2) {
                    /* V3 masks the choice with -inf; V2 sets the score to
                     * 0.0, which top_k may still pick (weight 0). */
                    if (v3)
                        skip[e] = 1;
                    else
                        ch[e] = sc[e] = 0.0;
                }
        }
        for (k = 0; k < K; k++) {
            int64_t b = best_of(ch, skip, E);
            assert(b >= 0); /* parse_deepseek: top_k <= topk_group * per */
            skip[b] = 1;
            wt[t * E + b] = sc[b];
            sum += sc[b];
        }
        for (e = 0; e < E; e++) {
            double w = wt[t * E + e];
            if (c->norm_topk)
                w /= sum + 1e-20;
            wt[t * E + e] = w * c->routed_scale;
        }
    }
out:
    h->free(h, sc);
    h->free(h, ch);
    h->free(h, gs);
    h->free(h, skip);
    h->free(h, gskip);
    return rc;
}
