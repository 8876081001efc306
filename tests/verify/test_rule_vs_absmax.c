/*
 * The W4A16 writer's default rule against the plain absmax rule at the
 * model's output (docs/fidelity.md, "Default rule against absmax"; issue
 * 27: the default is never worse than absmax at the model level), on the
 * fixture where the plain least-error search loses to absmax: the
 * project's heavy-tailed bf16 llama, seed 2 (tests/gen/gen_hf_dense.c),
 * with the byte-level tokenizer of tests/gen/gen_tokenizer.h.
 *
 * Each conversion's KL(source || converted) per position comes from
 * `verify --json` (model_check.kl_per_position) on the built-in text; the
 * conversions are compared on the same positions: d_t = KL_t(rule) -
 * KL_t(absmax), and a rule loses when mean(d) exceeds 2 standard errors
 * sd(d) / sqrt(T) (the paired per-position noise of verify's model
 * verdict, docs/verify.md). Ground truth is the absmax conversion run
 * through the same forward pass, not a stored number.
 *
 * Asserted, each on the built-in text (1412 byte-level ids): the default
 * without activation statistics (the search) at the default group size
 * (128) and at 32, and with them (--calibration builtin: the weighted
 * rule) at 128, none loses to absmax. On 512 random ids instead of text
 * the search at 128 does lose on this fixture (bench/quality/rules.py,
 * docs/fidelity.md): measured 2026-12-02, on text it won by 0.137 nats
 * (2 standard errors 0.089), at 32 it tied (+0.023, 2 SE 0.027), and the
 * calibrated default won by 0.698 (2 SE 0.065).
 *
 * The calibrated conversion's weighted linears that lose to absmax by
 * plain weight error are judged at the model's output (docs/verify.md,
 * "Rules judged at the model's output"): verify passes it, fails it with
 * the model check off, and calls it a defect with its scales reversed.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen_hf_dense.h"
#include "gen_tokenizer.h"
#include "vt_util.h"

static char *tmp;
static char src[4096];

static void setup(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 256,
                      .intermediate = 688, .vocab = 512, .heads = 4, .kv_heads = 2,
                      .head_dim = 64, .tied = 0, .shards = 1, .seed = 2 | QBT_HFD_HEAVY};
    tmp = vt_tmpdir("rulevsabsmax");
    snprintf(src, sizeof src, "%s/src", tmp);
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    ck_assert_int_eq(qbt_tok_write_bytelevel(src), 0);
}

static void teardown(void)
{
    vt_rmtree(tmp);
    free(tmp);
}

/* Per-position KL of the model check, n positions (malloc'd), and the ids
 * joined into *ids (malloc'd) so that two runs can be checked to share
 * them. */
typedef struct kl_run {
    double *kl;
    int n;
    char *ids;
    double group;
} kl_run;

/* calibrated: the weighted rule may exceed absmax's plain error in some
 * groups by design (it weights the columns); its reader declares the rule
 * (quantbridge.quant_rule:), so verify judges those tensors at the model's
 * output instead of failing them, and the verification passes. */
