/*
 * quantbridge verify — sections of the verify HTML report that explain the
 * conversion: its settings and versions, which tensors stayed exact and
 * which were requantized (and by what rule they were judged), a summary
 * per projection type and a histogram of per-tensor error. Inline HTML
 * and SVG only; nothing is fetched.
 */
#include "verify.h"

#include <assert.h>
#include <math.h>
#include <string.h>
#include <time.h>

#define esc qbh_html_esc

static int compared(const qbh_verify_tensor *t)
{
    return t->state == QBH_VT_OK || t->state == QBH_VT_FAIL;
}

/* Exact side: its writer declares it exact (docs/plugin-design.md,
 * "Declarations for verify"), or the values came through bit-equal anyway
 * (a lossless dtype change). */
static int is_exact(const qbh_verify_tensor *t)
{
    return t->rule == QBH_VB_EXACT || t->exact;
}

static const char *GROUPS[] = {"q", "k", "v", "o", "gate", "up", "down", "experts", "other"};
#define N_GROUPS (sizeof GROUPS / sizeof GROUPS[0])

const char *qbh_verify_proj_group(const char *name)
{
    static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                       "gate_proj", "up_proj", "down_proj"};
    size_t i;
    assert(name);
    if (strstr(name, ".experts."))
        return "experts";
    for (i = 0; i < sizeof proj / sizeof proj[0]; i++) {
        const char *p = strstr(name, proj[i]);
        /* a whole path component: ".q_proj." / ".q_proj" at the end */
        if (p && p > name && p[-1] == '.' &&
            (p[strlen(proj[i])] == '.' || p[strlen(proj[i])] == '\0'))
            return GROUPS[i];
    }
    return "other";
}

static size_t group_index(const char *name)
{
    const char *g = qbh_verify_proj_group(name);
    size_t i;
    for (i = 0; i < N_GROUPS; i++)
        if (strcmp(GROUPS[i], g) == 0)
            return i;
    return N_GROUPS - 1;
}

/* ---- settings and versions ------------------------------------------------- */

static void json_scalar(FILE *f, const qb_json_api *J, const qb_json *v)
{
    char b[64];
    double d;
    int32_t bv;
    size_t i;
    switch (J->type(v)) {
    case QB_JSON_STRING: esc(f, J->get_string(v)); break;
    case QB_JSON_BOOL:
        J->get_bool(v, &bv);
        fputs(bv ? "true" : "false", f);
        break;
    case QB_JSON_NUMBER:
        J->get_number(v, &d);
        snprintf(b, sizeof b, "%.17g", d);
        fputs(b, f);
        break;
    case QB_JSON_ARRAY:
        fputs("[", f);
        for (i = 0; i < J->count(v); i++) {
            const qb_json *e = J->at(v, i, NULL);
            fputs(i ? ", " : "", f);
            if (J->type(e) == QB_JSON_OBJECT || J->type(e) == QB_JSON_ARRAY)
                fputs("&hellip;", f);
            else
                json_scalar(f, J, e);
        }
        fputs("]", f);
        break;
    default: fputs("null", f); break;
    }
}

/* One row per manifest setting: top-level scalars and arrays as they are,
 * one level of objects as key.sub; the per-file and per-tensor lists are
 * summarised elsewhere. */
static void manifest_rows(FILE *f, const qb_json_api *J, const qb_json *m)
{
    size_t i, k, n = J->count(m);
    for (i = 0; i < n; i++) {
        const char *key = NULL, *sub = NULL;
        const qb_json *it = J->at(m, i, &key);
        if (!key || strcmp(key, "tensors") == 0 || strcmp(key, "files") == 0)
            continue;
        if (J->type(it) == QB_JSON_OBJECT) {
            for (k = 0; k < J->count(it); k++) {
                const qb_json *v = J->at(it, k, &sub);
                fputs("<tr><td>", f);
                esc(f, key);
                fputs(".", f);
                esc(f, sub ? sub : "?");
                fputs("</td><td>", f);
                json_scalar(f, J, v);
                fputs("</td></tr>\n", f);
            }
            continue;
        }
        fputs("<tr><td>", f);
        esc(f, key);
        fputs("</td><td>", f);
        json_scalar(f, J, it);
        fputs("</td></tr>\n", f);
    }
}

