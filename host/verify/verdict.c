/*
 * quantbridge verify — the model verdict of verify's model check
 * (docs/verify.md, "Model verdict"): the converted model's KL mean against
 * the source, KL_c, placed against the baseline model's, KL_b (the plain
 * absmax rule applied to the source's values at the converted model's own
 * grids, measured on the same tokens in the same run):
 *   exact codes   every grid tensor declared exact and passing: the codes
 *                 are the source's, the logits differ only by arithmetic
 *   better        KL_c < 0.9 KL_b
 *   as expected   KL_c <= 1.1 KL_b + 1e-3
 *   worse         above that: reported loudly, not failed (a writer's rule
 *                 that loses to absmax on some model is a quality issue)
 *   defect        KL_c > 1.5 KL_b + 0.01, by more than twice the standard
 *                 error of the paired per-position difference KL_c,t -
 *                 1.5 KL_b,t: no choice of rounding rule loses that much to
 *                 the plainest one; a wrong permutation or a broken tensor
 *                 does. Fails the verification. The noise term keeps a few
 *                 positions from deciding: on a sensitive model (a random
 *                 fixture, 32 random ids) the KL of single positions reaches
 *                 10 nats and their mean swings by half; a broken tensor
 *                 moves every position.
 */
#include "verify.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

const char *qbh_mc_verdict_name(qbh_mc_verdict v)
{
    switch (v) {
    case QBH_MCV_EXACT: return "exact_codes";
    case QBH_MCV_BETTER: return "better_than_baseline";
    case QBH_MCV_EXPECTED: return "as_expected";
    case QBH_MCV_WORSE: return "worse_than_baseline";
    case QBH_MCV_DEFECT: return "defect";
    case QBH_MCV_NONE: break;
    }
    return "no_baseline";
}

/* "int4 at group 128", or the parts known. */
static void grid_words(const qbh_model_check *mc, char *out, size_t n)
{
    char b[16] = "int", g[40] = "";
    if (mc->bits > 0)
        snprintf(b, sizeof b, "int%d", mc->bits);
    if (mc->group_size > 0)
        snprintf(g, sizeof g, " at group %lld", (long long)mc->group_size);
    else
        snprintf(g, sizeof g, " at the converted grids");
    snprintf(out, n, "%s%s", b, g);
}

void qbh_mc_verdict_decide(qbh_model_check *mc, int exact_codes)
{
    double kc = mc->kl_mean, kb = mc->base.kl_mean;
    char grid[64], ppl[160] = "";
    grid_words(mc, grid, sizeof grid);
    if (exact_codes) {
        mc->verdict = QBH_MCV_EXACT;
        snprintf(mc->words, sizeof mc->words, "exact codes: every tensor on a grid (%zu) is "
                 "declared exact and passed; the logits differ only by the runtime's arithmetic "
                 "(KL mean %.4g)", mc->n_grid, kc);
        return;
    }
    /* No band compares with NaN: a converted model whose logits (or the
     * perplexity over them) are not finite where the source's are is broken
     * whatever the baseline says (e.g. fp16 activations overflowing). */
    if (!isfinite(kc) || (mc->from_text && isfinite(mc->ppl_src) && !isfinite(mc->ppl_conv))) {
        mc->verdict = QBH_MCV_DEFECT;
        snprintf(mc->words, sizeof mc->words, "DEFECT: the converted model's logits are not "
                 "finite (KL mean %.4g, perplexity %.4g against the source's %.4g)", kc,
                 mc->ppl_conv, mc->ppl_src);
        if (mc->pass) {
            mc->pass = 0;
            snprintf(mc->reason, sizeof mc->reason, "model verdict: the converted model's logits "
                     "are not finite (KL mean %.4g): a defect in the conversion", kc);
        }
        return;
    }
    if (!mc->base_ran) {
        mc->verdict = QBH_MCV_NONE;
        snprintf(mc->words, sizeof mc->words, "%s", mc->base_note);
        return;
    }
    if (mc->from_text)
        snprintf(ppl, sizeof ppl, "; perplexity ratio %.4f (baseline %.4f)", mc->ppl_ratio,
                 mc->base.ppl_ratio);
    if (kc > QBH_MCV_DEFECT_FACTOR * kb + QBH_MCV_DEFECT_SLACK +
                 QBH_MCV_DEFECT_SIGMAS * mc->defect_se) {
        mc->verdict = QBH_MCV_DEFECT;
        snprintf(mc->words, sizeof mc->words, "DEFECT: KL mean %.4g is beyond %g x the absmax "
                 "baseline's %.4g + %g (%s) by more than %g standard errors (%.3g): no "
                 "rounding rule loses that much to the plainest one; a wrong permutation or a "
                 "broken tensor does%s", kc, QBH_MCV_DEFECT_FACTOR, kb, QBH_MCV_DEFECT_SLACK,
                 grid, QBH_MCV_DEFECT_SIGMAS, mc->defect_se, ppl);
        if (mc->pass) {
            mc->pass = 0;
            snprintf(mc->reason, sizeof mc->reason, "model verdict: KL mean %.4g > %g x the "
                     "absmax baseline's %.4g + %g (%s, %g standard errors beyond): a defect "
                     "in the conversion, not a rule choice", kc, QBH_MCV_DEFECT_FACTOR, kb,
                     QBH_MCV_DEFECT_SLACK, grid, QBH_MCV_DEFECT_SIGMAS);
        }
    } else if (kc < QBH_MCV_BETTER_FACTOR * kb) {
        mc->verdict = QBH_MCV_BETTER;
        snprintf(mc->words, sizeof mc->words, "better than the absmax baseline (%s): KL mean "
                 "%.4g vs %.4g (x%.3f)%s", grid, kc, kb, kc / kb, ppl);
    } else if (kc <= QBH_MCV_EXPECTED_FACTOR * kb + QBH_MCV_EXPECTED_SLACK) {
        mc->verdict = QBH_MCV_EXPECTED;
        snprintf(mc->words, sizeof mc->words, "as expected for %s: KL mean %.4g vs the absmax "
                 "baseline's %.4g%s", grid, kc, kb, ppl);
    } else {
        char noise[200] = "";
        if (kc > QBH_MCV_DEFECT_FACTOR * kb + QBH_MCV_DEFECT_SLACK)
            snprintf(noise, sizeof noise, " (beyond the defect band %.4g, but within %g standard "
                     "errors (%.3g) of the per-position differences over %zu positions: not "
                     "failed)", QBH_MCV_DEFECT_FACTOR * kb + QBH_MCV_DEFECT_SLACK,
                     QBH_MCV_DEFECT_SIGMAS, mc->defect_se, mc->n_tokens);
        mc->verdict = QBH_MCV_WORSE;
        snprintf(mc->words, sizeof mc->words, "WORSE than the baseline rule (%s): KL mean %.4g "
                 "vs the absmax baseline's %.4g (x%.3f)%s; the conversion's rounding loses to "
                 "plain absmax/%d here%s", grid, kc, kb, kb > 0 ? kc / kb : INFINITY, noise,
                 mc->bits > 0 ? (1 << (mc->bits - 1)) - 1 : 7, ppl);
    }
}

