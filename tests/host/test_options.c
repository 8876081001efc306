/* options.c: typed parsing and checks, parameter arrays with precedence
 * default < config < command line, per-role arrays, routing to the roles
 * of a run (reader.K / writer.K, unknown and ambiguous keys). */
#include <math.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_host_log.h"

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

    ck_assert_int_eq(qbh_params_build(&d, QB_OPTION_ROLE_WRITER, &pc, NULL, 0, &ps), QB_OK);
    ck_assert_uint_eq(ps.n, 5);
    ck_assert_int_eq(ps.items[5].type, QB_PARAM_END);
    ck_assert_int_eq(qb_param_find(ps.items, "group_size")->v.i, 32);
    p = qb_param_find(ps.items, "damp");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->is_set, 0);
    ck_assert_str_eq(qb_param_find(ps.items, "rule")->v.s, "absmax");
    ck_assert_int_eq(qb_param_find(ps.items, "budget")->v.i, 1LL << 30);
    qbh_params_free(&ps);

    ck_assert_int_eq(qbh_params_build(&d, QB_OPTION_ROLE_WRITER, &pc, cli, 1, &ps), QB_OK);
    ck_assert_int_eq(qb_param_find(ps.items, "group_size")->v.i, 64);
    ck_assert_int_eq(cli[0].used, 1);
    qbh_params_free(&ps);

    kv[0].value = "abc";
    ck_assert_int_eq(qbh_params_build(&d, QB_OPTION_ROLE_WRITER, &pc, NULL, 0, &ps), QB_E_INVALID);
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
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "no option bogus for reader rd or writer wd"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "valid keys: reader rd: bias; writer wd: "
                                                      "flag, group_size, damp, rule, budget"));

    cli[1].value = "2048";
    ck_assert_int_eq(qbh_params_route(&rp, &wp, cli, 2, &a, &b, &usage), QB_E_INVALID);
    ck_assert_int_eq(usage, 1);
}
END_TEST

/* A plugin both reader and writer, as hf-dense: options per role, one
 * of each kind, plus a 1.0-sized declaration (whose roles field is not
 * there: both, whatever bytes follow it). */
static const qb_reader_vtable dummy_reader;
static const qb_writer_vtable dummy_writer;
static const qb_option_decl r_zero = {sizeof(qb_option_decl), "zero", QB_PARAM_STRING, "auto",
                                      "", "auto|v1", 0, -1, QB_OPTION_ROLE_READER};
static const qb_option_decl w_dtype = {sizeof(qb_option_decl), "dtype", QB_PARAM_STRING, "f16",
                                       "", "f16|bf16", 0, -1, QB_OPTION_ROLE_WRITER};
static const qb_option_decl b_note = {sizeof(qb_option_decl), "note", QB_PARAM_STRING, "n",
                                      "", NULL, 0, -1, 0};
static const qb_option_decl old_decl = {QB_OPTION_DECL_SIZE_1_0, "legacy", QB_PARAM_INT, "1", "",
                                        NULL, 0, 9, QB_OPTION_ROLE_WRITER};
static const qb_option_decl *const hf_opts[] = {&r_zero, &w_dtype, &b_note, &old_decl, NULL};

static const qb_option_decl sm_group = {sizeof(qb_option_decl), "group_size", QB_PARAM_INT,
                                        "128", "", NULL, 1, 4096, QB_OPTION_ROLE_WRITER};
static const qb_option_decl sm_rule = {sizeof(qb_option_decl), "quant_rule", QB_PARAM_STRING,
                                       "auto", "", "auto|absmax", 0, -1, QB_OPTION_ROLE_WRITER};
static const qb_option_decl *const sm_opts[] = {&sm_group, &sm_rule, NULL};

typedef struct run2 {
    qb_plugin hd, sd;
    qbh_plugin_conf hc, sc;
    qbh_plugin hf, sm;
    qbh_plugin *list[2];
    qbh_registry reg;
} run2;

/* hf-dense (reader + writer) and sm86 (writer), in one registry. */
static void run2_init(run2 *r)
{
    memset(r, 0, sizeof *r);
    r->hd.struct_size = sizeof r->hd;
    r->hd.name = "hf";
    r->hd.reader = &dummy_reader;
    r->hd.writer = &dummy_writer;
    r->hd.options = hf_opts;
    r->sd = r->hd;
    r->sd.name = "sm";
    r->sd.reader = NULL;
    r->sd.options = sm_opts;
    r->hc.name = "hf";
    r->sc.name = "sm";
    r->hf.name = "hf";
    r->hf.desc = &r->hd;
    r->hf.conf = &r->hc;
    r->sm.name = "sm";
    r->sm.desc = &r->sd;
    r->sm.conf = &r->sc;
    r->list[0] = &r->hf;
    r->list[1] = &r->sm;
    r->reg.plugins = r->list;
    r->reg.n_plugins = 2;
    r->hf.reg = r->sm.reg = &r->reg;
}

