/*
 * quantbridge verify — the model check: the forward pass of the source
 * and of the converted model over one token sequence, compared position
 * by position (docs/forward.md, "Model check"):
 *   KL(P_src || P_conv) of the softmax distributions, in nats (double);
 *   top-1 agreement: the share of positions whose argmax agrees;
 *   logits cosine per position.
 * When the tokens come from text, also the perplexity of each model on
 * it and their ratio (docs/verify.md, "Model check").
 * Then the verdict (docs/verify.md, "Model verdict"): a third pass over
 * the source through the baseline model's filter (verify_baseline_model.c)
 * measures what the plain absmax rule at the converted model's own grids
 * gives, and forward_verdict.c places the conversion against it.
 * The check fails on limits the user gives (--max-kl, --min-top1) and on
 * a conversion far worse than the baseline (a defect, not a rule choice).
 */
#include "model.h"
#include "tokenizer.h"
#include "verify.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

void qbh_mc_default_tokens(int64_t vocab, int64_t bos, int64_t *ids, size_t n)
{
    uint64_t z = UINT64_C(0x70c0ffee5eed1234);
    size_t i = 0;
    assert(vocab > 0);
    if (n && bos >= 0 && bos < vocab)
        ids[i++] = bos;
    for (; i < n; i++) {
        /* splitmix64: ids that depend on nothing but the vocabulary size. */
        uint64_t x = (z += UINT64_C(0x9e3779b97f4a7c15));
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        x ^= x >> 31;
        ids[i] = (int64_t)(x % (uint64_t)vocab);
    }
}

/* KL(p || q) of softmax(a), softmax(b) over n logits, in double. */
static double kl_div(const float *a, const float *b, int64_t n)
{
    double ma = -INFINITY, mb = -INFINITY, sa = 0, sb = 0, kl = 0;
    int64_t i;
    for (i = 0; i < n; i++) {
        if (a[i] > ma)
            ma = a[i];
        if (b[i] > mb)
            mb = b[i];
    }
    for (i = 0; i < n; i++) {
        sa += exp((double)a[i] - ma);
        sb += exp((double)b[i] - mb);
    }
    /* log p_i = a_i - ma - log sa; sum p_i (log p_i - log q_i). */
    for (i = 0; i < n; i++) {
        double lp = (double)a[i] - ma - log(sa), lq = (double)b[i] - mb - log(sb);
        kl += exp(lp) * (lp - lq);
    }
    return kl > 0 ? kl : 0; /* rounding can leave -1e-17 for equal inputs */
}

static int64_t argmax(const float *a, int64_t n)
{
    int64_t i, best = 0;
    for (i = 1; i < n; i++)
        if (a[i] > a[best])
            best = i;
    return best;
}

static double cosine(const float *a, const float *b, int64_t n)
{
    double d = 0, sa = 0, sb = 0;
    int64_t i;
    for (i = 0; i < n; i++) {
        d += (double)a[i] * b[i];
        sa += (double)a[i] * a[i];
        sb += (double)b[i] * b[i];
    }
    if (sa == 0 && sb == 0)
        return 1.0;
    if (sa == 0 || sb == 0)
        return 0.0;
    return d / sqrt(sa * sb);
}

/* exp of the mean next-token NLL over positions 0..n-2 of logits
 * [n][v] (natural log, sums in double). */
static double perplexity(const float *logits, int64_t v, const int64_t *tokens, size_t n)
{
    double nll = 0;
    size_t t;
    for (t = 0; t + 1 < n; t++) {
        const float *a = logits + t * (size_t)v;
        double m = -INFINITY, s = 0;
        int64_t i;
        for (i = 0; i < v; i++)
            if (a[i] > m)
                m = a[i];
        for (i = 0; i < v; i++)
            s += exp((double)a[i] - m);
        nll += -((double)a[tokens[t + 1]] - m - log(s));
    }
    return exp(nll / (double)(n - 1));
}

