/*
 * quantbridge host — `quantbridge convert`: the pipeline.
 *
 *   reader (--format or probe) -> options checked -> output path checked ->
 *   open + model info -> writer's declared architectures -> writer supports
 *   -> writer's required facts -> temp dir + sink -> begin -> write_tensor
 *   in begin's order -> finish -> side files (writers that ask the host)
 *   -> rename into place -> summary
 *
 * Any failure: writer abort (never after finish, which releases the writer
 * whatever it returns: qb_writer.h), temp dir removed, final path untouched, one
 * "quantbridge: error:" line, exit 1 (2 for usage errors). A signal
 * (SIGINT/SIGTERM) cancels the same way and also exits 1.
 */
#include "cli.h"
#include "convert_summary.h"
#include "verify.h"

#include <quantbridge/qb_w4a16.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QBH_DEFAULT_WRITER "sm86-w4a16"

typedef struct convert_args {
    const char *source, *output, *format, *writer, *tokenizer;
    int overwrite;
    int verify; /* --verify: compare the written output with the source */
    int dry_run; /* --dry-run: the plan, nothing written */
    int json;    /* --json: the plan or the summary as JSON on stdout */
    int quiet;   /* -q: errors and warnings only */
    qbh_opt *cli;
    size_t n_cli;
} convert_args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge convert --source PATH --output DIR [options]\n"
            "\n"
            "  --source PATH         checkpoint file or directory\n"
            "  --output DIR          new output directory (written via a temporary\n"
            "                        directory beside it, renamed into place at the end)\n"
            "  --format auto|NAME    reader to use (default auto: probe every reader)\n"
            "  --writer NAME         writer to use (default " QBH_DEFAULT_WRITER ")\n"
            "  --group-size N|auto   same as --option writer.group_size=N; auto (the\n"
            "                        default): the source's group size when that keeps its\n"
            "                        linears exact and the kernels take it, else 128\n"
            "  --dry-run             print the plan (per tensor: source encoding, action\n"
            "                        exact|requant|convert|copy|omit and why, group size,\n"
            "                        bytes; totals) and write nothing; --output optional\n"
            "  --json                the plan (--dry-run) or the final summary as JSON on\n"
            "                        stdout; messages stay on stderr\n"
            "  --progress MODE       auto (default: a line on a terminal), tty, plain (one\n"
            "                        line per tensor, for logs) or none\n"
            "  -q, --quiet           no progress and no summary; errors and warnings only\n"
            "  --option KEY=VALUE    plugin option, given to the reader and/or the writer of\n"
            "                        this run, whichever declares KEY (`quantbridge plugins`\n"
            "                        lists each option's role); when both declare it as two\n"
            "                        different options, name one: reader.KEY=VALUE or\n"
            "                        writer.KEY=VALUE. A KEY neither declares is an error\n"
            "  --tokenizer DIR       tokenizer files to copy (overrides the source's, or gives\n"
            "                        them where its reader refused to rebuild them: `inspect`\n"
            "                        shows that); only for a writer that carries side files\n"
            "                        (`plugins`)\n"
            "  --overwrite           replace an existing non-empty output at the end\n"
            "  --verify              afterwards read the output back and compare it with the\n"
            "                        source (as `quantbridge verify`, default rule) and\n"
            "                        print the summary; a failed check exits 3 but keeps the\n"
            "                        output, so it can be inspected or verified again\n"
            "  --allow-nonfinite     same as --option writer.allow_nonfinite=true: write NaN\n"
            "                        and infinite source values as they are (by default a\n"
            "                        tensor holding one is an error naming it; hf-dense)\n"
            "  --threads N           worker threads (default: number of CPUs)\n"
            "  --config FILE         configuration file\n"
            "  --plugin-dir DIR      also register the plugins of DIR (repeatable)\n"
            "  -v, --verbose         progress and details even when not on a terminal\n"
            "\n"
            "exit status: 0 success, 1 failure (also on SIGINT/SIGTERM), 2 usage error,\n"
            "3 --verify ran and the output does not match the source (output kept)\n");
}