static kl_run convert_and_verify(const char *name, const char *opts, int calibrated)
{
    char out[4200], args[12288], *so, *se;
    cJSON *j, *mc, *arr, *it;
    kl_run r = {NULL, 0, NULL, 0.0};
    size_t cap, len = 0;
    int rc, i = 0;

    snprintf(out, sizeof out, "%s/%s", tmp, name);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' %s", src, out, opts);
    rc = vt_run(args, &so, &se);
    ck_assert_msg(rc == 0, "%s -> %d\n%s%s", args, rc, so, se);
    free(so);
    free(se);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json", src, out);
    rc = vt_run(args, &so, &se);
    ck_assert_msg(rc == 0, "%s -> %d\n%s", args, rc, se);
    j = cJSON_Parse(so);
    ck_assert_msg(j != NULL, "%s: stdout is not JSON", args);
    free(so);
    free(se);
    if (calibrated) {
        /* the declaration reached verify: every linear weighted, some of
         * them judged at the output (worse than absmax by plain error) */
        int n_weighted = 0, n_out = 0;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "tensors"))
        {
            cJSON *qr = cJSON_GetObjectItem(it, "quant_rule");
            cJSON *ja = cJSON_GetObjectItem(it, "judged_at");
            if (cJSON_IsString(qr) && strcmp(qr->valuestring, "weighted") == 0)
                n_weighted++;
            if (cJSON_IsString(ja)) {
                ck_assert_str_eq(ja->valuestring, "model_output");
                ck_assert_str_eq(cJSON_GetObjectItem(it, "status")->valuestring, "ok");
                ck_assert_int_gt(cJSON_GetObjectItem(it, "n_worse_than_baseline")->valueint, 0);
                n_out++;
            }
        }
        ck_assert_int_ge(n_weighted, 14); /* 2 layers x 7 linears (and the head) */
        ck_assert_int_gt(n_out, 0);
        ck_assert_int_eq(cJSON_GetObjectItem(j, "n_judged_at_output")->valueint, n_out);
    }
    mc = cJSON_GetObjectItem(j, "model_check");
    ck_assert_ptr_nonnull(mc);
    ck_assert_str_eq(cJSON_GetObjectItem(mc, "token_source")->valuestring, "text");
    arr = cJSON_GetObjectItem(mc, "kl_per_position");
    ck_assert(cJSON_IsArray(arr));
    r.n = cJSON_GetArraySize(arr);
    ck_assert_int_ge(r.n, 500);
    r.kl = malloc((size_t)r.n * sizeof *r.kl);
    ck_assert_ptr_nonnull(r.kl);
    cJSON_ArrayForEach(it, arr)
    {
        ck_assert(cJSON_IsNumber(it) && isfinite(it->valuedouble) && it->valuedouble >= -1e-9);
        r.kl[i++] = it->valuedouble;
    }
    arr = cJSON_GetObjectItem(mc, "token_ids");
    cap = 12 * (size_t)cJSON_GetArraySize(arr) + 1;
    r.ids = malloc(cap);
    ck_assert_ptr_nonnull(r.ids);
    r.ids[0] = '\0';
    cJSON_ArrayForEach(it, arr)
    {
        len += (size_t)snprintf(r.ids + len, cap - len, "%d,", it->valueint);
    }
    {
        cJSON *mv = cJSON_GetObjectItem(j, "model_verdict");
        cJSON *g = mv ? cJSON_GetObjectItem(mv, "group_size") : NULL;
        r.group = cJSON_IsNumber(g) ? g->valuedouble : 0.0;
    }
    cJSON_Delete(j);
    return r;
}

static void free_run(kl_run *r)
{
    free(r->kl);
    free(r->ids);
}

/* mean(KL_t(a) - KL_t(b)) and its standard error; prints both. */
static void paired(const char *what, const kl_run *a, const kl_run *b, double *mean, double *se)
{
    double s = 0.0, ss = 0.0, ma = 0.0, mb = 0.0;
    int t;
    ck_assert_int_eq(a->n, b->n);
    ck_assert_str_eq(a->ids, b->ids);
    for (t = 0; t < a->n; t++) {
        s += a->kl[t] - b->kl[t];
        ma += a->kl[t];
        mb += b->kl[t];
    }
    *mean = s / a->n;
    for (t = 0; t < a->n; t++) {
        double d = a->kl[t] - b->kl[t] - *mean;
        ss += d * d;
    }
    *se = sqrt(ss / (a->n - 1)) / sqrt((double)a->n);
    printf("%s: KL %.4f against absmax %.4f over %d positions: difference %+.4f, "
           "2 standard errors %.4f\n",
           what, ma / a->n, mb / a->n, a->n, *mean, 2.0 * *se);
    fflush(stdout);
}

/* Reverses the order of the fp16 scales of tensor tn in the safetensors
 * file lf, element by element: every group gets another group's scale
 * (whatever the scales' layout), of the same tensor's magnitudes. */
static void reverse_scales(const char *lf, const char *tn)
{
    size_t off, len, n, i;
    char *b = vt_slurp(lf, &n);
    vt_st_locate(lf, tn, &off, &len);
    for (i = 0; i < len / 4; i++) {
        size_t j = len - 2 - 2 * i;
        char t0 = b[off + 2 * i], t1 = b[off + 2 * i + 1];
        b[off + 2 * i] = b[off + j];
        b[off + 2 * i + 1] = b[off + j + 1];
        b[off + j] = t0;
        b[off + j + 1] = t1;
    }
    vt_spit(lf, b, n);
    free(b);
}

/* The tensors judged at the output need the model's word: with the model
 * check off they fail, naming the option; a weighted conversion broken
 * after the fact (the scales of every layer's linears in reverse order) is not
 * rescued by its declared rule: the model verdict calls it a defect, exit
 * 3. And `convert --calibration builtin --verify` passes. */