START_TEST(roles_and_1_0_declarations)
{
    run2 r;
    qbh_params ps;
    run2_init(&r);
    ck_assert_uint_eq(qbh_option_roles(&r_zero), QB_OPTION_ROLE_READER);
    ck_assert_uint_eq(qbh_option_roles(&b_note), QB_OPTION_ROLE_BOTH);
    ck_assert_uint_eq(qbh_option_roles(&old_decl), QB_OPTION_ROLE_BOTH);

    ck_assert_int_eq(qbh_params_build(&r.hd, QB_OPTION_ROLE_READER, NULL, NULL, 0, &ps), QB_OK);
    ck_assert_uint_eq(ps.n, 3);
    ck_assert_ptr_nonnull(qb_param_find(ps.items, "zero"));
    ck_assert_ptr_nonnull(qb_param_find(ps.items, "note"));
    ck_assert_ptr_nonnull(qb_param_find(ps.items, "legacy"));
    ck_assert_ptr_null(qb_param_find(ps.items, "dtype"));
    qbh_params_free(&ps);

    ck_assert_int_eq(qbh_params_build(&r.hd, QB_OPTION_ROLE_WRITER, NULL, NULL, 0, &ps), QB_OK);
    ck_assert_uint_eq(ps.n, 3);
    ck_assert_str_eq(qb_param_find(ps.items, "dtype")->v.s, "f16");
    ck_assert_ptr_nonnull(qb_param_find(ps.items, "note"));
    ck_assert_ptr_null(qb_param_find(ps.items, "zero"));
    qbh_params_free(&ps);
}
END_TEST

/* The reported bug: the writer's option of a reader+writer plugin reached
 * its reader, which ignored it. Now no role of the run declares it. */
START_TEST(writer_option_of_the_reader_plugin_is_usage_error)
{
    run2 r;
    qbh_params a, b;
    int usage = 0;
    qbh_opt cli[1] = {{"dtype", "bf16", "--option", 0}};
    run2_init(&r);
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.sm, cli, 1, &a, &b, &usage), QB_E_NOT_FOUND);
    ck_assert_int_eq(usage, 1);
    ck_assert_msg(strstr(qbh_error_message(), "--option dtype: no option dtype for reader hf or "
                                              "writer sm; valid keys: reader hf: zero, note, "
                                              "legacy; writer sm: group_size, quant_rule") != NULL,
                  "%s", qbh_error_message());
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "(declared by writer hf)"));
    ck_assert_ptr_null(a.items);
    ck_assert_ptr_null(b.items);

    /* The same option with hf as the writer reaches its writer only. */
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, cli, 1, &a, &b, &usage), QB_OK);
    ck_assert_ptr_null(qb_param_find(a.items, "dtype"));
    ck_assert_str_eq(qb_param_find(b.items, "dtype")->v.s, "bf16");
    qbh_params_free(&a);
    qbh_params_free(&b);
}
END_TEST

START_TEST(qualified_keys)
{
    run2 r;
    qbh_params a, b;
    int usage = 0;
    qbh_opt cli[3] = {{"reader.note", "for-r", "--option", 0},
                      {"writer.note", "for-w", "--option", 0},
                      {"note", "both", "--option", 0}};
    run2_init(&r);
    /* hf as both roles: its one "note" declaration serves both. */
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, cli + 2, 1, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(a.items, "note")->v.s, "both");
    ck_assert_str_eq(qb_param_find(b.items, "note")->v.s, "both");
    qbh_params_free(&a);
    qbh_params_free(&b);
    /* Qualified: each role its own value; order on the line decides. */
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, cli, 2, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(a.items, "note")->v.s, "for-r");
    ck_assert_str_eq(qb_param_find(b.items, "note")->v.s, "for-w");
    ck_assert_int_eq(cli[0].used, 1);
    ck_assert_int_eq(cli[1].used, 1);
    qbh_params_free(&a);
    qbh_params_free(&b);
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, cli, 3, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(a.items, "note")->v.s, "both");
    qbh_params_free(&a);
    qbh_params_free(&b);

    /* writer.K names the writer role: hf's writer has no "zero". */
    cli[0].key = "writer.zero";
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.sm, cli, 1, &a, &b, &usage), QB_E_NOT_FOUND);
    ck_assert_int_eq(usage, 1);
    ck_assert_msg(strstr(qbh_error_message(), "--option writer.zero: no option zero for writer "
                                              "sm; valid keys: writer sm: group_size") != NULL,
                  "%s", qbh_error_message());
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "(declared by reader hf)"));
    /* A run without a writer (inspect, verify). */
    cli[0].key = "writer.dtype";
    ck_assert_int_eq(qbh_params_route(&r.hf, NULL, cli, 1, &a, &b, &usage), QB_E_NOT_FOUND);
    ck_assert_int_eq(usage, 1);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "this command has no writer"));
    cli[0].key = "reader.zero";
    cli[0].value = "v1";
    ck_assert_int_eq(qbh_params_route(&r.hf, NULL, cli, 1, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(a.items, "zero")->v.s, "v1");
    ck_assert_ptr_null(b.items);
    qbh_params_free(&a);
}
END_TEST