void qbh_verify_html_settings(FILE *f, const qbh_verify_result *r)
{
    const qb_json_api *J = qbh_json_api();
    char path[4200], date[64] = "unknown";
    void *text = NULL;
    size_t len = 0, n_x = 0, i;
    qb_json *m = NULL;
    time_t now = time(NULL);
    struct tm tm;

    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fputs("<h2>Versions and date</h2>\n<table class=\"meta\" id=\"versions\">", f);
    fprintf(f, "<tr><td>report made</td><td id=\"generated\">%s</td></tr>\n", date);
    fprintf(f, "<tr><td>quantbridge</td><td>%s (commit <code>", QBH_VERSION_STRING);
    esc(f, qbh_build_commit());
    fputs("</code>", f);
    if (qbh_build_type()[0]) {
        fputs(", ", f);
        esc(f, qbh_build_type());
    }
    fputs(")</td></tr>\n<tr><td>source reader</td><td>", f);
    esc(f, r->source_reader);
    fputs(" ", f);
    esc(f, r->source_reader_version ? r->source_reader_version : "");
    fputs("</td></tr>\n<tr><td>converted reader</td><td>", f);
    esc(f, r->converted_reader);
    fputs(" ", f);
    esc(f, r->converted_reader_version ? r->converted_reader_version : "");
    fputs("</td></tr></table>\n", f);

    /* A writer's manifest.json beside the weights, shown as it is (read
     * with the strict parser like every input file); what was declared
     * exact comes from the plugins (declared.c), not from it. */
    fputs("<h2>Conversion settings</h2>\n", f);
    if ((size_t)snprintf(path, sizeof path, "%s/manifest.json", r->converted_path) >= sizeof path ||
        qbh_read_small_file(path, 64u << 20, &text, &len) != QB_OK ||
        qbh_json_parse(path, text, len, &m) != QB_OK || J->type(m) != QB_JSON_OBJECT) {
        qbh_error_clear();
        fputs("<p id=\"settings-none\">The converted model has no readable "
              "<code>manifest.json</code>, so its settings are not known here.</p>\n",
              f);
        goto out;
    }
    for (i = 0; i < r->n; i++)
        n_x += r->t[i].rule == QBH_VB_EXACT;
    fputs("<div class=\"scroll\"><table class=\"meta\" id=\"settings\">\n", f);
    manifest_rows(f, J, m);
    fprintf(f,
            "<tr><td>tensors</td><td>%zu declared exact by the writer</td></tr>\n"
            "</table></div>\n",
            n_x);
out:
    J->free(m);
    qbh_free(text);
}

/* ---- exact / requantized, groups, histogram ------------------------------------ */

static const char *rule_text(const qbh_verify_tensor *t)
{
    switch (t->rule) {
    case QBH_VB_GRID:
        return "requantized to the int4 grid; judged against absmax/7 per group";
    case QBH_VB_ROUND:
        return "rounded to a float dtype; judged against nearest-even rounding";
    case QBH_VB_EXACT:
        return "declared exact by the writer; any difference fails";
    case QBH_VB_NONE:
        break;
    }
    return "no plain rule for this encoding; judged as exact unless bounds are given";
}

static void num_cell(FILE *f, double v, const char *fmt)
{
    char b[48];
    if (isnan(v))
        snprintf(b, sizeof b, "-");
    else if (isinf(v))
        snprintf(b, sizeof b, v > 0 ? "inf" : "-inf");
    else
        snprintf(b, sizeof b, fmt, v);
    fprintf(f, "<td class=\"n\">%s</td>", b);
}

static void name_cells(FILE *f, const qbh_verify_tensor *t)
{
    fputs("<td>", f);
    esc(f, t->name);
    fprintf(f, "</td><td>%s</td><td class=\"enc\">", qbh_verify_proj_group(t->name));
    esc(f, t->encoding);
    fputs("</td><td class=\"enc\">", f);
    esc(f, t->conv_encoding);
    fputs("</td>", f);
}

