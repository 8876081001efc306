/* outdir.c: which outputs are refused, the temp dir with its marker, the
 * rename into place, --overwrite moving the old output aside, cleanup. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char *sub(const char *a, const char *b)
{
    char *p = qbt_path(a, b);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    return p;
}

START_TEST(refusals)
{
    char *d = qbt_mkdtemp("outdir"), *src = sub(d, "model"), *inner = qbt_path(src, "out");
    char *sibling = qbt_path(d, "model-w4"), *full = sub(d, "full"), *f = qbt_path(full, "x");
    char *file = qbt_path(d, "plain"), *dotted = NULL;
    qbt_write_file(f, "x");
    qbt_write_file(file, "x");

    ck_assert_int_eq(qbh_outdir_check(src, src, 1), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "is the source itself"));
    ck_assert_int_eq(qbh_outdir_check(src, inner, 0), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "is inside the source"));
    ck_assert_int_eq(qbh_outdir_check(src, d, 1), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "contains the source"));
    /* The same path spelled differently is still the same. */
    dotted = qbt_path(d, "full/../model/.");
    ck_assert_int_eq(qbh_outdir_check(src, dotted, 1), QB_E_INVALID);
    ck_assert_int_eq(qbh_outdir_check(src, full, 0), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "not empty (use --overwrite"));
    ck_assert_int_eq(qbh_outdir_check(src, full, 1), QB_OK);
    ck_assert_int_eq(qbh_outdir_check(src, file, 1), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "not a directory"));
    ck_assert_int_eq(qbh_outdir_check(src, sibling, 0), QB_OK);
    {
        /* Trailing slashes name the same directory. */
        char *slashed = qbt_path(src, "out//");
        ck_assert_int_eq(qbh_outdir_check(src, slashed, 0), QB_E_INVALID);
        ck_assert_ptr_nonnull(strstr(qbh_error_message(), "is inside the source"));
        free(slashed);
    }
    ck_assert_int_eq(qbh_outdir_check(src, "/nonexistent/dir/out", 0), QB_E_NOT_FOUND);
    ck_assert_int_eq(qbh_outdir_check("/nonexistent/src", sibling, 0), QB_E_NOT_FOUND);
    free(d);
    free(src);
    free(inner);
    free(sibling);
    free(full);
    free(f);
    free(file);
    free(dotted);
}
END_TEST

START_TEST(begin_commit)
{
    char *d = qbt_mkdtemp("outdir-commit"), *out = qbt_path(d, "out"), *marker, *f, *text;
    qbh_outdir od;
    ck_assert_int_eq(qbh_outdir_begin(out, 0, &od), QB_OK);
    ck_assert_int_eq(qbt_count_entries(d, ".out.qbtmp-"), 1);
    marker = qbt_path(od.tmp_path, ".quantbridge-tmp");
    text = qbt_read_file(marker, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "pid="));
    free(text);
    f = qbt_path(od.tmp_path, "a.bin");
    qbt_write_file(f, "data");
    ck_assert(!qbt_exists(out));
    ck_assert_int_eq(qbh_outdir_commit(&od), QB_OK);
    qbh_outdir_abort(&od);
    ck_assert_int_eq(qbt_count_entries(d, ".qbtmp-"), 0);
    free(f);
    f = qbt_path(out, "a.bin");
    ck_assert(qbt_exists(f));
    free(marker);
    marker = qbt_path(out, ".quantbridge-tmp");
    ck_assert(!qbt_exists(marker));
    free(marker);
    free(f);
    free(out);
    free(d);
}
END_TEST

START_TEST(trailing_slash_output)
{
    char *d = qbt_mkdtemp("outdir-slash"), *out = qbt_path(d, "out/"), *plain = qbt_path(d, "out");
    qbh_outdir od;
    ck_assert_int_eq(qbh_outdir_begin(out, 0, &od), QB_OK);
    /* The temp dir is beside the output, not inside it. */
    ck_assert_int_eq(qbt_count_entries(d, ".out.qbtmp-"), 1);
    ck_assert_int_eq(qbh_outdir_commit(&od), QB_OK);
    qbh_outdir_abort(&od);
    ck_assert(qbt_exists(plain));
    ck_assert_int_eq(qbt_count_entries(d, ".qbtmp-"), 0);
    free(out);
    free(plain);
    free(d);
}
END_TEST

START_TEST(overwrite_and_abort)
{
    char *d = qbt_mkdtemp("outdir-over"), *out = sub(d, "out"), *old = qbt_path(out, "old");
    char *nested = sub(out, "deep"), *nf = qbt_path(nested, "x"), *fresh;
    qbh_outdir od;
    qbt_write_file(old, "old");
    qbt_write_file(nf, "x");
    /* Abort: temp removed recursively, old output untouched. */
    ck_assert_int_eq(qbh_outdir_begin(out, 1, &od), QB_OK);
    fresh = qbt_path(od.tmp_path, "new");
    qbt_write_file(fresh, "new");
    free(fresh);
    qbh_outdir_abort(&od);
    ck_assert_int_eq(qbt_count_entries(d, ".qbtmp-"), 0);
    ck_assert(qbt_exists(old));
    /* Commit with overwrite: old replaced, aside deleted. */
    ck_assert_int_eq(qbh_outdir_begin(out, 1, &od), QB_OK);
    fresh = qbt_path(od.tmp_path, "new");
    qbt_write_file(fresh, "new");
    free(fresh);
    ck_assert_int_eq(qbh_outdir_commit(&od), QB_OK);
    qbh_outdir_abort(&od);
    ck_assert(!qbt_exists(old));
    fresh = qbt_path(out, "new");
    ck_assert(qbt_exists(fresh));
    ck_assert_int_eq(qbt_count_entries(d, ".qbold-"), 0);
    ck_assert_int_eq(qbt_count_entries(d, ".qbtmp-"), 0);
    /* Without overwrite a non-empty output that appeared meanwhile wins. */
    ck_assert_int_eq(qbh_outdir_begin(out, 0, &od), QB_OK);
    ck_assert_int_eq(qbh_outdir_commit(&od), QB_E_INVALID);
    qbh_outdir_abort(&od);
    ck_assert(qbt_exists(fresh));
    ck_assert_int_eq(qbt_count_entries(d, ".qbtmp-"), 0);
    free(fresh);
    free(old);
    free(nf);
    free(nested);
    free(out);
    free(d);
}
END_TEST

START_TEST(rmtree_does_not_follow_symlinks)
{
    char *d = qbt_mkdtemp("rmtree"), *victim = sub(d, "victim"), *vf = qbt_path(victim, "keep");
    char *tree = sub(d, "tree"), *link = qbt_path(tree, "link");
    qbt_write_file(vf, "keep");
    ck_assert_int_eq(symlink(victim, link), 0);
    ck_assert_int_eq(qbh_rmtree(tree), QB_OK);
    ck_assert(!qbt_exists(tree));
    ck_assert(qbt_exists(vf));
    free(d);
    free(victim);
    free(vf);
    free(tree);
    free(link);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("outdir");
    TCase *tc = tcase_create("outdir");
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, begin_commit);
    tcase_add_test(tc, overwrite_and_abort);
    tcase_add_test(tc, trailing_slash_output);
    tcase_add_test(tc, rmtree_does_not_follow_symlinks);
    suite_add_tcase(s, tc);
    return s;
}