START_TEST(weighted_judged_at_output)
{
    char cal[4200], bad[4200], args[12288], *so, *se;
    const char *lf;
    cJSON *j, *it, *v;
    int rc, seen = 0;

    snprintf(cal, sizeof cal, "%s/cal", tmp);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --calibration builtin "
             "--verify", src, cal);
    rc = vt_run(args, &so, &se);
    ck_assert_msg(rc == 0, "%s -> %d\n%s%s", args, rc, so, se);
    ck_assert_msg(strstr(so, "judged at the model's output"), "%s", so);
    free(so);
    free(se);

    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --no-model-check", src,
             cal);
    rc = vt_run(args, &so, &se);
    ck_assert_msg(rc == 3, "%s -> %d\n%s%s", args, rc, so, se);
    ck_assert_msg(strstr(se, "is judged at the model's output, but the model check is off "
                             "(drop --no-model-check)"), "%s", se);
    free(so);
    free(se);

    snprintf(bad, sizeof bad, "%s/bad", tmp);
    vt_copy_dir(cal, bad);
    for (int layer = 0; layer < 2; layer++) {
        char fn[64];
        snprintf(fn, sizeof fn, "layer_%02d.safetensors", layer);
        lf = vt_path(bad, fn);
        static const char *const L[] = {"self_attn.q_proj", "self_attn.k_proj",
                                        "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                                        "mlp.up_proj",      "mlp.down_proj"};
        size_t k;
        char tn[64];
        for (k = 0; k < sizeof L / sizeof *L; k++) {
            snprintf(tn, sizeof tn, "%s.scales", L[k]);
            reverse_scales(lf, tn);
        }
        vt_manifest_reseal(bad, fn);
    }
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json", src, bad);
    rc = vt_run(args, &so, &se);
    j = cJSON_Parse(so);
    ck_assert_ptr_nonnull(j);
    ck_assert_msg(rc == 3, "%s -> %d\n%s\n%s", args, rc, se,
                  cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model_verdict"), "words")->valuestring);
    ck_assert_msg(strstr(se, "model check: model verdict"), "%s", se);
    v = cJSON_GetObjectItem(j, "model_verdict");
    fprintf(stderr, "weighted, every linear's scales reversed: %s\n",
            cJSON_GetObjectItem(v, "words")->valuestring);
    ck_assert_str_eq(cJSON_GetObjectItem(v, "verdict")->valuestring, "defect");
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "tensors"))
    {
        if (strcmp(cJSON_GetObjectItem(it, "name")->valuestring,
                   "model.layers.0.mlp.down_proj.weight") != 0)
            continue;
        /* the tensor check left it to the output, which failed it */
        ck_assert_str_eq(cJSON_GetObjectItem(it, "judged_at")->valuestring, "model_output");
        ck_assert_str_eq(cJSON_GetObjectItem(it, "quant_rule")->valuestring, "weighted");
        seen = 1;
    }
    ck_assert(seen);
    cJSON_Delete(j);
    free(so);
    free(se);
}
END_TEST

START_TEST(default_not_worse_than_absmax)
{
    kl_run abs128 = convert_and_verify("abs128", "--option quant_rule=absmax", 0);
    kl_run def128 = convert_and_verify("def128", "", 0);
    kl_run cal128 = convert_and_verify("cal128", "--calibration builtin", 1);
    kl_run abs32 = convert_and_verify("abs32", "--group-size 32 --option quant_rule=absmax", 0);
    kl_run def32 = convert_and_verify("def32", "--group-size 32", 0);
    double m, se;

    /* the fixture's default group size is 128 (a float source: no grid to
     * keep), which is what makes the search lose */
    ck_assert_msg(abs128.group == 128.0 && def128.group == 128.0 && cal128.group == 128.0,
                  "group sizes %g %g %g", abs128.group, def128.group, cal128.group);
    ck_assert(abs32.group == 32.0 && def32.group == 32.0);
    /* absmax is not a trivial baseline here: it moves the model */
    {
        double ma = 0.0;
        int t;
        for (t = 0; t < abs128.n; t++)
            ma += abs128.kl[t];
        ck_assert_msg(ma / abs128.n > 0.05, "absmax KL %g: the fixture shows nothing",
                      ma / abs128.n);
    }

    paired("default without statistics, group 128", &def128, &abs128, &m, &se);
    ck_assert_msg(m <= 2.0 * se, "the default loses to absmax at group 128: %+.4f > 2 x %.4f", m,
                  se);
    paired("default with --calibration builtin, group 128", &cal128, &abs128, &m, &se);
    ck_assert_msg(m <= 2.0 * se, "the calibrated default loses to absmax: %+.4f > 2 x %.4f", m,
                  se);
    paired("default without statistics, group 32", &def32, &abs32, &m, &se);
    ck_assert_msg(m <= 2.0 * se, "the default loses to absmax at group 32: %+.4f > 2 x %.4f", m,
                  se);

    free_run(&abs128);
    free_run(&def128);
    free_run(&cal128);
    free_run(&abs32);
    free_run(&def32);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("rule_vs_absmax");
    TCase *tc = tcase_create("rule_vs_absmax");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, default_not_worse_than_absmax);
    tcase_add_test(tc, weighted_judged_at_output);
    suite_add_tcase(s, tc);
    return s;
}
