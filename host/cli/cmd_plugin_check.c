/*
 * quantbridge host — `quantbridge plugin-check LIB [--sample PATH]`: the
 * conformance kit for plugin authors (docs/plugin-design.md, "Conformance:
 * plugin-check").
 *
 * Runs every check in a forked child (plugin_check_child.c) and prints one
 * line per check, "PASS|FAIL|SKIP <check>: <what>", then a summary. Exit
 * 0 when nothing failed (skips allowed), 1 when a check failed, 2 for a
 * usage error. Needs no configuration: LIB is loaded directly, never
 * registered. Checks that need a loaded plugin stop after the library,
 * its entry or its descriptor fail.
 */
#include "plugin_check.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#define QBH_PC_DEFAULT_TIMEOUT 10.0

typedef struct pc_tally {
    int passed, failed, skipped;
} pc_tally;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge plugin-check LIB [--sample PATH] [--timeout S]\n"
            "                                [--keep-output DIR]\n"
            "\n"
            "Checks a plugin library against the SDK contract before it ships: loading,\n"
            "ABI negotiation with every 1.x minor this host speaks, the descriptor and\n"
            "options, probe purity and robustness, the reader contract on a sample, and a\n"
            "conversion of a generated model through the writer (held against its plan,\n"
            "read back through its verify reader) with the sink, the allocator and each\n"
            "host service failing. Every check runs in a child process under a timeout.\n"
            "\n"
            "  LIB             the plugin's shared library (no configuration needed)\n"
            "  --sample PATH   a model file or directory the plugin's reader reads\n"
            "  --timeout S     seconds a check may go without progress (default %g)\n"
            "  --keep-output DIR  keep the writer's output of the generated model in DIR\n"
            "                  (new or empty): a sample for the reader's own check\n"
            "  -v, --verbose   more output\n"
            "\n"
            "output: one line per check, PASS/FAIL/SKIP <check>: <what>, then a summary\n"
            "exit status: 0 every check passed (or was skipped), 1 a check failed,\n"
            "             2 usage error\n",
            QBH_PC_DEFAULT_TIMEOUT);
}

static void print_line(pc_tally *t, qbh_pc_verdict v, const char *check, const char *msg)
{
    static const char *const names[] = {"PASS", "FAIL", "SKIP"};
    printf("%s %s: %s\n", names[v], check, msg);
    fflush(stdout);
    if (v == QBH_PC_PASS)
        t->passed++;
    else if (v == QBH_PC_FAIL)
        t->failed++;
    else
        t->skipped++;
}

/* Runs one check in a child and prints its line. */
static qbh_pc_verdict check(const qbh_pc_session *s, pc_tally *t, const char *name,
                            qbh_pc_child_fn fn, void *arg, qbh_pc_outcome *o)
{
    qbh_pc_run(s, fn, arg, o);
    print_line(t, o->verdict, name, o->msg);
    return o->verdict;
}

static void skip(pc_tally *t, const char *name, const char *why)
{
    print_line(t, QBH_PC_SKIP, name, why);
}

static long value_num(const qbh_pc_outcome *o, const char *key)
{
    const char *v = qbh_pc_value_of(o, key);
    return v ? strtol(v, NULL, 10) : -1;
}

static void reader_checks(const qbh_pc_session *s, pc_tally *t)
{
    static const char *const probes[] = {"file", "dir", "empty", "missing", "random",
                                         "truncated", "sample"};
    static const char *const parts[] = {"open", "rows", "grid", "concurrent", "close"};
    qbh_pc_outcome o;
    char name[64];
    size_t i;
    for (i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        snprintf(name, sizeof name, "probe-%s", probes[i]);
        check(s, t, name, qbh_pc_check_probe, (void *)probes[i], &o);
    }
    if (!s->sample) {
        skip(t, "reader-contract", "no --sample");
        return;
    }
    for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        snprintf(name, sizeof name, "reader-%s", parts[i]);
        if (check(s, t, name, qbh_pc_check_reader, (void *)parts[i], &o) == QBH_PC_FAIL &&
            i == 0) {
            skip(t, "reader-rows/grid/concurrent/close", "not run: the sample does not open");
            return;
        }
    }
}

/* A writer run's scratch output directory (not --keep-output's) goes as
 * soon as the run ends. */
static void dir_gone(const qbh_pc_outcome *o)
{
    const char *dir = qbh_pc_value_of(o, "dir");
    if (dir && qbh_rmtree(dir) != QB_OK)
        qbh_log(QB_LOG_WARN, NULL, "plugin-check: %s", qbh_error_message());
}

