/*
 * The verify HTML report rendered by headless Chromium (Debian
 * `chromium`): the DOM after scripts ran has one row per tensor with every
 * tensor name, three inline SVG charts and the verdict; #sort=7- (rel
 * RMSE, descending) puts the worst tensor first, proving the inline sort
 * script runs; and a PNG screenshot is produced. The screenshot is kept
 * at $QB_TEST_BUILD_DIR/tests/verify-report.png for people to look at.
 * Exits 77 (skipped) when chromium is not installed.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gen_hf_dense.h"
#include "qbt_args.h"
#include "qbt_run.h"
#include "vt_util.h"

static const char *chromium;

/* Runs headless chromium on url with option `what` (its value may be
 * single-quoted), stdout into out_file; returns the exit status. */
static int run_chromium(const char *what, const char *url, const char *out_file)
{
    char prof[4200];
    char *p = vt_tmpdir("chromium");
    char **w = qbt_args_split(what);
    qbt_result r;
    int rc;
    snprintf(prof, sizeof prof, "--user-data-dir=%s", p);
    ck_assert(w[0] && !w[1]);
    {
        const char *argv[] = {"--headless", "--no-sandbox", "--disable-gpu",
                              "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", "--no-first-run", prof, "--window-size=1200,1600",
                              w[0], url, NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.prog = chromium, .timeout_s = 180}, argv);
    }
    vt_spit(out_file, r.out, strlen(r.out));
    rc = r.status;
    qbt_result_free(&r);
    qbt_args_free(w);
    vt_rmtree(p);
    free(p);
    return rc;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    const char *q = hay;
    while ((q = strstr(q, needle)) != NULL) {
        n++;
        q += strlen(needle);
    }
    return n;
}

START_TEST(report_renders)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 3, .hidden = 256,
                      .intermediate = 688, .vocab = 512, .tied = 0, .shards = 1, .seed = 7};
    char *tmp = vt_tmpdir("html"), args[16384], url[4200], dom_file[4200], png[4200];
    char src[4096], w4[4096], rep[4096], *out, *err, *dom, *json, *first;
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    cJSON *j, *t;
    size_t n;
    int rc;

    snprintf(src, sizeof src, "%s/src", tmp);
    snprintf(w4, sizeof w4, "%s/w4", tmp);
    snprintf(rep, sizeof rep, "%s/report.html", tmp);
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s'", src, w4);
    ck_assert_int_eq(vt_run(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json --report '%s'", src,
             w4, rep);
    rc = vt_run(args, &json, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    j = cJSON_Parse(json);
    ck_assert_ptr_nonnull(j);

    snprintf(url, sizeof url, "file://%s#sort=7-", rep);
    snprintf(dom_file, sizeof dom_file, "%s/dom.html", tmp);
    ck_assert_int_eq(run_chromium("--dump-dom", url, dom_file), 0);
    dom = vt_slurp(dom_file, &n);
    ck_assert_uint_gt(n, 1000);
    /* 3 layers x 9 + embeddings, final norm, head */
    ck_assert_uint_eq(count(dom, "<tr class=\"t"), 30);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        char needle[300];
        snprintf(needle, sizeof needle, "data-name=\"%s\"",
                 cJSON_GetObjectItem(t, "name")->valuestring);
        ck_assert_msg(count(dom, needle) == 1, "rendered page lacks %s", needle);
    }
    /* 3 per-layer charts and the model check's per-position chart */
    ck_assert_uint_eq(count(dom, "<svg"), 4);
    ck_assert_uint_eq(count(dom, "id=\"verdict\">PASS<"), 1);
    /* the script ran: the table is sorted by rel RMSE, worst first */
    ck_assert_uint_eq(count(dom, "data-dir=\"desc\""), 1);
    first = strstr(dom, "<tr class=\"t");
    ck_assert_ptr_nonnull(first);
    {
        char needle[300];
        snprintf(needle, sizeof needle, "data-name=\"%s\"",
                 cJSON_GetArrayItem(cJSON_GetObjectItem(j, "worst"), 0)->valuestring);
        ck_assert_msg(strncmp(strstr(first, "data-name="), needle, strlen(needle)) == 0,
                      "first row is not the worst tensor %s", needle);
    }

    snprintf(png, sizeof png, "%s/tests/verify-report.png", bd ? bd : tmp);
    unlink(png);
    snprintf(url, sizeof url, "file://%s", rep);
    {
        char what[4400], log[4200];
        snprintf(what, sizeof what, "--screenshot='%s'", png);
        snprintf(log, sizeof log, "%s/shot.log", tmp);
        ck_assert_int_eq(run_chromium(what, url, log), 0);
    }
    {
        char *pb = vt_slurp(png, &n);
        ck_assert_uint_gt(n, 10000);
        ck_assert_mem_eq(pb, "\x89PNG\r\n\x1a\n", 8);
        free(pb);
    }
    cJSON_Delete(j);
    free(dom);
    free(json);
    free(err);
    (void)out;
    vt_rmtree(tmp);
    free(tmp);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s;
    TCase *tc;
    chromium = access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : NULL;
    if (!chromium) {
        printf("test_verify_html: chromium not installed; skipped\n");
        return NULL; /* skipped */
    }
    s = suite_create("verify_html");
    tc = tcase_create("chromium");
    tcase_set_timeout(tc, 500);
    tcase_add_test(tc, report_renders);
    suite_add_tcase(s, tc);
    return s;
}
