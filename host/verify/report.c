/*
 * quantbridge verify — the reports: the text table and summary, the
 * JSON document, and the self-contained HTML page (inline CSS, inline SVG
 * charts drawn here so they show without scripts, a small inline script
 * that sorts the table; nothing is fetched).
 */
#include "verify.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define WORST_K 5

static int compared(const qbh_verify_tensor *t)
{
    return t->state == QBH_VT_OK || t->state == QBH_VT_FAIL;
}

static const char *state_name(qbh_verify_state s)
{
    switch (s) {
    case QBH_VT_OK: return "ok";
    case QBH_VT_FAIL: return "FAIL";
    case QBH_VT_MISSING: return "MISSING";
    case QBH_VT_EXTRA: return "EXTRA";
    case QBH_VT_SHAPE: return "SHAPE";
    }
    return "?";
}

static void shape_text(const qbh_verify_tensor *t, char *out, size_t n)
{
    size_t len = 0;
    uint32_t d;
    out[0] = '\0';
    for (d = 0; d < t->n_dims && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
}

static void num_text(double v, const char *fmt, char *out, size_t n)
{
    if (isnan(v))
        snprintf(out, n, "-");
    else if (isinf(v))
        snprintf(out, n, v > 0 ? "inf" : "-inf");
    else
        snprintf(out, n, fmt, v);
}

qb_status qbh_verify_layers(const qbh_verify_result *r, qbh_verify_layer **out, size_t *n)
{
    qbh_verify_layer *L;
    double *ss_a, *ss_err;
    int max_layer = -1;
    size_t i, nl;

    *out = NULL;
    *n = 0;
    for (i = 0; i < r->n; i++)
        if (compared(&r->t[i]) && r->t[i].layer > max_layer)
            max_layer = r->t[i].layer;
    if (max_layer < 0)
        return QB_OK;
    nl = (size_t)max_layer + 1;
    L = qbh_calloc(nl, sizeof *L);
    ss_a = qbh_calloc(nl, sizeof *ss_a);
    ss_err = qbh_calloc(nl, sizeof *ss_err);
    if (!L || !ss_a || !ss_err) {
        qbh_free(L);
        qbh_free(ss_a);
        qbh_free(ss_err);
        return qbh_error_set(QB_E_NOMEM, "verify: out of memory");
    }
    for (i = 0; i < nl; i++) {
        L[i].layer = (int)i;
        L[i].min_wx_cosine = NAN;
    }
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        qbh_verify_layer *l;
        if (!compared(t) || t->layer < 0)
            continue;
        l = &L[t->layer];
        l->n++;
        l->n_failed += t->state == QBH_VT_FAIL;
        l->mean_rel_rmse += t->rel_rmse;
        l->mean_cosine += t->cosine;
        if (t->rel_rmse > l->max_rel_rmse)
            l->max_rel_rmse = t->rel_rmse;
        if (t->has_wx && (isnan(l->min_wx_cosine) || t->wx_cosine < l->min_wx_cosine))
            l->min_wx_cosine = t->wx_cosine;
        ss_a[t->layer] += t->ss_a;
        ss_err[t->layer] += t->ss_err;
    }
    for (i = 0; i < nl; i++) {
        if (L[i].n) {
            L[i].mean_rel_rmse /= (double)L[i].n;
            L[i].mean_cosine /= (double)L[i].n;
        }
        if (ss_err[i] == 0.0)
            L[i].snr_db = INFINITY;
        else if (ss_a[i] == 0.0)
            L[i].snr_db = -INFINITY;
        else
            L[i].snr_db = 10.0 * log10(ss_a[i] / ss_err[i]);
    }
    qbh_free(ss_a);
    qbh_free(ss_err);
    *out = L;
    *n = nl;
    return QB_OK;
}

size_t qbh_verify_worst(const qbh_verify_result *r, size_t *idx, size_t k)
{
    size_t i, m = 0, j;
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        if (!compared(t))
            continue;
        /* insertion into the top-k list, worst (largest rel_rmse) first;
         * a non-finite value sorts as the worst */
        for (j = m; j > 0; j--) {
            const qbh_verify_tensor *u = &r->t[idx[j - 1]];
            if (!(t->rel_rmse > u->rel_rmse || (isnan(t->rel_rmse) && !isnan(u->rel_rmse))))
                break;
            if (j < k)
                idx[j] = idx[j - 1];
        }
        if (j < k) {
            idx[j] = i;
            if (m < k)
                m++;
        }
    }
    return m;
}