void qbh_mc_verdict_print(FILE *f, const qbh_model_check *mc)
{
    fprintf(f, "model verdict: %s\n", mc->words);
    if (mc->base_ran)
        fprintf(f, "model verdict: absmax baseline KL mean %.3g, p99 %.3g, max %.3g nats; top-1 "
                   "agreement %.1f%%%s\n",
                mc->base.kl_mean, mc->base.kl_p99, mc->base.kl_max,
                100.0 * mc->base.top1_agreement, mc->from_text ? "" : " (no text: no perplexity)");
}

void qbh_mc_verdict_warn(const qbh_model_check *mc)
{
    if (mc->ran && mc->verdict == QBH_MCV_WORSE)
        qbh_log(QB_LOG_WARN, "verify", "model verdict: %s", mc->words);
}

static cJSON *stats_json(const qbh_mc_stats *s, int from_text)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddNumberToObject(o, "kl_mean", s->kl_mean) ||
        !cJSON_AddNumberToObject(o, "kl_p99", s->kl_p99) ||
        !cJSON_AddNumberToObject(o, "kl_max", s->kl_max) ||
        !cJSON_AddNumberToObject(o, "top1", s->top1_agreement) ||
        !cJSON_AddNumberToObject(o, "logits_cosine_min", s->logits_cosine_min) ||
        !(from_text ? cJSON_AddNumberToObject(o, "perplexity", s->ppl)
                    : cJSON_AddNullToObject(o, "perplexity")) ||
        !(from_text ? cJSON_AddNumberToObject(o, "perplexity_ratio", s->ppl_ratio)
                    : cJSON_AddNullToObject(o, "perplexity_ratio"))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int add_num_or_null(cJSON *o, const char *k, int have, double v)
{
    return have && isfinite(v) ? cJSON_AddNumberToObject(o, k, v) != NULL
                               : cJSON_AddNullToObject(o, k) != NULL;
}

