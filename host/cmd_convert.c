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
#include "qbh.h"
#include "verify_engine.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define QBH_DEFAULT_WRITER "sm86-w4a16"

typedef struct convert_args {
    const char *source, *output, *format, *writer, *tokenizer;
    int overwrite;
    int verify; /* --verify: compare the written output with the source */
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
            "  --group-size N        same as --option writer.group_size=N\n"
            "  --option KEY=VALUE    plugin option, given to the reader and/or the writer of\n"
            "                        this run, whichever declares KEY (`quantbridge plugins`\n"
            "                        lists each option's role); when both declare it as two\n"
            "                        different options, name one: reader.KEY=VALUE or\n"
            "                        writer.KEY=VALUE. A KEY neither declares is an error\n"
            "  --tokenizer DIR       tokenizer files to copy (overrides the source's); only\n"
            "                        for a writer that carries side files (`plugins`)\n"
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
    rc = qbh_outdir_check(a->source, a->output, a->overwrite);
    if (rc == QB_OK)
        rc = qbh_cli_check_out_parent(a->output, "--output");
    if (rc)
        goto out;
    /* A run killed earlier (SIGKILL) may have left its temp dir here. */
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
        qbh_progress_tensor(i + 1, src.info.n_tensors, name, qbh_sink_bytes(sink));
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
    printf("quantbridge: wrote %s: %zu tensors, %zu files, %llu bytes (%s via %s -> %s)\n",
           a->output, src.info.n_tensors, qbh_sink_closed_files(sink),
           (unsigned long long)qbh_sink_bytes(sink), src.info.source_format, reader->name,
           writer->name);
    /* The output is committed before the check: a conversion that does
     * not verify is still evidence worth keeping (the message says so),
     * and deleting it would hide what went wrong. */
    if (a->verify)
        rc = qbh_verify_after_convert(reg, &src, a->output, writer, verify_failed);
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
    return rc;
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
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 's': a.source = optarg; break;
        case 'O': a.output = optarg; break;
        case 'f': a.format = optarg; break;
        case 'w': a.writer = optarg; break;
        case 'k': a.tokenizer = optarg; break;
        case 'W': a.overwrite = 1; break;
        case 'y': a.verify = 1; break;
        case 'N':
            a.cli[a.n_cli].key = "writer.allow_nonfinite";
            a.cli[a.n_cli].value = "true";
            a.cli[a.n_cli].origin = "--allow-nonfinite";
            a.n_cli++;
            break;
        case 'g':
            a.cli[a.n_cli].key = "writer.group_size";
            a.cli[a.n_cli].value = optarg;
            a.cli[a.n_cli].origin = "--group-size";
            a.n_cli++;
            break;
        case 'o': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "quantbridge: error: --option %s: expected KEY=VALUE\n", optarg);
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            *eq = '\0';
            a.cli[a.n_cli].key = optarg;
            a.cli[a.n_cli].value = eq + 1;
            a.cli[a.n_cli].origin = "--option";
            a.n_cli++;
            break;
        }
        case 'C': co->config = optarg; break;
        case 'P':
            if (qbh_common_add_plugin_dir(co, optarg)) {
                qbh_cli_report();
                return QBH_EXIT_USAGE;
            }
            break;
        case 'v': co->verbose++; break;
        case 'T':
            if (qbh_parse_threads(optarg, &co->threads)) {
                qbh_cli_report();
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
    if (optind < argc || !a.source || !a.output) {
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