void qbh_verify_print_summary(FILE *f, const qbh_verify_result *r)
{
    size_t worst[WORST_K], nw, i, nl = 0;
    qbh_verify_layer *L = NULL;
    char b1[32], b2[32], b3[32];

    if (!r->pass) {
        fprintf(f, "problems:\n");
        for (i = 0; i < r->n; i++)
            if (r->t[i].state != QBH_VT_OK)
                fprintf(f, "  %-7s %s: %s\n", state_name(r->t[i].state), r->t[i].name,
                        r->t[i].reason);
    }
    if (r->n_at_output) {
        fprintf(f, "judged at the model's output (activation-aware rule; plain figures "
                   "against the absmax rule shown, not failed):\n");
        for (i = 0; i < r->n; i++)
            if (r->t[i].state == QBH_VT_OK && r->t[i].at_output)
                fprintf(f, "  %s: %s\n", r->t[i].name, r->t[i].reason);
    }
    nw = qbh_verify_worst(r, worst, WORST_K);
    if (nw) {
        fprintf(f, "worst tensors (by rel_rmse):\n");
        for (i = 0; i < nw; i++) {
            const qbh_verify_tensor *t = &r->t[worst[i]];
            num_text(t->snr_db, "%.1f", b1, sizeof b1);
            num_text(t->wx_cosine, "%.6f", b2, sizeof b2);
            fprintf(f, "  %zu. %s  rel_rmse %.4g  cosine %.6f  snr %s dB  W.x cos %s%s\n", i + 1,
                    t->name, t->rel_rmse, t->cosine, b1, b2, t->exact ? "  (exact)" : "");
        }
    }
    if (qbh_verify_layers(r, &L, &nl) == QB_OK && nl) {
        fprintf(f, "per-layer means:\n  %5s  %3s  %13s  %12s  %11s  %8s  %10s\n", "LAYER", "N",
                "MEAN_REL_RMSE", "MAX_REL_RMSE", "MEAN_COSINE", "SNR_DB", "MIN_WX_COS");
        for (i = 0; i < nl; i++) {
            if (!L[i].n)
                continue;
            num_text(L[i].snr_db, "%.1f", b1, sizeof b1);
            num_text(L[i].min_wx_cosine, "%.6f", b2, sizeof b2);
            fprintf(f, "  %5d  %3zu  %13.4g  %12.4g  %11.6f  %8s  %10s\n", L[i].layer, L[i].n,
                    L[i].mean_rel_rmse, L[i].max_rel_rmse, L[i].mean_cosine, b1, b2);
        }
    }
    qbh_free(L);
    snprintf(b3, sizeof b3, "%g", r->opts.max_rel_rmse);
    fprintf(f,
            "verify: %s: %zu tensors compared, %zu exact, %zu failed, %zu missing, "
            "%zu extra, %zu shape mismatches (rule: exact where declared, else no worse than "
            "absmax/7 int4 + %g%% or nearest rounding",
            r->pass ? "PASS" : "FAIL", r->n_compared, r->n_exact, r->n_failed, r->n_missing,
            r->n_extra, r->n_shape, 100.0 * r->opts.margin);
    if (!isnan(r->opts.max_rel_rmse))
        fprintf(f, "; rel_rmse <= %s", b3);
    if (!isnan(r->opts.min_cosine))
        fprintf(f, "; cosine and W.x cosine >= %g", r->opts.min_cosine);
    fprintf(f, ")");
    if (nw && r->n_exact == r->n_compared)
        fprintf(f, "; every compared tensor bit-exact");
    else if (nw)
        fprintf(f, "; worst %s rel_rmse %.4g", r->t[worst[0]].name, r->t[worst[0]].rel_rmse);
    fprintf(f, "\n");
}

