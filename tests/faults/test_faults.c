/*
 * Faults during a real conversion (issue 8), through the built binary on a
 * tiny generated HF checkpoint (hf-dense -> sm86-w4a16):
 *   - allocation failure at every host allocation of the conversion
 *     (SQLite-style countdown, QUANTBRIDGE_TEST_ALLOC_FAIL=N for N = 0, 1,
 *     2, ... until a run succeeds with nothing refused);
 *   - a sink that fails after N bytes and RLIMIT_FSIZE (EFBIG), with and
 *     without --overwrite;
 *   - the source truncated while mapped (SIGBUS);
 *   - SIGTERM/SIGINT mid-conversion; SIGKILL, then the next run removing
 *     the stale temp dir it can prove is its own, and leaving alone one it
 *     cannot.
 * Every failure must be one "quantbridge: error:" line, exit 1, no sanitizer
 * report, no temp dir, and the final path as it was (absent, or the old
 * output byte for byte).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qbt_fs.h"
#include "qbt_run.h"

static char *make_source(const char *dir)
{
    char gen[4096], *src = qbt_path(dir, "src");
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    snprintf(gen, sizeof gen, "%s/tests/bin/qb-gen-hf-dense", bd);
    {
        const char *const gargv[] = {"--arch", "llama", "--dtype", "bf16", "--layers", "1",
                                     "--hidden", "64", "--intermediate", "128", "--vocab", "64",
                                     "--tied", "0", "--seed", "7", "--out", src, NULL};
        qbt_result r;
        qbt_run_ex(&r, &(qbt_run_opts){.prog = gen}, gargv);
        ck_assert_msg(r.status == 0, "%s: %s", gen, r.err);
        qbt_result_free(&r);
    }
    return src;
}

/* Every file of a flat directory, "name\nsize\nbytes" in name order. */
static char *snapshot(const char *dir, size_t *len)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort), i;
    char *buf = NULL;
    size_t cap = 0;
    FILE *m = open_memstream(&buf, &cap);
    ck_assert(n > 2);
    for (i = 0; i < n; i++) {
        if (ents[i]->d_name[0] != '.') {
            char *p = qbt_path(dir, ents[i]->d_name);
            size_t fl = 0;
            char *data = qbt_read_file(p, &fl);
            ck_assert_ptr_nonnull(data);
            fprintf(m, "%s\n%zu\n", ents[i]->d_name, fl);
            fwrite(data, 1, fl, m);
            free(data);
            free(p);
        }
        free(ents[i]);
    }
    free(ents);
    fclose(m);
    *len = cap;
    return buf;
}

/* The common verdict on a run that must fail cleanly. */
static void assert_clean_failure(const qbt_result *r, const char *work, const char *out)
{
    ck_assert_msg(r->status == 1, "exit %d, stderr:\n%s", r->status, r->err);
    ck_assert_msg(qbt_count_lines(r->err, "quantbridge: error:") == 1, "stderr:\n%s", r->err);
    ck_assert_msg(!strstr(r->err, "Sanitizer") && !strstr(r->err, "runtime error:"),
                  "sanitizer report:\n%s", r->err);
    ck_assert_msg(qbt_count_entries(work, ".qbtmp-") == 0, "temp dir left; stderr:\n%s", r->err);
    ck_assert_msg(qbt_count_entries(work, ".qbold-") == 0, "old output left aside");
    if (out)
        ck_assert_msg(!qbt_exists(out), "output %s exists after a failure", out);
}

static const char *const convert_argv[] = {"convert", "--source", "src", "--output", "out",
                                           "--threads", "1", NULL};
static const char *const overwrite_argv[] = {"convert", "--source", "src", "--output", "out",
                                             "--overwrite", NULL};


/* The allocations the host countdown cannot reach: plugins' own malloc
 * (and libcjson's on their behalf), failed through failmalloc.c preloaded.
 * Only in builds without sanitizers ($QBT_FAILMALLOC set by CMake). The
 * message is not asserted to say "out of memory": a probe or cJSON that
 * swallows the failure reports what it saw (a low score, "not valid
 * JSON"); the run must still fail cleanly and leave nothing behind. */
