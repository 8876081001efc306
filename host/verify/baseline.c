/*
 * quantbridge verify — the pass/fail rule: how much error the plain
 * rule of the converted tensor's encoding makes on the same source values,
 * and whether the conversion did at least as well.
 *
 * Why a baseline and not fixed thresholds: the error of a 4-bit conversion
 * depends on the weights (an outlier column widens every group it sits in),
 * so a fixed rel RMSE or cosine bound fails correct conversions of heavy-
 * tailed weights and passes real bugs in low-error sources. The plain rule
 * measured on the very same values is the error a correct conversion can
 * always reach, whatever the weights:
 *   grid    symmetric b-bit codes with the converted tensor's own grouping:
 *           per group s = absmax / (2^(b-1) - 1) rounded to the scale dtype,
 *           q = clamp(rint(w / s), -2^(b-1), 2^(b-1) - 1), decoded q * s
 *           in fp32, or q chosen with the unrounded scale as llama.cpp
 *           does (the larger error of the two) (for b = 4 the absmax/7 rule of docs/w4a16-format.md;
 *           the sm86-w4a16 writer keeps it whenever its search does no
 *           better, so a group worse than it is a bug, not noise)
 *           (a fused expert tensor [E, in, out] served whole: groups run
 *           down its columns, the parts' own input features)
 *   round   a float target: round to nearest even in that dtype, which is
 *           the least error any rounding can make, per element
 */
#include "verify.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include <quantbridge/qb_half.h>

const char *qbh_vb_kind_name(qbh_vb_kind k)
{
    switch (k) {
    case QBH_VB_EXACT: return "exact";
    case QBH_VB_GRID: return "absmax";
    case QBH_VB_ROUND: return "nearest";
    case QBH_VB_NONE: break;
    }
    return "none";
}

float qbh_vb_round(qb_dtype dt, float v)
{
    switch (dt) {
    case QB_DT_F16: return qb_f16_to_f32(qb_f32_to_f16(v));
    case QB_DT_BF16: return qb_bf16_to_f32(qb_f32_to_bf16(v));
    default: return v;
    }
}

/* One group's baseline over the elements a[x * stride] for x in cols[0..n)
 * (NULL: the contiguous run c0 .. c0 + n). Returns its squared error;
 * with out, also writes the decoded values there (out[x * stride], the
 * same indexes), unless the rule cannot store the group (INFINITY: its
 * scale overflows the scale dtype; out untouched). */
static double group_quant(const qbh_vb_rule *rl, const float *a, const int64_t *cols, int64_t c0,
                          int64_t n, int64_t stride, float *out, double *alt)
{
    float amax = 0.0f, s, raw, inv;
    int qmax = (1 << (rl->bits - 1)) - 1, qmin = -(1 << (rl->bits - 1));
    double e = 0.0, e2 = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        float w = fabsf(a[(cols ? cols[i] : c0 + i) * stride]);
        if (w > amax)
            amax = w;
    }
    if (alt)
        *alt = 0.0;
    if (amax == 0.0f) {
        if (out) /* all zeros (or -0): stored as 0 * s */
            for (i = 0; i < n; i++)
                out[(cols ? cols[i] : c0 + i) * stride] = 0.0f;
        return 0.0;
    }
    raw = amax / (float)qmax;
    s = qbh_vb_round(rl->scale_dtype, raw);
    if (!isfinite(s)) {
        if (alt)
            *alt = INFINITY;
        return INFINITY; /* the plain rule cannot store this group at all */
    }
    inv = raw != 0.0f ? 1.0f / raw : 0.0f;
    for (i = 0; i < n; i++) {
        int64_t x = (cols ? cols[i] : c0 + i) * stride;
        float w = a[x], q = s != 0.0f ? rintf(w / s) : 0.0f, q2 = rintf(w * inv), d, d2;
        q = q > (float)qmax ? (float)qmax : q < (float)qmin ? (float)qmin : q;
        q2 = q2 > (float)qmax ? (float)qmax : q2 < (float)qmin ? (float)qmin : q2;
        d = q * s; /* decoded in fp32, as every reader of the format does */
        d2 = q2 * s;
        e += ((double)d - (double)w) * ((double)d - (double)w);
        e2 += ((double)d2 - (double)w) * ((double)d2 - (double)w);
        if (out)
            out[x] = d;
    }
    /* The same rule as llama.cpp writes it (quantize_row_q8_0_ref,
     * quantize_row_q4_0_ref): codes chosen with the unrounded scale, then
     * the scale stored rounded. Either way is the plain rule; a group may
     * differ by a code where w / s sits near a half, so the baseline is the
     * larger of the two errors (*alt, for judging; the reported baseline
     * stays the first). */
    if (alt)
        *alt = e2 > e ? e2 : e;
    return e;
}

