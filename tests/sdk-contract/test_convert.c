/*
 * `quantbridge convert` end to end with the fake plugin (no real plugin
 * needed): values arrive exactly, the manifest's SHA-256 matches the bytes,
 * option routing and validation, probe ties and threshold, output safety
 * (inside/ancestor/same, non-empty, --overwrite), failures and SIGINT
 * leaving nothing behind.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "qbh.h"
#include "qbt_fs.h"
#include "qbt_run.h"

typedef struct fixture {
    char *dir, *cfg, *src, *out;
} fixture;

/* Sections: a list of "name" or "name:priority". */
static void setup_fx(fixture *fx, const char *const *sections)
{
    const char *fd = getenv("QBT_FAKE_DIR");
    char text[4096];
    size_t len = 0, i;
    ck_assert(fd != NULL);
    fx->dir = qbt_mkdtemp("convert");
    fx->cfg = qbt_path(fx->dir, "quantbridge.conf");
    fx->src = qbt_path(fx->dir, "model.fake");
    fx->out = qbt_path(fx->dir, "out");
    len += (size_t)snprintf(text + len, sizeof text - len, "[general]\nmin-probe-score=50\n");
    for (i = 0; sections[i]; i++) {
        char name[64], lib[64];
        const char *colon = strchr(sections[i], ':');
        size_t n = colon ? (size_t)(colon - sections[i]) : strlen(sections[i]), k;
        memcpy(name, sections[i], n);
        name[n] = '\0';
        for (k = 0; k <= n; k++)
            lib[k] = name[k] == '-' ? '_' : name[k];
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "[plugin:%s]\nlibrary=%s/libqb_%s.so\npriority=%s\n", name, fd,
                                lib, colon ? colon + 1 : "50");
    }
    qbt_write_file(fx->cfg, text);
    qbt_write_file(fx->src, "FAKEMODEL\n");
}

static void free_fx(fixture *fx)
{
    free(fx->dir);
    free(fx->cfg);
    free(fx->src);
    free(fx->out);
}

static const char *only_fake[] = {"fake", NULL};

/* Runs convert with fx's config/source/output plus extra args. */
static void convert(qbt_result *r, fixture *fx, const char *const *extra)
{
    const char *argv[40] = {"convert", "--config", fx->cfg, "--source", fx->src, "--output",
                            fx->out};
    size_t n = 7, i;
    for (i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    qbt_run(r, argv);
}

static void assert_no_leftovers(fixture *fx)
{
    ck_assert_int_eq(qbt_count_entries(fx->dir, ".qbtmp-"), 0);
    ck_assert_int_eq(qbt_count_entries(fx->dir, ".qbold-"), 0);
}

/* Checks one output tensor file against the closed form the fake reader
 * uses, (t+1)/2 + r/4 - c/8 + bias, times the writer's scale (the frozen
 * 1.1/1.2 writers' option; every product is exact in float32). */
static void check_tensor_scaled(const char *out, const char *name, size_t t, int64_t rows,
                                int64_t cols, float bias, float scale)
{
    char fname[256];
    char *path, *data;
    size_t len = 0;
    int64_t r, c;
    snprintf(fname, sizeof fname, "%s.f32", name);
    path = qbt_path(out, fname);
    data = qbt_read_file(path, &len);
    ck_assert_msg(data != NULL, "%s missing", path);
    ck_assert_uint_eq(len, (size_t)(rows * cols) * sizeof(float));
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) {
            float v, want = ((float)(t + 1) * 0.5f + (float)r * 0.25f - (float)c * 0.125f + bias) *
                            scale;
            memcpy(&v, data + (size_t)(r * cols + c) * sizeof(float), sizeof v);
            ck_assert_msg(v == want, "%s[%lld,%lld] = %g, want %g", name, (long long)r,
                          (long long)c, (double)v, (double)want);
        }
    free(data);
    free(path);
}

static void check_tensor(const char *out, const char *name, size_t t, int64_t rows, int64_t cols,
                         float bias)
{
    check_tensor_scaled(out, name, t, rows, cols, bias, 1.0f);
}

START_TEST(convert_exact_values_and_manifest)
{
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", "--threads", "3", NULL};
    char *man_path, *man, *line, *save = NULL;
    int lines = 0;
    setup_fx(&fx, only_fake);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "quantbridge: wrote"));
    ck_assert_ptr_nonnull(strstr(r.out, "3 tensors, 5 files"));
    check_tensor(fx.out, "model.embed_tokens.weight", 0, 6, 8, 0.0f);
    check_tensor(fx.out, "model.layers.0.self_attn.q_proj.weight", 1, 8, 8, 0.0f);
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.0f);
    /* Every manifest line: name, size, sink SHA-256 == our hash of the file. */
    man_path = qbt_path(fx.out, "manifest.txt");
    man = qbt_read_file(man_path, NULL);
    ck_assert_ptr_nonnull(man);
    /* The writer chose reverse order; the manifest records it. */
    ck_assert_ptr_nonnull(strstr(man, "model.norm.weight.f32"));
    ck_assert(strstr(man, "model.norm.weight.f32") < strstr(man, "model.embed_tokens.weight.f32"));
    for (line = strtok_r(man, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256], hex[80], got[65], *p, *data;
        unsigned long long size;
        size_t len = 0;
        qbk_sha256 c;
        uint8_t d[32];
        ck_assert_int_eq(sscanf(line, "%255s %llu %79s", name, &size, hex), 3);
        p = qbt_path(fx.out, name);
        data = qbt_read_file(p, &len);
        ck_assert_ptr_nonnull(data);
        ck_assert_uint_eq(len, size);
        qbk_sha256_init(&c);
        qbk_sha256_update(&c, data, len);
        qbk_sha256_final(&c, d);
        qbk_sha256_hex(d, got);
        ck_assert_str_eq(hex, got);
        free(data);
        free(p);
        lines++;
    }
    ck_assert_int_eq(lines, 3);
    assert_no_leftovers(&fx);
    free(man);
    free(man_path);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* The writer sees the facts the host computed from the fake model: the
 * embedding [6, 8] without lm_head (tied), one layer by tensor name (the
 * config names no num_hidden_layers), the config's heads, dense. */
