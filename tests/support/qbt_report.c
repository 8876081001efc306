/*
 * A writer's per-tensor report against verify. See qbt_report.h.
 */
#include "qbt_report.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbt_fs.h"
#include "qbt_run.h"

static const cJSON *member(const cJSON *o, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(m != NULL, "no member %s", key);
    return m;
}

static const cJSON *find_tensor(const cJSON *list, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, list) {
        if (strcmp(member(t, "name")->valuestring, name) == 0)
            return t;
    }
    return NULL;
}

int qbt_report_matches_verify(const char *src, const char *out, const char *format)
{
    return qbt_report_matches_verify_with(src, out, format, "");
}

int qbt_report_matches_verify_with(const char *src, const char *out, const char *format,
                                   const char *verify_args)
{
    char args[4096], path[4096], *text = NULL;
    cJSON *rep, *ver;
    const cJSON *t, *vlist;
    int n_quant = 0, n = 0;
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json %s", src, out,
             verify_args);
    ck_assert_int_eq(qbt_run_line(args, &text), 0);
    ver = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(ver);
    snprintf(path, sizeof path, "%s/quantbridge-report.json", out);
    text = qbt_read_file(path, NULL);
    ck_assert_msg(text != NULL, "%s: missing", path);
    rep = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(rep);
    ck_assert_str_eq(member(rep, "format")->valuestring, format);
    vlist = member(ver, "tensors");
    cJSON_ArrayForEach(t, member(rep, "tensors")) {
        const char *name = member(t, "name")->valuestring;
        const char *action = member(t, "action")->valuestring;
        const cJSON *v = find_tensor(vlist, name);
        ck_assert_msg(v != NULL, "%s: not in verify's list", name);
        n++;
        if (strcmp(action, "exact") == 0) {
            ck_assert_msg(cJSON_IsTrue(member(v, "exact")), "%s: reported exact, verify differs",
                          name);
            ck_assert(member(t, "rel_rmse")->valuedouble == 0.0 &&
                      member(t, "max_abs_error")->valuedouble == 0.0);
        } else if (strcmp(action, "quantized") == 0) {
            double rr = member(t, "rel_rmse")->valuedouble;
            double ma = member(t, "max_abs_error")->valuedouble;
            double vr = member(v, "rel_rmse")->valuedouble;
            double vm = member(v, "max_abs_err")->valuedouble;
            ck_assert_msg((vr > 0 || rr == 0.0) && fabs(rr - vr) <= 1e-3 * vr, "%s: rel_rmse %g, verify %g", name,
                          rr, vr);
            ck_assert_msg(fabs(ma - vm) <= 1e-6 * vm + 1e-9, "%s: max abs %g, verify %g", name, ma,
                          vm);
            n_quant++;
        } else {
            ck_assert_str_eq(action, "dense");
        }
    }
    ck_assert_int_eq(n, member(ver, "n_compared")->valueint);
    cJSON_Delete(rep);
    cJSON_Delete(ver);
    return n_quant;
}