void qbh_verify_print_table(FILE *f, const qbh_verify_result *r)
{
    size_t i, w = 6, we = 8;
    fprintf(f, "source:    %s (%s via %s)%s%s\n", r->source_path, r->source_format,
            r->source_reader, r->source_summary[0] ? ": " : "", r->source_summary);
    fprintf(f, "converted: %s (%s via %s)\n", r->converted_path, r->converted_format,
            r->converted_reader);
    for (i = 0; i < r->n; i++) {
        if (strlen(r->t[i].name) > w)
            w = strlen(r->t[i].name);
        if (strlen(r->t[i].encoding) > we)
            we = strlen(r->t[i].encoding);
    }
    fprintf(f, "%-*s  %-12s  %-*s  %-5s  %10s  %10s  %9s  %7s  %9s  %s\n", (int)w, "TENSOR",
            "SHAPE", (int)we, "ENCODING", "EXACT", "MAX_ABS", "REL_RMSE", "COSINE", "SNR_DB",
            "WX_COS", "STATUS");
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        char sh[160], ma[32], rr[32], co[32], sn[32], wx[32];
        shape_text(t, sh, sizeof sh);
        if (compared(t)) {
            num_text(t->max_abs, "%.3g", ma, sizeof ma);
            num_text(t->rel_rmse, "%.4g", rr, sizeof rr);
            num_text(t->cosine, "%.6f", co, sizeof co);
            num_text(t->snr_db, "%.1f", sn, sizeof sn);
            num_text(t->wx_cosine, "%.6f", wx, sizeof wx);
        } else {
            strcpy(ma, "-");
            strcpy(rr, "-");
            strcpy(co, "-");
            strcpy(sn, "-");
            strcpy(wx, "-");
        }
        fprintf(f, "%-*s  %-12s  %-*s  %-5s  %10s  %10s  %9s  %7s  %9s  %s%s%s%s%s\n", (int)w,
                t->name, sh, (int)we, t->encoding,
                compared(t) ? (t->exact ? "yes" : "no") : "-", ma, rr, co, sn, wx,
                state_name(t->state), t->reason[0] ? " (" : "", t->reason,
                t->reason[0] ? ")" : "", t->compared_with ? " [vs tied embeddings]" : "");
    }
    qbh_verify_print_summary(f, r);
}

/* ---- JSON ------------------------------------------------------------------ */

static cJSON *num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

