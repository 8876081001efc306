/*
 * `quantbridge plugin-check` through the built binary.
 *
 * Case "own" (test_plugin_check): the plugins of this folder's
 * CMakeLists.txt -- the good fake reader+writer, the frozen ABI 1.0
 * plugin and the good planted-bug plugin pass every check; each broken one
 * fails the check that catches it with the reason (a crashing or hanging
 * probe, an ABI-2-only entry, a plugin that needs a newer ABI, a finish
 * that leaks host memory always or when it fails, a writer that crashes
 * when the sink fails, and the planted-bug corpus of planted_plugin.c:
 * buffer overruns in serial reads, leaked JSON trees and listings, wrong
 * output values, ignored sink and service failures, a plan that crashes,
 * refuses, lies about its bytes or leaves a tensor out); usage errors
 * exit 2.
 * Case "shipped" (test_plugin_check_<plugin>, one per plugins/ folder):
 * $QBT_PC_LIB passes every check, with a sample written by the project's
 * generators where sample_recipes[] knows the plugin (the same fixtures
 * tests/faults converts).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <quantbridge/qb_abi.h>

#include "qbt_fs.h"
#include "qbt_run.h"

/* ---- helpers --------------------------------------------------------------- */

static char *test_lib(const char *id)
{
    const char *d = getenv("QBT_PC_DIR");
    char *p;
    ck_assert_msg(d && *d, "QBT_PC_DIR not set");
    ck_assert(asprintf(&p, "%s/libqb_%s.so", d, id) > 0);
    return p;
}

/* plugin-check with argv (after the command name); stdout and stderr kept
 * apart: the report is stdout. */
/* Runs plugin-check with its own empty $TMPDIR and asserts that nothing is
 * left in it: a check child ends with _exit, so what a reader made at open
 * (the gguf reader's rebuilt tokenizer directory) goes only through close. */
static void plugin_check(qbt_result *r, const char *const *args)
{
    const char *argv[16];
    char env_tmp[4200];
    const char *tmp = qbt_scratch("pc-tmpdir");
    DIR *d;
    struct dirent *e;
    size_t n = 0;
    argv[n++] = "plugin-check";
    while (*args && n < 15)
        argv[n++] = *args++;
    argv[n] = NULL;
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
    qbt_run_ex(r, &(qbt_run_opts){.timeout_s = 500, .env = (const char *const[]){env_tmp, NULL}},
               argv);
    ck_assert_msg(!r->timed_out, "plugin-check timed out:\n%s\n%s", r->out, r->err);
    d = opendir(tmp);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        ck_assert_msg(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0,
                      "plugin-check left %s/%s behind", tmp, e->d_name);
    closedir(d);
}