START_TEST(writer_sees_model_facts)
{
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", NULL};
    char *path, *facts;
    setup_fx(&fx, only_fake);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    path = qbt_path(fx.out, "facts.txt");
    facts = qbt_read_file(path, NULL);
    ck_assert_ptr_nonnull(facts);
    ck_assert_str_eq(facts, "known 0x1ff\nn_layers 1\nhidden_size 8\nvocab_size 6\nn_heads 2\n"
                            "n_kv_heads 1\nhead_dim 4\nintermediate_size 16\nn_experts 0\n"
                            "n_experts_used 0\ntied_embeddings 1\n");
    free(facts);
    free(path);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* The frozen ABI 1.0 build of the fake plugin (abi-1.0/README.md) as
 * reader and writer: the current host must load it and convert exactly. */
START_TEST(abi10_plugin_converts)
{
    static const char *only_abi10[] = {"fake-abi10", NULL};
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake-abi10", "--threads", "2", NULL};
    setup_fx(&fx, only_abi10);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "3 tensors, 4 files"));
    check_tensor(fx.out, "model.embed_tokens.weight", 0, 6, 8, 0.0f);
    check_tensor(fx.out, "model.layers.0.self_attn.q_proj.weight", 1, 8, 8, 0.0f);
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.0f);
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* convert --dry-run --json with writers that state no plan: the frozen
 * ABI 1.0 build, and the current fake, which leaves the 1.2 plan entry
 * NULL. Every source tensor is listed, action "unknown", and nothing is
 * written (no output, no temporary directory). */
START_TEST(dry_run_without_plan_entry)
{
    static const char *const writers[] = {"fake-abi10", "fake"};
    const char *sections[] = {NULL, NULL};
    size_t w;
    for (w = 0; w < 2; w++) {
        fixture fx;
        qbt_result r;
        cJSON *j, *t;
        int n = 0;
        const char *extra[] = {"--writer", writers[w], "--dry-run", "--json", NULL};
        sections[0] = writers[w];
        setup_fx(&fx, sections);
        convert(&r, &fx, extra);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", writers[w], r.status, r.err);
        j = cJSON_Parse(r.out);
        ck_assert_msg(j != NULL, "%s: stdout is not JSON: %s", writers[w], r.out);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "writer_states_actions")));
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
        {
            ck_assert_str_eq(cJSON_GetObjectItem(t, "action")->valuestring, "unknown");
            n++;
        }
        /* the fake model has three tensors (abi10_plugin_converts) */
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "unknown")->valueint,
                         3);
        ck_assert(!qbt_exists(fx.out));
        assert_no_leftovers(&fx);
        cJSON_Delete(j);
        qbt_result_free(&r);
        free_fx(&fx);
    }
}
END_TEST

/* A 1.0 reader feeding a writer built from the current headers, with a
 * reader option (routed through the 1.0 option declarations). */
START_TEST(abi10_reader_current_writer)
{
    static const char *both[] = {"fake-abi10:90", "fake:10", NULL};
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", "--option", "bias=0.5", NULL};
    char *path, *facts;
    setup_fx(&fx, both);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    /* a 1.0 reader's model still reaches the writer with the host's facts
     * (its config names no heads: those bits are clear) */
    path = qbt_path(fx.out, "facts.txt");
    facts = qbt_read_file(path, NULL);
    ck_assert_ptr_nonnull(facts);
    ck_assert_msg(strstr(facts, "known 0x187\nn_layers 1\nhidden_size 8\nvocab_size 6\n"
                                "n_heads 0\n") == facts, "%s", facts);
    free(facts);
    free(path);
    check_tensor(fx.out, "model.embed_tokens.weight", 0, 6, 8, 0.5f);
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.5f);
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(reader_option_routed)
{
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", "--option", "bias=1.5", "--group-size", "64",
                           "--threads", "1", NULL};
    setup_fx(&fx, only_fake);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 1.5f);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

static void expect_fail(const char *const *extra, int status, const char *needle)
{
    fixture fx;
    qbt_result r;
    setup_fx(&fx, only_fake);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == status, "exit %d (want %d): %s", r.status, status, r.err);
    ck_assert_msg(strstr(r.err, "quantbridge: error: ") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.err, needle) != NULL, "stderr lacks '%s': %s", needle, r.err);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free_fx(&fx);
}

START_TEST(unknown_option_is_usage_error)
{
    const char *extra[] = {"--writer", "fake", "--option", "nonsense=1", NULL};
    expect_fail(extra, 2, "--option nonsense: no option nonsense for reader fake or writer fake; "
                          "valid keys: reader fake: bias; writer fake: group_size, fail_after");
}
END_TEST

START_TEST(bad_values_rejected_before_conversion)
{
    const char *e1[] = {"--writer", "fake", "--group-size", "0", NULL};
    const char *e2[] = {"--writer", "fake", "--option", "fail_in=sometimes", NULL};
    const char *e3[] = {"--writer", "fake", "--option", "buffer=12parsecs", NULL};
    const char *e4[] = {"--writer", "fake", "--option", "wait_cancel=maybe", NULL};
    expect_fail(e1, 2, "--group-size: option group_size: 0 outside [1, 4096]");
    expect_fail(e2, 2, "'sometimes' is not one of none|begin|finish");
    expect_fail(e3, 2, "unknown size unit");
    expect_fail(e4, 2, "is not a bool");
}
END_TEST