static qbh_pc_verdict writer_run(const qbh_pc_session *s, qbh_pc_writer_run *run,
                                 qbh_pc_outcome *o)
{
    qbh_pc_run(s, qbh_pc_check_writer, run, o);
    dir_gone(o);
    return o->verdict;
}

/* The sink failing after a byte budget below what the writer writes. */
static void writer_sink_fail(const qbh_pc_session *s, pc_tally *t, long long bytes)
{
    long long limits[5] = {0, 1, bytes / 3, bytes * 2 / 3, bytes - 1};
    qbh_pc_writer_run run = {-1, -1, bytes, -1, -1, QBH_PC_CONVERT};
    qbh_pc_outcome o;
    char msg[QBH_PC_MSG + 128], tried[256] = "";
    size_t i, used = 0, n = 0;
    for (i = 0; i < 5; i++) {
        if (limits[i] >= bytes || (i > 0 && limits[i] <= limits[i - 1]))
            continue;
        run.write_limit = limits[i];
        if (writer_run(s, &run, &o) != QBH_PC_PASS) {
            snprintf(msg, sizeof msg, "sink full after %lld of %lld bytes: %s", limits[i], bytes,
                     o.msg);
            print_line(t, QBH_PC_FAIL, "writer-sink-fail", msg);
            return;
        }
        used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%lld", n ? ", " : "",
                                 limits[i]);
        n++;
    }
    snprintf(msg, sizeof msg, "sink full after %s of %lld bytes: %zu runs, each an error with "
             "everything released", tried, bytes, n);
    print_line(t, QBH_PC_PASS, "writer-sink-fail", msg);
}

/* The allocator refusing from allocation k + 1 on, for every k a clean
 * run reached. */
static void writer_alloc_fail(const qbh_pc_session *s, pc_tally *t, long allocs)
{
    qbh_pc_writer_run run = {-1, -1, 0, -1, -1, QBH_PC_CONVERT};
    qbh_pc_outcome o;
    char msg[QBH_PC_MSG + 128];
    long k;
    for (k = 0; k < allocs; k++) {
        run.fail_after = k;
        if (writer_run(s, &run, &o) != QBH_PC_PASS) {
            snprintf(msg, sizeof msg, "host allocation %ld of %ld refused: %s", k + 1, allocs,
                     o.msg);
            print_line(t, QBH_PC_FAIL, "writer-alloc-fail", msg);
            return;
        }
    }
    snprintf(msg, sizeof msg, "host allocation 1..%ld refused in turn: %ld runs, each an error "
             "with everything released", allocs, allocs);
    print_line(t, QBH_PC_PASS, "writer-alloc-fail", msg);
}

/* At most this many runs per fault family: every call when there are
 * fewer, else calls spread evenly from the first to the last. */
#define PC_FAULT_RUNS 40

/* Call k of family `fam` failing, for the calls a clean run made. */
static void writer_fault(const qbh_pc_session *s, pc_tally *t, const char *check,
                         qbh_fault_family fam, const char *what, long calls)
{
    qbh_pc_writer_run run = {-1, -1, 0, (int)fam, -1, QBH_PC_CONVERT};
    qbh_pc_outcome o;
    char msg[QBH_PC_MSG + 256];
    long i, runs = calls < PC_FAULT_RUNS ? calls : PC_FAULT_RUNS, prev = -1;
    if (calls <= 0) {
        snprintf(msg, sizeof msg, "the writer made no %s call", what);
        print_line(t, QBH_PC_SKIP, check, msg);
        return;
    }
    for (i = 0; i < runs; i++) {
        long k = runs > 1 ? i * (calls - 1) / (runs - 1) : 0;
        const char *hit;
        if (k == prev)
            continue;
        prev = k;
        run.fault_at = k;
        if (writer_run(s, &run, &o) != QBH_PC_PASS) {
            hit = qbh_pc_value_of(&o, "hit");
            if (hit && strcmp(hit, "none") != 0 && strcmp(hit, what) != 0)
                snprintf(msg, sizeof msg, "%s call %ld of %ld (%s) failed: %s", what, k + 1,
                         calls, hit, o.msg);
            else
                snprintf(msg, sizeof msg, "%s call %ld of %ld failed: %s", what, k + 1, calls,
                         o.msg);
            print_line(t, QBH_PC_FAIL, check, msg);
            return;
        }
    }
    snprintf(msg, sizeof msg, "%s call 1..%ld failed in turn (%ld runs): each an error with a "
             "message and everything released", what, calls, runs);
    print_line(t, QBH_PC_PASS, check, msg);
}

