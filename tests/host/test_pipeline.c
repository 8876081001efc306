/*
 * The conversion pipeline called directly (host/pipeline, qbh_convert), as
 * `convert` and plugin-check call it: a generated bf16 llama through the
 * hf-dense writer at f32, whose every value the output must hold bit for
 * bit (bf16 widens to f32 exactly: the source's rows, read by the hf-dense
 * reader, are the ground truth); the hooks in their order and number; a
 * dry run that writes nothing; failures that leave the final path as it
 * was and say whether the caller made a usage error.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdlib.h>
#include <string.h>

#include "gen_hf_dense.h"
#include "pipeline.h"
#include "qbt_fs.h"

static qbh_registry reg;
static char *tmp, *src;

static void setup(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 128, .tied = 0, .shards = 1, .seed = 7};
    char cfg[4096], plug[4096];
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    tmp = qbt_tmpdir("pipeline");
    src = qbt_path(tmp, "src");
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    snprintf(cfg, sizeof cfg, "%s/etc/quantbridge/quantbridge.conf", bd);
    snprintf(plug, sizeof plug, "%s/lib/quantbridge/plugins", bd);
    setenv("QUANTBRIDGE_PLUGIN_PATH", plug, 1);
    ck_assert_int_eq(qbh_registry_open(cfg, &reg), QB_OK);
}

static void teardown(void)
{
    qbh_registry_free(&reg);
    qbt_rmtree(tmp);
    free(src);
    free(tmp);
}

/* What the hooks saw. */
typedef struct seen {
    int supported, planned, before_begin, begin, finish, abort, writer_done;
    size_t writes, last_i;
    int score;
    int order_ok;  /* every hook came in the pipeline's order */
} seen;

static void h_supported(void *ctx, int score, const char *why)
{
    seen *s = ctx;
    (void)why;
    s->supported++;
    s->score = score;
}

static void h_planned(void *ctx, const qbh_plan *plan)
{
    seen *s = ctx;
    (void)plan;
    s->planned++;
    s->order_ok &= s->supported == 1 && !s->before_begin;
}

static void h_before_begin(void *ctx)
{
    seen *s = ctx;
    s->before_begin++;
    s->order_ok &= s->planned == 1 && !s->begin;
}

static void h_stage(void *ctx, const char *stage, size_t i, size_t n)
{
    seen *s = ctx;
    if (strcmp(stage, "begin") == 0) {
        s->begin++;
        s->order_ok &= s->before_begin == 1 && n == 0;
    } else if (strncmp(stage, "write_tensor ", 13) == 0) {
        s->writes++;
        s->order_ok &= s->begin == 1 && i == s->last_i + 1 && n > 0;
        s->last_i = i;
    } else if (strcmp(stage, "finish") == 0) {
        s->finish++;
        s->order_ok &= s->writes == s->last_i;
    } else if (strcmp(stage, "abort") == 0) {
        s->abort++;
    }
}

static void h_writer_done(void *ctx)
{
    seen *s = ctx;
    s->writer_done++;
}

static qbh_convert_hooks hooks_of(seen *s)
{
    qbh_convert_hooks h;
    memset(&h, 0, sizeof h);
    memset(s, 0, sizeof *s);
    s->order_ok = 1;
    h.ctx = s;
    h.supported = h_supported;
    h.planned = h_planned;
    h.before_begin = h_before_begin;
    h.stage = h_stage;
    h.writer_done = h_writer_done;
    return h;
}

static void request(qbh_convert_request *rq, qbh_opt *opt, const char *out)
{
    memset(rq, 0, sizeof *rq);
    rq->source = src;
    rq->reg = &reg;
    rq->writer = "hf-dense";
    rq->default_writer = "sm86-w4a16";
    opt->key = "dtype";
    opt->value = "f32";
    opt->origin = "--option";
    opt->used = 0;
    rq->cli = opt;
    rq->n_cli = 1;
    rq->output = out;
}

/* Every tensor of a (the source) equals b's (the output) bit for bit. */
static void same_values(qbh_source *a, const char *out_dir)
{
    qbh_plugin *hf = qbh_registry_find(&reg, "hf-dense");
    qbh_source b;
    size_t i, k;
    ck_assert_int_eq(qbh_source_open(hf, out_dir, NULL, &b), QB_OK);
    ck_assert_uint_eq(b.info.n_tensors, a->info.n_tensors);
    for (i = 0; i < a->info.n_tensors; i++) {
        const qb_tensor_info *t = &a->tensors[i];
        int64_t rows = qb_tensor_rows(t), cols = qb_tensor_cols(t);
        float *x = malloc((size_t)(rows * cols) * sizeof *x);
        float *y = malloc((size_t)(rows * cols) * sizeof *y);
        ck_assert_int_eq(b.src.find(b.src.handle, t->name, &k), QB_OK);
        ck_assert_int_eq(b.tensors[k].source_dtype, QB_DT_F32);
        ck_assert_int_eq(a->src.read_rows(a->src.handle, i, 0, rows, x), QB_OK);
        ck_assert_int_eq(b.src.read_rows(b.src.handle, k, 0, rows, y), QB_OK);
        ck_assert_msg(memcmp(x, y, (size_t)(rows * cols) * sizeof *x) == 0, "%s differs",
                      t->name);
        free(x);
        free(y);
    }
    qbh_source_close(&b);
}