/* The line of check `name` (from the start of a line), or NULL. */
static const char *line_of(const char *out, const char *verdict, const char *name)
{
    char needle[128];
    const char *p = out;
    snprintf(needle, sizeof needle, "%s %s: ", verdict, name);
    while (p && *p) {
        if (strncmp(p, needle, strlen(needle)) == 0)
            return p;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

static void assert_line(const qbt_result *r, const char *verdict, const char *name,
                        const char *says)
{
    const char *l = line_of(r->out, verdict, name);
    const char *e = l ? strchr(l, '\n') : NULL;
    ck_assert_msg(l, "no \"%s %s\" line:\n%s\nstderr:\n%s", verdict, name, r->out, r->err);
    if (says)
        ck_assert_msg(memmem(l, e ? (size_t)(e - l) : strlen(l), says, strlen(says)),
                      "\"%s %s\" does not say \"%s\":\n%s", verdict, name, says, r->out);
}

static int count_verdicts(const char *out, const char *verdict)
{
    char needle[16];
    int n = 0;
    const char *p = out;
    snprintf(needle, sizeof needle, "%s ", verdict);
    while (p && *p) {
        if (strncmp(p, needle, strlen(needle)) == 0)
            n++;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return n;
}

/* A file the fake reader reads (its FAKEMODEL magic). */
static char *fake_sample(void)
{
    char *p = qbt_path(qbt_scratch("pc-fake"), "model.fake");
    qbt_write_file(p, "FAKEMODEL\n");
    return p;
}

/* Every check of a reader+writer, with a sample, passed (or was skipped
 * for a reason that is no failure). */
static void assert_all_pass(const qbt_result *r)
{
    static const char *const checks[] = {
        "load", "descriptor", "options", "probe-file", "probe-dir", "probe-empty",
        "probe-missing", "probe-random", "probe-truncated", "probe-sample", "reader-open",
        "reader-rows", "reader-close", "writer-convert", "writer-sink-fail", "writer-alloc-fail",
        "writer-sink-create-fail", "writer-sink-write-fail", "writer-sink-close-fail",
        "writer-service-fail",
    };
    char neg[32];
    size_t i;
    int m;
    ck_assert_msg(r->status == 0, "exit %d:\n%s\nstderr:\n%s", r->status, r->out, r->err);
    ck_assert_msg(count_verdicts(r->out, "FAIL") == 0, "%s", r->out);
    for (i = 0; i < sizeof checks / sizeof checks[0]; i++)
        assert_line(r, "PASS", checks[i], NULL);
    for (m = 0; m <= QB_ABI_MINOR; m++) {
        snprintf(neg, sizeof neg, "negotiation %d.%d", QB_ABI_MAJOR, m);
        assert_line(r, "PASS", neg, NULL);
    }
    ck_assert_msg(strstr(r->out, "plugin-check: ") && strstr(r->out, " 0 failed"), "%s", r->out);
}

/* ---- the test plugins ------------------------------------------------------ */

START_TEST(good_plugin_passes_every_check)
{
    char *lib = test_lib("pc_fake"), *sample = fake_sample();
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, "--sample", sample, NULL});
    assert_all_pass(&r);
    assert_line(&r, "PASS", "probe-sample", "scores 100");
    assert_line(&r, "PASS", "reader-rows", "3 tensors");
    /* the fake reader has no grids and does not declare concurrent reads */
    assert_line(&r, "SKIP", "reader-grid", "no tensor");
    assert_line(&r, "SKIP", "reader-concurrent", "QB_PLUGIN_CONCURRENT_READS");
    assert_line(&r, "PASS", "writer-alloc-fail", "each an error with everything released");
    qbt_result_free(&r);
    /* without a sample the reader contract is skipped, and that is no failure */
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 0, "%s", r.out);
    assert_line(&r, "SKIP", "reader-contract", "no --sample");
    assert_line(&r, "SKIP", "probe-truncated", "no --sample");
    qbt_result_free(&r);
    free(sample);
    free(lib);
}
END_TEST

START_TEST(frozen_abi_1_0_plugin_passes)
{
    char *lib = test_lib("pc_abi10"), *sample = fake_sample(), neg[64];
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, "--sample", sample, NULL});
    assert_all_pass(&r);
    /* built before 1.1 existed: it answers 1.0 to every host */
    snprintf(neg, sizeof neg, "negotiation %d.%d", QB_ABI_MAJOR, QB_ABI_MINOR);
    assert_line(&r, "PASS", neg, "speaks 1.0");
    assert_line(&r, "PASS", "descriptor", "ABI 1.0");
    qbt_result_free(&r);
    free(sample);
    free(lib);
}
END_TEST

/* The frozen ABI 1.1 and 1.2 plugins (tests/sdk-contract/abi-1.1, abi-1.2):
 * each passes every check under the current host, refuses the hosts older
 * than what it needs (saying so), speaks its own minor to newer ones; the
 * 1.2 writer's plan is held against what it wrote. */
START_TEST(frozen_abi_1_1_and_1_2_plugins_pass)
{
    static const struct {
        const char *lib;
        unsigned minor;
    } frozen[] = {{"pc_abi11", 1}, {"pc_abi12", 2}};
    size_t k;
    for (k = 0; k < 2; k++) {
        char *lib = test_lib(frozen[k].lib), *sample = fake_sample(), neg[64], abi[32], speaks[32];
        unsigned m;
        qbt_result r;
        plugin_check(&r, (const char *const[]){lib, "--sample", sample, NULL});
        assert_all_pass(&r);
        snprintf(abi, sizeof abi, "ABI 1.%u", frozen[k].minor);
        snprintf(speaks, sizeof speaks, "speaks 1.%u", frozen[k].minor);
        assert_line(&r, "PASS", "descriptor", abi);
        for (m = 0; m <= QB_ABI_MINOR; m++) {
            snprintf(neg, sizeof neg, "negotiation %d.%u", QB_ABI_MAJOR, m);
            assert_line(&r, "PASS", neg, m < frozen[k].minor ? "refuses" : speaks);
        }
        assert_line(&r, "PASS", "reader-rows", "3 tensors");
        if (frozen[k].minor >= 2)
            assert_line(&r, "PASS", "writer-plan", "12 entries for the 12 tensors");
        else
            assert_line(&r, "SKIP", "writer-plan", "no plan entry");
        qbt_result_free(&r);
        free(sample);
        free(lib);
    }
}
END_TEST