START_TEST(plugin_malloc_fails_at_every_site)
{
    const char *lib = getenv("QBT_FAILMALLOC");
    char *work, *src, *out, pre[4200];
    long n, refused = -1;
    if (!lib || !*lib)
        return; /* sanitizer build: not applicable */
    work = qbt_mkdtemp("fault-pmalloc");
    src = make_source(work);
    out = qbt_path(work, "out");
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", lib);
    for (n = 0; n < 20000; n++) {
        char var[64];
        const char *env[] = {pre, var, NULL};
        qbt_result r;
        const char *t;
        snprintf(var, sizeof var, "QBT_FAILMALLOC_PLUGIN_AFTER=%ld", n);
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, convert_argv);
        t = strstr(r.err, "failmalloc: ");
        ck_assert_msg(t, "n=%ld: no failmalloc report; stderr:\n%s", n, r.err);
        refused = strtol(t + strlen("failmalloc: "), NULL, 10);
        if (refused == 0) {
            ck_assert_msg(r.status == 0, "n=%ld: %s", n, r.err);
            qbt_result_free(&r);
            break;
        }
        assert_clean_failure(&r, work, out);
        qbt_result_free(&r);
    }
    ck_assert_int_eq(refused, 0);
    ck_assert_msg(n > 100, "only %ld plugin allocation sites reached", n);
    fprintf(stderr, "plugin_malloc_fails_at_every_site: %ld failure points, each clean\n", n);
    free(out);
    free(src);
    free(work);
}
END_TEST

/* ---- allocation countdown, one test per bundled plugin --------------------
 * QUANTBRIDGE_TEST_ALLOC_FAIL=N refuses the N-th allocation and every later
 * one (host/alloc.c). Plugins and their kit copy allocate through
 * host->alloc (sdk/kit/qbk_alloc.h), so the countdown reaches plugin sites
 * too, also under ASan where LD_PRELOAD cannot. The host's own kit copy
 * never calls qbk_alloc_init, so kit code in the host uses malloc and is
 * never refused: a refused allocation is the host's or a plugin's own.
 *
 * "Plugin sites reached" is counted from the error line of each failure
 * point: `sites` lists forms only the plugin under test writes for this
 * fixture -- the source-format tensor names only its reader knows
 * (qweight, weight_packed...), the source file it parses named with a
 * tensor, or a message form of its own (the writer's planning messages).
 * The host names no source tensor in its out-of-memory errors. */

typedef struct cd_step {
    const char *gen;               /* tests/bin/<gen>, or NULL: quantbridge */
    const char *const *argv;       /* run in the work dir */
} cd_step;

typedef struct cd_case {
    const char *name;
    cd_step steps[2];              /* the fixture, in order; unused: gen/argv NULL */
    const char *const *argv;       /* the conversion under the countdown */
    const char *const *sites;      /* error-line forms of the plugin under test */
    long min_sites;
} cd_case;

#define CD_ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CD_CONVERT(...) CD_ARGV("convert", "--source", "src", "--output", "out", "--threads", "1", __VA_ARGS__)
#define CD_HFD CD_ARGV("--arch", "llama", "--dtype", "bf16", "--layers", "1", "--hidden", "64", \
                       "--intermediate", "128", "--vocab", "64", "--tied", "0", "--seed", "7", \
                       "--out", "src")