START_TEST(converts_with_hooks_in_order)
{
    char *out = qbt_path(tmp, "f32");
    qbh_convert_request rq;
    qbh_convert_outcome o;
    qbh_opt opt;
    seen s;
    qbh_convert_hooks h = hooks_of(&s);
    request(&rq, &opt, out);
    ck_assert_msg(qbh_convert(&rq, &h, &o) == QB_OK, "%s", qbh_error_message());
    ck_assert_str_eq(o.reader->name, "hf-dense");
    ck_assert_str_eq(o.writer->name, "hf-dense");
    ck_assert(opt.used);
    /* 2 layers x 9 tensors + embedding, norm, head */
    ck_assert_uint_eq(o.n_tensors, 21);
    ck_assert_uint_eq(o.src.info.n_tensors, 21);
    ck_assert_int_eq(s.supported, 1);
    ck_assert_int_gt(s.score, 0);
    ck_assert_int_eq(s.planned, 1);
    ck_assert_int_eq(s.before_begin, 1);
    ck_assert_int_eq(s.begin, 1);
    ck_assert_uint_eq(s.writes, 21);
    ck_assert_int_eq(s.finish, 1);
    ck_assert_int_eq(s.abort, 0);
    ck_assert_int_eq(s.writer_done, 1);
    ck_assert(s.order_ok);
    ck_assert_str_eq(o.stage, "");
    ck_assert_uint_eq(o.open_files, 0);
    /* model.safetensors, config.json and generation_config.json at least */
    ck_assert_uint_ge(o.n_files, 3);
    ck_assert(qbt_exists(out));
    ck_assert_int_eq(qbt_count_entries(tmp, ".qbtmp-"), 0);
    /* the source is still open for --verify: compare it with the output */
    same_values(&o.src, out);
    qbh_convert_end(&o);
    qbh_convert_end(&o); /* ended twice: a no-op */
    free(out);
}
END_TEST

START_TEST(dry_run_writes_nothing)
{
    char *out = qbt_path(tmp, "dry");
    qbh_convert_request rq;
    qbh_convert_outcome o;
    qbh_opt opt;
    seen s;
    qbh_convert_hooks h = hooks_of(&s);
    size_t i, per[6] = {0};
    /* the default writer (W4A16), which states a plan (hf-dense does not) */
    request(&rq, &opt, out);
    rq.writer = NULL;
    rq.n_cli = 0;
    rq.dry_run = 1;
    ck_assert_msg(qbh_convert(&rq, &h, &o) == QB_OK, "%s", qbh_error_message());
    ck_assert_str_eq(o.writer->name, "sm86-w4a16");
    ck_assert(o.plan.has_actions);
    ck_assert_uint_eq(o.plan.n_tensors, 21);
    for (i = 0; i < o.plan.n; i++)
        per[o.plan.items[i].action < 6 ? o.plan.items[i].action : 0]++;
    /* bf16 has no grid: the 7 linears of each layer requantized, the
     * embedding, the norms and the (f16) head converted */
    ck_assert_uint_eq(per[QB_PLAN_REQUANT], 14);
    ck_assert_uint_eq(per[QB_PLAN_CONVERT], 7);
    ck_assert_int_eq(s.planned, 0);
    ck_assert_int_eq(s.before_begin, 0);
    ck_assert_int_eq(s.writer_done, 0);
    ck_assert(!qbt_exists(out));
    qbh_convert_end(&o);
    free(out);
}
END_TEST

START_TEST(failures_leave_the_final_path)
{
    char *out = qbt_path(tmp, "taken"), *keep = qbt_path(out, "keep.txt");
    qbh_convert_request rq;
    qbh_convert_outcome o;
    qbh_opt opt;
    seen s;
    qbh_convert_hooks h = hooks_of(&s);
    qbt_mkdir_p(out);
    qbt_write_file(keep, "mine");
    /* a non-empty output without overwrite: refused before anything runs */
    request(&rq, &opt, out);
    ck_assert_int_eq(qbh_convert(&rq, &h, &o), QB_E_INVALID);
    ck_assert_int_eq(o.usage, 0);
    ck_assert_int_eq(s.supported, 0);
    ck_assert_int_eq(qbt_count_entries(out, ""), 1);
    ck_assert(qbt_exists(keep));
    /* a writer nobody configured: a usage error naming it */
    request(&rq, &opt, out);
    rq.writer = "no-such-writer";
    ck_assert_int_eq(qbh_convert(&rq, NULL, &o), QB_E_NOT_FOUND);
    ck_assert_int_eq(o.usage, 1);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "--writer no-such-writer"));
    /* an option neither plugin declares: a usage error too */
    request(&rq, &opt, out);
    opt.key = "no_such_option";
    ck_assert_int_eq(qbh_convert(&rq, NULL, &o), QB_E_NOT_FOUND);
    ck_assert_int_eq(o.usage, 1);
    ck_assert(qbt_exists(keep));
    ck_assert_int_eq(qbt_count_entries(tmp, ".qbtmp-"), 0);
    free(keep);
    free(out);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, converts_with_hooks_in_order);
    tcase_add_test(tc, dry_run_writes_nothing);
    tcase_add_test(tc, failures_leave_the_final_path);
    suite_add_tcase(s, tc);
    return s;
}