static void writer_checks(const qbh_pc_session *s, pc_tally *t)
{
    qbh_pc_writer_run run = {-1, -1, 0, -1, -1, QBH_PC_CONVERT};
    qbh_pc_outcome o;
    long allocs;
    long long bytes;
    writer_run(s, &run, &o);
    print_line(t, o.verdict, "writer-convert", o.msg);
    if (o.verdict != QBH_PC_PASS) {
        skip(t, "writer-plan/readback/sink-fail/alloc-fail/service-fail",
             "not run: the undisturbed conversion failed");
        return;
    }
    allocs = value_num(&o, "allocs");
    bytes = value_num(&o, "bytes");
    {
        long creates = value_num(&o, "create_calls"), writes = value_num(&o, "write_calls"),
             closes = value_num(&o, "close_calls"), services = value_num(&o, "service_calls");
        qbh_pc_outcome po;
        run.mode = QBH_PC_PLAN;
        check(s, t, "writer-plan", qbh_pc_check_writer, &run, &po);
        dir_gone(&po);
        run.mode = QBH_PC_READBACK;
        check(s, t, "writer-readback", qbh_pc_check_writer, &run, &po);
        dir_gone(&po);
        writer_sink_fail(s, t, bytes);
        writer_fault(s, t, "writer-sink-create-fail", QBH_FAULT_CREATE, "sink->create", creates);
        writer_fault(s, t, "writer-sink-write-fail", QBH_FAULT_WRITE, "sink->write", writes);
        writer_fault(s, t, "writer-sink-close-fail", QBH_FAULT_CLOSE, "sink->close", closes);
        writer_alloc_fail(s, t, allocs);
        writer_fault(s, t, "writer-service-fail", QBH_FAULT_SERVICE, "host service", services);
    }
}

/* Side files for the writer runs (qb_model_info.tokenizer_dir). */
static qb_status make_tokenizer(const qbh_pc_session *s)
{
    static const struct {
        const char *name, *text;
    } files[] = {
        /* a complete byte-level BPE (GPT-2's pre-tokenizer), so a writer that
         * carries the tokenizer into its format (gguf: tokenizer.ggml.pre)
         * can name its pre-tokenizer instead of refusing an unknown one */
        {"tokenizer.json", "{\"version\": \"1.0\", \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
                           "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true}, "
                           "\"model\": {\"type\": \"BPE\", \"vocab\": "
                           "{\"<s>\": 1, \"</s>\": 2}, \"merges\": []}}\n"},
        {"tokenizer_config.json", "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", "
                                  "\"model_max_length\": 2048}\n"},
        {"special_tokens_map.json", "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}\n"},
    };
    size_t i;
    if (g_mkdir_with_parents(s->tokenizer, 0700) != 0)
        return qbh_error_set(QB_E_IO, "%s: %s", s->tokenizer, strerror(errno));
    for (i = 0; i < sizeof files / sizeof files[0]; i++) {
        gchar *p = g_build_filename(s->tokenizer, files[i].name, NULL);
        gboolean ok = g_file_set_contents(p, files[i].text, -1, NULL);
        g_free(p);
        if (!ok)
            return qbh_error_set(QB_E_IO, "%s: cannot write %s", s->tokenizer, files[i].name);
    }
    return QB_OK;
}

static void run_checks(const qbh_pc_session *s, pc_tally *t)
{
    qbh_pc_outcome o, d;
    unsigned m;
    char name[64];
    int entry_ok = 0;

    if (check(s, t, "load", qbh_pc_check_load, NULL, &o) != QBH_PC_PASS)
        return;
    for (m = 0; m <= QB_ABI_MINOR; m++) {
        snprintf(name, sizeof name, "negotiation %u.%u", QB_ABI_MAJOR, m);
        check(s, t, name, qbh_pc_check_negotiation, (void *)(uintptr_t)m, &o);
        if (m == QB_ABI_MINOR)
            entry_ok = qbh_pc_value_of(&o, "entry") != NULL;
    }
    /* the host cannot load it: nothing further can run */
    if (!entry_ok)
        return;
    if (check(s, t, "descriptor", qbh_pc_check_descriptor, NULL, &d) != QBH_PC_PASS &&
        !qbh_pc_value_of(&d, "name"))
        return;
    check(s, t, "options", qbh_pc_check_options, NULL, &o);
    if (value_num(&d, "reader") == 1)
        reader_checks(s, t);
    else
        skip(t, "reader", s->sample ? "the plugin has no reader (--sample unused)"
                                    : "the plugin has no reader");
    if (value_num(&d, "writer") == 1)
        writer_checks(s, t);
    else
        skip(t, "writer", "the plugin has no writer");
}