/* Fails with a message of its own when the plugin set none. */
static qb_status ensure_msg(qb_status rc, const char *fmt, const char *a, const char *b)
{
    if (rc != QB_OK && !qbh_error_message()[0])
        qbh_error_set(rc, fmt, a, b, qbh_status_name(rc));
    return rc;
}

static qbh_plugin *pick_writer(const qbh_registry *reg, const char *name, int *usage_err)
{
    qbh_plugin *p = qbh_registry_find(reg, name ? name : QBH_DEFAULT_WRITER);
    if (!name && !p) {
        qbh_error_set(QB_E_NOT_FOUND, "default writer %s is not configured (see `quantbridge "
                      "plugins`); name one with --writer", QBH_DEFAULT_WRITER);
        return NULL;
    }
    if (!name)
        name = QBH_DEFAULT_WRITER;
    if (!p || (p->state == QBH_LOAD_OK && !p->desc->writer)) {
        *usage_err = 1;
        qbh_error_set(QB_E_NOT_FOUND, "--writer %s: no writer plugin of that name (see "
                      "`quantbridge plugins`)", name);
        return NULL;
    }
    if (p->state != QBH_LOAD_OK) {
        qbh_error_set(QB_E_UNSUPPORTED, "writer %s is %s: %s", name,
                      p->state == QBH_LOAD_DISABLED ? "disabled" : "not loaded",
                      p->error ? p->error : "enabled=false in its config");
        return NULL;
    }
    return p;
}

static qb_status check_order(const size_t *order, size_t n, const char *writer)
{
    unsigned char *seen = qbh_calloc(n ? n : 1, 1);
    qb_status rc = QB_OK;
    size_t i;
    if (!seen)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        if (order[i] >= n || seen[order[i]]) {
            rc = qbh_error_set(QB_E_INTERNAL, "writer %s: begin returned an order that is not "
                               "a permutation of the %zu tensors", writer, n);
            break;
        }
        seen[order[i]] = 1;
    }
    qbh_free(seen);
    return rc;
}

/* Prints the plan of a --dry-run on stdout. */
static qb_status show_plan(const convert_args *a, const qbh_plan *plan, const qbh_source *src)
{
    char *text;
    if (!a->json) {
        qbh_plan_print(plan, src, stdout);
        return QB_OK;
    }
    text = qbh_plan_json(plan, src);
    if (!text)
        return QB_E_NOMEM;
    printf("%s\n", text);
    free(text);
    return QB_OK;
}

/* Per source tensor: planned output bytes (units of progress) and weights. */
static uint64_t *plan_units(const qbh_plan *plan, const qbh_source *src, uint64_t *total)
{
    uint64_t *u = qbh_calloc(src->info.n_tensors ? src->info.n_tensors : 1, sizeof *u);
    size_t i;
    uint32_t d;
    *total = 0;
    if (!u)
        return NULL;
    for (i = 0; i < plan->n && plan->has_actions; i++)
        u[plan->items[i].tensor] += plan->items[i].bytes_out;
    for (i = 0; i < src->info.n_tensors && !plan->has_actions; i++)
        for (u[i] = 1, d = 0; d < src->tensors[i].n_dims; d++)
            u[i] *= (uint64_t)src->tensors[i].dims[d];
    for (i = 0; i < src->info.n_tensors; i++)
        *total += u[i];
    return u;
}

static uint64_t weights_of(const qb_tensor_info *ti)
{
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < ti->n_dims; d++)
        n *= (uint64_t)ti->dims[d];
    return n;
}

/* --verify under --json: the verify summary goes to stderr, so stdout
 * holds the one JSON document. */
