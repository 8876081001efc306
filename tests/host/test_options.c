/* options.c: typed parsing and checks, parameter arrays with precedence
 * default < config < command line, routing to reader/writer. */
#include <math.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"

static const qb_option_decl o_bool = {sizeof(qb_option_decl), "flag", QB_PARAM_BOOL, "false",
                                      "a flag", NULL, 0, -1, 0};
static const qb_option_decl o_int = {sizeof(qb_option_decl), "group_size", QB_PARAM_INT, "128",
                                     "group", NULL, 16, 1024, 0};
static const qb_option_decl o_dbl = {sizeof(qb_option_decl), "damp", QB_PARAM_DOUBLE, NULL,
                                     "no default", NULL, 0, -1, 0};
static const qb_option_decl o_str = {sizeof(qb_option_decl), "rule", QB_PARAM_STRING, "absmax",
                                     "rule", "absmax|search", 0, -1, 0};
static const qb_option_decl o_size = {sizeof(qb_option_decl), "budget", QB_PARAM_SIZE, "1GiB",
                                      "bytes", NULL, 1, 1LL << 40, 0};
static const qb_option_decl *const all[] = {&o_bool, &o_int, &o_dbl, &o_str, &o_size, NULL};

START_TEST(parse_types)
{
    qb_param p;
    ck_assert_int_eq(qbh_option_parse(&o_bool, "yes", "t", &p), QB_OK);
    ck_assert_int_eq(p.v.b, 1);
    ck_assert_int_eq(qbh_option_parse(&o_bool, "0", "t", &p), QB_OK);
    ck_assert_int_eq(p.v.b, 0);
    ck_assert_int_eq(qbh_option_parse(&o_bool, "2", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_int, "64", "t", &p), QB_OK);
    ck_assert_int_eq(p.v.i, 64);
    ck_assert_int_eq(p.is_set, 1);
    ck_assert_int_eq(qbh_option_parse(&o_int, "8", "--group-size", &p), QB_E_INVALID);
    ck_assert_str_eq(qbh_error_message(), "--group-size: option group_size: 8 outside [16, 1024]");
    ck_assert_int_eq(qbh_option_parse(&o_int, "64k", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_int, "", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_int, "99999999999999999999", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_dbl, "0.01", "t", &p), QB_OK);
    ck_assert(fabs(p.v.d - 0.01) < 1e-15);
    ck_assert_int_eq(qbh_option_parse(&o_dbl, "nan", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_dbl, "1e999", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_str, "search", "t", &p), QB_OK);
    ck_assert_str_eq(p.v.s, "search");
    ck_assert_int_eq(qbh_option_parse(&o_str, "absma", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_str, "absmax|search", "t", &p), QB_E_INVALID);
    ck_assert_int_eq(qbh_option_parse(&o_size, "500MiB", "t", &p), QB_OK);
    ck_assert_int_eq(p.v.i, 500LL * 1024 * 1024);
    ck_assert_int_eq(qbh_option_parse(&o_size, "0", "t", &p), QB_E_INVALID);
}
END_TEST

START_TEST(sizes)
{
    int64_t v;
    ck_assert_int_eq(qbh_parse_size("4096", &v), QB_OK);
    ck_assert_int_eq(v, 4096);
    ck_assert_int_eq(qbh_parse_size("5GB", &v), QB_OK);
    ck_assert_int_eq(v, 5000000000LL);
    ck_assert_int_eq(qbh_parse_size("2 gib", &v), QB_OK);
    ck_assert_int_eq(v, 2LL << 30);
    ck_assert_int_eq(qbh_parse_size("3TiB", &v), QB_OK);
    ck_assert_int_eq(v, 3LL << 40);
    ck_assert_int_eq(qbh_parse_size("-1", &v), QB_E_INVALID);
    ck_assert_int_eq(qbh_parse_size("1.5GB", &v), QB_E_INVALID);
    ck_assert_int_eq(qbh_parse_size("10PB", &v), QB_E_INVALID);
    ck_assert_int_eq(qbh_parse_size("9999999999999TiB", &v), QB_E_INVALID);
}
END_TEST