START_TEST(crashing_probe_fails)
{
    char *lib = test_lib("pc_probe_segv");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "PASS", "descriptor", NULL);
    assert_line(&r, "FAIL", "probe-file", "crashed with SIGSEGV");
    assert_line(&r, "FAIL", "probe-file", "probe of a text file");
    assert_line(&r, "FAIL", "probe-random", "crashed with SIGSEGV");
    ck_assert_msg(strstr(r.out, " failed") && strstr(r.out, ": FAIL\n"), "%s", r.out);
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(hanging_probe_fails)
{
    char *lib = test_lib("pc_probe_hang");
    time_t t0 = time(NULL);
    qbt_result r;
    plugin_check(&r, (const char *const[]){"--timeout", "0.5", lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "FAIL", "probe-file", "timed out: no progress within 0.5 s");
    assert_line(&r, "FAIL", "probe-missing", "timed out");
    /* every child was killed at its timeout: no check waits for a hang */
    ck_assert_msg(time(NULL) - t0 < 60, "took %ld s", (long)(time(NULL) - t0));
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(abi2_only_entry_fails_to_load)
{
    char *lib = test_lib("pc_future_abi");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "FAIL", "load", "exports qb_plugin_entry_v2 (built for ABI major 2)");
    assert_line(&r, "FAIL", "load", "not qb_plugin_entry_v1");
    /* nothing can be checked in a library the host cannot load */
    ck_assert_int_eq(count_verdicts(r.out, "PASS"), 0);
    ck_assert_int_eq(count_verdicts(r.out, "FAIL"), 1);
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(plugin_needing_a_newer_abi_fails)
{
    char *lib = test_lib("pc_needs_newer"), neg[64];
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    snprintf(neg, sizeof neg, "negotiation %d.%d", QB_ABI_MAJOR, QB_ABI_MINOR);
    assert_line(&r, "FAIL", neg, "the newest ABI this host speaks");
    assert_line(&r, "FAIL", neg, "it needs 1.7");
    /* refusing an older minor because it needs more is allowed */
    assert_line(&r, "PASS", "negotiation 1.0", "refuses 1.0");
    ck_assert_msg(!line_of(r.out, "PASS", "descriptor"), "%s", r.out);
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(finish_that_leaks_fails)
{
    char *lib = test_lib("pc_leak_finish");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "FAIL", "writer-convert", "finish left 1 host allocation(s) live");
    assert_line(&r, "PASS", "probe-file", NULL);
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(failed_finish_that_leaks_fails)
{
    char *lib = test_lib("pc_leak_failed_finish");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    /* a clean finish frees; only a failed one keeps the handle */
    assert_line(&r, "PASS", "writer-convert", NULL);
    assert_line(&r, "FAIL", "writer-sink-fail", "after a failed finish, finish left 1 host "
                "allocation(s) live");
    assert_line(&r, "FAIL", "writer-alloc-fail", "after a failed finish");
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(writer_crashing_on_sink_failure_fails)
{
    char *lib = test_lib("pc_sink_crash");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "PASS", "writer-convert", NULL);
    assert_line(&r, "FAIL", "writer-sink-fail", "sink full after 0 of");
    assert_line(&r, "FAIL", "writer-sink-fail", "crashed with SIGSEGV");
    assert_line(&r, "FAIL", "writer-sink-fail", "write_tensor");
    qbt_result_free(&r);
    free(lib);
}
END_TEST

START_TEST(not_a_shared_object_fails_to_load)
{
    char *p = qbt_path(qbt_scratch("pc-text"), "libqb_text.so");
    qbt_result r;
    qbt_write_file(p, "not an ELF file\n");
    plugin_check(&r, (const char *const[]){p, NULL});
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    assert_line(&r, "FAIL", "load", "is not an ELF shared object");
    qbt_result_free(&r);
    free(p);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
    char *lib = test_lib("pc_fake");
    const char *const *cases[] = {
        (const char *const[]){NULL},
        (const char *const[]){lib, lib, NULL},
        (const char *const[]){"--timeout", "0", lib, NULL},
        (const char *const[]){"--timeout", "soon", lib, NULL},
        (const char *const[]){"--sample", "/nonexistent/model", lib, NULL},
        (const char *const[]){"/nonexistent/libqb_x.so", NULL},
        (const char *const[]){"--frobnicate", lib, NULL},
        (const char *const[]){lib, "--keep-output", NULL},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qbt_result r;
        plugin_check(&r, cases[i]);
        ck_assert_msg(r.status == 2, "case %zu: exit %d:\n%s%s", i, r.status, r.out, r.err);
        ck_assert_msg(strstr(r.err, "quantbridge: error:"), "case %zu: %s", i, r.err);
        ck_assert_msg(count_verdicts(r.out, "PASS") == 0, "case %zu: %s", i, r.out);
        qbt_result_free(&r);
    }
    {
        qbt_result r;
        plugin_check(&r, (const char *const[]){"--help", NULL});
        ck_assert_int_eq(r.status, 0);
        ck_assert(strstr(r.out, "usage: quantbridge plugin-check LIB"));
        qbt_result_free(&r);
    }
    free(lib);
}
END_TEST

/* ---- the planted-bug corpus (planted_plugin.c) -------------------------------- */

/* A file the planted-bug plugin's reader reads (its PBMODEL sample). */
static char *pb_sample(void)
{
    char *p = qbt_path(qbt_scratch("pc-pb"), "sample.pb");
    qbt_write_file(p, "PBMODEL\n");
    return p;
}

START_TEST(planted_good_plugin_passes_every_check)
{
    char *lib = test_lib("pc_pb"), *sample = pb_sample();
    char *keep = qbt_path(qbt_scratch("pc-pb-keep"), "out"), *mpb = qbt_path(keep, "model.pb");
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, "--sample", sample, "--keep-output", keep, NULL});
    assert_all_pass(&r);
    assert_line(&r, "PASS", "reader-grid", "1 integer and 0 float-coded grids well formed");
    assert_line(&r, "PASS", "writer-plan", "12 entries for the 12 tensors");
    assert_line(&r, "PASS", "writer-readback", "12 tensors read back through reader pc-pb");
    assert_line(&r, "PASS", "writer-readback", "output kept in");
    assert_line(&r, "PASS", "writer-sink-create-fail", "sink->create call 1..");
    assert_line(&r, "PASS", "writer-sink-close-fail", "sink->close call 1..");
    assert_line(&r, "PASS", "writer-service-fail", "host service call 1..");
    qbt_result_free(&r);
    /* the kept output is a pb model: the plugin's own reader checks it */
    ck_assert_msg(access(mpb, R_OK) == 0, "--keep-output left no %s", mpb);
    plugin_check(&r, (const char *const[]){lib, "--sample", keep, NULL});
    assert_line(&r, "PASS", "reader-open", "12 tensors");
    assert_line(&r, "PASS", "reader-close", NULL);
    qbt_result_free(&r);
    /* a kept output directory that is not empty is a usage error */
    plugin_check(&r, (const char *const[]){lib, "--keep-output", keep, NULL});
    ck_assert_msg(r.status == 2, "exit %d:\n%s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.err, "not empty"), "%s", r.err);
    qbt_result_free(&r);
    free(mpb);
    free(keep);
    free(sample);
    free(lib);
}
END_TEST

/* One planted bug: the plugin fails `check` with a line that says `says`
 * (and `says2` when not NULL), and plugin-check exits 1. */
typedef struct planted {
    const char *id;     /* libqb_<id>.so */
    const char *check;
    const char *says, *says2;
} planted;

static const planted planted_bugs[] = {
    {"pc_pb_row_overflow", "reader-rows", "read_rows [0, +16) wrote past the end of the rows "
     "buffer it was given", "a buffer overrun by read_rows"},
    {"pc_pb_scales_overflow", "reader-grid", "read_grid [0, +32) wrote past the end of the "
     "scales buffer it was given", "a buffer overrun by read_grid"},
    {"pc_pb_reader_json_leak", "reader-close", "close left 1 host-service object(s) live",
     "JSON tree from json->parse during open"},
    {"pc_pb_writer_json_leak", "writer-convert", "1 host-service object(s) left live",
     "JSON tree from json->new_object during finish"},
    {"pc_pb_listing_leak", "writer-convert", "1 host-service object(s) left live",
     "directory listing from list_dir during begin"},
    {"pc_pb_wrong_values", "writer-readback", "model.layers.0.self_attn.q_proj.weight is wrong",
     "farther from the source than nearest rounding"},
    {"pc_pb_ignore_create", "writer-sink-create-fail", "sink->create call 1 of",
     "the conversion succeeded although sink->create failed"},
    {"pc_pb_ignore_close", "writer-sink-close-fail", "sink->close call 1 of",
     "the conversion succeeded although sink->close failed"},
    {"pc_pb_ignore_emit", "writer-service-fail", "(json->emit) failed",
     "the conversion succeeded although json->emit failed"},
    {"pc_pb_plan_crash", "writer-plan", "crashed with SIGSEGV", "(while plan)"},
    {"pc_pb_plan_bytes", "writer-plan", "plan promises 1707008 bytes of tensor data",
     "the sink received"},
    {"pc_pb_plan_missing", "writer-plan", "plan has no entry for lm_head.weight", NULL},
    {"pc_pb_plan_refuses", "writer-plan", "plan refused the generated model",
     "pb writer: plan: llama is not supported"},
};

START_TEST(planted_bug_fails_with_its_reason)
{
    const planted *b = &planted_bugs[_i];
    char *lib = test_lib(b->id), *sample = pb_sample();
    qbt_result r;
    plugin_check(&r, (const char *const[]){lib, "--sample", sample, NULL});
    ck_assert_msg(r.status == 1, "%s: exit %d:\n%s", b->id, r.status, r.out);
    assert_line(&r, "FAIL", b->check, b->says);
    if (b->says2)
        assert_line(&r, "FAIL", b->check, b->says2);
    /* the checks before the bug's pass: it is that check that names it */
    assert_line(&r, "PASS", "descriptor", NULL);
    qbt_result_free(&r);
    free(sample);
    free(lib);
}
END_TEST

/* ---- a fault inside a plugin call (host/fatal.c) ------------------------------ */

/* One crash of pc-pb-crash (planted_plugin.c, PB_CRASH_FROM_ENV): the call
 * that faults, the signal, the command (the source's name at "SRC"), and
 * whether the main file named with --config trusts it (in-process probe). */
typedef struct crash_case {
    const char *call, *sig;
    const char *const *cmd;
    int trusted, fail_write;
    const char *says; /* the line's text after "quantbridge: error: " */
} crash_case;

#define CC_CONVERT ((const char *const[]){"convert", "--source", "SRC", "--output", "out", \
                                           "--writer", "pc-pb-crash", NULL})