static double group_err(const qbh_vb_rule *rl, const float *a, const int64_t *cols, int64_t c0,
                        int64_t n, int64_t stride, double *alt)
{
    return group_quant(rl, a, cols, c0, n, stride, NULL, alt);
}

/* Adds one group's outcome: baseline eb (reported), the error either
 * way of the plain rule allows ej (judged), converted error ec. */
static void judge_group(qbh_vb_stats *st, double eb, double ej, double ec, double lim)
{
    if (!isfinite(ec))
        return; /* non-finite values: the element metrics fail them */
    st->n_units++;
    if (isfinite(eb))
        st->ss_base += eb;
    if (isfinite(ej) && ec > ej * lim) {
        double ratio = ej > 0.0 ? sqrt(ec / ej) : INFINITY;
        st->n_worse++;
        if (ratio > st->worst)
            st->worst = ratio;
    }
}

/* A fused expert tensor (rl->expert_rows): each column of the block is one
 * row of a per-expert [out, in] linear, its input features running down
 * the rows (w4a16-format.md "gpt-oss"), so a group is group_size
 * consecutive rows of one column. The caller's block starts at a group
 * boundary and stays inside one expert. */
static void fused_rows(const qbh_vb_rule *rl, const float *a, const float *b, int64_t n_rows,
                       int64_t cols, double lim, qbh_vb_stats *st)
{
    int64_t r0, c, k;
    for (r0 = 0; r0 < n_rows; r0 += rl->group_size) {
        int64_t n = n_rows - r0 < rl->group_size ? n_rows - r0 : rl->group_size;
        for (c = 0; c < cols; c++) {
            const float *ca = a + (size_t)r0 * (size_t)cols + (size_t)c;
            const float *cb = b + (size_t)r0 * (size_t)cols + (size_t)c;
            double ej, eb = group_err(rl, ca, NULL, 0, n, cols, &ej), ec = 0.0;
            for (k = 0; k < n; k++) {
                double d = (double)cb[k * cols] - (double)ca[k * cols];
                ec += d * d;
            }
            judge_group(st, eb, ej, ec, lim);
        }
    }
}

void qbh_vb_rows(const qbh_vb_rule *rl, const float *a, const float *b, int64_t n_rows,
                 int64_t cols, qbh_vb_stats *st)
{
    int64_t r, c, g;
    double lim = (1.0 + rl->margin) * (1.0 + rl->margin);
    if (rl->kind == QBH_VB_GRID && rl->expert_rows > 0) {
        fused_rows(rl, a, b, n_rows, cols, lim, st);
        return;
    }
    for (r = 0; r < n_rows; r++) {
        const float *ra = a + (size_t)r * (size_t)cols, *rb = b + (size_t)r * (size_t)cols;
        if (rl->kind == QBH_VB_ROUND) {
            for (c = 0; c < cols; c++) {
                double x = ra[c], y = rb[c], base = (double)qbh_vb_round(rl->round_dtype, ra[c]);
                double eb = fabs(base - x), ec = fabs(y - x);
                if (!isfinite(x) || !isfinite(y))
                    continue; /* the element metrics judge those */
                st->ss_base += eb * eb;
                if (ec > eb) {
                    st->n_worse++;
                    if (ec - eb > st->worst)
                        st->worst = ec - eb;
                }
                st->n_units++;
            }
            continue;
        }
        if (rl->kind != QBH_VB_GRID)
            continue;
        for (g = 0; g < rl->n_groups; g++) {
            double eb, ej, ec = 0.0;
            int64_t n;
            if (rl->col_group) {
                n = rl->group_len[g];
                eb = group_err(rl, ra, rl->group_cols + rl->group_start[g], 0, n, 1, &ej);
                for (c = 0; c < n; c++) {
                    int64_t k = rl->group_cols[rl->group_start[g] + c];
                    double d = (double)rb[k] - (double)ra[k];
                    ec += d * d;
                }
            } else {
                int64_t c0 = g * rl->group_size;
                n = cols - c0 < rl->group_size ? cols - c0 : rl->group_size;
                eb = group_err(rl, ra, NULL, c0, n, 1, &ej);
                for (c = c0; c < c0 + n; c++) {
                    double d = (double)rb[c] - (double)ra[c];
                    ec += d * d;
                }
            }
            judge_group(st, eb, ej, ec, lim);
        }
    }
}

