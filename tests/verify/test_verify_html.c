/*
 * The verify HTML report rendered by headless Chromium (Debian
 * `chromium`): the DOM after scripts ran has one row per tensor with every
 * tensor name, three inline SVG charts and the verdict; #sort=7- (rel
 * RMSE, descending) puts the worst tensor first, proving the inline sort
 * script runs; the exact/requantized, per-group, histogram, settings and
 * versions sections agree with the JSON report; at 1400 px the page is no
 * wider than the window; and a PNG screenshot is produced. The screenshot
 * is kept at $QB_TEST_BUILD_DIR/tests/verify-report.png for people to look
 * at. Exits 77 (skipped) when chromium is not installed.
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
static int run_chromium_w(const char *what, const char *url, const char *out_file, int width)
{
    char prof[4200], win[64];
    char *p = vt_tmpdir("chromium");
    char **w = qbt_args_split(what);
    qbt_result r;
    int rc;
    snprintf(prof, sizeof prof, "--user-data-dir=%s", p);
    snprintf(win, sizeof win, "--window-size=%d,1600", width);
    ck_assert(w[0] && !w[1]);
    {
        const char *argv[] = {"--headless", "--no-sandbox", "--disable-gpu",
                              "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", "--no-first-run", prof, win,
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

static int run_chromium(const char *what, const char *url, const char *out_file)
{
    return run_chromium_w(what, url, out_file, 1400);
}

/* Loads `probe` (the report with a script that opens every folded list
 * and writes "W=<document scrollWidth> C=<viewport width> T=<widest
 * table>" into the title) in a `width` px window; asserts the page is no
 * wider than the window and returns the widest table's width. */
