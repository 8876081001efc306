/*
 * The command line as scripts meet it (issue 17 points 6 and 7), through
 * the built program: exact option names with a "did you mean" on a typo,
 * `help CMD`, `--version`, output paths refused before any work, the exit
 * codes of a failed comparison, and hf-dense float outputs that refuse a
 * value beyond their dtype's range or a NaN/Inf source value unless
 * --allow-nonfinite is given.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_hf_dense.h"
#include "vt_util.h"

static char *tmp;
static char src[4096];

static void setup(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "f32", .layers = 1, .hidden = 64,
                      .intermediate = 128, .vocab = 64, .tied = 0, .shards = 1, .seed = 3};
    tmp = vt_tmpdir("cli-script");
    snprintf(src, sizeof src, "%s/src", tmp);
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
}

static void teardown(void)
{
    vt_rmtree(tmp);
    free(tmp);
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* runs ARGS; checks the exit status; returns stderr (malloc'd), stdout in *out */
static char *run_expect(const char *args, int want, char **out)
{
    char *o, *e;
    int rc = vt_run(args, &o, &e);
    ck_assert_msg(rc == want, "%s: exit %d, want %d\n%s%s", args, rc, want, o, e);
    if (out)
        *out = o;
    else
        free(o);
    return e;
}

START_TEST(typo_one_line_and_suggestion)
{
    char args[9000], *e;
    snprintf(args, sizeof args, "convert --sour '%s' --output '%s/o'", src, tmp);
    e = run_expect(args, 2, NULL);
    /* one error line, one hint line; not the whole usage */
    ck_assert_int_eq(lines(e), 2);
    ck_assert_msg(strstr(e, "quantbridge: error: convert: unknown option '--sour'; did you mean "
                            "--source?"), "%s", e);
    ck_assert_ptr_nonnull(strstr(e, "try 'quantbridge help convert'"));
    free(e);
    /* a prefix that getopt_long alone would accept is refused too */
    snprintf(args, sizeof args, "verify --source '%s' --conv '%s'", src, src);
    e = run_expect(args, 2, NULL);
    ck_assert_msg(strstr(e, "did you mean --converted?"), "%s", e);
    free(e);
    /* --name=value is checked by its name */
    snprintf(args, sizeof args, "verify --sourc='%s' --converted '%s'", src, src);
    e = run_expect(args, 2, NULL);
    ck_assert_msg(strstr(e, "did you mean --source?"), "%s", e);
    free(e);
    /* far from every name: no suggestion */
    e = run_expect("inspect --zzzzzzzzzz x", 2, NULL);
    ck_assert_ptr_null(strstr(e, "did you mean"));
    ck_assert_int_eq(lines(e), 2);
    free(e);
    /* a value that looks like an option is a value, not a typo */
    snprintf(args, sizeof args, "verify --source '%s' --converted --nope", src);
    e = run_expect(args, 1, NULL);
    ck_assert_ptr_null(strstr(e, "unknown option"));
    free(e);
    /* global options and commands */
    e = run_expect("--verbos plugins", 2, NULL);
    ck_assert_msg(strstr(e, "did you mean --verbose?"), "%s", e);
    free(e);
    e = run_expect("convrt", 2, NULL);
    ck_assert_msg(strstr(e, "did you mean convert?"), "%s", e);
    ck_assert_int_eq(lines(e), 2);
    free(e);
}
END_TEST