static qb_status verify_step(const convert_args *a, qbh_registry *reg, qbh_source *src,
                             qbh_plugin *writer, int *verify_failed)
{
    int saved = -1;
    qb_status rc;
    if (a->json) {
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        if (saved >= 0)
            dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    rc =
        qbh_verify_after_convert(reg, src, a->output, writer, qb_w4a16_backend_open, verify_failed);
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    return rc;
}

static int run(const convert_args *a, qbh_registry *reg, int *usage_err, int *verify_failed)
{
    qbh_plugin *reader = NULL, *writer = NULL;
    qbh_probe_score *scores = NULL;
    size_t n_scores = 0, *order = NULL, i;
    qbh_params rp, wp;
    qbh_source src;
    qbh_outdir od;
    qbh_sink *sink = NULL;
    qb_writer_handle wh = NULL;
    const qb_writer_vtable *wv = NULL;
    qb_status rc;
    uint32_t side = 0;
    int score;
    qbh_plan plan;
    uint64_t *units = NULL, units_total = 0, units_done = 0, weights_total = 0, weights_done = 0;
    qbh_convert_result res;

    memset(&plan, 0, sizeof plan);
    memset(&res, 0, sizeof res);
    memset(&rp, 0, sizeof rp);
    memset(&wp, 0, sizeof wp);
    memset(&src, 0, sizeof src);
    memset(&od, 0, sizeof od);

    rc = qbh_select_reader(reg, a->source, a->format, &reader, &scores, &n_scores, usage_err);
    if (rc) {
        for (i = 0; i < n_scores; i++)
            qbh_log(QB_LOG_INFO, NULL, "probe %s: %d", scores[i].plugin->name, scores[i].score);
        goto out;
    }
    writer = pick_writer(reg, a->writer, usage_err);
    if (!writer) {
        rc = qbh_error_code();
        goto out;
    }
    side = qbh_writer_side_files(writer->desc);
    if (a->tokenizer && !side) {
        *usage_err = 1;
        rc = qbh_error_set(QB_E_UNSUPPORTED, "--tokenizer %s: writer %s does not carry "
                           "tokenizer files (it declares no side-file capability; see "
                           "`quantbridge plugins`)", a->tokenizer, writer->name);
        goto out;
    }
    /* Every option is validated before anything is opened or written. */
    rc = qbh_params_route(reader, writer, a->cli, a->n_cli, &rp, &wp, usage_err);
    if (rc)
        goto out;
    if (a->output) {
        rc = qbh_outdir_check(a->source, a->output, a->overwrite);
        if (rc == QB_OK)
            rc = qbh_cli_check_out_parent(a->output, "--output");
        if (rc)
            goto out;
    }
    /* A run killed earlier (SIGKILL) may have left its temp dir here
     * (a dry run removes nothing either). */
    if (!a->dry_run)
        qbh_outdir_reap_stale(a->output);
    if (a->tokenizer) {
        struct stat st;
        if (stat(a->tokenizer, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rc = qbh_error_set(QB_E_NOT_FOUND, "--tokenizer %s: not a directory", a->tokenizer);
            goto out;
        }
    }
    qbh_log(QB_LOG_INFO, NULL, "reader %s, writer %s", reader->name, writer->name);

    rc = qbh_source_open(reader, a->source, rp.items, &src);
    if (rc)
        goto out;
    /* A tokenizer the reader refused stops a conversion whose writer
     * carries tokenizer files, unless --tokenizer gives them; one it
     * skipped at the user's request is said once, here, when nothing
     * replaces it. */
    if (side && !a->tokenizer && src.info.tokenizer_state == QB_TOKENIZER_REFUSED) {
        rc = qbh_source_tokenizer_refused(&src);
        goto out;
    }
    if (side && !a->tokenizer && src.info.tokenizer_state == QB_TOKENIZER_SKIPPED)
        qbh_log(QB_LOG_WARN, NULL, "%s: %s: the output gets no tokenizer.json", a->source,
                src.info.tokenizer_note);
    if (a->tokenizer)
        src.info.tokenizer_dir = a->tokenizer;
    if (!side && (src.info.tokenizer_dir || src.info.chat_template))
        qbh_log(QB_LOG_WARN, NULL, "writer %s does not carry side files: the source's %s%s%s "
                "will not be in %s", writer->name, src.info.tokenizer_dir ? "tokenizer files" : "",
                src.info.tokenizer_dir && src.info.chat_template ? " and " : "",
                src.info.chat_template ? "chat template" : "", a->output);

    rc = qbh_writer_check_arch(writer, &src.info, a->source);
    if (rc)
        goto out;
    wv = writer->desc->writer;
    qbh_error_clear();
    score = wv->supports(writer->desc->ctx, &src.info);
    if (score <= 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", qbh_error_message()[0] ? qbh_error_message()
                                                               : "no reason given");
        rc = qbh_error_set(QB_E_UNSUPPORTED, "%s: writer %s cannot write this %s model: %s",
                           a->source, writer->name, src.info.architecture, why);
        goto out;
    }
    rc = qbh_writer_check_facts(writer, &src.info, a->source);
    if (rc)
        goto out;
    /* The writer's plan: shown by --dry-run, the totals of progress and
     * summary otherwise (nothing written either way). */
    rc = qbh_plan_make(writer, &src, wp.items, &plan);
    if (rc)
        goto out;
    if (a->dry_run) {
        rc = show_plan(a, &plan, &src);
        goto out;
    }
    if (plan.group_size && !a->quiet)
        fprintf(stderr, "quantbridge: group size %s: %s\n", plan.group_size, plan.group_reason);
    units = plan_units(&plan, &src, &units_total);
    if (!units) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    for (i = 0; i < src.info.n_tensors; i++)
        weights_total += weights_of(&src.tensors[i]);
    qbh_progress_start(units_total, weights_total);
    if (qbh_cancel_requested()) {
        rc = qbh_error_set(QB_E_CANCELLED, "cancelled");
        goto out;
    }

    rc = qbh_outdir_begin(a->output, a->overwrite, &od);
    if (rc)
        goto out;
    qbh_fatal_arm(od.tmp_path);
    rc = qbh_sink_open(od.tmp_path, &sink);
    if (rc)
        goto out;
    rc = qbh_sink_set_shown(sink, od.final_path);
    if (rc)
        goto out;
    order = qbh_calloc(src.info.n_tensors ? src.info.n_tensors : 1, sizeof *order);
    if (!order) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    qbh_error_clear();
    rc = wv->begin(writer->desc->ctx, qbh_sink_table(sink), &src.src, wp.items, order, &wh);
    if (rc) {
        wh = NULL;
        ensure_msg(rc, "%s: writer %s: begin failed (%s)", a->source, writer->name);
        goto out;
    }
    rc = check_order(order, src.info.n_tensors, writer->name);
    if (rc)
        goto out;
    for (i = 0; i < src.info.n_tensors; i++) {
        const char *name = src.tensors[order[i]].name;
        if (qbh_cancel_requested()) {
            rc = qbh_error_set(QB_E_CANCELLED, "cancelled by signal before tensor %s", name);
            goto out;
        }
        qbh_error_clear();
        rc = wv->write_tensor(wh, order[i]);
        if (rc) {
            ensure_msg(rc, "%s: writer %s: write_tensor failed (%s)", name, writer->name);
            goto out;
        }
        units_done += units[order[i]];
        weights_done += weights_of(&src.tensors[order[i]]);
        qbh_progress_tensor(i + 1, src.info.n_tensors, name, qbh_sink_bytes(sink), units_done,
                            weights_done);
        qbh_testhook_tensor_done(i + 1);
    }
    qbh_error_clear();
    rc = wv->finish(wh);
    wh = NULL; /* finish frees the handle, success or not: no abort after it */
    if (rc) {
        ensure_msg(rc, "%s: writer %s: finish failed (%s)", a->output, writer->name);
        goto out;
    }
    if (qbh_sink_open_files(sink)) {
        rc = qbh_error_set(QB_E_INTERNAL, "writer %s finished with %zu output file(s) still "
                           "open", writer->name, qbh_sink_open_files(sink));
        goto out;
    }
    if (side == QB_WRITER_SIDE_FILES_HOST) {
        rc = qbh_side_files_write(sink, &src.info, writer->name);
        if (rc)
            goto out;
    }
    if (qbh_cancel_requested()) {
        rc = qbh_error_set(QB_E_CANCELLED, "cancelled");
        goto out;
    }
    rc = qbh_sink_sync(sink);
    if (rc)
        goto out;
    /* Past here a SIGBUS must not remove anything: the rename may move the
     * directory to the final path. */
    qbh_fatal_arm(NULL);
    rc = qbh_outdir_commit(&od);
    if (rc)
        goto out;
    qbh_progress_done();
    if (!a->quiet)
        fprintf(a->json ? stderr : stdout,
                "quantbridge: wrote %s: %zu tensors, %zu files, %llu bytes (%s via %s -> %s)\n",
                a->output, src.info.n_tensors, qbh_sink_closed_files(sink),
                (unsigned long long)qbh_sink_bytes(sink), src.info.source_format, reader->name,
                writer->name);
    res.source = a->source;
    res.output = a->output;
    res.reader = reader->name;
    res.writer = writer->name;
    res.source_format = src.info.source_format;
    res.n_tensors = src.info.n_tensors;
    res.n_files = qbh_sink_closed_files(sink);
    res.bytes_in = plan.bytes_in;
    res.bytes_out = qbh_sink_bytes(sink);
    res.plan = &plan;
    res.seconds = qbh_progress_elapsed();
    res.peak_rss = qbh_peak_rss();
    if (!a->quiet)
        qbh_convert_summary_print(&res, a->json ? stderr : stdout);
    /* The output is committed before the check: a conversion that does
     * not verify is still evidence worth keeping (the message says so),
     * and deleting it would hide what went wrong. */
    if (a->verify) {
        rc = verify_step(a, reg, &src, writer, verify_failed);
        res.verify_ran = 1;
        res.verify_rc = rc;
        res.verify_msg = rc ? qbh_error_message() : NULL;
    }
    if (a->json) {
        qb_status keep = rc;
        char msg[2048], *text;
        snprintf(msg, sizeof msg, "%s", qbh_error_message());
        res.verify_msg = res.verify_rc ? msg : NULL;
        text = qbh_convert_summary_json(&res);
        if (text) {
            printf("%s\n", text);
            free(text);
        }
        if (keep)
            qbh_error_set(keep, "%s", msg);
        else if (!text)
            rc = QB_E_NOMEM;
    }
out:
    if (wh) {
        /* abort may call host services that overwrite this thread's
         * message; keep the one that explains the failure. */
        char keep[2048];
        qb_status code = qbh_error_code();
        snprintf(keep, sizeof keep, "%s", qbh_error_message());
        wv->abort(wh);
        qbh_error_set(code, "%s", keep);
    }
    if (sink)
        qbh_sink_free(sink);
    qbh_fatal_arm(NULL);
    qbh_outdir_abort(&od);
    qbh_source_close(&src);
    qbh_params_free(&rp);
    qbh_params_free(&wp);
    qbh_free(order);
    qbh_free(scores);
    qbh_free(units);
    qbh_plan_free(&plan);
    return rc;
}

/* --group-size: "auto" or a decimal integer, so a typo is a usage error;
 * the range is the writer's own option declaration's to check. */
static int valid_group_size(const char *s)
{
    char *end;
    if (strcmp(s, "auto") == 0)
        return 1;
    (void)strtoll(s, &end, 10);
    return end != s && !*end;
}

int qbh_cmd_convert(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"source", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'O'},
        {"format", required_argument, NULL, 'f'},
        {"writer", required_argument, NULL, 'w'},
        {"group-size", required_argument, NULL, 'g'},
        {"option", required_argument, NULL, 'o'},
        {"tokenizer", required_argument, NULL, 'k'},
        {"overwrite", no_argument, NULL, 'W'},
        {"verify", no_argument, NULL, 'y'},
        {"dry-run", no_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"progress", required_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},
        {"allow-nonfinite", no_argument, NULL, 'N'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    convert_args a;
    qbh_registry reg;
    int c, usage_err = 0, verify_failed = 0, rc = QBH_EXIT_FAIL;
    qbh_progress_mode pmode = QBH_PROGRESS_AUTO;

    qbh_testhooks_init();
    memset(&a, 0, sizeof a);
    a.cli = qbh_calloc((size_t)argc + 1, sizeof *a.cli);
    if (!a.cli) {
        qbh_error_set(QB_E_NOMEM, "out of memory");
        qbh_cli_report();
        qbh_testhooks_report();
        return QBH_EXIT_FAIL;
    }
    if (qbh_cli_check_long(argc, argv, opts, "convert")) {
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vhq", opts, NULL)) != -1) {
        switch (c) {
        case 's': a.source = optarg; break;
        case 'O': a.output = optarg; break;
        case 'f': a.format = optarg; break;
        case 'w': a.writer = optarg; break;
        case 'k': a.tokenizer = optarg; break;
        case 'W': a.overwrite = 1; break;
        case 'y': a.verify = 1; break;
        case 'n': a.dry_run = 1; break;
        case 'j': a.json = 1; break;
        case 'q': a.quiet = 1; break;
        case 'p':
            if (qbh_progress_parse(optarg, &pmode)) {
                qbh_cli_report();
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'N':
            a.cli[a.n_cli].key = "writer.allow_nonfinite";
            a.cli[a.n_cli].value = "true";
            a.cli[a.n_cli].origin = "--allow-nonfinite";
            a.n_cli++;
            break;
        case 'g':
            if (!valid_group_size(optarg)) {
                fprintf(stderr, "quantbridge: error: --group-size %s: expected auto or an "
                        "integer\n", optarg);
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            a.cli[a.n_cli].key = "writer.group_size";
            a.cli[a.n_cli].value = optarg;
            a.cli[a.n_cli].origin = "--group-size";
            a.n_cli++;
            break;
        case 'o':
            if (qbh_cli_option_kv(optarg, &a.cli[a.n_cli++])) {
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'C':
        case 'P':
        case 'v':
        case 'T':
            if (qbh_cli_common_opt(c, optarg, co)) {
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'h': usage(stdout); rc = QBH_EXIT_OK; goto done;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            rc = QBH_EXIT_USAGE;
            goto done;
        default:
            fprintf(stderr, "quantbridge: error: convert: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            qbh_cli_usage_hint("convert");
            rc = QBH_EXIT_USAGE;
            goto done;
        }
    }
    if (optind < argc || !a.source || (!a.output && !a.dry_run)) {
        if (optind < argc)
            fprintf(stderr, "quantbridge: error: convert: unexpected argument '%s'\n",
                    argv[optind]);
        else
            fprintf(stderr, "quantbridge: error: convert: --source and --output are required\n");
        usage(stderr);
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    /* Only convert writes anything, so only convert turns a signal into an
     * orderly unwind; plugins/inspect keep the default (immediate) action. */
    qbh_signals_install();
    qbh_fatal_install();
    if (a.quiet && pmode == QBH_PROGRESS_AUTO)
        pmode = QBH_PROGRESS_NONE;
    qbh_progress_configure(pmode);
    if (qbh_cli_setup(co, &reg)) {
        qbh_cli_report();
        goto done;
    }
    if (run(&a, &reg, &usage_err, &verify_failed) != QB_OK) {
        qbh_cli_report();
        rc = usage_err ? QBH_EXIT_USAGE : verify_failed ? QBH_EXIT_VERIFY : QBH_EXIT_FAIL;
    } else {
        rc = QBH_EXIT_OK;
    }
    qbh_registry_free(&reg);
done:
    qbh_free(a.cli);
    qbh_testhooks_report();
    return rc;
}