START_TEST(writer_failure_leaves_nothing)
{
    const char *e1[] = {"--writer", "fake", "--option", "fail_after=1", NULL};
    const char *e2[] = {"--writer", "fake", "--option", "fail_in=finish", NULL};
    const char *e3[] = {"--writer", "fake", "--option", "fail_in=begin", NULL};
    expect_fail(e1, 1, "scripted failure after 1 tensors");
    expect_fail(e2, 1, "asked to fail in finish");
    expect_fail(e3, 1, "asked to fail in begin");
}
END_TEST

START_TEST(unknown_format_and_writer)
{
    const char *e1[] = {"--writer", "fake", "--format", "nope", NULL};
    const char *e2[] = {"--writer", "nope", NULL};
    expect_fail(e1, 2, "--format nope: no reader plugin");
    expect_fail(e2, 2, "--writer nope: no writer plugin");
}
END_TEST

/* The default writer is a built-in, registered with every config; a
 * config that disables it by name leaves convert without one. */
START_TEST(default_writer_disabled_by_name)
{
    fixture fx;
    qbt_result r;
    char *text;
    size_t n = 0;
    setup_fx(&fx, only_fake);
    text = qbt_read_file(fx.cfg, &n);
    ck_assert_ptr_nonnull(text);
    text = realloc(text, n + 64);
    ck_assert_ptr_nonnull(text);
    strcpy(text + n, "[plugin:sm86-w4a16]\nenabled=false\n");
    qbt_write_file(fx.cfg, text);
    convert(&r, &fx, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "quantbridge: error: writer sm86-w4a16 is disabled"), "%s", r.err);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free(text);
    free_fx(&fx);
}
END_TEST

START_TEST(not_recognised)
{
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", NULL};
    setup_fx(&fx, only_fake);
    qbt_write_file(fx.src, "something else entirely\n");
    convert(&r, &fx, extra);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "no reader recognises this input"));
    ck_assert(!qbt_exists(fx.out));
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(probe_tie_is_error_priority_breaks_it)
{
    const char *tie[] = {"fake", "fake-twin", NULL};
    const char *prio[] = {"fake", "fake-twin:60", NULL};
    const char *extra[] = {"--writer", "fake", NULL};
    const char *forced[] = {"--writer", "fake", "--format", "fake", NULL};
    fixture fx;
    qbt_result r;

    setup_fx(&fx, tie);
    convert(&r, &fx, extra);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "2 readers claim this input with score 100") &&
                      strstr(r.err, "fake, fake-twin") && strstr(r.err, "--format"),
                  "%s", r.err);
    qbt_result_free(&r);
    convert(&r, &fx, forced);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "via fake ->"));
    qbt_result_free(&r);
    free_fx(&fx);

    setup_fx(&fx, prio);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "via fake-twin ->"));
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(probe_below_threshold)
{
    const char *weak[] = {"fake-weak", NULL};
    const char *extra[] = {"--writer", "fake-weak", NULL};
    const char *forced[] = {"--writer", "fake-weak", "--format", "fake-weak", NULL};
    fixture fx;
    qbt_result r;
    setup_fx(&fx, weak);
    convert(&r, &fx, extra);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "score 30, below min-probe-score 50") &&
                      strstr(r.err, "--format fake-weak"), "%s", r.err);
    qbt_result_free(&r);
    convert(&r, &fx, forced);
    ck_assert_msg(r.status == 0, "%s", r.err);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(output_safety)
{
    fixture fx;
    qbt_result r;
    char *keep, *content;
    const char *extra[] = {"--writer", "fake", NULL};
    const char *over[] = {"--writer", "fake", "--overwrite", NULL};
    setup_fx(&fx, only_fake);

    /* Output == source. */
    {
        const char *argv[] = {"convert", "--config", fx.cfg, "--source", fx.src, "--output",
                              fx.src, "--writer", "fake", "--overwrite", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "is the source itself"));
        qbt_result_free(&r);
    }
    /* Output is an ancestor of the source, even with --overwrite. */
    {
        const char *argv[] = {"convert", "--config", fx.cfg, "--source", fx.src, "--output",
                              fx.dir, "--writer", "fake", "--overwrite", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "contains the source"));
        qbt_result_free(&r);
        ck_assert(qbt_exists(fx.src));
    }
    /* A directory source: output inside it is refused. */
    {
        char *inner = qbt_path(fx.dir, "inner-out");
        const char *argv[] = {"convert", "--config", fx.cfg, "--source", fx.dir, "--output",
                              inner, "--writer", "fake", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "is inside the source"));
        ck_assert(!qbt_exists(inner));
        qbt_result_free(&r);
        free(inner);
    }
    /* Existing non-empty output: refused, untouched. */
    ck_assert_int_eq(mkdir(fx.out, 0755), 0);
    keep = qbt_path(fx.out, "keep.txt");
    qbt_write_file(keep, "old output\n");
    convert(&r, &fx, extra);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "exists and is not empty (use --overwrite"));
    content = qbt_read_file(keep, NULL);
    ck_assert_str_eq(content, "old output\n");
    free(content);
    qbt_result_free(&r);
    /* A failing conversion with --overwrite keeps the old output. */
    {
        const char *failing[] = {"--writer", "fake", "--overwrite", "--option", "fail_after=2",
                                 NULL};
        convert(&r, &fx, failing);
        ck_assert_int_eq(r.status, 1);
        ck_assert(qbt_exists(keep));
        assert_no_leftovers(&fx);
        qbt_result_free(&r);
    }
    /* --overwrite replaces it at the end. */
    convert(&r, &fx, over);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(!qbt_exists(keep));
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.0f);
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free(keep);
    free_fx(&fx);
}
END_TEST