/* The model check's ids from text: the user's (an error when it cannot be
 * encoded) or the sample (NULL: fixed ids instead, mc->tokens_note says
 * why, unless the user named the tokenizer). QB_OK with *ids NULL means
 * "use the fixed ids". */
static qb_status text_tokens(qbh_source *src, qbh_source *conv, const qbh_mc_opts *o,
                             qbh_model_check *mc, int64_t **ids, size_t *n)
{
    /* a tokenizer directory may hold other files only (tokenizer_config.json
     * with a chat template): take the first that has tokenizer.json */
    const char *dir = o->tokenizer ? o->tokenizer
                      : qbh_source_tokenizer_json_dir(src) ? qbh_source_tokenizer_json_dir(src)
                                                           : qbh_source_tokenizer_json_dir(conv);
    const char *text = o->text, *what = o->text_what ? o->text_what : "--text";
    qb_status rc;
    *ids = NULL;
    *n = 0;
    if (!dir) {
        if (text)
            return qbh_error_set(QB_E_NOT_FOUND, "%s: neither %s nor %s has tokenizer files "
                                 "(tokenizer.json); give --tokenizer DIR or the ids with "
                                 "--tokens", what, src->path, conv->path);
        /* a tokenizer the source's reader skipped or refused says why */
        snprintf(mc->tokens_note, sizeof mc->tokens_note, "no tokenizer.json%s%s%s%s",
                 src->info.tokenizer_note ? "; the source's tokenizer was " : "",
                 src->info.tokenizer_note ? qbh_source_tokenizer_state(src) : "",
                 src->info.tokenizer_note ? ": " : "",
                 src->info.tokenizer_note ? src->info.tokenizer_note : "");
        return QB_OK;
    }
    rc = qbh_tok_encode_text(qbh_services_named("forward"), dir,
                             text ? text : qbh_tok_sample_text(), ids, n);
    if (!rc && *n < 2) {
        /* a perplexity needs a next token to predict */
        qbh_free(*ids);
        *ids = NULL;
        *n = 0;
        rc = qbh_error_set(QB_E_INVALID, "model check: %s gives fewer than 2 tokens",
                           text ? what : "the built-in text");
    }
    if (rc && !text && !o->tokenizer && rc != QB_E_NOMEM && rc != QB_E_FORMAT) {
        /* The built-in text through the models' tokenizer is a default: a
         * tokenizer the encoder cannot run falls back to the fixed ids,
         * saying why. A tokenizer.json that is malformed (the strict JSON
         * parser refuses it, or its content contradicts itself) is an
         * error, as every malformed input file is. */
        snprintf(mc->tokens_note, sizeof mc->tokens_note, "%s", qbh_error_message());
        qbh_error_clear();
        return QB_OK;
    }
    if (!rc)
        snprintf(mc->tokenizer, sizeof mc->tokenizer, "%s", dir);
    return rc;
}

/* The forward pass of s over tokens[0..n): its linears through the
 * backend o->linears opens over s when it serves s (docs/forward.md,
 * "Linear backends"), the rest as dense rows. */