static void split_tables(FILE *f, const qbh_verify_result *r, size_t n_x, size_t n_q)
{
    size_t i;
    fprintf(f, "<h2>Exact and requantized tensors</h2>\n<p>%zu exact, %zu requantized or "
               "rounded (of %zu compared).</p>\n",
            n_x, n_q, r->n_compared);
    fprintf(f, "<details id=\"exact\"><summary>%zu exact tensors</summary>\n<div class=\"scroll\">"
               "<table class=\"data\" id=\"exact-tensors\"><thead><tr><th>Tensor</th><th>Group"
               "</th><th>Source encoding</th><th>Converted encoding</th><th>Why exact</th>"
               "<th>Status</th></tr></thead><tbody>\n",
            n_x);
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        if (!compared(t) || !is_exact(t))
            continue;
        fprintf(f, "<tr class=\"x%s\">", t->state == QBH_VT_FAIL ? " bad" : "");
        name_cells(f, t);
        fprintf(f, "<td>%s</td><td class=\"st\">%s</td></tr>\n",
                t->rule == QBH_VB_EXACT ? "its writer declares it exact"
                                        : "bit-equal (lossless change of encoding)",
                t->state == QBH_VT_FAIL ? "FAIL" : "ok");
    }
    fputs("</tbody></table></div></details>\n", f);
    fprintf(f, "<details id=\"requant\"><summary>%zu requantized or rounded tensors"
               "</summary>\n<div class=\"scroll\"><table class=\"data\" id=\"requant-tensors\">"
               "<thead><tr><th>Tensor</th><th>Group</th><th>Source encoding</th>"
               "<th>Converted encoding</th><th>Rule</th><th>Baseline rel RMSE</th>"
               "<th>Rel RMSE</th><th>Worse than baseline</th><th>Status</th></tr></thead>"
               "<tbody>\n",
            n_q);
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        if (!compared(t) || is_exact(t))
            continue;
        fprintf(f, "<tr class=\"q%s\">", t->state == QBH_VT_FAIL ? " bad" : "");
        name_cells(f, t);
        fprintf(f, "<td class=\"enc\">%s</td>", rule_text(t));
        num_cell(f, t->base_rel_rmse, "%.4g");
        num_cell(f, t->rel_rmse, "%.4g");
        fprintf(f, "<td class=\"n\">%llu of %llu</td><td class=\"st\">%s</td></tr>\n",
                (unsigned long long)t->n_worse, (unsigned long long)t->n_units,
                t->state == QBH_VT_FAIL ? "FAIL" : "ok");
    }
    fputs("</tbody></table></div></details>\n", f);
}

typedef struct group_sum {
    size_t n, n_exact, n_failed;
    double sum_rel, max_rel, min_cos, min_wx;
} group_sum;

static void group_table(FILE *f, const qbh_verify_result *r)
{
    group_sum g[N_GROUPS];
    size_t i;
    for (i = 0; i < N_GROUPS; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].min_cos = NAN;
        g[i].min_wx = NAN;
    }
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        group_sum *s;
        if (!compared(t))
            continue;
        s = &g[group_index(t->name)];
        s->n++;
        s->n_exact += (size_t)is_exact(t);
        s->n_failed += t->state == QBH_VT_FAIL;
        s->sum_rel += t->rel_rmse;
        if (!(t->rel_rmse <= s->max_rel))
            s->max_rel = t->rel_rmse; /* NaN sorts as the worst */
        if (isnan(s->min_cos) || t->cosine < s->min_cos)
            s->min_cos = t->cosine;
        if (t->has_wx && (isnan(s->min_wx) || t->wx_cosine < s->min_wx))
            s->min_wx = t->wx_cosine;
    }
    fputs("<h2>By projection type</h2>\n<div class=\"scroll\"><table class=\"data\" "
          "id=\"groups\"><thead><tr><th>Group</th><th>Tensors</th><th>Exact</th>"
          "<th>Requantized</th><th>Failed</th><th>Mean rel RMSE</th><th>Max rel RMSE</th>"
          "<th>Min cosine</th><th>Min W&middot;x cosine</th></tr></thead><tbody>\n",
          f);
    for (i = 0; i < N_GROUPS; i++) {
        if (!g[i].n)
            continue;
        fprintf(f, "<tr class=\"g%s\" data-group=\"%s\" data-n=\"%zu\" data-exact=\"%zu\">"
                   "<td>%s</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td>"
                   "<td class=\"n\">%zu</td><td class=\"n\">%zu</td>",
                g[i].n_failed ? " bad" : "", GROUPS[i], g[i].n, g[i].n_exact, GROUPS[i], g[i].n,
                g[i].n_exact, g[i].n - g[i].n_exact, g[i].n_failed);
        num_cell(f, g[i].sum_rel / (double)g[i].n, "%.4g");
        num_cell(f, g[i].max_rel, "%.4g");
        num_cell(f, g[i].min_cos, "%.6f");
        num_cell(f, g[i].min_wx, "%.6f");
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
}

#define HW 1080.0
#define HH 240.0
#define HL 56.0
#define HR 16.0
#define HT 34.0
#define HB 44.0
#define HBINS_PER_DECADE 4.0
#define HMAX_BINS 48

/* Per-tensor rel RMSE on a log axis: the tensors span decades (an exact
 * lm_head beside a 4-bit down_proj), so bins are quarter decades between
 * the smallest and largest nonzero error, and the count axis runs to the
 * fullest bin. Exact (zero-error) tensors cannot sit on a log axis and are
 * counted in the caption. */