#define CC_RAW ((const char *const[]){"inspect", "--raw", "SRC", NULL})
#define CC_META ((const char *const[]){"inspect", "--metadata", "SRC", NULL})
#define CC_SEGV(call, cmd, tr, fw, tensor) \
    {call, "SEGV", cmd, tr, fw, "plugin pc-pb-crash 1.0.0 crashed with SIGSEGV in " call tensor}
#define CC_Q " model.layers.0.self_attn.q_proj.weight"

static const crash_case crash_cases[] = {
    /* every reader vtable call */
    CC_SEGV("probe", CC_CONVERT, 1, 0, ""),
    CC_SEGV("open", CC_CONVERT, 0, 0, ""),
    CC_SEGV("get_model_info", CC_CONVERT, 0, 0, ""),
    CC_SEGV("get_tensor_info", CC_CONVERT, 0, 0, ""),
    CC_SEGV("read_rows", CC_CONVERT, 0, 0, " model.embed_tokens.weight"),
    CC_SEGV("get_grid_info", CC_CONVERT, 0, 0, CC_Q),
    CC_SEGV("read_grid", CC_CONVERT, 0, 0, CC_Q),
    CC_SEGV("close", CC_CONVERT, 0, 0, ""),
    CC_SEGV("get_raw_tensor_info", CC_RAW, 0, 0, ""),
    CC_SEGV("get_metadata", CC_META, 0, 0, ""),
    /* every writer vtable call */
    CC_SEGV("supports", CC_CONVERT, 0, 0, ""),
    CC_SEGV("plan", CC_CONVERT, 0, 0, ""),
    CC_SEGV("begin", CC_CONVERT, 0, 0, ""),
    CC_SEGV("write_tensor", CC_CONVERT, 0, 0, " model.embed_tokens.weight"),
    CC_SEGV("finish", CC_CONVERT, 0, 0, ""),
    CC_SEGV("abort", CC_CONVERT, 0, 1, ""),
    /* every fault signal */
    {"read_rows", "FPE", CC_CONVERT, 0, 0,
     "plugin pc-pb-crash 1.0.0 crashed with SIGFPE in read_rows model.embed_tokens.weight"},
    {"read_rows", "ILL", CC_CONVERT, 0, 0,
     "plugin pc-pb-crash 1.0.0 crashed with SIGILL in read_rows model.embed_tokens.weight"},
    {"read_rows", "ABRT", CC_CONVERT, 0, 0,
     "plugin pc-pb-crash 1.0.0 crashed with SIGABRT in read_rows model.embed_tokens.weight"},
    {"read_rows", "BUS", CC_CONVERT, 0, 0,
     ", in plugin pc-pb-crash 1.0.0, read_rows model.embed_tokens.weight"},
};