START_TEST(directory_source)
{
    fixture fx;
    qbt_result r;
    char *other = qbt_mkdtemp("convert-dirout"), *out = qbt_path(other, "out");
    setup_fx(&fx, only_fake);
    {
        const char *argv[] = {"convert", "--config", fx.cfg, "--source", fx.dir, "--output", out,
                              "--writer", "fake", NULL};
        qbt_run(&r, argv);
    }
    ck_assert_msg(r.status == 0, "%s", r.err);
    check_tensor(out, "model.layers.0.self_attn.q_proj.weight", 1, 8, 8, 0.0f);
    qbt_result_free(&r);
    free(out);
    free(other);
    free_fx(&fx);
}
END_TEST

START_TEST(empty_output_dir_accepted)
{
    fixture fx;
    qbt_result r;
    const char *extra[] = {"--writer", "fake", NULL};
    setup_fx(&fx, only_fake);
    ck_assert_int_eq(mkdir(fx.out, 0755), 0);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "%s", r.err);
    check_tensor(fx.out, "model.embed_tokens.weight", 0, 6, 8, 0.0f);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(sigint_cancels_and_cleans_up)
{
    fixture fx;
    const char *argv[20];
    int st = 0, i, seen = 0;
    pid_t pid;
    struct timespec ts = {0, 20 * 1000 * 1000};
    setup_fx(&fx, only_fake);
    argv[0] = "convert";
    argv[1] = "--config";
    argv[2] = fx.cfg;
    argv[3] = "--source";
    argv[4] = fx.src;
    argv[5] = "--output";
    argv[6] = fx.out;
    argv[7] = "--writer";
    argv[8] = "fake";
    argv[9] = "--option";
    argv[10] = "wait_cancel=true";
    argv[11] = NULL;
    pid = qbt_spawn(argv);
    /* Wait (bounded) until the writer is inside write_tensor: its temp dir
     * exists. This is synchronisation, not a timing assertion. */
    for (i = 0; i < 3000 && !seen; i++) {
        seen = qbt_count_entries(fx.dir, ".qbtmp-") == 1;
        if (!seen)
            nanosleep(&ts, NULL);
    }
    ck_assert_msg(seen, "temporary directory never appeared");
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    free_fx(&fx);
}
END_TEST

START_TEST(inspect_lists_tensors)
{
    fixture fx;
    qbt_result r;
    setup_fx(&fx, only_fake);
    {
        const char *argv[] = {"inspect", fx.src, "--config", fx.cfg, NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_ptr_nonnull(strstr(r.out, "architecture: llama"));
        ck_assert_ptr_nonnull(strstr(r.out, " 100  <- chosen"));
        ck_assert_ptr_nonnull(strstr(r.out, "model.layers.0.self_attn.q_proj.weight"));
        ck_assert_ptr_nonnull(strstr(r.out, "8x8"));
        ck_assert_ptr_nonnull(strstr(r.out, "f32 (fake)"));
        ck_assert_ptr_nonnull(strstr(r.out, "\nfacts: layers 1, hidden 8, vocab 6, heads 2, "
                                            "kv heads 1, head dim 4, intermediate 16, tied yes, "
                                            "experts 0\n"));
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"inspect", "--json", fx.src, "--config", fx.cfg, NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_ptr_nonnull(strstr(r.out, "\"reader\":\t\"fake\""));
        ck_assert_ptr_nonnull(strstr(r.out, "\"score\":\t100"));
        ck_assert_ptr_nonnull(strstr(r.out, "\"model.norm.weight\""));
        ck_assert_ptr_nonnull(strstr(r.out, "\"n_layers\":\t1,"));
        ck_assert_ptr_nonnull(strstr(r.out, "\"tied_embeddings\":\ttrue"));
        ck_assert_ptr_nonnull(strstr(r.out, "\"n_experts_used\":\t0,"));
        qbt_result_free(&r);
    }
    free_fx(&fx);
}
END_TEST

START_TEST(config_options_and_get_config)
{
    fixture fx;
    qbt_result r;
    char *text = NULL, *note, *np;
    const char *extra[] = {"--writer", "fake", NULL};
    setup_fx(&fx, only_fake);
    /* option.note is not declared: reachable through get_config, warned. */
    ck_assert(asprintf(&text, "[plugin:fake]\nlibrary=%s/libqb_fake.so\noption.note=hello\n"
                              "option.bias=0.25\n[plugin:fake-twin]\nlibrary=%s/libqb_fake_twin.so\n"
                              "enabled=false\noption.note=not-mine\n",
                       getenv("QBT_FAKE_DIR"), getenv("QBT_FAKE_DIR")) > 0);
    qbt_write_file(fx.cfg, text);
    free(text);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "option.note: not an option of plugin fake"));
    np = qbt_path(fx.out, "note.txt");
    note = qbt_read_file(np, NULL);
    ck_assert_ptr_nonnull(note);
    ck_assert_str_eq(note, "hello");
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.25f);
    free(note);
    free(np);
    qbt_result_free(&r);
    free_fx(&fx);

    /* A bad value in the config is a failure (exit 1), before any output. */
    setup_fx(&fx, only_fake);
    ck_assert(asprintf(&text, "[plugin:fake]\nlibrary=%s/libqb_fake.so\noption.group_size=abc\n",
                       getenv("QBT_FAKE_DIR")) > 0);
    qbt_write_file(fx.cfg, text);
    free(text);
    convert(&r, &fx, extra);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "config [plugin:fake] option.group_size: option "
                                        "group_size: 'abc' is not an integer"));
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