static const cd_case cd_cases[] = {
    {"gguf", {{"qb-gen-gguf", CD_ARGV("llama", "q4_0", "model.gguf")}},
     CD_ARGV("convert", "--source", "model.gguf", "--output", "out", "--threads", "1",
             "--group-size", "32"),
     /* its messages name the file it reads (container.c, kv.c, ...) */
     CD_ARGV("model.gguf: out of memory"), 6},
    {"gptq", {{"qb-gen-quant", CD_ARGV("src", "gptq-4-g128-sym-v1")}},
     CD_CONVERT("--group-size", "128"),
     CD_ARGV(".qweight: out of memory", ".qzeros: out of memory", ".scales: out of memory",
             ".g_idx: "), 20},
    {"awq", {{"qb-gen-quant", CD_ARGV("src", "awq-gemm-g128-zp")}},
     CD_CONVERT("--group-size", "128"),
     CD_ARGV(".qweight: out of memory", ".qzeros: out of memory", ".scales: out of memory"), 20},
    {"fp8", {{"qb-gen-fp8", CD_ARGV("gen")}},
     CD_ARGV("convert", "--source", "gen/fp8-block128", "--output", "out", "--threads", "1"),
     /* fp8_model.c names the shard and the tensor */
     CD_ARGV("gen/fp8-block128/model.safetensors: "), 10},
    {"compressed-tensors", {{"qb-gen-ct", CD_ARGV("gen")}},
     CD_ARGV("convert", "--source", "gen/ct-w4a16-g32-sym", "--output", "out", "--threads", "1",
             "--group-size", "32"),
     /* ct_read.c / ct_model.c name the shard with a tensor; ct_config.c the
      * config key */
     CD_ARGV("gen/ct-w4a16-g32-sym/model.safetensors: model.", "config.json: config_groups",
             "config.json: ignore"), 10},
    /* hf-dense reader into the hf-dense writer: the only other plugin is
     * the writer, whose messages name the output files or the fixed side
     * files (hfw_files.c), so "src/..." forms are the reader's (hfd_config.c,
     * reader.c) or the host services it calls (read_small_file: 1 site). */
    {"hf-dense-reader", {{"qb-gen-hf-dense", CD_HFD}}, CD_CONVERT("--writer", "hf-dense"),
     CD_ARGV("error: src/", "error: src: out of memory\n"), 10},
    /* a W4A16 directory (made without the countdown) read back into dense */
    {"sm86-w4a16-reader",
     {{"qb-gen-hf-dense", CD_HFD},
      {NULL, CD_ARGV("convert", "--source", "src", "--output", "w4", "--threads", "1")}},
     CD_ARGV("convert", "--source", "w4", "--output", "out", "--threads", "1", "--writer",
             "hf-dense"),
     /* reader.c, manifest_in.c and the kit's manifest reader name the W4A16
      * directory or its files; the hf-dense writer names only its own */
     CD_ARGV("error: w4: out of memory\n", "error: w4/manifest.json: ",
             "error: w4/embed.safetensors: ", "error: w4/layer_00.safetensors: "), 10},
    /* the default writer: its planner and quantizer name what they plan
     * (plan.c "out of memory planning...", writer.c "... for scales", its
     * own plugin name) */
    {"sm86-w4a16-writer", {{"qb-gen-hf-dense", CD_HFD}}, CD_CONVERT("--group-size", "32"),
     CD_ARGV("out of memory planning", "out of memory for scales", "error: sm86-w4a16: "), 10},
    /* a cast (bf16 -> f32), so the writer converts rather than copies,
     * and the conversion differs from the hf-dense-reader case */
    {"hf-dense-writer", {{"qb-gen-hf-dense", CD_HFD}},
     CD_CONVERT("--writer", "hf-dense", "--option", "dtype=f32"),
     /* hfw_files.c / hfw_st.c / the kit's safetensors writer (header) */
     CD_ARGV("error: generation_config.json: ", "error: tokenizer_config.json: ",
             "error: model.safetensors: ", "error: config.json: "), 2},
};

/* The error line of a failure point is an out-of-memory report. */
static int says_oom(const char *err)
{
    return strstr(err, "out of memory") != NULL;
}

static int count_sites(const char *err, const char *const *forms)
{
    for (; *forms; forms++)
        if (strstr(err, *forms))
            return 1;
    return 0;
}