char *qbh_verify_json(const qbh_verify_result *r)
{
    cJSON *root = cJSON_CreateObject(), *arr, *o;
    qbh_verify_layer *L = NULL;
    size_t i, nl = 0, worst[WORST_K], nw;
    uint32_t d;
    char *text = NULL;

    if (!root)
        return NULL;
    cJSON_AddBoolToObject(root, "pass", r->pass != 0);
    cJSON_AddStringToObject(root, "source", r->source_path);
    cJSON_AddStringToObject(root, "source_format", r->source_format);
    cJSON_AddStringToObject(root, "source_reader", r->source_reader);
    cJSON_AddStringToObject(root, "source_summary", r->source_summary);
    cJSON_AddStringToObject(root, "converted", r->converted_path);
    cJSON_AddStringToObject(root, "converted_format", r->converted_format);
    cJSON_AddStringToObject(root, "converted_reader", r->converted_reader);
    o = cJSON_AddObjectToObject(root, "thresholds");
    if (o) {
        cJSON_AddItemToObject(o, "max_rel_rmse", num(r->opts.max_rel_rmse));
        cJSON_AddItemToObject(o, "min_cosine", num(r->opts.min_cosine));
        cJSON_AddNumberToObject(o, "baseline_margin", r->opts.margin);
        cJSON_AddNumberToObject(o, "wx_vectors", r->opts.n_vectors);
    }
    cJSON_AddNumberToObject(root, "n_compared", (double)r->n_compared);
    cJSON_AddNumberToObject(root, "n_exact", (double)r->n_exact);
    cJSON_AddNumberToObject(root, "n_failed", (double)r->n_failed);
    cJSON_AddNumberToObject(root, "n_missing", (double)r->n_missing);
    cJSON_AddNumberToObject(root, "n_extra", (double)r->n_extra);
    cJSON_AddNumberToObject(root, "n_shape", (double)r->n_shape);
    cJSON_AddNumberToObject(root, "n_judged_at_output", (double)r->n_at_output);
    arr = cJSON_AddArrayToObject(root, "tensors");
    for (i = 0; arr && i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        cJSON *j = cJSON_CreateObject(), *sh;
        if (!j)
            goto out;
        cJSON_AddItemToArray(arr, j);
        cJSON_AddStringToObject(j, "name", t->name);
        if (t->compared_with)
            cJSON_AddStringToObject(j, "compared_with", t->compared_with);
        sh = cJSON_AddArrayToObject(j, "shape");
        for (d = 0; sh && d < t->n_dims; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->dims[d]));
        cJSON_AddStringToObject(j, "encoding", t->encoding);
        cJSON_AddStringToObject(j, "converted_encoding", t->conv_encoding);
        if (t->layer >= 0)
            cJSON_AddNumberToObject(j, "layer", t->layer);
        cJSON_AddStringToObject(j, "status", state_name(t->state));
        if (t->reason[0])
            cJSON_AddStringToObject(j, "reason", t->reason);
        if (t->quant_rule[0])
            cJSON_AddStringToObject(j, "quant_rule", t->quant_rule);
        if (t->at_output)
            cJSON_AddStringToObject(j, "judged_at", "model_output");
        if (!compared(t))
            continue;
        cJSON_AddBoolToObject(j, "exact", t->exact != 0);
        cJSON_AddStringToObject(j, "rule", qbh_vb_kind_name(t->rule));
        cJSON_AddItemToObject(j, "baseline_rel_rmse", num(t->base_rel_rmse));
        cJSON_AddNumberToObject(j, "n_worse_than_baseline", (double)t->n_worse);
        cJSON_AddNumberToObject(j, "n_diff", (double)t->n_diff);
        cJSON_AddItemToObject(j, "max_abs_err", num(t->max_abs));
        cJSON_AddItemToObject(j, "rel_rmse", num(t->rel_rmse));
        cJSON_AddItemToObject(j, "cosine", num(t->cosine));
        cJSON_AddItemToObject(j, "snr_db", num(t->snr_db));
        if (t->has_wx)
            cJSON_AddItemToObject(j, "wx_cosine", num(t->wx_cosine));
    }
    if (qbh_verify_layers(r, &L, &nl))
        goto out;
    arr = cJSON_AddArrayToObject(root, "layers");
    for (i = 0; arr && i < nl; i++) {
        cJSON *j;
        if (!L[i].n)
            continue;
        j = cJSON_CreateObject();
        if (!j)
            goto out;
        cJSON_AddItemToArray(arr, j);
        cJSON_AddNumberToObject(j, "layer", L[i].layer);
        cJSON_AddNumberToObject(j, "n", (double)L[i].n);
        cJSON_AddNumberToObject(j, "n_failed", (double)L[i].n_failed);
        cJSON_AddItemToObject(j, "mean_rel_rmse", num(L[i].mean_rel_rmse));
        cJSON_AddItemToObject(j, "max_rel_rmse", num(L[i].max_rel_rmse));
        cJSON_AddItemToObject(j, "mean_cosine", num(L[i].mean_cosine));
        cJSON_AddItemToObject(j, "snr_db", num(L[i].snr_db));
        cJSON_AddItemToObject(j, "min_wx_cosine", num(L[i].min_wx_cosine));
    }
    nw = qbh_verify_worst(r, worst, WORST_K);
    arr = cJSON_AddArrayToObject(root, "worst");
    for (i = 0; arr && i < nw; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(r->t[worst[i]].name));
    if (r->model_check && qbh_model_check_json(r->model_check, root))
        goto out;
    text = cJSON_Print(root);
out:
    qbh_free(L);
    cJSON_Delete(root);
    return text;
}

/* ---- HTML -------------------------------------------------------------------- */

void qbh_html_esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

#define esc qbh_html_esc

/* Sort key of a number cell: finite as is, +-inf as +-1e308, NaN empty. */
static void sort_key(FILE *f, double v)
{
    if (isnan(v))
        fputs("", f);
    else if (isinf(v))
        fputs(v > 0 ? "1e308" : "-1e308", f);
    else
        fprintf(f, "%.17g", v);
}

#define CW 1080.0 /* chart width */
#define CH 230.0  /* chart height */
#define ML 64.0   /* margins */
#define MR 16.0
#define MT 34.0
#define MB 40.0

/* One per-layer bar chart as inline SVG. bars[i] per layer (NaN: no bar;
 * +inf: a full-height bar marked "exact"), dots[i] optional second series,
 * `limit` a dashed threshold line (NaN: none). */