START_TEST(cli_usage_and_help)
{
    static const char *const cmds[] = {"plugins", "inspect", "convert", NULL};
    qbt_result r;
    size_t i;
    for (i = 0; cmds[i]; i++) {
        const char *argv[] = {cmds[i], "--help", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, "usage: quantbridge"));
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"frobnicate", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 2);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"--version", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, "plugin ABI 1.0"));
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"convert", "--source", "x", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 2);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"inspect", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 2);
        qbt_result_free(&r);
    }
}
END_TEST

static void expect_fail_in(const char *const *sections, const char *const *extra, int status,
                           const char *needle)
{
    fixture fx;
    qbt_result r;
    setup_fx(&fx, sections);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == status, "exit %d (want %d): %s", r.status, status, r.err);
    ck_assert_msg(strstr(r.err, needle) != NULL, "stderr lacks '%s': %s", needle, r.err);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    free_fx(&fx);
}

/* qb_writer.h: finish releases the handle whatever it returns, so the host
 * never calls abort after it; the output of a failed finish is discarded.
 * The fake writer's abort logs a line at info level (shown with -v). */
START_TEST(failed_finish_is_not_aborted)
{
    const char *fin[] = {"--writer", "fake", "-v", "--option", "fail_in=finish", NULL};
    const char *wr[] = {"--writer", "fake", "-v", "--option", "fail_after=1", NULL};
    fixture fx;
    qbt_result r;
    setup_fx(&fx, only_fake);
    convert(&r, &fx, fin);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "asked to fail in finish"));
    ck_assert_msg(strstr(r.err, "abort called") == NULL, "abort after finish: %s", r.err);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    /* The control: a failure before finish is aborted, and it shows. */
    convert(&r, &fx, wr);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "fake writer: abort called") != NULL, "%s", r.err);
    ck_assert(!qbt_exists(fx.out));
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* Options go to the role that declares them: bias is the reader's,
 * group_size the writer's; --group-size means writer.group_size. */
START_TEST(option_roles_on_the_command_line)
{
    static const char *abi10_and_fake[] = {"fake-abi10:90", "fake:10", NULL};
    const char *w_bias[] = {"--writer", "fake", "--option", "writer.bias=1", NULL};
    const char *r_group[] = {"--writer", "fake", "--option", "reader.group_size=64", NULL};
    /* The 1.0 reader declares every option for both roles; the current
     * writer declares group_size too: two options of one name. */
    const char *ambiguous[] = {"--writer", "fake", "--option", "group_size=64", NULL};
    const char *qualified[] = {"--writer", "fake", "--option", "writer.group_size=64",
                               "--option", "reader.bias=0.5", "--group-size", "32", NULL};
    fixture fx;
    qbt_result r;
    expect_fail_in(only_fake, w_bias, 2, "--option writer.bias: no option bias for writer fake; "
                                         "valid keys: writer fake: group_size");
    /* The built-in sm86-w4a16 writer, always registered, declares it too. */
    expect_fail_in(only_fake, r_group, 2, "(declared by writer compressed-tensors, writer fake, writer mlx, writer sm86-w4a16)");
    expect_fail_in(abi10_and_fake, ambiguous, 2,
                   "both the reader fake-abi10 and the writer fake declare option group_size; "
                   "say which: reader.group_size=64 or writer.group_size=64");
    setup_fx(&fx, abi10_and_fake);
    convert(&r, &fx, qualified);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    check_tensor(fx.out, "model.norm.weight", 2, 1, 8, 0.5f);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* A source directory: model.fake, two tokenizer files and one other. */
static char *tok_source(void)
{
    char *d = qbt_mkdtemp("tok-src"), *p;
    p = qbt_path(d, "model.fake");
    qbt_write_file(p, "FAKEMODEL\n");
    free(p);
    p = qbt_path(d, "tokenizer.json");
    qbt_write_file(p, "{\"model\": {\"type\": \"BPE\"}}\n");
    free(p);
    p = qbt_path(d, "tokenizer_config.json");
    qbt_write_file(p, "{\"bos_token\": \"<s>\"}");
    free(p);
    p = qbt_path(d, "README.md");
    qbt_write_file(p, "not a tokenizer file\n");
    free(p);
    return d;
}

static void convert_dir(qbt_result *r, fixture *fx, const char *src, const char *writer,
                        const char *tokenizer)
{
    const char *argv[16] = {"convert", "--config", fx->cfg, "--source", src, "--output",
                            fx->out, "--writer", writer, NULL};
    if (tokenizer) {
        argv[9] = "--tokenizer";
        argv[10] = tokenizer;
        argv[11] = NULL;
    }
    qbt_run(r, argv);
}

START_TEST(tokenizer_needs_a_writer_that_carries_it)
{
    fixture fx;
    qbt_result r;
    char *src = tok_source();
    setup_fx(&fx, only_fake);
    /* --tokenizer with a writer that declares no side files: usage error. */
    convert_dir(&r, &fx, src, "fake", src);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--tokenizer ") && strstr(r.err, "writer fake does not carry "
                                                               "tokenizer files"), "%s", r.err);
    ck_assert(!qbt_exists(fx.out));
    qbt_result_free(&r);
    /* The source's own tokenizer: converted, with one warning. */
    convert_dir(&r, &fx, src, "fake", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "warning: writer fake does not carry side files: the source's "
                                "tokenizer files will not be in") != NULL, "%s", r.err);
    ck_assert_ptr_null(strstr(strstr(r.err, "does not carry") + 1, "does not carry"));
    {
        char *p = qbt_path(fx.out, "tokenizer.json");
        ck_assert(!qbt_exists(p));
        free(p);
    }
    qbt_result_free(&r);
    qbt_rmtree(src);
    free(src);
    free_fx(&fx);
}
END_TEST