int qbh_mc_verdict_json(const qbh_model_check *mc, void *root_)
{
    cJSON *root = root_, *o = cJSON_CreateObject(), *c, *b, *lim;
    qbh_mc_stats conv;
    double kb = mc->base.kl_mean;
    if (!o || !cJSON_AddItemToObject(root, "model_verdict", o)) {
        cJSON_Delete(o);
        return -1;
    }
    conv.kl_mean = mc->kl_mean;
    conv.kl_p99 = mc->kl_p99;
    conv.kl_max = mc->kl_max;
    conv.top1_agreement = mc->top1_agreement;
    conv.logits_cosine_min = mc->logits_cosine_min;
    conv.ppl = mc->ppl_conv;
    conv.ppl_ratio = mc->ppl_ratio;
    if (!cJSON_AddStringToObject(o, "verdict", qbh_mc_verdict_name(mc->verdict)) ||
        !cJSON_AddStringToObject(o, "words", mc->words) ||
        !cJSON_AddBoolToObject(o, "fails", mc->verdict == QBH_MCV_DEFECT) ||
        !add_num_or_null(o, "bits", mc->bits > 0, mc->bits) ||
        !add_num_or_null(o, "group_size", mc->group_size > 0, (double)mc->group_size) ||
        !cJSON_AddNumberToObject(o, "grid_tensors", (double)mc->n_grid))
        return -1;
    c = stats_json(&conv, mc->from_text);
    if (!c || !cJSON_AddItemToObject(o, "converted", c)) {
        cJSON_Delete(c);
        return -1;
    }
    if (mc->base_ran) {
        b = stats_json(&mc->base, mc->from_text);
        if (!b || !cJSON_AddItemToObject(o, "baseline", b)) {
            cJSON_Delete(b);
            return -1;
        }
        lim = cJSON_AddObjectToObject(o, "limits");
        if (!lim || !add_num_or_null(o, "kl_ratio", kb > 0, mc->kl_mean / kb) ||
            !cJSON_AddNumberToObject(lim, "better_below",
                                     QBH_MCV_BETTER_FACTOR * kb) ||
            !cJSON_AddNumberToObject(lim, "expected_up_to",
                                     QBH_MCV_EXPECTED_FACTOR * kb + QBH_MCV_EXPECTED_SLACK) ||
            !cJSON_AddNumberToObject(lim, "defect_above",
                                     QBH_MCV_DEFECT_FACTOR * kb + QBH_MCV_DEFECT_SLACK) ||
            !add_num_or_null(lim, "defect_standard_error", 1, mc->defect_se))
            return -1;
    } else if (!cJSON_AddNullToObject(o, "baseline") ||
               (mc->base_note[0] && !cJSON_AddStringToObject(o, "baseline_note", mc->base_note))) {
        return -1;
    }
    return 0;
}

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

void qbh_mc_verdict_html(FILE *f, const qbh_model_check *mc)
{
    const char *cls = mc->verdict == QBH_MCV_DEFECT  ? "failv"
                      : mc->verdict == QBH_MCV_WORSE ? "warnv"
                      : mc->verdict == QBH_MCV_NONE  ? "nonev"
                                                     : "pass";
    fprintf(f, "<div class=\"verdict %s\" id=\"model-verdict\">model verdict: %s</div>\n<p>",
            cls, qbh_mc_verdict_name(mc->verdict));
    esc(f, mc->words);
    fputs("</p>\n", f);
    if (!mc->base_ran)
        return;
    fputs("<table class=\"data\"><tr><th></th><th>converted</th><th>absmax baseline</th></tr>\n",
          f);
    fprintf(f, "<tr><td>KL mean (nats)</td><td class=\"n\">%.4g</td><td class=\"n\">%.4g</td>"
               "</tr>\n<tr><td>KL p99</td><td class=\"n\">%.4g</td><td class=\"n\">%.4g</td>"
               "</tr>\n<tr><td>top-1 agreement</td><td class=\"n\">%.1f%%</td><td class=\"n\">"
               "%.1f%%</td></tr>\n",
            mc->kl_mean, mc->base.kl_mean, mc->kl_p99, mc->base.kl_p99,
            100.0 * mc->top1_agreement, 100.0 * mc->base.top1_agreement);
    if (mc->from_text)
        fprintf(f, "<tr><td>perplexity (ratio to the source)</td><td class=\"n\">%.5g (%.4f)"
                   "</td><td class=\"n\">%.5g (%.4f)</td></tr>\n",
                mc->ppl_conv, mc->ppl_ratio, mc->base.ppl, mc->base.ppl_ratio);
    fputs("</table>\n<p class=\"hint\">Bands on the KL mean, KL_c of the conversion against "
          "KL_b of the plain absmax rule at the same grids: better below 0.9 KL_b, as expected "
          "up to 1.1 KL_b + 0.001, a defect (failing) above 1.5 KL_b + 0.01 by more than "
          "two standard errors of the per-position difference (docs/verify.md, "
          "&ldquo;Model verdict&rdquo;).</p>\n", f);
}

int qbh_mc_judges(const qbh_model_check *mc, const char *off_option, char *why, size_t n)
{
    if (!mc)
        snprintf(why, n, "but the model check is off (drop %s)", off_option);
    else if (!mc->ran)
        snprintf(why, n, "but the model check was skipped: %s", mc->skipped);
    else if (mc->verdict == QBH_MCV_NONE)
        snprintf(why, n, "but the model check has no baseline to place it against: %s",
                 mc->base_note);
    else
        return 1;
    return 0;
}