static void svg_chart(FILE *f, const char *title, const char *bar_label, const char *dot_label,
                      const double *bars, const double *dots, size_t n, double limit)
{
    double top = 0.0, pw = CW - ML - MR, ph = CH - MT - MB, slot, bw;
    size_t i, step;
    int t;

    for (i = 0; i < n; i++) {
        if (isfinite(bars[i]) && bars[i] > top)
            top = bars[i];
        if (dots && isfinite(dots[i]) && dots[i] > top)
            top = dots[i];
    }
    /* The axis follows the data: a threshold far above it would squash
     * every bar into the bottom pixels, so it is drawn only when it falls
     * inside, and named in the corner otherwise. */
    top = top > 0.0 ? top * 1.12 : 1.0;
    slot = pw / (double)(n ? n : 1);
    bw = slot * 0.6 > 48.0 ? 48.0 : slot * 0.6;
    step = n > 32 ? (n + 31) / 32 : 1;
    fprintf(f, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"",
            CW, CH, CW, CH);
    esc(f, title);
    fprintf(f, "\">\n<text x=\"%.0f\" y=\"20\" class=\"ct\">", ML);
    esc(f, title);
    fprintf(f, "</text>\n");
    /* legend */
    fprintf(f, "<rect x=\"%.0f\" y=\"10\" width=\"12\" height=\"12\" class=\"bar\"/>"
               "<text x=\"%.0f\" y=\"21\" class=\"lg\">",
            CW - 470, CW - 454);
    esc(f, bar_label);
    fprintf(f, "</text>\n");
    if (dots) {
        fprintf(f, "<circle cx=\"%.0f\" cy=\"16\" r=\"4\" class=\"dot\"/><text x=\"%.0f\" "
                   "y=\"21\" class=\"lg\">",
                CW - 240, CW - 230);
        esc(f, dot_label);
        fprintf(f, "</text>\n");
    }
    for (t = 0; t <= 4; t++) {
        double v = top * t / 4.0, y = MT + ph - ph * t / 4.0;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.3g</text>\n",
                ML, ML + pw, y, y, ML - 6, y + 4, v);
    }
    for (i = 0; i < n; i++) {
        double x = ML + slot * (double)i + (slot - bw) / 2.0;
        if (isfinite(bars[i]) && bars[i] > 0.0) {
            double h = ph * bars[i] / top;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"bar\">"
                       "<title>layer %zu: %.4g</title></rect>\n",
                    x, MT + ph - h, bw, h, i, bars[i]);
        } else if (isinf(bars[i]) && bars[i] > 0) {
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                       "class=\"bar exact\"><title>layer %zu: exact</title></rect>\n",
                    x, MT, bw, ph, i);
        }
        if (dots && isfinite(dots[i]))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" class=\"dot\"><title>layer %zu: "
                       "%.4g</title></circle>\n",
                    x + bw / 2.0, MT + ph - ph * dots[i] / top, i, dots[i]);
        if (i % step == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">%zu</text>\n",
                    x + bw / 2.0, MT + ph + 16, i);
    }
    if (isfinite(limit) && limit > top)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lim\" text-anchor=\"end\">threshold "
                   "%.3g (above this axis)</text>\n",
                ML + pw, MT - 4, limit);
    else if (isfinite(limit))
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"limit\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"lim\" text-anchor=\"end\">threshold "
                   "%.3g</text>\n",
                ML, ML + pw, MT + ph - ph * limit / top, MT + ph - ph * limit / top,
                ML + pw, MT + ph - ph * limit / top - 4, limit);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">decoder layer"
               "</text>\n</svg>\n",
            ML, ML + pw, MT + ph, MT + ph, ML + pw / 2.0, CH - 6);
}

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;"
    "color:#1d2330;background:#fff}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}"
    ".meta{color:#4a5468}.meta td{padding:1px 12px 1px 0}"
    ".verdict{display:inline-block;padding:3px 12px;border-radius:4px;font-weight:700;"
    "color:#fff;margin:10px 0}.pass{background:#1a7f37}.failv{background:#c62828}"
    ".warnv{background:#b45f06}.nonev{background:#6b7487}"
    "table.data{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums}"
    "table.data th{background:#eef1f6;text-align:left;padding:5px 8px;border-bottom:2px solid #c8cfdb;"
    "cursor:pointer;user-select:none;white-space:nowrap;position:sticky;top:0}"
    "table.data th[data-dir=asc]::after{content:' \\25B2'}"
    "table.data th[data-dir=desc]::after{content:' \\25BC'}"
    "table.data td{padding:3px 8px;border-bottom:1px solid #e4e8ef;white-space:nowrap}"
    "table.data td.n{text-align:right}table.data td.enc{white-space:normal;max-width:170px}table.data tr:hover td{background:#f6f8fb}"
    "tr.bad td{background:#fde8e8}tr.bad td.st{color:#b71c1c;font-weight:700}"
    "tr.ex td.ex{color:#1a7f37;font-weight:600}"
    "svg.chart{display:block;margin:6px 0 14px;max-width:100%;height:auto}"
    ".ct{font-size:14px;font-weight:600;fill:#1d2330}.lg,.ax{font-size:11px;fill:#4a5468}"
    ".bar{fill:#4e79a7}.bar.exact{fill:#9cc3a0}.dot{fill:#f28e2b;stroke:#fff;stroke-width:1}"
    ".grid{stroke:#e4e8ef}.axis{stroke:#8a93a6}.limit{stroke:#c62828;stroke-dasharray:6 4;"
    "stroke-width:1.5}.lim{font-size:11px;fill:#c62828}"
    "ol.worst li{margin:2px 0}code{font-size:12.5px;overflow-wrap:anywhere}"
    ".hint{color:#6b7487;font-size:12px}"
    /* wide tables scroll inside their own box, the page never does */
    ".scroll{max-width:100%;overflow-x:auto;margin:4px 0 12px}"
    "table.meta{table-layout:fixed;width:100%}.meta td:first-child{width:230px;vertical-align:top}"
    ".meta td{overflow-wrap:anywhere}"
    "summary{cursor:pointer;margin:6px 0}.hist{fill:#76b7b2}";