int64_t qbh_vb_apply_rows(const qbh_vb_rule *rl, float *rows, int64_t n_rows, int64_t cols)
{
    int64_t r, c, g, bad = 0;
    assert(rl->expert_rows == 0);
    for (r = 0; r < n_rows; r++) {
        float *ra = rows + (size_t)r * (size_t)cols;
        if (rl->kind == QBH_VB_ROUND) {
            for (c = 0; c < cols; c++)
                ra[c] = qbh_vb_round(rl->round_dtype, ra[c]);
            continue;
        }
        if (rl->kind != QBH_VB_GRID)
            continue;
        for (g = 0; g < rl->n_groups; g++) {
            double e;
            if (rl->col_group) {
                /* the group's columns read and written in place: each
                 * element is read for the maximum before any is written */
                e = group_quant(rl, ra, rl->group_cols + rl->group_start[g], 0, rl->group_len[g],
                                1, ra, NULL);
            } else {
                int64_t c0 = g * rl->group_size;
                int64_t n = cols - c0 < rl->group_size ? cols - c0 : rl->group_size;
                e = n > 0 ? group_quant(rl, ra, NULL, c0, n, 1, ra, NULL) : 0.0;
            }
            bad += !isfinite(e);
        }
    }
    return bad;
}

qb_status qbh_vb_rule_grid(qbh_vb_rule *rl, const qb_grid_info *gi, int64_t cols)
{
    int64_t c, g;
    rl->kind = QBH_VB_GRID;
    rl->bits = (int)gi->bits;
    rl->scale_dtype = gi->scale_dtype;
    rl->n_groups = gi->n_groups;
    rl->group_size = gi->group_size;
    rl->col_group = gi->col_group;
    if (gi->bits < 2 || gi->bits > 8 || !gi->symmetric || gi->n_groups < 1 ||
        (!gi->col_group && gi->group_size < 1)) {
        rl->kind = QBH_VB_NONE; /* no plain symmetric rule to compare with */
        return QB_OK;
    }
    if (!gi->col_group)
        return QB_OK;
    /* Scattered groups (act-order): list each group's columns once. */
    rl->group_start = qbh_calloc((size_t)gi->n_groups + 1, sizeof *rl->group_start);
    rl->group_len = qbh_calloc((size_t)gi->n_groups, sizeof *rl->group_len);
    rl->group_cols = qbh_calloc((size_t)cols, sizeof *rl->group_cols);
    if (!rl->group_start || !rl->group_len || !rl->group_cols) {
        qbh_vb_rule_free(rl);
        return qbh_error_set(QB_E_NOMEM, "verify: out of memory for a column map");
    }
    for (c = 0; c < cols; c++) {
        int32_t k = gi->col_group[c];
        if (k < 0 || (uint32_t)k >= gi->n_groups) {
            qbh_vb_rule_free(rl);
            rl->kind = QBH_VB_NONE;
            return QB_OK;
        }
        rl->group_len[k]++;
    }
    for (g = 0; g < rl->n_groups; g++)
        rl->group_start[g + 1] = rl->group_start[g] + rl->group_len[g];
    memset(rl->group_len, 0, (size_t)gi->n_groups * sizeof *rl->group_len);
    for (c = 0; c < cols; c++) {
        int32_t k = gi->col_group[c];
        rl->group_cols[rl->group_start[k] + rl->group_len[k]++] = c;
    }
    return QB_OK;
}

void qbh_vb_rule_free(qbh_vb_rule *rl)
{
    qbh_free(rl->group_start);
    qbh_free(rl->group_len);
    qbh_free(rl->group_cols);
    rl->group_start = rl->group_len = rl->group_cols = NULL;
}