static void countdown(const cd_case *c)
{
    char *work = qbt_mkdtemp("fault-cd"), *out = qbt_path(work, "out"), gen[4096];
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    long n, refused = -1, sites = 0;
    size_t i;
    ck_assert_ptr_nonnull(bd);
    for (i = 0; i < 2 && c->steps[i].argv; i++) {
        qbt_result r;
        if (c->steps[i].gen) {
            snprintf(gen, sizeof gen, "%s/tests/bin/%s", bd, c->steps[i].gen);
            /* CMake registers a countdown case only when its plugin and
             * generator are part of the build: a missing one is a failure */
            ck_assert_msg(access(gen, X_OK) == 0, "countdown %s: %s not built", c->name, gen);
        }
        qbt_run_ex(&r, &(qbt_run_opts){.prog = c->steps[i].gen ? gen : NULL, .cwd = work},
                   c->steps[i].argv);
        ck_assert_msg(r.status == 0, "%s fixture step %zu: %s%s", c->name, i, r.out, r.err);
        qbt_result_free(&r);
    }
    for (n = 0; n < 5000; n++) {
        char var[64];
        const char *env[] = {var, NULL};
        qbt_result r;
        const char *t;
        snprintf(var, sizeof var, "QUANTBRIDGE_TEST_ALLOC_FAIL=%ld", n);
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, c->argv);
        t = strstr(r.err, "quantbridge: test: ");
        ck_assert_msg(t, "%s n=%ld: no allocation report; exit %d, stderr:\n%s", c->name, n,
                      r.status, r.err);
        refused = strtol(t + strlen("quantbridge: test: "), NULL, 10);
        if (refused == 0) {
            /* The countdown ran past the last allocation: a normal run. */
            ck_assert_msg(r.status == 0, "%s n=%ld: %s", c->name, n, r.err);
            ck_assert(qbt_exists(out));
            qbt_result_free(&r);
            break;
        }
        /* A refused allocation is never papered over: the run fails. */
        assert_clean_failure(&r, work, out);
        ck_assert_msg(says_oom(r.err), "%s n=%ld: %s", c->name, n, r.err);
        sites += count_sites(r.err, c->sites);
        qbt_result_free(&r);
    }
    ck_assert_int_eq(refused, 0);
    /* A conversion touches far more than a handful of allocation sites:
     * a tiny count would mean the hook stopped reaching them. */
    ck_assert_msg(n > 60, "%s: only %ld allocation sites reached", c->name, n);
    ck_assert_msg(sites >= c->min_sites, "%s: only %ld of %ld failure points in the plugin",
                  c->name, sites, n);
    fprintf(stderr, "countdown %s: %ld failure points (%ld in the plugin), each clean\n", c->name,
            n, sites);
    free(out);
    free(work);
}

START_TEST(alloc_countdown)
{
    countdown(&cd_cases[_i]);
}
END_TEST

START_TEST(sink_fails_after_n_bytes)
{
    static const char *const limits[] = {"0", "1", "4096", "20000", "40000"};
    char *work = qbt_mkdtemp("fault-sink"), *src = make_source(work);
    char *out = qbt_path(work, "out");
    size_t i;
    for (i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        char var[64];
        const char *env[] = {var, NULL};
        qbt_result r;
        snprintf(var, sizeof var, "QUANTBRIDGE_TEST_WRITE_LIMIT=%s", limits[i]);
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, convert_argv);
        assert_clean_failure(&r, work, out);
        /* names the output file being written (the final path: the temp
         * dir is gone when the user reads this), and says why */
        ck_assert_msg(strstr(r.err, "quantbridge: error: out/") &&
                      (strstr(r.err, ".safetensors: write") || strstr(r.err, ".json: write")),
                      "%s", r.err);
        ck_assert_msg(strstr(r.err, "No space left on device"), "%s", r.err);
        qbt_result_free(&r);
    }
    free(out);
    free(src);
    free(work);
}
END_TEST