/* Sorts table#tensors by the clicked column: numbers by data-v, text by
 * content; a second click reverses. The page's #sort=N[-] does the same
 * on load. */
static const char JS[] =
    "(function(){var t=document.getElementById('tensors');if(!t)return;"
    "var hs=t.tHead.rows[0].cells;"
    "function key(c,num){if(!num)return c.textContent;var v=parseFloat(c.getAttribute('data-v'));"
    "return isNaN(v)?-Infinity:v;}"
    "function sortBy(i){var h=hs[i],num=h.getAttribute('data-num')==='1',"
    "asc=h.getAttribute('data-dir')!=='asc';"
    "for(var j=0;j<hs.length;j++)hs[j].removeAttribute('data-dir');"
    "h.setAttribute('data-dir',asc?'asc':'desc');"
    "var b=t.tBodies[0],rs=Array.prototype.slice.call(b.rows);"
    "rs.sort(function(x,y){var p=key(x.cells[i],num),q=key(y.cells[i],num);"
    "var c=p<q?-1:(p>q?1:0);return asc?c:-c;});"
    "for(var k=0;k<rs.length;k++)b.appendChild(rs[k]);}"
    "for(var i=0;i<hs.length;i++)hs[i].addEventListener('click',sortBy.bind(null,i));"
    /* #sort=N sorts by column N ascending, #sort=N- descending (links, tests) */
    "var m=/^#sort=(\\d+)(-?)$/.exec(location.hash);"
    "if(m&&hs[+m[1]]){sortBy(+m[1]);if(m[2])sortBy(+m[1]);}})();";

static void td_num(FILE *f, double v, const char *fmt)
{
    char b[48];
    num_text(v, fmt, b, sizeof b);
    fputs("<td class=\"n\" data-v=\"", f);
    sort_key(f, v);
    fprintf(f, "\">%s</td>", b);
}