static void histogram(FILE *f, const qbh_verify_result *r)
{
    double lo = INFINITY, hi = -INFINITY, pw = HW - HL - HR, ph = HH - HT - HB, bw;
    size_t counts[HMAX_BINS], i, nb, n_zero = 0, n_inf = 0, n_pos = 0, top = 0, step;
    double limit = r->opts.max_rel_rmse;

    memset(counts, 0, sizeof counts);
    for (i = 0; i < r->n; i++) {
        double v = r->t[i].rel_rmse;
        if (!compared(&r->t[i]))
            continue;
        if (v == 0.0) {
            n_zero++;
        } else if (!isfinite(v) || v < 0.0) {
            n_inf++;
        } else {
            n_pos++;
            if (log10(v) < lo)
                lo = log10(v);
            if (log10(v) > hi)
                hi = log10(v);
        }
    }
    fputs("<h2>Distribution of per-tensor error</h2>\n", f);
    if (!n_pos) {
        fprintf(f, "<p id=\"histogram-none\">Every compared tensor is bit-exact (%zu) or has no "
                   "finite error (%zu): nothing to plot.</p>\n",
                n_zero, n_inf);
        return;
    }
    lo = floor(lo * HBINS_PER_DECADE) / HBINS_PER_DECADE;
    hi = ceil(hi * HBINS_PER_DECADE) / HBINS_PER_DECADE;
    if (hi <= lo)
        hi = lo + 1.0 / HBINS_PER_DECADE;
    nb = (size_t)lround((hi - lo) * HBINS_PER_DECADE);
    if (nb > HMAX_BINS) {
        nb = HMAX_BINS;
    }
    for (i = 0; i < r->n; i++) {
        double v = r->t[i].rel_rmse;
        size_t b;
        if (!compared(&r->t[i]) || !(v > 0.0) || !isfinite(v))
            continue;
        b = (size_t)((log10(v) - lo) / (hi - lo) * (double)nb);
        counts[b < nb ? b : nb - 1]++;
    }
    for (i = 0; i < nb; i++)
        if (counts[i] > top)
            top = counts[i];
    bw = pw / (double)nb;
    fprintf(f, "<svg class=\"chart\" id=\"histogram\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
               "aria-label=\"histogram of per-tensor relative RMSE\">\n"
               "<text x=\"%.0f\" y=\"20\" class=\"ct\">Tensors per relative RMSE bin (log scale, "
               "%zu tensors; %zu bit-exact and %zu non-finite not shown)</text>\n",
            HW, HH, HW, HH, HL, n_pos, n_zero, n_inf);
    step = top > 8 ? (top + 7) / 8 : 1;
    for (i = 0; i <= top; i += step) {
        double y = HT + ph - ph * (double)i / (double)top;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%zu</text>\n",
                HL, HL + pw, y, y, HL - 6, y + 4, i);
    }
    for (i = 0; i < nb; i++) {
        double x = HL + bw * (double)i, h = ph * (double)counts[i] / (double)top;
        double e0 = pow(10.0, lo + (hi - lo) * (double)i / (double)nb);
        double e1 = pow(10.0, lo + (hi - lo) * (double)(i + 1) / (double)nb);
        if (counts[i])
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                       "class=\"hist\" data-count=\"%zu\"><title>%zu tensors with rel RMSE in "
                       "[%.3g, %.3g)</title></rect>\n",
                    x + 1.0, HT + ph - h, bw - 2.0, h, counts[i], counts[i], e0, e1);
    }
    /* x ticks at every bin edge that is a whole or half decade */
    for (i = 0; i <= nb; i++) {
        double e = lo + (hi - lo) * (double)i / (double)nb;
        if (nb > 8 && fabs(e * 2.0 - round(e * 2.0)) > 1e-9)
            continue;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">%.3g</text>\n",
                HL + bw * (double)i, HT + ph + 16, pow(10.0, e));
    }
    if (isfinite(limit) && limit > 0.0) {
        double e = log10(limit);
        if (e >= lo && e <= hi) {
            double x = HL + pw * (e - lo) / (hi - lo);
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"limit\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\" class=\"lim\">threshold %.3g</text>\n",
                    x, x, HT, HT + ph, x + 4, HT + 12, limit);
        } else {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lim\" text-anchor=\"end\">threshold "
                       "%.3g (outside this axis)</text>\n",
                    HL + pw, HT - 4, limit);
        }
    }
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">relative RMSE "
               "of the tensor</text>\n</svg>\n",
            HL, HL + pw, HT + ph, HT + ph, HL + pw / 2.0, HH - 6);
}

void qbh_verify_html_classes(FILE *f, const qbh_verify_result *r)
{
    size_t i, n_x = 0, n_q = 0;
    for (i = 0; i < r->n; i++) {
        if (!compared(&r->t[i]))
            continue;
        if (is_exact(&r->t[i]))
            n_x++;
        else
            n_q++;
    }
    group_table(f, r);
    histogram(f, r);
    split_tables(f, r, n_x, n_q);
}