/* QB_WRITER_SIDE_FILES_HOST: the host copies the tokenizer files (only
 * those of the list, byte for byte) and writes generation_config.json
 * after the writer's finish; --tokenizer overrides the source's. */
START_TEST(host_copies_side_files)
{
    static const char *caps[] = {"fake-caps", NULL};
    fixture fx;
    qbt_result r;
    char *src = tok_source(), *other = qbt_mkdtemp("tok-other"), *p, *text;
    setup_fx(&fx, caps);
    convert_dir(&r, &fx, src, "fake-caps", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_null(strstr(r.err, "does not carry"));
    /* 3 tensors, manifest.txt, facts.txt, model.fake, 2 tokenizer files,
     * generation */
    ck_assert_msg(strstr(r.out, "3 tensors, 9 files") != NULL, "%s", r.out);
    text = qbt_read_file((p = qbt_path(fx.out, "tokenizer.json")), NULL);
    ck_assert_str_eq(text, "{\"model\": {\"type\": \"BPE\"}}\n");
    free(text);
    free(p);
    text = qbt_read_file((p = qbt_path(fx.out, "tokenizer_config.json")), NULL);
    ck_assert_str_eq(text, "{\"bos_token\": \"<s>\"}");
    free(text);
    free(p);
    text = qbt_read_file((p = qbt_path(fx.out, "generation_config.json")), NULL);
    ck_assert_ptr_nonnull(strstr(text, "\"_from_model_config\":\ttrue"));
    free(text);
    free(p);
    ck_assert(!qbt_exists((p = qbt_path(fx.out, "README.md"))));
    free(p);
    qbt_result_free(&r);
    qbt_rmtree(fx.out);

    p = qbt_path(other, "vocab.txt");
    qbt_write_file(p, "a\nb\n");
    free(p);
    convert_dir(&r, &fx, src, "fake-caps", other);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(qbt_exists((p = qbt_path(fx.out, "vocab.txt"))));
    free(p);
    ck_assert(!qbt_exists((p = qbt_path(fx.out, "tokenizer.json"))));
    free(p);
    assert_no_leftovers(&fx);
    qbt_result_free(&r);
    qbt_rmtree(src);
    qbt_rmtree(other);
    free(src);
    free(other);
    free_fx(&fx);
}
END_TEST

START_TEST(declared_architectures_and_facts)
{
    static const char *arch[] = {"fake-arch", NULL};
    static const char *facts[] = {"fake-facts", NULL};
    const char *e1[] = {"--writer", "fake-arch", NULL};
    const char *e2[] = {"--writer", "fake-facts", NULL};
    expect_fail_in(arch, e1, 1, "writer fake-arch cannot write this 'llama' model: it declares "
                                "the architectures qwen2, mistral");
    /* That variant's config states no num_attention_heads. */
    expect_fail_in(facts, e2, 1, "writer fake-facts requires model facts the source does not "
                                 "state: heads");
}
END_TEST

/* convert --verify reads the output with the writer's verify_reader; a
 * probe of that output would tie between fake-caps and fake-twin. */
START_TEST(verify_uses_the_declared_reader)
{
    static const char *two[] = {"fake-caps", "fake-twin", NULL};
    const char *extra[] = {"--format", "fake-caps", "--writer", "fake-caps", "--verify", NULL};
    fixture fx;
    qbt_result r;
    setup_fx(&fx, two);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s\n%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "quantbridge: verifying"));
    qbt_result_free(&r);
    {
        const char *argv[] = {"verify", "--config", fx.cfg, "--source", fx.src, "--format",
                              "fake-caps", "--converted", fx.out, NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "2 readers claim this input") != NULL, "%s", r.err);
        qbt_result_free(&r);
    }
    free_fx(&fx);
}
END_TEST

/* A comparison that runs and fails exits 3, not 1, and keeps the output
 * (issue 17.6): the source is read with a bias the read-back lacks, so
 * every value differs by it. */
START_TEST(verify_failure_exits_3_and_keeps_output)
{
    static const char *one[] = {"fake-caps", NULL};
    const char *extra[] = {"--format", "fake-caps", "--writer", "fake-caps", "--option",
                           "bias=0.5", "--verify", NULL};
    fixture fx;
    qbt_result r;
    struct stat sb;
    setup_fx(&fx, one);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 3, "exit %d: %s\n%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "verify: FAIL") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.err, "quantbridge: error: --verify:") && strstr(r.err, "kept"), "%s",
                  r.err);
    ck_assert_int_eq(stat(fx.out, &sb), 0);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* ---- the frozen ABI 1.1 and 1.2 plugins (abi-1.1/, abi-1.2/ READMEs) ---- */

/* The facts the host computes for the fake model (writer_sees_model_facts). */
static const char fake_facts[] = "known 0x1ff\nn_layers 1\nhidden_size 8\nvocab_size 6\n"
                                 "n_heads 2\nn_kv_heads 1\nhead_dim 4\nintermediate_size 16\n"
                                 "n_experts 0\nn_experts_used 0\ntied_embeddings 1\n";