/* A complete output, then a failing --overwrite: the old one survives. */
static void overwrite_survives(const char *const *env, long fsize, const char *expect)
{
    char *work = qbt_mkdtemp("fault-overwrite"), *src = make_source(work);
    char *out = qbt_path(work, "out"), *before, *after;
    size_t lb, la;
    qbt_result r;
    qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, convert_argv);
    ck_assert_msg(r.status == 0, "%s", r.err);
    qbt_result_free(&r);
    before = snapshot(out, &lb);
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .fsize_limit = fsize, .cwd = work}, overwrite_argv);
    assert_clean_failure(&r, work, NULL);
    ck_assert_msg(strstr(r.err, expect), "%s", r.err);
    after = snapshot(out, &la);
    ck_assert_uint_eq(lb, la);
    ck_assert(memcmp(before, after, lb) == 0);
    qbt_result_free(&r);
    /* and a --overwrite that succeeds replaces it, leaving nothing beside */
    qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, overwrite_argv);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_int_eq(qbt_count_entries(work, ".qbtmp-"), 0);
    ck_assert_int_eq(qbt_count_entries(work, ".qbold-"), 0);
    ck_assert(qbt_exists(out));
    qbt_result_free(&r);
    free(before);
    free(after);
    free(out);
    free(src);
    free(work);
}

START_TEST(sink_failure_keeps_old_output)
{
    const char *env[] = {"QUANTBRIDGE_TEST_WRITE_LIMIT=30000", NULL};
    overwrite_survives(env, 0, "No space left on device");
}
END_TEST

START_TEST(rlimit_fsize)
{
    char *work = qbt_mkdtemp("fault-fsize"), *src = make_source(work);
    char *out = qbt_path(work, "out");
    qbt_result r;
    qbt_run_ex(&r, &(qbt_run_opts){.fsize_limit = 8192, .cwd = work}, convert_argv);
    assert_clean_failure(&r, work, out);
    ck_assert_msg(strstr(r.err, "File too large") && strstr(r.err, "error: out/"), "%s", r.err);
    qbt_result_free(&r);
    free(out);
    free(src);
    free(work);
}
END_TEST

START_TEST(rlimit_fsize_keeps_old_output)
{
    overwrite_survives(NULL, 8192, "File too large");
}
END_TEST

static void truncate_source(pid_t pid, void *arg)
{
    (void)pid;
    ck_assert_int_eq(truncate((const char *)arg, 0), 0);
}

START_TEST(source_truncated_while_mapped)
{
    char *work = qbt_mkdtemp("fault-sigbus"), *src = make_source(work);
    char *out = qbt_path(work, "out"), *st = qbt_path(src, "model.safetensors");
    const char *env[] = {"QUANTBRIDGE_TEST_STOP_AFTER=1", NULL};
    qbt_result r;
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work, .on_stop = truncate_source, .on_stop_arg = st}, convert_argv);
    assert_clean_failure(&r, work, out);
    ck_assert_msg(strstr(r.err, "quantbridge: error: source file changed or truncated while "
                         "reading (SIGBUS at address 0x"), "%s", r.err);
    qbt_result_free(&r);
    free(st);
    free(out);
    free(src);
    free(work);
}
END_TEST

static void send_signal(pid_t pid, void *arg)
{
    ck_assert_int_eq(kill(pid, *(int *)arg), 0);
}

START_TEST(term_and_int_remove_temp)
{
    static int sigs[] = {SIGTERM, SIGINT};
    char *work = qbt_mkdtemp("fault-signal"), *src = make_source(work);
    char *out = qbt_path(work, "out");
    const char *env[] = {"QUANTBRIDGE_TEST_STOP_AFTER=2", NULL};
    size_t i;
    for (i = 0; i < 2; i++) {
        qbt_result r;
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work, .on_stop = send_signal, .on_stop_arg = &sigs[i]}, convert_argv);
        assert_clean_failure(&r, work, out);
        ck_assert_msg(strstr(r.err, "cancelled"), "%s", r.err);
        qbt_result_free(&r);
    }
    free(out);
    free(src);
    free(work);
}
END_TEST