static void html_body(FILE *f, const qbh_verify_result *r, const qbh_verify_layer *L, size_t nl)
{
    size_t i, worst[WORST_K], nw;
    double *b1 = NULL, *b2 = NULL, *b3 = NULL;

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>quantbridge verify: ", f);
    esc(f, r->converted_path);
    fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n<h1>quantbridge verify</h1>\n", CSS);
    fputs("<table class=\"meta\"><tr><td>source</td><td><code>", f);
    esc(f, r->source_path);
    fputs("</code> (", f);
    esc(f, r->source_format);
    fputs(" via ", f);
    esc(f, r->source_reader);
    fputs(")", f);
    if (r->source_summary[0]) {
        fputs(": ", f);
        esc(f, r->source_summary);
    }
    fputs("</td></tr>\n<tr><td>converted</td><td><code>", f);
    esc(f, r->converted_path);
    fputs("</code> (", f);
    esc(f, r->converted_format);
    fputs(" via ", f);
    esc(f, r->converted_reader);
    {
        char ub[96] = "none";
        if (!isnan(r->opts.max_rel_rmse) || !isnan(r->opts.min_cosine))
            snprintf(ub, sizeof ub, "rel RMSE &le; %g, cosine and W&middot;x cosine &ge; %g",
                     r->opts.max_rel_rmse, r->opts.min_cosine);
        fprintf(f, ")</td></tr>\n<tr><td>rule</td><td>exact where the writer declares it, else "
                   "no worse than absmax/7 int4 per group (+%g%%) or nearest rounding; user "
                   "bounds: %s (%d W&middot;x probe vectors)</td></tr></table>\n",
                100.0 * r->opts.margin, ub, r->opts.n_vectors);
    }
    fprintf(f, "<div class=\"verdict %s\" id=\"verdict\">%s</div>\n", r->pass ? "pass" : "failv",
            r->pass ? "PASS" : "FAIL");
    fprintf(f, "<p>%zu tensors compared, %zu exact (bit-equal float32), %zu failed, "
               "%zu missing, %zu extra, %zu of another shape.</p>\n",
            r->n_compared, r->n_exact, r->n_failed, r->n_missing, r->n_extra, r->n_shape);

    qbh_verify_html_settings(f, r);
    qbh_verify_html_classes(f, r);

    nw = qbh_verify_worst(r, worst, WORST_K);
    if (nw) {
        fputs("<h2>Worst tensors</h2>\n<ol class=\"worst\">\n", f);
        for (i = 0; i < nw; i++) {
            const qbh_verify_tensor *t = &r->t[worst[i]];
            fputs("<li><code>", f);
            esc(f, t->name);
            fprintf(f, "</code> &mdash; rel RMSE %.4g, cosine %.6f</li>\n", t->rel_rmse,
                    t->cosine);
        }
        fputs("</ol>\n", f);
    }

    fputs("<h2>Per layer</h2>\n", f);
    if (nl) {
        b1 = qbh_calloc(nl, sizeof *b1);
        b2 = qbh_calloc(nl, sizeof *b2);
        b3 = qbh_calloc(nl, sizeof *b3);
    }
    if (nl && b1 && b2 && b3) {
        for (i = 0; i < nl; i++) {
            b1[i] = L[i].n ? L[i].mean_rel_rmse : NAN;
            b2[i] = L[i].n ? L[i].max_rel_rmse : NAN;
        }
        svg_chart(f, "Relative RMSE per layer", "mean over tensors", "worst tensor", b1, b2, nl,
                  r->opts.max_rel_rmse);
        for (i = 0; i < nl; i++)
            b1[i] = L[i].n ? L[i].snr_db : NAN;
        svg_chart(f, "SNR per layer (dB, all tensors of the layer together)", "SNR dB", "", b1,
                  NULL, nl, NAN);
        for (i = 0; i < nl; i++) {
            b1[i] = L[i].n ? 1.0 - L[i].mean_cosine : NAN;
            b3[i] = isnan(L[i].min_wx_cosine) ? NAN : 1.0 - L[i].min_wx_cosine;
        }
        svg_chart(f, "1 \xe2\x88\x92 cosine per layer (weights; W\xc2\xb7x with probe vectors)",
                  "1 \xe2\x88\x92 mean weight cosine", "1 \xe2\x88\x92 min W\xc2\xb7x cosine", b1,
                  b3, nl, 1.0 - r->opts.min_cosine);
        fputs("<div class=\"scroll\"><table class=\"data\" id=\"layers\"><thead><tr>"
              "<th>Layer</th><th>Tensors</th>"
              "<th>Failed</th><th>Mean rel RMSE</th><th>Max rel RMSE</th><th>Mean cosine</th>"
              "<th>SNR dB</th><th>Min W&middot;x cosine</th></tr></thead><tbody>\n", f);
        for (i = 0; i < nl; i++) {
            if (!L[i].n)
                continue;
            fprintf(f, "<tr%s><td>%d</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td>",
                    L[i].n_failed ? " class=\"bad\"" : "", L[i].layer, L[i].n, L[i].n_failed);
            td_num(f, L[i].mean_rel_rmse, "%.4g");
            td_num(f, L[i].max_rel_rmse, "%.4g");
            td_num(f, L[i].mean_cosine, "%.6f");
            td_num(f, L[i].snr_db, "%.1f");
            td_num(f, L[i].min_wx_cosine, "%.6f");
            fputs("</tr>\n", f);
        }
        fputs("</tbody></table></div>\n", f);
    } else {
        fputs("<p>No decoder-layer tensors were compared.</p>\n", f);
    }
    if (r->model_check)
        qbh_model_check_html(f, r->model_check);
    qbh_free(b1);
    qbh_free(b2);
    qbh_free(b3);

    fputs("<h2>All tensors</h2>\n<p class=\"hint\">Click a column header to sort.</p>\n"
          "<div class=\"scroll\"><table class=\"data\" id=\"tensors\"><thead><tr>"
          "<th>Tensor</th><th data-num=\"1\">Layer</th><th>Shape</th><th>Source encoding</th>"
          "<th>Converted encoding</th><th>Exact</th><th data-num=\"1\">Max abs err</th>"
          "<th data-num=\"1\">Rel RMSE</th><th data-num=\"1\">Cosine</th>"
          "<th data-num=\"1\">SNR dB</th><th data-num=\"1\">W&middot;x cosine</th>"
          "<th>Status</th></tr></thead>\n<tbody>\n",
          f);
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        char sh[160];
        shape_text(t, sh, sizeof sh);
        fprintf(f, "<tr class=\"t%s%s\" data-name=\"", t->state != QBH_VT_OK ? " bad" : "",
                compared(t) && t->exact ? " ex" : "");
        esc(f, t->name);
        fputs("\"><td>", f);
        esc(f, t->name);
        if (t->compared_with) {
            fputs("<br><span class=\"hint\">vs ", f);
            esc(f, t->compared_with);
            fputs("</span>", f);
        }
        fputs("</td>", f);
        if (t->layer >= 0)
            fprintf(f, "<td class=\"n\" data-v=\"%d\">%d</td>", t->layer, t->layer);
        else
            fputs("<td class=\"n\" data-v=\"\">-</td>", f);
        fprintf(f, "<td>%s</td><td class=\"enc\">", sh);
        esc(f, t->encoding);
        fputs("</td><td class=\"enc\">", f);
        esc(f, t->conv_encoding);
        fputs("</td>", f);
        if (compared(t)) {
            fprintf(f, "<td class=\"ex\">%s</td>", t->exact ? "yes" : "no");
            td_num(f, t->max_abs, "%.3g");
            td_num(f, t->rel_rmse, "%.4g");
            td_num(f, t->cosine, "%.6f");
            td_num(f, t->snr_db, "%.1f");
            td_num(f, t->wx_cosine, "%.6f");
        } else {
            fputs("<td>-</td>", f);
            for (int k = 0; k < 5; k++)
                fputs("<td class=\"n\" data-v=\"\">-</td>", f);
        }
        fprintf(f, "<td class=\"st\">%s", state_name(t->state));
        if (t->reason[0]) {
            fputs(": ", f);
            esc(f, t->reason);
        }
        fputs("</td></tr>\n", f);
    }
    fprintf(f, "</tbody></table></div>\n<p class=\"hint\">Generated by quantbridge %s. Metrics in "
               "double precision over float32 values read through both readers; W&middot;x "
               "uses %d fixed pseudo-random vectors uniform in [-1, 1).</p>\n"
               "<script>%s</script>\n</body></html>\n",
            QBH_VERSION_STRING, r->opts.n_vectors, JS);
}