int qbh_cmd_plugin_check(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"sample", required_argument, NULL, 's'},
        {"timeout", required_argument, NULL, 't'},
        {"keep-output", required_argument, NULL, 'k'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qbh_pc_session s;
    pc_tally t = {0, 0, 0};
    const char *lib, *keep = NULL;
    struct stat st;
    char *end;
    GError *e = NULL;
    int c, rc = QBH_EXIT_USAGE;

    memset(&s, 0, sizeof s);
    s.timeout_s = QBH_PC_DEFAULT_TIMEOUT;
    if (qbh_cli_check_long(argc, argv, opts, "plugin-check"))
        return QBH_EXIT_USAGE;
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 's': s.sample = optarg; break;
        case 'k': keep = optarg; break;
        case 't':
            errno = 0;
            s.timeout_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(s.timeout_s > 0 && s.timeout_s <= 3600)) {
                fprintf(stderr, "quantbridge: error: --timeout %s: expected seconds in (0, "
                        "3600]\n", optarg);
                return QBH_EXIT_USAGE;
            }
            break;
        case 'v': co->verbose++; break;
        case 'h': usage(stdout); return QBH_EXIT_OK;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            return QBH_EXIT_USAGE;
        default:
            fprintf(stderr, "quantbridge: error: plugin-check: unknown option '%s'\n",
                    argv[optind - 1]);
            qbh_cli_usage_hint("plugin-check");
            return QBH_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "quantbridge: error: plugin-check: %s\n",
                optind >= argc ? "name the plugin library (LIB)" : "one plugin library at a time");
        usage(stderr);
        return QBH_EXIT_USAGE;
    }
    lib = argv[optind];
    s.lib = realpath(lib, NULL);
    if (!s.lib || stat(s.lib, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "quantbridge: error: plugin-check: %s: %s\n", lib,
                s.lib ? "not a regular file" : strerror(errno));
        goto out;
    }
    if (s.sample && stat(s.sample, &st) != 0) {
        fprintf(stderr, "quantbridge: error: plugin-check: --sample %s: %s\n", s.sample,
                strerror(errno));
        goto out;
    }
    if (keep) {
        GDir *kd;
        if (g_mkdir_with_parents(keep, 0755) != 0 || !(kd = g_dir_open(keep, 0, NULL))) {
            fprintf(stderr, "quantbridge: error: plugin-check: --keep-output %s: cannot create "
                    "the directory\n", keep);
            goto out;
        }
        if (g_dir_read_name(kd)) {
            g_dir_close(kd);
            fprintf(stderr, "quantbridge: error: plugin-check: --keep-output %s: not empty\n",
                    keep);
            goto out;
        }
        g_dir_close(kd);
        s.keep_output = realpath(keep, NULL);
    }
    s.verbose = co->verbose;
    qbh_rt.verbose = co->verbose;
    qbh_rt.progress_tty = 0;
    rc = QBH_EXIT_FAIL;
    s.tmp = g_dir_make_tmp("quantbridge-plugin-check-XXXXXX", &e);
    if (!s.tmp) {
        fprintf(stderr, "quantbridge: error: plugin-check: cannot create a scratch directory: "
                "%s\n", e ? e->message : "?");
        g_clear_error(&e);
        goto out;
    }
    s.tokenizer = g_build_filename(s.tmp, "tokenizer", NULL);
    if (make_tokenizer(&s) != QB_OK) {
        qbh_cli_report();
        goto out;
    }
    printf("plugin-check %s%s%s (host ABI %u.0 to %u.%u)\n", s.lib, s.sample ? ", sample " : "",
           s.sample ? s.sample : "", QB_ABI_MAJOR, QB_ABI_MAJOR, QB_ABI_MINOR);
    run_checks(&s, &t);
    printf("plugin-check: %d passed, %d failed, %d skipped: %s\n", t.passed, t.failed, t.skipped,
           t.failed ? "FAIL" : "PASS");
    rc = t.failed ? QBH_EXIT_FAIL : QBH_EXIT_OK;
out:
    if (s.tmp && qbh_rmtree(s.tmp) != QB_OK)
        qbh_log(QB_LOG_WARN, NULL, "plugin-check: %s", qbh_error_message());
    g_free(s.tokenizer);
    g_free(s.tmp);
    free(s.keep_output);
    free(s.lib);
    return rc;
}