START_TEST(ambiguous_key_asks_to_qualify)
{
    static const qb_option_decl r_x = {sizeof(qb_option_decl), "threads", QB_PARAM_INT, "1", "",
                                       NULL, 1, 64, QB_OPTION_ROLE_READER};
    static const qb_option_decl w_x = {sizeof(qb_option_decl), "threads", QB_PARAM_INT, "2", "",
                                       NULL, 1, 64, QB_OPTION_ROLE_WRITER};
    static const qb_option_decl *const two[] = {&r_x, &w_x, NULL};
    static const qb_option_decl *const w_only[] = {&w_x, NULL};
    run2 r;
    qbh_params a, b;
    int usage = 0;
    qbh_opt cli[1] = {{"threads", "4", "--option", 0}};
    run2_init(&r);
    /* Different plugins. */
    r.hd.options = two;
    r.sd.options = w_only;
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.sm, cli, 1, &a, &b, &usage), QB_E_INVALID);
    ck_assert_int_eq(usage, 1);
    ck_assert_msg(strstr(qbh_error_message(), "both the reader hf and the writer sm declare "
                                              "option threads; say which: reader.threads=4 or "
                                              "writer.threads=4") != NULL,
                  "%s", qbh_error_message());
    /* One plugin, two declarations (one per role): still two options. */
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, cli, 1, &a, &b, &usage), QB_E_INVALID);
    ck_assert_int_eq(usage, 1);
    cli[0].key = "writer.threads";
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.sm, cli, 1, &a, &b, &usage), QB_OK);
    ck_assert_int_eq(qb_param_find(a.items, "threads")->v.i, 1);
    ck_assert_int_eq(qb_param_find(b.items, "threads")->v.i, 4);
    qbh_params_free(&a);
    qbh_params_free(&b);
}
END_TEST

START_TEST(config_options_per_role)
{
    run2 r;
    qbh_params a, b;
    int usage = 0;
    qbh_kv kv[3] = {{"dtype", "bf16"}, {"zero", "v1"}, {"nonsense", "1"}};
    qbt_host_log_install();
    run2_init(&r);
    r.hc.options = kv;
    r.hc.n_options = 2;
    /* hf as reader only: its writer's dtype is its own option (no warning)
     * and stays out of the reader's array. */
    qbt_host_log_reset();
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.sm, NULL, 0, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(a.items, "zero")->v.s, "v1");
    ck_assert_ptr_null(qb_param_find(a.items, "dtype"));
    ck_assert_int_eq(qbt_host_warn_count(), 0);
    qbh_params_free(&a);
    qbh_params_free(&b);
    /* hf as both: each role takes what it declares; an undeclared key is
     * warned about once, not once per role. */
    r.hc.n_options = 3;
    qbt_host_log_reset();
    ck_assert_int_eq(qbh_params_route(&r.hf, &r.hf, NULL, 0, &a, &b, &usage), QB_OK);
    ck_assert_str_eq(qb_param_find(b.items, "dtype")->v.s, "bf16");
    ck_assert_str_eq(qb_param_find(a.items, "zero")->v.s, "v1");
    ck_assert_int_eq(qbt_host_warn_count(), 1);
    ck_assert_ptr_nonnull(strstr(qbt_host_log_last(), "option.nonsense: not an option of plugin hf"));
    qbh_params_free(&a);
    qbh_params_free(&b);
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
    tcase_add_test(tc, roles_and_1_0_declarations);
    tcase_add_test(tc, writer_option_of_the_reader_plugin_is_usage_error);
    tcase_add_test(tc, qualified_keys);
    tcase_add_test(tc, ambiguous_key_asks_to_qualify);
    tcase_add_test(tc, config_options_per_role);
    suite_add_tcase(s, tc);
    return s;
}