static void check_fake_values(const char *out, float bias, float scale)
{
    check_tensor_scaled(out, "model.embed_tokens.weight", 0, 6, 8, bias, scale);
    check_tensor_scaled(out, "model.layers.0.self_attn.q_proj.weight", 1, 8, 8, bias, scale);
    check_tensor_scaled(out, "model.norm.weight", 2, 1, 8, bias, scale);
}

static void check_facts_file(const char *out)
{
    char *path = qbt_path(out, "facts.txt"), *facts = qbt_read_file(path, NULL);
    ck_assert_msg(facts != NULL, "%s missing", path);
    ck_assert_str_eq(facts, fake_facts);
    free(facts);
    free(path);
}

/* config.json as the frozen writers build it through the 1.1 JSON service:
 * the source's config with the writer's name added. */
static void check_config_file(const char *out, const char *writer)
{
    char *path = qbt_path(out, "config.json"), *text = qbt_read_file(path, NULL);
    cJSON *j;
    ck_assert_msg(text != NULL, "%s missing", path);
    j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "%s: %s", path, text);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "model_type")->valuestring, "llama");
    ck_assert_int_eq(cJSON_GetObjectItem(j, "num_attention_heads")->valueint, 2);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "quantbridge_writer")->valuestring, writer);
    cJSON_Delete(j);
    free(text);
    free(path);
}

/* Each frozen build as reader and writer: the reader-role option reaches
 * the reader only, the writer-role one the writer only (1.1 roles), the
 * writer sees the host's facts (1.1), every value arrives exactly. */
START_TEST(frozen_abi11_abi12_plugins_convert)
{
    static const char *const names[] = {"fake-abi11", "fake-abi12"};
    size_t k;
    for (k = 0; k < 2; k++) {
        const char *sections[] = {names[k], NULL};
        const char *extra[] = {"--writer", names[k], "--option", "bias=0.5", "--option",
                               "scale=2", "--threads", "2", NULL};
        fixture fx;
        qbt_result r;
        setup_fx(&fx, sections);
        convert(&r, &fx, extra);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", names[k], r.status, r.err);
        ck_assert_msg(strstr(r.out, "3 tensors, 5 files") != NULL, "%s: %s", names[k], r.out);
        check_fake_values(fx.out, 0.5f, 2.0f);
        check_facts_file(fx.out);
        check_config_file(fx.out, names[k]);
        assert_no_leftovers(&fx);
        qbt_result_free(&r);
        free_fx(&fx);
    }
}
END_TEST

/* Frozen readers feeding the current writer, and the current reader
 * feeding each frozen writer. */
START_TEST(frozen_abi11_abi12_mix_with_current)
{
    static const char *const names[] = {"fake-abi11", "fake-abi12"};
    size_t k;
    for (k = 0; k < 2; k++) {
        char frozen_first[32], frozen_last[32];
        const char *reader_frozen[] = {frozen_first, "fake:10", NULL};
        const char *writer_frozen[] = {"fake:90", frozen_last, NULL};
        const char *to_fake[] = {"--writer", "fake", NULL};
        const char *to_frozen[] = {"--writer", names[k], "--option", "scale=0.5", NULL};
        fixture fx;
        qbt_result r;
        snprintf(frozen_first, sizeof frozen_first, "%s:90", names[k]);
        snprintf(frozen_last, sizeof frozen_last, "%s:10", names[k]);
        setup_fx(&fx, reader_frozen);
        convert(&r, &fx, to_fake);
        ck_assert_msg(r.status == 0, "%s reader: exit %d: %s", names[k], r.status, r.err);
        ck_assert_msg(strstr(r.out, names[k]) != NULL, "%s", r.out);
        check_fake_values(fx.out, 0.0f, 1.0f);
        check_facts_file(fx.out); /* written by the current fake writer */
        qbt_result_free(&r);
        free_fx(&fx);

        setup_fx(&fx, writer_frozen);
        convert(&r, &fx, to_frozen);
        ck_assert_msg(r.status == 0, "%s writer: exit %d: %s", names[k], r.status, r.err);
        check_fake_values(fx.out, 0.0f, 0.5f);
        check_facts_file(fx.out); /* written by the frozen writer */
        check_config_file(fx.out, names[k]);
        assert_no_leftovers(&fx);
        qbt_result_free(&r);
        free_fx(&fx);
    }
}
END_TEST

/* The 1.2 plan through convert --dry-run --json: every tensor "copy" with
 * its target and the bytes of its float32 file (rows * cols * 4), the
 * group_size setting, and nothing written. */
START_TEST(frozen_abi12_plan_in_dry_run)
{
    static const char *only[] = {"fake-abi12", NULL};
    static const struct {
        const char *name;
        double bytes;
    } want[] = {{"model.embed_tokens.weight", 6 * 8 * 4},
                {"model.layers.0.self_attn.q_proj.weight", 8 * 8 * 4},
                {"model.norm.weight", 1 * 8 * 4}};
    const char *extra[] = {"--writer", "fake-abi12", "--dry-run", "--json", NULL};
    fixture fx;
    qbt_result r;
    cJSON *j, *t, *g;
    size_t n = 0;
    char target[128];
    setup_fx(&fx, only);
    convert(&r, &fx, extra);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "stdout is not JSON: %s", r.out);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "writer_states_actions")));
    g = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "settings"), "group_size");
    ck_assert_msg(g != NULL, "%s", r.out);
    ck_assert_str_eq(cJSON_GetObjectItem(g, "value")->valuestring, "0");
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        ck_assert_uint_lt(n, 3);
        ck_assert_str_eq(cJSON_GetObjectItem(t, "name")->valuestring, want[n].name);
        ck_assert_str_eq(cJSON_GetObjectItem(t, "action")->valuestring, "copy");
        snprintf(target, sizeof target, "%s.f32", want[n].name);
        ck_assert_str_eq(cJSON_GetObjectItem(t, "target")->valuestring, target);
        ck_assert(cJSON_GetObjectItem(t, "bytes_out")->valuedouble == want[n].bytes);
        n++;
    }
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "copy")->valueint, 3);
    ck_assert(!qbt_exists(fx.out));
    assert_no_leftovers(&fx);
    cJSON_Delete(j);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