static qb_status run_pass(const qbh_mc_opts *o, qbh_source *s, const int64_t *tokens, size_t n,
                          float **logits, int64_t *vocab)
{
    const qb_host *fh = qbh_services_named("forward");
    qb_linear_backend *lb = NULL;
    qbh_fwd_model m;
    qb_status rc;
    if (o->linears && (rc = o->linears(fh, &s->src, 0, &lb))) {
        char why[1536];
        snprintf(why, sizeof why, "%s", qbh_error_message());
        return qbh_error_set(rc, "forward: %s", why);
    }
    memset(&m, 0, sizeof m);
    m.host = fh;
    m.src = &s->src;
    m.linears = lb;
    rc = qbh_forward(&m, tokens, n, logits, vocab);
    if (lb)
        lb->close(lb);
    return rc;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

void qbh_model_check_free(qbh_model_check *mc)
{
    qbh_free(mc->tokens);
    qbh_free(mc->kl);
    qbh_free(mc->cosine);
    mc->tokens = NULL;
    mc->kl = mc->cosine = NULL;
}

void qbh_mc_opts_default(qbh_mc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_kl = NAN;
    o->min_top1 = NAN;
}

/* Logits b [n][v] against the source's a into st (perplexity only from
 * text, ppl_src the source's); per position KL and cosine into kl[] and
 * cos[] when not NULL. sorted: n doubles of scratch. */
static void compare(const float *a, const float *b, int64_t v, const int64_t *tokens, size_t n,
                    int from_text, double ppl_src, double *kl, double *cos, double *sorted,
                    qbh_mc_stats *st)
{
    size_t i, agree = 0;
    memset(st, 0, sizeof *st);
    st->logits_cosine_min = INFINITY;
    for (i = 0; i < n; i++) {
        const float *pa = a + i * (size_t)v, *pb = b + i * (size_t)v;
        double k = kl_div(pa, pb, v), c = cosine(pa, pb, v);
        if (kl)
            kl[i] = k;
        if (cos)
            cos[i] = c;
        st->kl_mean += k / (double)n;
        if (k > st->kl_max)
            st->kl_max = k;
        if (c < st->logits_cosine_min)
            st->logits_cosine_min = c;
        agree += argmax(pa, v) == argmax(pb, v);
        sorted[i] = k;
    }
    /* p99 by nearest rank: the smallest value with >= 99% at or below it. */
    qsort(sorted, n, sizeof *sorted, cmp_double);
    st->kl_p99 = sorted[(size_t)ceil(0.99 * (double)n) - 1];
    st->top1_agreement = (double)agree / (double)n;
    if (from_text) {
        st->ppl = perplexity(b, v, tokens, n);
        st->ppl_ratio = st->ppl / ppl_src;
    }
}

/* The standard error of the mean of d_t = kc[t] - f * kb[t] over n
 * positions (sample standard deviation / sqrt(n)); INFINITY for n < 2. */
static double paired_se(const double *kc, const double *kb, size_t n, double f)
{
    double mean = 0, ss = 0;
    size_t t;
    if (n < 2)
        return INFINITY;
    for (t = 0; t < n; t++)
        mean += (kc[t] - f * kb[t]) / (double)n;
    for (t = 0; t < n; t++) {
        double d = kc[t] - f * kb[t] - mean;
        ss += d * d;
    }
    return sqrt(ss / (double)(n - 1) / (double)n);
}

/* Missing or mis-shaped tensors, what a pass cannot run: the check or the
 * baseline is skipped with the reason, not failed. */
static int skippable(qb_status rc)
{
    return rc == QB_E_NOT_FOUND || rc == QB_E_MISMATCH || rc == QB_E_UNSUPPORTED;
}

/* The baseline model's pass (verify_baseline_model.c) over the source,
 * compared with the source's logits la: mc->base and base_ran, or
 * base_note saying why not. Errors other than "cannot be formed" are
 * returned. */
static qb_status baseline(qbh_source *src, qbh_source *conv, const float *la, int64_t va,
                          int run, double *sorted, qbh_model_check *mc)
{
    qbh_vb_model *m = NULL;
    qbh_fwd_filter f;
    float *lc = NULL;
    double *bkl = NULL;
    int64_t vc = 0;
    qb_status rc = qbh_vb_model_new(conv, &m);
    if (rc)
        return rc;
    mc->n_grid = qbh_vb_model_grids(m, &mc->bits, &mc->group_size);
    if (!run)
        goto out;
    if (!mc->n_grid) {
        snprintf(mc->base_note, sizeof mc->base_note, "baseline not computed: %s holds no "
                 "tensor on an integer grid, so there is no rounding rule to compare with (its "
                 "tensors are judged one by one, by nearest rounding)", conv->path);
        goto out;
    }
    f.fn = qbh_vb_model_filter;
    f.ctx = m;
    {
        qbh_fwd_model fm = {qbh_services_named("forward"), &src->src, NULL, &f, NULL, 0};
        rc = qbh_forward(&fm, mc->tokens, mc->n_tokens, &lc, &vc);
    }
    qbh_progress_done();
    if (skippable(rc)) {
        snprintf(mc->base_note, sizeof mc->base_note, "baseline not computed: %s",
                 qbh_error_message());
        qbh_error_clear();
        rc = QB_OK;
        goto out;
    }
    if (rc)
        goto out;
    bkl = qbh_alloc(mc->n_tokens * sizeof *bkl);
    if (!bkl) {
        rc = qbh_error_set(QB_E_NOMEM, "model check: out of memory");
        goto out;
    }
    compare(la, lc, va, mc->tokens, mc->n_tokens, mc->from_text, mc->ppl_src, bkl, NULL,
            sorted, &mc->base);
    mc->defect_se = paired_se(mc->kl, bkl, mc->n_tokens, QBH_MCV_DEFECT_FACTOR);
    mc->base_ran = 1;
out:
    qbh_free(bkl);
    qbh_free(lc);
    qbh_vb_model_free(m);
    return rc;
}

qb_status qbh_model_check_run(qbh_source *src, qbh_source *conv, const qbh_mc_opts *o,
                              qbh_model_check *mc)
{
    const qb_host *fh = qbh_services_named("forward");
    qbh_fwd_cfg cs, cc;
    float *la = NULL, *lb = NULL;
    double *sorted = NULL;
    int64_t va = 0, vb = 0, *text_ids = NULL;
    const int64_t *tokens = o->tokens;
    size_t i, n, n_tokens = o->n_tokens;
    qbh_mc_stats st;
    qb_status rc;

    memset(mc, 0, sizeof *mc);
    mc->max_kl = o->max_kl;
    mc->min_top1 = o->min_top1;
    mc->pass = 1;
    /* Unsupported architecture (either side): skipped, not an error. */
    if (qbh_fwd_cfg_parse(fh, src->path, src->info.config_json, &cs) ||
        qbh_fwd_cfg_parse(fh, conv->path, conv->info.config_json, &cc)) {
        snprintf(mc->skipped, sizeof mc->skipped, "%s", qbh_error_message());
        qbh_error_clear();
        return QB_OK;
    }
    if (cs.vocab != cc.vocab) {
        snprintf(mc->skipped, sizeof mc->skipped, "vocab_size differs (%lld vs %lld)",
                 (long long)cs.vocab, (long long)cc.vocab);
        return QB_OK;
    }
    if (!tokens) {
        if ((rc = text_tokens(src, conv, o, mc, &text_ids, &n_tokens)))
            return rc;
        for (i = 0; i < n_tokens; i++)
            if (text_ids[i] >= cs.vocab) {
                rc = qbh_error_set(QB_E_RANGE, "model check: the tokenizer (%s) gives id %lld, "
                                   "outside the model's vocab_size %lld", mc->tokenizer,
                                   (long long)text_ids[i], (long long)cs.vocab);
                if (o->text || o->tokenizer)
                    goto out;
                /* the built-in text falls back to the fixed ids */
                snprintf(mc->tokens_note, sizeof mc->tokens_note, "%s", qbh_error_message());
                qbh_error_clear();
                rc = QB_OK;
                qbh_free(text_ids);
                text_ids = NULL;
                n_tokens = 0;
                mc->tokenizer[0] = '\0';
                break;
            }
        tokens = text_ids;
        mc->from_text = text_ids != NULL;
    }
    n = tokens ? n_tokens : QBH_MC_DEFAULT_TOKENS;
    mc->tokens = qbh_alloc(n * sizeof *mc->tokens);
    mc->kl = qbh_alloc(n * sizeof *mc->kl);
    mc->cosine = qbh_alloc(n * sizeof *mc->cosine);
    sorted = qbh_alloc(n * sizeof *sorted);
    if (!mc->tokens || !mc->kl || !mc->cosine || !sorted) {
        rc = qbh_error_set(QB_E_NOMEM, "model check: out of memory");
        goto out;
    }
    if (tokens)
        memcpy(mc->tokens, tokens, n * sizeof *tokens);
    else
        qbh_mc_default_tokens(cs.vocab, cs.bos, mc->tokens, n);
    mc->n_tokens = n;
    if (n < 2)
        mc->from_text = 0; /* no next token to predict */
    rc = run_pass(o, src, mc->tokens, n, &la, &va);
    if (rc == QB_OK)
        rc = run_pass(o, conv, mc->tokens, n, &lb, &vb);
    if (skippable(rc)) {
        /* A tensor missing or mis-shaped (the tensor table reports it)
         * leaves no model to run: skipped, with the reason. */
        snprintf(mc->skipped, sizeof mc->skipped, "%s", qbh_error_message());
        qbh_error_clear();
        rc = QB_OK;
        goto out;
    }
    if (rc)
        goto out;
    qbh_progress_done();
    if (mc->from_text)
        mc->ppl_src = perplexity(la, va, mc->tokens, n);
    compare(la, lb, va, mc->tokens, n, mc->from_text, mc->ppl_src, mc->kl, mc->cosine, sorted,
            &st);
    mc->kl_mean = st.kl_mean;
    mc->kl_p99 = st.kl_p99;
    mc->kl_max = st.kl_max;
    mc->top1_agreement = st.top1_agreement;
    mc->logits_cosine_min = st.logits_cosine_min;
    mc->ppl_conv = st.ppl;
    mc->ppl_ratio = st.ppl_ratio;
    qbh_free(lb); /* two logit buffers at most: [n, vocab] each */
    lb = NULL;
    mc->ran = 1;
    if (!isnan(o->max_kl) && !(mc->kl_max <= o->max_kl)) {
        mc->pass = 0;
        snprintf(mc->reason, sizeof mc->reason, "KL max %.6g > --max-kl %g", mc->kl_max,
                 o->max_kl);
    } else if (!isnan(o->min_top1) && !(mc->top1_agreement >= o->min_top1)) {
        mc->pass = 0;
        snprintf(mc->reason, sizeof mc->reason, "top-1 agreement %.4f < --min-top1 %g",
                 mc->top1_agreement, o->min_top1);
    }
    /* The verdict: exact codes need no baseline pass. */
    if ((rc = baseline(src, conv, la, va, !o->exact_codes, sorted, mc)))
        goto out;
    qbh_mc_verdict_decide(mc, o->exact_codes);
    rc = QB_OK;
out:
    qbh_free(la);
    qbh_free(lb);
    qbh_free(sorted);
    qbh_free(text_ids);
    if (rc)
        qbh_model_check_free(mc);
    return rc;
}

void qbh_model_check_print(FILE *f, const qbh_model_check *mc)
{
    if (!mc->ran) {
        fprintf(f, "model check: skipped: %s\n", mc->skipped);
        return;
    }
    fprintf(f,
            "model check (%zu tokens%s): KL mean %.3g, p99 %.3g, max %.3g nats; top-1 agreement "
            "%.1f%%; min logits cosine %.6f%s%s\n",
            mc->n_tokens, mc->from_text ? " from text" : "", mc->kl_mean, mc->kl_p99, mc->kl_max,
            100.0 * mc->top1_agreement, mc->logits_cosine_min, mc->pass ? "" : "; FAILED: ",
            mc->pass ? "" : mc->reason);
    if (mc->from_text)
        fprintf(f, "model check: perplexity %.6g (source), %.6g (converted), ratio %.6f\n",
                mc->ppl_src, mc->ppl_conv, mc->ppl_ratio);
    else if (mc->tokens_note[0])
        fprintf(f, "model check: fixed token ids (%s)\n", mc->tokens_note);
    qbh_mc_verdict_print(f, mc);
}

int qbh_model_check_json(const qbh_model_check *mc, void *root_)
{
    cJSON *root = root_, *o = cJSON_CreateObject(), *ids, *arr;
    size_t i;
    if (!o || !cJSON_AddItemToObject(root, "model_check", o)) {
        cJSON_Delete(o);
        return -1;
    }
    if (!mc->ran)
        return cJSON_AddStringToObject(o, "skipped", mc->skipped) ? 0 : -1;
    if (!cJSON_AddStringToObject(o, "token_source", mc->from_text ? "text" : "ids"))
        return -1;
    ids = cJSON_AddArrayToObject(o, "token_ids");
    if (!ids)
        return -1;
    for (i = 0; i < mc->n_tokens; i++)
        if (!cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)mc->tokens[i])))
            return -1;
    if (!cJSON_AddNumberToObject(o, "kl_mean", mc->kl_mean) ||
        !cJSON_AddNumberToObject(o, "kl_p99", mc->kl_p99) ||
        !cJSON_AddNumberToObject(o, "kl_max", mc->kl_max) ||
        !cJSON_AddNumberToObject(o, "top1_agreement", mc->top1_agreement) ||
        !cJSON_AddNumberToObject(o, "logits_cosine_min", mc->logits_cosine_min) ||
        !cJSON_AddBoolToObject(o, "pass", mc->pass))
        return -1;
    arr = cJSON_AddArrayToObject(o, "kl_per_position");
    if (!arr)
        return -1;
    for (i = 0; i < mc->n_tokens; i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber(mc->kl[i])))
            return -1;
    if (!mc->pass && !cJSON_AddStringToObject(o, "reason", mc->reason))
        return -1;
    if (mc->from_text && (!cJSON_AddNumberToObject(o, "perplexity_source", mc->ppl_src) ||
                          !cJSON_AddNumberToObject(o, "perplexity_converted", mc->ppl_conv) ||
                          !cJSON_AddNumberToObject(o, "perplexity_ratio", mc->ppl_ratio)))
        return -1;
    if (mc->tokens_note[0] && !cJSON_AddStringToObject(o, "token_note", mc->tokens_note))
        return -1;
    if (mc->tokenizer[0] && !cJSON_AddStringToObject(o, "tokenizer", mc->tokenizer))
        return -1;
    return qbh_mc_verdict_json(mc, root);
}