static qb_plugin desc_named(const char *name)
{
    qb_plugin d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = name;
    d.options = all;
    return d;
}

START_TEST(build_precedence_and_defaults)
{
    qb_plugin d = desc_named("w");
    qbh_kv kv[2] = {{"group_size", "32"}, {"unknown_key", "1"}};
    qbh_plugin_conf pc;
    qbh_opt cli[1] = {{"group_size", "64", "--group-size", 0}};
    qbh_params ps;
    const qb_param *p;
    memset(&pc, 0, sizeof pc);
    pc.name = "w";
    pc.options = kv;
    pc.n_options = 2;

    ck_assert_int_eq(qbh_params_build(&d, &pc, NULL, 0, &ps), QB_OK);
    ck_assert_uint_eq(ps.n, 5);
    ck_assert_int_eq(ps.items[5].type, QB_PARAM_END);
    ck_assert_int_eq(qb_param_find(ps.items, "group_size")->v.i, 32);
    p = qb_param_find(ps.items, "damp");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->is_set, 0);
    ck_assert_str_eq(qb_param_find(ps.items, "rule")->v.s, "absmax");
    ck_assert_int_eq(qb_param_find(ps.items, "budget")->v.i, 1LL << 30);
    qbh_params_free(&ps);

    ck_assert_int_eq(qbh_params_build(&d, &pc, cli, 1, &ps), QB_OK);
    ck_assert_int_eq(qb_param_find(ps.items, "group_size")->v.i, 64);
    ck_assert_int_eq(cli[0].used, 1);
    qbh_params_free(&ps);

    kv[0].value = "abc";
    ck_assert_int_eq(qbh_params_build(&d, &pc, NULL, 0, &ps), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "config [plugin:w] option.group_size"));
    ck_assert_ptr_null(ps.items);
}
END_TEST

START_TEST(routing)
{
    static const qb_option_decl r_only = {sizeof(qb_option_decl), "bias", QB_PARAM_DOUBLE, "0",
                                          "", NULL, 0, -1, 0};
    static const qb_option_decl *const r_opts[] = {&r_only, NULL};
    qb_plugin rd = desc_named("rd"), wd = desc_named("wd");
    qbh_plugin_conf rc_ = {0}, wc_ = {0};
    qbh_plugin rp, wp;
    qbh_params a, b;
    int usage = 0;
    qbh_opt cli[3] = {{"bias", "2.5", "--option", 0}, {"group_size", "256", "--group-size", 0},
                      {"bogus", "1", "--option", 0}};
    rd.options = r_opts;
    rc_.name = "rd";
    wc_.name = "wd";
    memset(&rp, 0, sizeof rp);
    memset(&wp, 0, sizeof wp);
    rp.name = "rd";
    rp.desc = &rd;
    rp.conf = &rc_;
    wp.name = "wd";
    wp.desc = &wd;
    wp.conf = &wc_;

    ck_assert_int_eq(qbh_params_route(&rp, &wp, cli, 2, &a, &b, &usage), QB_OK);
    ck_assert(qb_param_find(a.items, "bias")->v.d == 2.5);
    ck_assert_ptr_null(qb_param_find(a.items, "group_size"));
    ck_assert_int_eq(qb_param_find(b.items, "group_size")->v.i, 256);
    qbh_params_free(&a);
    qbh_params_free(&b);

    ck_assert_int_eq(qbh_params_route(&rp, &wp, cli, 3, &a, &b, &usage), QB_E_NOT_FOUND);
    ck_assert_int_eq(usage, 1);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "--option bogus"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "bias (rd), flag (wd), group_size (wd)"));

    cli[1].value = "2048";
    ck_assert_int_eq(qbh_params_route(&rp, &wp, cli, 2, &a, &b, &usage), QB_E_INVALID);
    ck_assert_int_eq(usage, 1);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, parse_types);
    tcase_add_test(tc, sizes);
    tcase_add_test(tc, build_precedence_and_defaults);
    tcase_add_test(tc, routing);
    suite_add_tcase(s, tc);
    return s;
}