START_TEST(plugin_fault_ends_the_run_with_one_line)
{
    const crash_case *c = &crash_cases[_i];
    char *work = qbt_mkdtemp("pc-crash"), *pdir = qbt_path(work, "plugins");
    char *conf = qbt_path(pdir, "pc-pb-crash.conf"), *main_f = qbt_path(work, "main.conf");
    char *lib = test_lib("pc_pb_crash"), *text, *env_in, *env_sig, *out = qbt_path(work, "out");
    const char *argv[16];
    const char *env[] = {NULL, NULL, "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:"
                         "handle_sigill=0:handle_sigfpe=0:handle_abort=0:detect_leaks=0",
                         c->fail_write ? "PB_FAIL_WRITE=1" : NULL, NULL};
    size_t n = 0, k;
    qbt_result r;
    qbt_mkdir_p(pdir);
    ck_assert(asprintf(&text, "[plugin:pc-pb-crash]\nlibrary=%s\n", lib) > 0);
    qbt_write_file(conf, text);
    qbt_write_file(main_f, "[plugin:pc-pb-crash]\ntrusted=true\n");
    {
        char *src = qbt_path(work, "src.pb");
        qbt_write_file(src, "PBMODEL\n");
        free(src);
    }
    ck_assert(asprintf(&env_in, "PB_CRASH_IN=%s", c->call) > 0);
    ck_assert(asprintf(&env_sig, "PB_CRASH_SIG=%s", c->sig) > 0);
    env[0] = env_in;
    env[1] = env_sig;
    argv[n++] = "--plugin-dir";
    argv[n++] = pdir;
    if (c->trusted) {
        argv[n++] = "--config";
        argv[n++] = main_f;
    }
    for (k = 0; c->cmd[k]; k++)
        argv[n++] = strcmp(c->cmd[k], "SRC") == 0 ? "src.pb" : c->cmd[k];
    argv[n] = NULL;
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work, .timeout_s = 120}, argv);
    ck_assert_msg(r.status == 1, "%s/%s: exit %d:\n%s", c->call, c->sig, r.status, r.err);
    ck_assert_msg(strstr(r.err, c->says), "%s/%s: does not say \"%s\":\n%s", c->call, c->sig,
                  c->says, r.err);
    /* one line: nothing before or after the handler's */
    ck_assert_msg(qbt_count_lines(r.err, "quantbridge: error: ") == 1, "%s/%s:\n%s", c->call,
                  c->sig, r.err);
    /* nothing left behind: no temporary directory; no output, unless the
     * conversion was complete before the fault (the source's close comes
     * after the output's rename): then it stays whole, and the line says
     * so (host/fatal.c) */
    ck_assert_int_eq(qbt_count_entries(work, ".qbtmp-"), 0);
    /* by the command's name: each CC_CONVERT is a compound literal of its
     * own, so comparing the pointers never matched */
    if (strcmp(c->cmd[0], "convert") == 0 && strcmp(c->call, "close") != 0)
        ck_assert_msg(!qbt_exists(out), "%s/%s: %s exists", c->call, c->sig, out);
    if (strcmp(c->cmd[0], "convert") == 0 && strcmp(c->call, "close") == 0) {
        char *mpb = qbt_path(out, "model.pb"), *man = qbt_path(out, "manifest.json");
        ck_assert_msg(strstr(r.err, "; the output out was complete before the fault") &&
                      strstr(r.err, "and is kept\n"), "%s", r.err);
        ck_assert_msg(!strstr(r.err, "temporary output removed"), "%s", r.err);
        ck_assert_msg(qbt_exists(mpb) && qbt_exists(man), "%s: the complete output is gone",
                      out);
        free(man);
        free(mpb);
    } else {
        ck_assert_msg(!strstr(r.err, "was complete before the fault"), "%s/%s:\n%s", c->call,
                      c->sig, r.err);
    }
    qbt_result_free(&r);
    free(env_in);
    free(env_sig);
    free(text);
    free(out);
    free(lib);
    free(main_f);
    free(conf);
    free(pdir);
    free(work);
}
END_TEST

