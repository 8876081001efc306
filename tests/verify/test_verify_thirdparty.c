/*
 * A third-party writer gets the same verify as the native one: the "tq"
 * pair (tq_plugin.c, registered with --plugin-dir, built against the SDK
 * alone) declares its quantized tensors exact the two ways a plugin can
 * (docs/plugin-design.md, "Declarations for verify"), and verify holds
 * them, and only them, to bit equality:
 *   - its reader's metadata view ("quantbridge.exact:NAME"): `verify`
 *     judges every decoder-layer weight by the exact rule, the model
 *     verdict is "exact codes", and one flipped bit in one of them fails
 *     that tensor (exit 3);
 *   - its writer's plan alone (the reader told to declare nothing):
 *     `convert --verify` takes the plan's exact entries and says "exact
 *     codes"; `verify` of the same output, without the plan, knows no rule
 *     for those tensors.
 * The values are the source's, so "exact" is true; the flipped bit is the
 * independent evidence that the rule is applied, not assumed.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen_hf_dense.h"
#include "vt_util.h"

static char *tmp;
static char src[4096];
static const char *pdir;

static void setup(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 128, .tied = 0, .shards = 1, .seed = 3};
    pdir = getenv("QBT_TQ_DIR");
    ck_assert_ptr_nonnull(pdir);
    tmp = vt_tmpdir("tq");
    snprintf(src, sizeof src, "%s/src", tmp);
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
}

static void teardown(void)
{
    vt_rmtree(tmp);
    free(tmp);
}

/* quantbridge --plugin-dir PDIR ARGS: exit status, stdout and stderr. */
static int run(const char *args, char **out, char **err)
{
    char line[16384];
    snprintf(line, sizeof line, "--plugin-dir '%s' %s", pdir, args);
    return vt_run(line, out, err);
}

static void convert(const char *to, const char *extra)
{
    char args[12288], *out, *err;
    int rc;
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer tq %s", src, to,
             extra);
    rc = run(args, &out, &err);
    ck_assert_msg(rc == 0, "%s -> %d\n%s%s", args, rc, out, err);
    free(out);
    free(err);
}

static int verify_json(const char *conv, cJSON **j)
{
    char args[12288], *out, *err;
    int rc;
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json", src, conv);
    rc = run(args, &out, &err);
    *j = cJSON_Parse(out);
    ck_assert_msg(*j != NULL, "%s -> %d: stdout is not JSON: %s%s", args, rc, out, err);
    free(out);
    free(err);
    return rc;
}

static cJSON *tensor(cJSON *j, const char *name)
{
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0)
            return t;
    }
    ck_abort_msg("no tensor %s in the report", name);
    return NULL;
}

static const char *str(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    ck_assert_msg(cJSON_IsString(v), "no string %s", key);
    return v->valuestring;
}

/* 1 for a decoder layer's 2-D weight: what tq stores "quantized". */
static int layer_weight(cJSON *t)
{
    const char *n = str(t, "name");
    size_t len = strlen(n);
    return strncmp(n, "model.layers.", 13) == 0 && len > 7 && !strcmp(n + len - 7, ".weight") &&
           cJSON_GetArraySize(cJSON_GetObjectItem(t, "shape")) == 2;
}

/* Every layer weight judged by `rule`, every other tensor not; n of them. */
static int rules(cJSON *j, const char *rule)
{
    cJSON *t;
    int n = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        if (layer_weight(t)) {
            ck_assert_msg(!strcmp(str(t, "rule"), rule), "%s: rule %s, not %s", str(t, "name"),
                          str(t, "rule"), rule);
            n++;
        } else {
            ck_assert_msg(strcmp(str(t, "rule"), "exact") != 0, "%s: judged exact",
                          str(t, "name"));
        }
    }
    return n;
}

/* The file tq wrote `name` into (its tq.json). */
static char *tq_file(const char *dir, const char *name)
{
    char *text = vt_slurp(vt_path(dir, "tq.json"), NULL), *path = NULL;
    cJSON *m = cJSON_Parse(text), *e;
    ck_assert_ptr_nonnull(m);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "tensors"))
    {
        if (!strcmp(str(e, "name"), name))
            path = strdup(vt_path(dir, str(e, "file")));
    }
    ck_assert_msg(path != NULL, "tq.json lists no %s", name);
    cJSON_Delete(m);
    free(text);
    return path;
}

START_TEST(reader_declarations)
{
    char out[4200], *file, *b;
    const char *q = "model.layers.1.self_attn.q_proj.weight";
    size_t len;
    cJSON *j, *t;
    snprintf(out, sizeof out, "%s/tq", tmp);
    convert(out, "");
    ck_assert_int_eq(verify_json(out, &j), 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "pass")));
    /* 2 layers x 7 linears, each declared by the reader and bit-equal */
    ck_assert_int_eq(rules(j, "exact"), 14);
    t = tensor(j, q);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "exact")));
    ck_assert_str_eq(str(t, "converted_encoding"), "tq-code");
    ck_assert_str_eq(str(tensor(j, "model.norm.weight"), "rule"), "nearest");
    ck_assert_str_eq(str(cJSON_GetObjectItem(j, "model_verdict"), "verdict"), "exact_codes");
    cJSON_Delete(j);

    /* one bit of one declared tensor: that tensor fails, nothing else */
    file = tq_file(out, q);
    b = vt_slurp(file, &len);
    ck_assert_uint_ge(len, 64);
    b[41] ^= 0x01; /* a low mantissa bit of element 10 */
    vt_spit(file, b, len);
    free(b);
    ck_assert_int_eq(verify_json(out, &j), 3);
    t = tensor(j, q);
    ck_assert_str_eq(str(t, "status"), "FAIL");
    ck_assert_msg(strstr(str(t, "reason"), "declares it exact but 1 element(s) differ"), "%s",
                  str(t, "reason"));
    ck_assert_int_eq((int)cJSON_GetObjectItem(j, "n_failed")->valuedouble, 1);
    cJSON_Delete(j);
    free(file);
}
END_TEST

START_TEST(plan_declarations)
{
    char out[4200], args[12288], *o, *e;
    cJSON *j;
    int rc;
    snprintf(out, sizeof out, "%s/tq-plan", tmp);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer tq --option "
             "writer.declare=false --verify", src, out);
    rc = run(args, &o, &e);
    ck_assert_msg(rc == 0, "%d\n%s%s", rc, o, e);
    /* the plan declared the 14 linears exact: every quantized tensor exact */
    ck_assert_msg(strstr(o, "verify: PASS: 21 tensors compared, 21 exact"), "%s", o);
    ck_assert_msg(strstr(o, "model verdict: exact codes"), "%s", o);
    free(o);
    free(e);
    /* verify alone has no plan and the reader declares nothing: no rule */
    ck_assert_int_eq(verify_json(out, &j), 0);
    ck_assert_int_eq(rules(j, "none"), 14);
    ck_assert_str_ne(str(cJSON_GetObjectItem(j, "model_verdict"), "verdict"), "exact_codes");
    cJSON_Delete(j);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("verify_thirdparty");
    TCase *tc = tcase_create("tq");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, reader_declarations);
    tcase_add_test(tc, plan_declarations);
    suite_add_tcase(s, tc);
    return s;
}