qb_status qbh_verify_write_html(const qbh_verify_result *r, const char *path)
{
    qbh_verify_layer *L = NULL;
    size_t nl = 0, len = strlen(path);
    char *tmp = NULL;
    FILE *f = NULL;
    int fd = -1, err;
    qb_status rc;

    rc = qbh_verify_layers(r, &L, &nl);
    if (rc)
        return rc;
    tmp = qbh_alloc(len + 16);
    if (!tmp) {
        rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory");
        goto out;
    }
    /* Same directory as the target, so rename() replaces it atomically. */
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = qbh_error_set(QB_E_IO, "--report %s: cannot create a temporary file: %s", path,
                           strerror(errno));
        tmp[0] = '\0';
        goto out;
    }
    (void)fchmod(fd, 0644);
    f = fdopen(fd, "w");
    if (!f) {
        rc = qbh_error_set(QB_E_IO, "--report %s: %s", path, strerror(errno));
        goto out;
    }
    fd = -1;
    html_body(f, r, L, nl);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        err = errno;
        rc = qbh_error_set(err == ENOSPC ? QB_E_NOSPACE : QB_E_IO, "--report %s: write failed: %s",
                           path, strerror(err));
        goto out;
    }
    err = fclose(f);
    f = NULL;
    if (err != 0) {
        rc = qbh_error_set(QB_E_IO, "--report %s: close failed: %s", path, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = qbh_error_set(QB_E_IO, "--report %s: rename failed: %s", path, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
out:
    if (f)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (tmp && tmp[0])
        unlink(tmp);
    qbh_free(tmp);
    qbh_free(L);
    return rc;
}