/* ---- the shipped plugins --------------------------------------------------- */

typedef struct sample_step {
    const char *gen;               /* tests/bin/<gen>, or NULL: quantbridge */
    const char *const *argv;       /* run in the work dir */
} sample_step;

typedef struct sample_recipe {
    const char *plugin;            /* plugins/<plugin> */
    sample_step steps[2];          /* unused: argv NULL */
    const char *sample;            /* relative to the work dir */
} sample_recipe;

#define SR_ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define SR_HFD SR_ARGV("--arch", "llama", "--dtype", "bf16", "--layers", "1", "--hidden", "64", \
                       "--intermediate", "128", "--vocab", "64", "--tied", "0", "--seed", "7", \
                       "--out", "src")

/* The fixtures of tests/faults (its cd_cases), with grids where a format
 * has variants: act-order (col_group) for GPTQ. */
static const sample_recipe sample_recipes[] = {
    {"gguf", {{"qb-gen-gguf", SR_ARGV("llama", "q4_0", "model.gguf")}}, "model.gguf"},
    {"gptq", {{"qb-gen-quant", SR_ARGV("src", "gptq-4-g128-sym-v1-actorder")}}, "src"},
    {"awq", {{"qb-gen-quant", SR_ARGV("src", "awq-gemm-g128-zp")}}, "src"},
    {"fp8", {{"qb-gen-fp8", SR_ARGV("gen")}}, "gen/fp8-block128"},
    {"compressed-tensors", {{"qb-gen-ct", SR_ARGV("gen")}}, "gen/ct-w4a16-g32-sym"},
    {"hf-dense", {{"qb-gen-hf-dense", SR_HFD}}, "src"},
    /* an MLX directory: the hf-dense fixture converted by the mlx writer */
    {"mlx",
     {{"qb-gen-hf-dense", SR_HFD},
      {NULL, SR_ARGV("convert", "--source", "src", "--output", "m", "--threads", "1",
                     "--writer", "mlx")}},
     "m"},
    /* a W4A16 directory: the hf-dense fixture converted by the default writer */
    {"sm86-w4a16",
     {{"qb-gen-hf-dense", SR_HFD},
      {NULL, SR_ARGV("convert", "--source", "src", "--output", "w4", "--threads", "1",
                     "--group-size", "32")}},
     "w4"},
};