START_TEST(term_keeps_old_output)
{
    static int sig = SIGTERM;
    char *work = qbt_mkdtemp("fault-signal-ow"), *src = make_source(work);
    char *out = qbt_path(work, "out"), *before, *after;
    const char *env[] = {"QUANTBRIDGE_TEST_STOP_AFTER=2", NULL};
    size_t lb, la;
    qbt_result r;
    qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, convert_argv);
    ck_assert_int_eq(r.status, 0);
    qbt_result_free(&r);
    before = snapshot(out, &lb);
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work, .on_stop = send_signal, .on_stop_arg = &sig}, overwrite_argv);
    assert_clean_failure(&r, work, NULL);
    after = snapshot(out, &la);
    ck_assert(lb == la && memcmp(before, after, lb) == 0);
    qbt_result_free(&r);
    free(before);
    free(after);
    free(out);
    free(src);
    free(work);
}
END_TEST

/* Name of the one entry of dir containing needle (free), or NULL. */
static char *find_entry(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *name = NULL;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        if (strstr(e->d_name, needle)) {
            ck_assert_ptr_null(name);
            name = strdup(e->d_name);
        }
    closedir(d);
    return name;
}

START_TEST(sigkill_then_next_run_removes_stale)
{
    static int sig = SIGKILL;
    char *work = qbt_mkdtemp("fault-kill"), *src = make_source(work);
    char *out = qbt_path(work, "out"), *stale, *line;
    const char *env[] = {"QUANTBRIDGE_TEST_STOP_AFTER=2", NULL};
    qbt_result r;
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work, .on_stop = send_signal, .on_stop_arg = &sig}, convert_argv);
    ck_assert_int_eq(r.status, 128 + SIGKILL);
    ck_assert(!qbt_exists(out));
    stale = find_entry(work, ".qbtmp-");
    ck_assert_ptr_nonnull(stale);
    qbt_result_free(&r);

    qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, convert_argv);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(asprintf(&line, "quantbridge: removed stale temporary directory ./%s (left by "
                       "pid ", stale) > 0);
    ck_assert_msg(strstr(r.err, line) && strstr(r.err, "which is no longer running"), "%s",
                  r.err);
    ck_assert_int_eq(qbt_count_entries(work, ".qbtmp-"), 0);
    ck_assert(qbt_exists(out));
    qbt_result_free(&r);
    free(line);
    free(stale);
    free(out);
    free(src);
    free(work);
}
END_TEST

/* Start time of this process from /proc/self/stat (field 22). */
static unsigned long long my_start_time(void)
{
    char s[1024], *p;
    FILE *f0 = fopen("/proc/self/stat", "r");
    size_t n;
    int f;
    unsigned long long v;
    /* procfs reports size 0: read, don't stat */
    ck_assert_ptr_nonnull(f0);
    n = fread(s, 1, sizeof s - 1, f0);
    fclose(f0);
    s[n] = '\0';
    p = strrchr(s, ')');
    ck_assert_ptr_nonnull(p);
    for (f = 3, p++; f < 22; f++)
        p = strchr(p + 1, ' ');
    v = strtoull(p + 1, NULL, 10);
    return v;
}

static void fake_tmp(const char *work, const char *name, const char *marker)
{
    char *d = qbt_path(work, name), *m = qbt_path(d, ".quantbridge-tmp");
    ck_assert_int_eq(mkdir(d, 0755), 0);
    if (marker)
        qbt_write_file(m, marker);
    free(m);
    free(d);
}