static long page_width(const char *probe, const char *dom_file, int width)
{
    char url[4200], *dom, *w;
    long sw, cw, tw;
    size_t n;
    snprintf(url, sizeof url, "file://%s", probe);
    ck_assert_int_eq(run_chromium_w("--dump-dom", url, dom_file, width), 0);
    dom = vt_slurp(dom_file, &n);
    w = strstr(dom, "<title>W=");
    ck_assert_msg(w != NULL, "probe script did not run");
    sw = strtol(w + 9, NULL, 10);
    cw = strtol(strstr(w, " C=") + 3, NULL, 10);
    tw = strtol(strstr(w, " T=") + 3, NULL, 10);
    ck_assert_msg(cw > 0 && cw <= width, "viewport %ld px in a %d px window", cw, width);
    ck_assert_msg(sw > 0 && sw <= cw, "page is %ld px wide in a %ld px viewport", sw, cw);
    free(dom);
    return tw;
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

/* The explanatory sections against the JSON report of the same run: the
 * exact and requantized tables split the compared tensors as the JSON's
 * `rule`/`exact` do, the per-group rows add up to them, the histogram
 * holds every tensor with a nonzero finite error, and the settings come
 * from the converted model's manifest. */
static void check_sections(const char *dom, cJSON *j)
{
    size_t n_x = 0, n_q = 0, n_err = 0, in_groups = 0, g_n[9] = {0};
    static const char *const groups[] = {"q", "k", "v", "o", "gate", "up", "down", "experts",
                                         "other"};
    const char *p;
    cJSON *t;
    size_t i, bars = 0;

    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
        cJSON *ex = cJSON_GetObjectItem(t, "exact");
        cJSON *rr = cJSON_GetObjectItem(t, "rel_rmse");
        const char *rule;
        size_t gi = 8;
        if (!ex)
            continue;
        rule = cJSON_GetObjectItem(t, "rule")->valuestring;
        if (cJSON_IsTrue(ex) || strcmp(rule, "exact") == 0)
            n_x++;
        else
            n_q++;
        if (cJSON_IsNumber(rr) && rr->valuedouble > 0.0)
            n_err++;
        for (i = 0; i < 7; i++) {
            char pat[32];
            snprintf(pat, sizeof pat, ".%s_proj.", groups[i]);
            if (strstr(name, pat))
                gi = i;
        }
        g_n[gi]++;
    }
    ck_assert_uint_gt(n_x, 0);
    ck_assert_uint_gt(n_q, 0);
    ck_assert_uint_eq(count(dom, "<tr class=\"x"), n_x);
    ck_assert_uint_eq(count(dom, "<tr class=\"q"), n_q);
    for (i = 0; i < 9; i++) {
        char needle[96];
        if (!g_n[i]) {
            snprintf(needle, sizeof needle, "data-group=\"%s\"", groups[i]);
            ck_assert_uint_eq(count(dom, needle), 0);
            continue;
        }
        snprintf(needle, sizeof needle, "data-group=\"%s\" data-n=\"%zu\"", groups[i], g_n[i]);
        ck_assert_msg(count(dom, needle) == 1, "group row %s missing", needle);
        in_groups += g_n[i];
    }
    ck_assert_uint_eq(in_groups, n_x + n_q);
    /* histogram bars hold every tensor with a nonzero error */
    for (p = dom; (p = strstr(p, "data-count=\"")) != NULL; p++)
        bars += strtoul(p + strlen("data-count=\""), NULL, 10);
    ck_assert_uint_eq(bars, n_err);
    /* settings from the manifest, versions and the date */
    ck_assert_uint_eq(count(dom, "id=\"settings\""), 1);
    ck_assert_ptr_nonnull(strstr(dom, "<td>group_size</td><td>128</td>"));
    ck_assert_ptr_nonnull(strstr(dom, "<td>converter.name</td><td>quantbridge</td>"));
    ck_assert_uint_eq(count(dom, "id=\"versions\""), 1);
    ck_assert_ptr_nonnull(strstr(dom, "id=\"generated\">20"));
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
    /* a user bound far above every error: the axes must still fit the data */
    snprintf(args, sizeof args,
             "verify --source '%s' --converted '%s' --json --max-rel-rmse 50 --report '%s'", src,
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
    /* 3 per-layer charts, the error histogram and the model check's
     * per-position chart */
    ck_assert_uint_eq(count(dom, "<svg"), 5);
    ck_assert_uint_eq(count(dom, "id=\"histogram\""), 1);
    check_sections(dom, j);
    ck_assert_uint_eq(count(dom, "threshold 50 (above this axis)"), 1);
    ck_assert_uint_eq(count(dom, "threshold 50 (outside this axis)"), 1);
    ck_assert_uint_eq(count(dom, "class=\"limit\""), 0);
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

    /* Nothing overflows at 1400 px: the same page with a probe script that
     * writes the document's scroll width into the title. */
    {
        char probe[4096], *html = vt_slurp(rep, &n), *cut = strstr(html, "</body>");
        const char *js =
            "<script>var d=document.querySelectorAll('details'),i,m=0;"
            "for(i=0;i<d.length;i++)d[i].open=true;"
            "var ts=document.querySelectorAll('table');"
            "for(i=0;i<ts.length;i++)m=Math.max(m,ts[i].offsetWidth);"
            "document.title='W='+document.documentElement.scrollWidth+"
            "' C='+document.documentElement.clientWidth+' T='+m;</script>";
        FILE *pf;
        ck_assert_ptr_nonnull(cut);
        snprintf(probe, sizeof probe, "%s/probe.html", tmp);
        pf = fopen(probe, "w");
        ck_assert_ptr_nonnull(pf);
        fwrite(html, 1, (size_t)(cut - html), pf);
        fputs(js, pf);
        fputs(cut, pf);
        fclose(pf);
        free(html);
        page_width(probe, dom_file, 1400);
        /* In a 900 px window the tables are wider than the window, so
         * this is where a table that is not boxed would widen the page. */
        ck_assert_int_gt(page_width(probe, dom_file, 900), 900);
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
