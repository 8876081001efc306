/*
 * The kit's strict JSON reading (sdk/kit/qbk_json.h) as the readers use it
 * directly, beside what tests/host/test_json.c checks through the host's
 * qb_json service: where a duplicate key stands (its object's own key),
 * integers told from their text, cJSON's saturated valueint, an allocation
 * refused by the admit hook, the wording of a refusal, and the reading of
 * a source model's config.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_json.h"
#include "qbt_check_main.h"
#include "qbt_host.h"

static qb_status parse(const char *text, cJSON **out, qbk_json_fail *f)
{
    return qbk_json_parse_text(text, strlen(text), NULL, out, f);
}

START_TEST(duplicate_names_its_object)
{
    cJSON *j = (cJSON *)1;
    qbk_json_fail f;
    ck_assert_int_eq(parse("{\"a\": {\"x\": 1}, \"w\": {\"t\": 1, \"u\": [{\"k\": 1, \"k\": 2}]}}", &j,
                           &f),
                     QB_E_FORMAT);
    ck_assert_ptr_null(j);
    ck_assert_str_eq(f.dup_key, "k");
    ck_assert_str_eq(f.dup_in, ""); /* the object is an array element */
    ck_assert_ptr_nonnull(strstr(f.reason, "duplicate key \"k\""));
    ck_assert_int_eq(parse("{\"weight_map\": {\"t\": \"a\", \"t\": \"b\"}}", &j, &f), QB_E_FORMAT);
    ck_assert_str_eq(f.dup_key, "t");
    ck_assert_str_eq(f.dup_in, "weight_map");
    ck_assert_uint_eq(f.offset, 26); /* the second "t" */
    ck_assert_int_eq(parse("{\"bits\": 4, \"bits\": 4}", &j, &f), QB_E_FORMAT);
    ck_assert_str_eq(f.dup_key, "bits");
    ck_assert_str_eq(f.dup_in, "");
    /* any other refusal leaves both empty */
    ck_assert_int_eq(parse("{\"n\": 1e400}", &j, &f), QB_E_FORMAT);
    ck_assert_str_eq(f.dup_key, "");
    ck_assert_ptr_nonnull(strstr(f.reason, "range of a double"));
}
END_TEST

START_TEST(integers_from_their_text)
{
    static const struct {
        const char *text;
        int is_int;
        int64_t v;
    } c[] = {{"4", 1, 4}, {"4.0", 1, 4}, {"4e0", 1, 4}, {"-0", 1, 0}, {"4.5", 0, 0},
             {"1e300", 0, 0}, {"9007199254740992", 1, 9007199254740992LL},
             {"9007199254740993", 0, 0}, {"-9007199254740992", 1, -9007199254740992LL}};
    size_t i;
    for (i = 0; i < sizeof c / sizeof c[0]; i++) {
        cJSON *j = NULL;
        qbk_json_fail f;
        int64_t v = -1;
        ck_assert_int_eq(parse(c[i].text, &j, &f), QB_OK);
        ck_assert_msg(qbk_json_int(j, &v) == c[i].is_int, "%s", c[i].text);
        if (c[i].is_int)
            ck_assert_msg(v == c[i].v, "%s gave %lld", c[i].text, (long long)v);
        cJSON_Delete(j);
    }
    ck_assert_int_eq(qbk_json_int(NULL, NULL), 0);
}
END_TEST

START_TEST(valueint_saturates_like_cjson)
{
    cJSON *j = NULL;
    qbk_json_fail f;
    ck_assert_int_eq(parse("[3.9, -3.9, 1e12, -1e12]", &j, &f), QB_OK);
    ck_assert_int_eq(cJSON_GetArrayItem(j, 0)->valueint, 3);
    ck_assert_int_eq(cJSON_GetArrayItem(j, 1)->valueint, -3);
    ck_assert_int_eq(cJSON_GetArrayItem(j, 2)->valueint, INT32_MAX);
    ck_assert_int_eq(cJSON_GetArrayItem(j, 3)->valueint, INT32_MIN);
    ck_assert(cJSON_GetArrayItem(j, 2)->valuedouble == 1e12);
    cJSON_Delete(j);
}
END_TEST

static int admit_left;
static int admit(void)
{
    return admit_left-- > 0;
}

START_TEST(refused_allocation_is_nomem)
{
    const char *text = "{\"a\": [1, 2, {\"b\": \"c\"}], \"d\": \"e\"}";
    cJSON *j = NULL;
    qbk_json_fail f;
    int n, refused = 0;
    /* every allocation point, one after the other, refused once */
    for (n = 0; n < 64; n++) {
        admit_left = n;
        if (qbk_json_parse_text(text, strlen(text), admit, &j, &f) == QB_OK) {
            cJSON_Delete(j);
            break;
        }
        ck_assert_int_eq(f.rc, QB_E_NOMEM);
        ck_assert_ptr_null(j);
        refused++;
    }
    ck_assert_int_gt(refused, 5);
    ck_assert_int_lt(n, 64);
}
END_TEST

START_TEST(the_wording_of_a_refusal)
{
    cJSON *j = NULL;
    const qb_host *h = qbt_host();
    char buf[512];
    qbk_json_fail f;
    qbt_host_clear_error();
    ck_assert_int_eq(qbk_json_parse(h, "/m/config.json", "{\"a\": 01}", 9, &j), QB_E_FORMAT);
    ck_assert_str_eq(qbt_host_last_error(),
                     "/m/config.json: invalid JSON at byte 6: number with a leading zero");
    ck_assert_int_eq(qbk_json_parse_object(h, "/m/x.json", "[1]", 3, &j), QB_E_FORMAT);
    ck_assert_str_eq(qbt_host_last_error(), "/m/x.json: not a JSON object");
    ck_assert_ptr_null(j);
    ck_assert_int_eq(qbk_json_parse_config(h, "/src", NULL, &j), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "/src: config.json: missing"));
    ck_assert_int_eq(qbk_json_parse_config(h, "/src", "{\"a\": 1, \"a\": 2}", &j), QB_E_FORMAT);
    ck_assert_str_eq(qbt_host_last_error(), "/src: config.json: invalid JSON at byte 9: duplicate "
                                            "key \"a\" (a key may appear once per object)");
    ck_assert_int_eq(qbk_json_parse_config(h, "/src", "{\"a\": 1}", &j), QB_OK);
    cJSON_Delete(j);
    f.rc = QB_E_NOMEM;
    f.offset = 3;
    qbk_json_fail_text(&f, NULL, buf, sizeof buf);
    ck_assert_str_eq(buf, "JSON text: out of memory parsing JSON (at byte 3)");
    ck_assert_ptr_null(qbk_json_parse_quiet("{,}", 3));
    ck_assert_ptr_null(qbk_json_parse_quiet(NULL, 0));
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("qbk-json");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, duplicate_names_its_object);
    tcase_add_test(tc, integers_from_their_text);
    tcase_add_test(tc, valueint_saturates_like_cjson);
    tcase_add_test(tc, refused_allocation_is_nomem);
    tcase_add_test(tc, the_wording_of_a_refusal);
    suite_add_tcase(s, tc);
    return s;
}