START_TEST(help_command)
{
    char *o, *e, *main_help, *p;
    int n_cmds = 0;
    /* Every command the main help lists under "commands:" (two spaces, a
     * name, a space) answers `help NAME` with its own usage. */
    e = run_expect("--help", 0, &main_help);
    free(e);
    p = strstr(main_help, "\ncommands:\n");
    ck_assert_ptr_nonnull(p);
    for (p = strchr(p + 1, '\n') + 1; p[0] == ' '; p = strchr(p, '\n') + 1) {
        char name[32], args[64], want[64];
        size_t k = 0;
        if (p[1] != ' ' || p[2] == ' ')
            continue; /* a continuation line */
        while (p[2 + k] && p[2 + k] != ' ' && p[2 + k] != '\n' && k + 1 < sizeof name) {
            name[k] = p[2 + k];
            k++;
        }
        name[k] = '\0';
        snprintf(args, sizeof args, "help %s", name);
        snprintf(want, sizeof want, "usage: quantbridge %s", name);
        e = run_expect(args, 0, &o);
        ck_assert_msg(strstr(o, want) != NULL, "%s: %s", args, o);
        free(o);
        free(e);
        n_cmds++;
    }
    free(main_help);
    ck_assert_int_ge(n_cmds, 6); /* plugins inspect convert verify forward plugin-check */
    e = run_expect("help verify", 0, &o);
    ck_assert_ptr_nonnull(strstr(o, "3 the comparison ran and failed"));
    free(o);
    free(e);
    e = run_expect("help nosuch", 2, NULL);
    ck_assert_ptr_nonnull(strstr(e, "unknown command 'nosuch'"));
    free(e);
}
END_TEST

START_TEST(version_says_build)
{
    char *o, *e, commit[64] = "", cmd[8300], *p;
    FILE *f;
    int known;
    e = run_expect("--version", 0, &o);
    p = strstr(o, "commit ");
    ck_assert_msg(p != NULL, "%s", o);
    ck_assert_int_eq(sscanf(p, "commit %63[^,]", commit), 1);
    ck_assert_ptr_nonnull(strstr(o, "build type "));
    ck_assert_msg(strstr(o, "CUDA kernels built") || strstr(o, "CUDA kernels not built"), "%s",
                  o);
    /* the commit is one of this repository's (when built from a checkout) */
    known = strcmp(commit, "unknown") != 0;
    if (known) {
        ck_assert_uint_eq(strspn(commit, "0123456789abcdef"), strlen(commit));
        snprintf(cmd, sizeof cmd, "git -C '%s' cat-file -e '%s^{commit}' 2>/dev/null",
                 getenv("QB_TEST_SOURCE_DIR"), commit);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_msg(pclose(f) == 0, "commit %s is not in %s", commit,
                      getenv("QB_TEST_SOURCE_DIR"));
    }
    free(o);
    free(e);
}
END_TEST

START_TEST(paths_checked_first)
{
    char args[16384], *o, *e;
    /* the report's directory does not exist: refused before comparing */
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --report "
             "/nonexistent-qb/x.html", src, src);
    e = run_expect(args, 1, &o);
    ck_assert_msg(strstr(e, "quantbridge: error: --report /nonexistent-qb/x.html"), "%s", e);
    ck_assert_str_eq(o, ""); /* no comparison ran */
    free(o);
    free(e);
    /* a report path whose parent is a file */
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --report '%s/config.json/x"
             ".html'", src, src, src);
    e = run_expect(args, 1, &o);
    ck_assert_msg(strstr(e, "is not a directory"), "%s", e);
    ck_assert_str_eq(o, "");
    free(o);
    free(e);
    /* convert: an output under a missing directory, nothing written */
    snprintf(args, sizeof args, "convert --source '%s' --output /nonexistent-qb/out --writer "
             "hf-dense", src);
    e = run_expect(args, 1, &o);
    ck_assert_msg(strstr(e, "quantbridge: error:") && strstr(e, "/nonexistent-qb"), "%s", e);
    ck_assert_ptr_null(strstr(o, "wrote"));
    free(o);
    free(e);
}
END_TEST

/* Writes value v into element k of tensor `name` (F32) of DIR/model.safetensors. */
static void poke(const char *dir, const char *name, size_t k, float v)
{
    const char *mf = vt_path(dir, "model.safetensors");
    size_t off, len, n;
    char *b;
    vt_st_locate(mf, name, &off, &len);
    ck_assert_uint_lt(4 * k, len);
    b = vt_slurp(mf, &n);
    memcpy(b + off + 4 * k, &v, 4);
    vt_spit(mf, b, n);
    free(b);
}