/* Writes the sample of `plugin` into work; its path (malloc'd) or NULL
 * when no recipe names the plugin. */
static char *make_sample(const char *plugin, const char *work)
{
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    size_t i, k;
    ck_assert_ptr_nonnull(bd);
    for (i = 0; i < sizeof sample_recipes / sizeof sample_recipes[0]; i++) {
        const sample_recipe *sr = &sample_recipes[i];
        if (strcmp(sr->plugin, plugin) != 0)
            continue;
        for (k = 0; k < 2 && sr->steps[k].argv; k++) {
            char gen[4096];
            qbt_result r;
            if (sr->steps[k].gen) {
                snprintf(gen, sizeof gen, "%s/tests/bin/%s", bd, sr->steps[k].gen);
                ck_assert_msg(access(gen, X_OK) == 0, "%s: %s not built", plugin, gen);
            }
            qbt_run_ex(&r, &(qbt_run_opts){.prog = sr->steps[k].gen ? gen : NULL, .cwd = work},
                       sr->steps[k].argv);
            ck_assert_msg(r.status == 0, "%s sample step %zu: %s%s", plugin, k, r.out, r.err);
            qbt_result_free(&r);
        }
        return qbt_path(work, sr->sample);
    }
    return NULL;
}

START_TEST(shipped_plugin_passes_every_check)
{
    const char *plugin = getenv("QBT_PC_PLUGIN"), *lib = getenv("QBT_PC_LIB"), *d;
    char *sample;
    qbt_result r;
    int writer;
    ck_assert_msg(plugin && lib, "QBT_PC_PLUGIN/QBT_PC_LIB not set (run by CTest)");
    sample = make_sample(plugin, qbt_scratch("pc-shipped"));
    /* no hang is expected: a generous timeout keeps a loaded (sanitizer)
     * machine from failing a slow step */
    if (sample)
        plugin_check(&r, (const char *const[]){"--timeout", "60", lib, "--sample", sample, NULL});
    else
        plugin_check(&r, (const char *const[]){"--timeout", "60", lib, NULL});
    fprintf(stderr, "%s", r.out);
    ck_assert_msg(r.status == 0, "%s: exit %d:\n%s\nstderr:\n%s", plugin, r.status, r.out, r.err);
    ck_assert_int_eq(count_verdicts(r.out, "FAIL"), 0);
    d = line_of(r.out, "PASS", "descriptor");
    ck_assert_msg(d, "%s", r.out);
    writer = strstr(d, "writer") && strstr(d, "writer") < strchr(d, '\n');
    assert_line(&r, "PASS", "load", NULL);
    assert_line(&r, "PASS", "options", NULL);
    if (line_of(r.out, "PASS", "probe-file")) {
        /* a reader: its contract on the sample, when there is one */
        assert_line(&r, "PASS", "probe-random", NULL);
        if (sample) {
            assert_line(&r, "PASS", "probe-truncated", NULL);
            assert_line(&r, "PASS", "probe-sample", NULL);
            assert_line(&r, "PASS", "reader-open", NULL);
            assert_line(&r, "PASS", "reader-rows", NULL);
            assert_line(&r, "PASS", "reader-close", NULL);
        }
    }
    if (writer) {
        assert_line(&r, "PASS", "writer-convert", NULL);
        assert_line(&r, "PASS", "writer-sink-fail", NULL);
        assert_line(&r, "PASS", "writer-sink-create-fail", NULL);
        assert_line(&r, "PASS", "writer-sink-write-fail", NULL);
        assert_line(&r, "PASS", "writer-sink-close-fail", NULL);
        assert_line(&r, "PASS", "writer-alloc-fail", NULL);
        assert_line(&r, "PASS", "writer-service-fail", NULL);
        /* the shipped writers state a plan and name their own reader */
        assert_line(&r, line_of(r.out, "SKIP", "writer-plan") ? "SKIP" : "PASS", "writer-plan",
                    NULL);
        assert_line(&r, "PASS", "writer-readback", "pass verify's rules");
    }
    qbt_result_free(&r);
    free(sample);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("plugin-check");
    TCase *own = tcase_create("own"), *shipped = tcase_create("shipped");
    tcase_set_timeout(own, 300);
    tcase_set_timeout(shipped, 600);
    tcase_add_test(own, good_plugin_passes_every_check);
    tcase_add_test(own, frozen_abi_1_0_plugin_passes);
    tcase_add_test(own, frozen_abi_1_1_and_1_2_plugins_pass);
    tcase_add_test(own, crashing_probe_fails);
    tcase_add_test(own, hanging_probe_fails);
    tcase_add_test(own, abi2_only_entry_fails_to_load);
    tcase_add_test(own, plugin_needing_a_newer_abi_fails);
    tcase_add_test(own, finish_that_leaks_fails);
    tcase_add_test(own, failed_finish_that_leaks_fails);
    tcase_add_test(own, writer_crashing_on_sink_failure_fails);
    tcase_add_test(own, not_a_shared_object_fails_to_load);
    tcase_add_test(own, usage_errors_exit_2);
    tcase_add_test(own, planted_good_plugin_passes_every_check);
    tcase_add_loop_test(own, planted_bug_fails_with_its_reason, 0,
                        (int)(sizeof planted_bugs / sizeof planted_bugs[0]));
    tcase_add_loop_test(own, plugin_fault_ends_the_run_with_one_line, 0,
                        (int)(sizeof crash_cases / sizeof crash_cases[0]));
    tcase_add_test(shipped, shipped_plugin_passes_every_check);
    suite_add_tcase(s, own);
    suite_add_tcase(s, shipped);
    return s;
}

#include "qbt_check_main.h"