START_TEST(stale_dirs_only_when_provable)
{
    char *work = qbt_mkdtemp("fault-stale"), *src = make_source(work), *boot, marker[512];
    unsigned long long me = my_start_time();
    qbt_result r;
    {
        FILE *bf = fopen("/proc/sys/kernel/random/boot_id", "r");
        ck_assert_ptr_nonnull(bf);
        boot = calloc(1, 64);
        ck_assert(fgets(boot, 64, bf) != NULL);
        fclose(bf);
    }
    boot[strcspn(boot, "\n")] = '\0';
    /* owner alive (this test process, same start time): left alone */
    snprintf(marker, sizeof marker, "quantbridge temporary output\npid=%ld\nproc_start=%llu\n"
             "boot_id=%s\n", (long)getpid(), me, boot);
    fake_tmp(work, ".out.qbtmp-alive", marker);
    /* same pid, other start time: the pid was reused, the owner is gone */
    snprintf(marker, sizeof marker, "quantbridge temporary output\npid=%ld\nproc_start=%llu\n"
             "boot_id=%s\n", (long)getpid(), me + 12345, boot);
    fake_tmp(work, ".out.qbtmp-reused", marker);
    /* another boot */
    snprintf(marker, sizeof marker, "quantbridge temporary output\npid=%ld\nproc_start=%llu\n"
             "boot_id=00000000-0000-0000-0000-000000000000\n", (long)getpid(), me);
    fake_tmp(work, ".out.qbtmp-oldboot", marker);
    /* no marker: nothing proves it is ours */
    fake_tmp(work, ".out.qbtmp-nomarker", NULL);
    /* another output's temp dir is none of this run's business */
    fake_tmp(work, ".other.qbtmp-1", "pid=999999999\n");

    qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, convert_argv);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.err, "temporary directory ./.out.qbtmp-alive left alone: its owner"),
                  "%s", r.err);
    ck_assert_msg(strstr(r.err, "removed stale temporary directory ./.out.qbtmp-reused (left by "
                         "pid") && strstr(r.err, "now belongs to a process started at"), "%s",
                  r.err);
    ck_assert_msg(strstr(r.err, "removed stale temporary directory ./.out.qbtmp-oldboot (left "
                         "by pid") && strstr(r.err, "before the last reboot"), "%s", r.err);
    ck_assert_int_eq(qbt_count_entries(work, ".out.qbtmp-alive"), 1);
    ck_assert_int_eq(qbt_count_entries(work, ".out.qbtmp-nomarker"), 1);
    ck_assert_int_eq(qbt_count_entries(work, ".out.qbtmp-reused"), 0);
    ck_assert_int_eq(qbt_count_entries(work, ".out.qbtmp-oldboot"), 0);
    ck_assert_int_eq(qbt_count_entries(work, ".other.qbtmp-1"), 1);
    qbt_result_free(&r);
    free(boot);
    free(src);
    free(work);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    int i;
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, plugin_malloc_fails_at_every_site);
    tcase_add_test(tc, sink_fails_after_n_bytes);
    tcase_add_test(tc, sink_failure_keeps_old_output);
    tcase_add_test(tc, rlimit_fsize);
    tcase_add_test(tc, rlimit_fsize_keeps_old_output);
    tcase_add_test(tc, source_truncated_while_mapped);
    tcase_add_test(tc, term_and_int_remove_temp);
    tcase_add_test(tc, term_keeps_old_output);
    tcase_add_test(tc, sigkill_then_next_run_removes_stale);
    tcase_add_test(tc, stale_dirs_only_when_provable);
    suite_add_tcase(s, tc);
    /* One case per plugin, each its own CTest entry (CK_RUN_CASE, see
     * CMakeLists.txt): its own timeout, and they run in parallel. */
    for (i = 0; i < (int)(sizeof cd_cases / sizeof cd_cases[0]); i++) {
        static char names[sizeof cd_cases / sizeof cd_cases[0]][64];
        snprintf(names[i], sizeof names[i], "countdown-%s", cd_cases[i].name);
        tc = tcase_create(names[i]);
        tcase_set_timeout(tc, 1800);
        tcase_add_loop_test(tc, alloc_countdown, i, i + 1);
        suite_add_tcase(s, tc);
    }
    return s;
}

#include "qbt_check_main.h"