START_TEST(float_range_and_nonfinite)
{
    char bad[4200], args[9000], out[4200], *e;
    struct stat st;
    const char *t = "model.layers.0.mlp.up_proj.weight";
    snprintf(bad, sizeof bad, "%s/big", tmp);
    vt_copy_dir(src, bad);
    poke(bad, t, 70, 1.0e5f); /* row 1, column 6 of [128, 64] */
    /* f16 tops out at 65504: an error naming tensor, element and value */
    snprintf(out, sizeof out, "%s/o16", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f16", bad, out);
    e = run_expect(args, 1, NULL);
    ck_assert_msg(strstr(e, t) && strstr(e, "[1, 6]") && strstr(e, "100000") &&
                      strstr(e, "f16"),
                  "%s", e);
    ck_assert_int_ne(stat(out, &st), 0); /* nothing left behind */
    free(e);
    /* bf16 holds it */
    snprintf(out, sizeof out, "%s/obf", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=bf16", bad, out);
    free(run_expect(args, 0, NULL));
    /* ... but not 3.4e38, which rounds past bf16's largest value */
    poke(bad, t, 70, 3.4e38f);
    snprintf(out, sizeof out, "%s/obf2", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=bf16", bad, out);
    e = run_expect(args, 1, NULL);
    ck_assert_msg(strstr(e, t) && strstr(e, "bf16") && strstr(e, "e+38"), "%s", e);
    free(e);

    /* a NaN in the source: named, refused; allowed on request */
    poke(bad, t, 70, NAN);
    snprintf(out, sizeof out, "%s/onan", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", bad, out);
    e = run_expect(args, 1, NULL);
    ck_assert_msg(strstr(e, t) && strstr(e, "nan") && strstr(e, "--allow-nonfinite"), "%s", e);
    free(e);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32 "
             "--allow-nonfinite --verify", bad, out);
    free(run_expect(args, 0, NULL));
    {
        size_t off, len, n;
        char *b;
        float v;
        vt_st_locate(vt_path(out, "model.safetensors"), t, &off, &len);
        b = vt_slurp(vt_path(out, "model.safetensors"), &n);
        memcpy(&v, b + off + 4 * 70, 4);
        ck_assert(isnan(v));
        free(b);
    }
    /* an infinity likewise */
    poke(bad, t, 70, -INFINITY);
    snprintf(out, sizeof out, "%s/oinf", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f16", bad, out);
    e = run_expect(args, 1, NULL);
    ck_assert_msg(strstr(e, t) && strstr(e, "inf"), "%s", e);
    free(e);
}
END_TEST

/* Exit 3 only when a comparison ran and failed; 1 when it could not run. */
START_TEST(exit_codes)
{
    char f32[4200], other[4200], args[9000], *e, *o;
    qbt_hfd_spec s2 = {.arch = "llama", .dtype = "f32", .layers = 1, .hidden = 64,
                       .intermediate = 128, .vocab = 64, .tied = 0, .shards = 1, .seed = 4};
    snprintf(f32, sizeof f32, "%s/f32", tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32 --verify",
             src, f32);
    free(run_expect(args, 0, NULL));
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s'", src, f32);
    e = run_expect(args, 0, &o);
    ck_assert_ptr_nonnull(strstr(o, "verify: PASS"));
    free(o);
    free(e);
    /* another model of the same shapes: every tensor differs */
    snprintf(other, sizeof other, "%s/other", tmp);
    ck_assert_int_eq(qbt_hfd_spec_check(&s2), 0);
    ck_assert_int_eq(qbt_hfd_write(&s2, other), 0);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s'", other, f32);
    e = run_expect(args, 3, &o);
    ck_assert_msg(strstr(e, "quantbridge: error: ") && strstr(e, "does not match"), "%s", e);
    ck_assert_ptr_nonnull(strstr(o, "verify: FAIL"));
    free(o);
    free(e);
    /* nothing to compare with: an error, 1 */
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s/none'", other, tmp);
    free(run_expect(args, 1, NULL));
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("cli_scripting");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, typo_one_line_and_suggestion);
    tcase_add_test(tc, help_command);
    tcase_add_test(tc, version_says_build);
    tcase_add_test(tc, paths_checked_first);
    tcase_add_test(tc, float_range_and_nonfinite);
    tcase_add_test(tc, exit_codes);
    suite_add_tcase(s, tc);
    return s;
}