/* The 1.2 reader views through inspect --raw / --metadata: the stored
 * names, type names, shapes in the format's (reversed) order, bytes, the
 * canonical tensor each feeds (none for the checksum), and the metadata
 * values written into the host's buffer, the reader option among them. */
START_TEST(frozen_abi12_reader_views_in_inspect)
{
    static const char *only[] = {"fake-abi12", NULL};
    static const struct {
        const char *name, *type, *canonical;
        int d0, d1;
        double bytes;
    } raw[] = {{"fake.0", "F32", "model.embed_tokens.weight", 8, 6, 192},
               {"fake.1", "F32", "model.layers.0.self_attn.q_proj.weight", 8, 8, 256},
               {"fake.2", "F32", "model.norm.weight", 8, -1, 32},
               {"fake.checksum", "U32", NULL, 1, -1, 4}};
    static const char *const meta[][3] = {{"general.architecture", "string", "llama"},
                                          {"fake.tensor_count", "u32", "3"},
                                          {"fake.bias", "f64", "0.25"}};
    fixture fx;
    qbt_result r;
    cJSON *j, *e, *sh;
    size_t n = 0;
    setup_fx(&fx, only);
    {
        const char *argv[] = {"inspect", "--raw", "--json", fx.src, "--config", fx.cfg, NULL};
        qbt_run(&r, argv);
    }
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "%s", r.out);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "raw_tensors"))
    {
        cJSON *c = cJSON_GetObjectItem(e, "canonical");
        ck_assert_uint_lt(n, 4);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, raw[n].name);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, raw[n].type);
        sh = cJSON_GetObjectItem(e, "shape");
        ck_assert_int_eq(cJSON_GetArraySize(sh), raw[n].d1 < 0 ? 1 : 2);
        ck_assert_int_eq(cJSON_GetArrayItem(sh, 0)->valueint, raw[n].d0);
        if (raw[n].d1 >= 0)
            ck_assert_int_eq(cJSON_GetArrayItem(sh, 1)->valueint, raw[n].d1);
        ck_assert(cJSON_GetObjectItem(e, "bytes")->valuedouble == raw[n].bytes);
        if (raw[n].canonical)
            ck_assert_str_eq(c->valuestring, raw[n].canonical);
        else
            ck_assert(cJSON_IsNull(c));
        n++;
    }
    ck_assert_uint_eq(n, 4);
    cJSON_Delete(j);
    qbt_result_free(&r);
    {
        const char *argv[] = {"inspect", "--metadata", "--json", "--option", "bias=0.25",
                              fx.src, "--config", fx.cfg, NULL};
        qbt_run(&r, argv);
    }
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "%s", r.out);
    n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "metadata"))
    {
        ck_assert_uint_lt(n, 3);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "key")->valuestring, meta[n][0]);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, meta[n][1]);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "value")->valuestring, meta[n][2]);
        n++;
    }
    ck_assert_uint_eq(n, 3);
    cJSON_Delete(j);
    qbt_result_free(&r);
    free_fx(&fx);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sdk-contract-convert");
    TCase *tc = tcase_create("convert");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, convert_exact_values_and_manifest);
    tcase_add_test(tc, writer_sees_model_facts);
    tcase_add_test(tc, abi10_plugin_converts);
    tcase_add_test(tc, dry_run_without_plan_entry);
    tcase_add_test(tc, abi10_reader_current_writer);
    tcase_add_test(tc, reader_option_routed);
    tcase_add_test(tc, unknown_option_is_usage_error);
    tcase_add_test(tc, bad_values_rejected_before_conversion);
    tcase_add_test(tc, writer_failure_leaves_nothing);
    tcase_add_test(tc, unknown_format_and_writer);
    tcase_add_test(tc, default_writer_disabled_by_name);
    tcase_add_test(tc, not_recognised);
    tcase_add_test(tc, probe_tie_is_error_priority_breaks_it);
    tcase_add_test(tc, probe_below_threshold);
    tcase_add_test(tc, output_safety);
    tcase_add_test(tc, empty_output_dir_accepted);
    tcase_add_test(tc, directory_source);
    tcase_add_test(tc, sigint_cancels_and_cleans_up);
    tcase_add_test(tc, inspect_lists_tensors);
    tcase_add_test(tc, config_options_and_get_config);
    tcase_add_test(tc, cli_usage_and_help);
    tcase_add_test(tc, failed_finish_is_not_aborted);
    tcase_add_test(tc, option_roles_on_the_command_line);
    tcase_add_test(tc, tokenizer_needs_a_writer_that_carries_it);
    tcase_add_test(tc, host_copies_side_files);
    tcase_add_test(tc, declared_architectures_and_facts);
    tcase_add_test(tc, verify_uses_the_declared_reader);
    tcase_add_test(tc, verify_failure_exits_3_and_keeps_output);
    tcase_add_test(tc, frozen_abi11_abi12_plugins_convert);
    tcase_add_test(tc, frozen_abi11_abi12_mix_with_current);
    tcase_add_test(tc, frozen_abi12_plan_in_dry_run);
    tcase_add_test(tc, frozen_abi12_reader_views_in_inspect);
    suite_add_tcase(s, tc);
    return s;
}