qb_status qbh_model_check_report(FILE *f, qbh_source *src, qbh_source *conv, int exact_codes,
                                 qb_linear_backend_open_fn linears, int *pass, int *judged,
                                 char *why_not, size_t why_cap)
{
    qbh_model_check mc;
    qbh_mc_opts o;
    qb_status rc;
    qbh_mc_opts_default(&o);
    o.exact_codes = exact_codes;
    o.linears = linears;
    *pass = 1;
    *judged = 0;
    rc = qbh_model_check_run(src, conv, &o, &mc);
    if (rc == QB_OK) {
        *judged = qbh_mc_judges(&mc, "", why_not, why_cap);
        qbh_model_check_print(f, &mc);
        qbh_mc_verdict_warn(&mc);
        *pass = !mc.ran || mc.pass;
        if (!*pass)
            qbh_error_set(QB_E_MISMATCH, "%s", mc.reason);
    }
    qbh_model_check_free(&mc);
    return rc;
}

void qbh_model_check_html(FILE *f, const qbh_model_check *mc)
{
    const double W = 1080, Hh = 230, ml = 64, mr = 16, mt = 34, mb = 40;
    double pw = W - ml - mr, ph = Hh - mt - mb, top = 0, slot, bw;
    size_t i, step;
    int t;

    fputs("<h2>Model check</h2>\n", f);
    if (!mc->ran) {
        fputs("<p>Skipped: ", f);
        for (i = 0; mc->skipped[i]; i++) { /* the reason may name a path */
            char ch = mc->skipped[i];
            if (ch == '<')
                fputs("&lt;", f);
            else if (ch == '>')
                fputs("&gt;", f);
            else if (ch == '&')
                fputs("&amp;", f);
            else
                fputc(ch, f);
        }
        fputs("</p>\n", f);
        return;
    }
    fprintf(f, "<p>%zu tokens: KL(src || conv) mean %.4g, p99 %.4g, max %.4g nats; top-1 "
               "agreement %.1f%%; min logits cosine %.6f%s</p>\n",
            mc->n_tokens, mc->kl_mean, mc->kl_p99, mc->kl_max, 100.0 * mc->top1_agreement,
            mc->logits_cosine_min, mc->pass ? "" : " &mdash; <b>failed a limit</b>");
    if (mc->from_text)
        fprintf(f, "<p>Tokens from text: perplexity %.6g (source), %.6g (converted), ratio "
                   "%.6f</p>\n", mc->ppl_src, mc->ppl_conv, mc->ppl_ratio);
    qbh_mc_verdict_html(f, mc);
    for (i = 0; i < mc->n_tokens; i++) {
        top = mc->kl[i] > top ? mc->kl[i] : top;
        top = 1.0 - mc->cosine[i] > top ? 1.0 - mc->cosine[i] : top;
    }
    if (!isnan(mc->max_kl) && mc->max_kl > top)
        top = mc->max_kl;
    top = top > 0 ? top * 1.12 : 1.0;
    slot = pw / (double)(mc->n_tokens ? mc->n_tokens : 1);
    bw = slot * 0.6 > 48.0 ? 48.0 : slot * 0.6;
    step = mc->n_tokens > 32 ? (mc->n_tokens + 31) / 32 : 1;
    fprintf(f, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"KL per "
               "position\">\n<text x=\"%.0f\" y=\"20\" class=\"ct\">KL(src || conv) and 1 "
               "&#8722; logits cosine per position</text>\n"
               "<rect x=\"%.0f\" y=\"10\" width=\"12\" height=\"12\" class=\"bar\"/><text "
               "x=\"%.0f\" y=\"21\" class=\"lg\">KL (nats)</text>\n<circle cx=\"%.0f\" "
               "cy=\"16\" r=\"4\" class=\"dot\"/><text x=\"%.0f\" y=\"21\" "
               "class=\"lg\">1 &#8722; cosine</text>\n",
            W, Hh, W, Hh, ml, W - 470, W - 454, W - 240, W - 230);
    for (t = 0; t <= 4; t++) {
        double v = top * t / 4.0, y = mt + ph - ph * t / 4.0;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.3g</text>\n",
                ml, ml + pw, y, y, ml - 6, y + 4, v);
    }
    for (i = 0; i < mc->n_tokens; i++) {
        double x = ml + slot * (double)i + (slot - bw) / 2.0, h = ph * mc->kl[i] / top;
        double c = 1.0 - mc->cosine[i];
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                   "class=\"bar\"><title>position %zu (token %lld): KL %.4g</title></rect>\n",
                x, mt + ph - h, bw, h, i, (long long)mc->tokens[i], mc->kl[i]);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" class=\"dot\"><title>position "
                   "%zu: 1 - cosine %.4g</title></circle>\n",
                x + bw / 2.0, mt + ph - ph * c / top, i, c);
        if (i % step == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" "
                       "text-anchor=\"middle\">%zu</text>\n", x + bw / 2.0, mt + ph + 16, i);
    }
    if (!isnan(mc->max_kl))
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"limit\"/>\n",
                ml, ml + pw, mt + ph - ph * mc->max_kl / top, mt + ph - ph * mc->max_kl / top);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">token "
               "position</text>\n</svg>\n",
            ml, ml + pw, mt + ph, mt + ph, ml + pw / 2.0, Hh - 6);
}
