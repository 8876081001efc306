/*
 * quantbridge host — `quantbridge convert`: its arguments, the conversion
 * (host/pipeline, qbh_convert: reader, checks, plan, the writer through the
 * sink, rename into place), and what it shows: the plan (--dry-run), the
 * summary (text or --json), `--verify`'s comparison.
 *
 * Any failure: one "quantbridge: error:" line, exit 1 (2 for usage errors,
 * 3 when --verify ran and failed); the pipeline has left the final path
 * untouched. A signal (SIGINT/SIGTERM) cancels the same way and also exits 1.
 */
#include "cli.h"
#include "calibrate.h"
#include "convert_summary.h"
#include "pipeline.h"
#include "verify.h"

#include <quantbridge/qb_w4a16.h>

#include <getopt.h>

#include <glib.h>
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
    const char *calibration; /* --calibration FILE|builtin, or NULL */
    const char *imatrix;     /* --imatrix FILE, or NULL */
    const char *save_imatrix; /* --save-imatrix FILE, or NULL */
    uint64_t hess_budget;    /* --hessian-budget MIB in bytes, 0: the default */
    qbh_actstats *act;       /* what either gave, attached to the source */
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
            "  --calibration FILE|builtin  run the source's CPU forward pass over the text\n"
            "                        of FILE (or the built-in multilingual text) and give\n"
            "                        the writer each linear's input statistics (mean x^2\n"
            "                        per input column): sm86-w4a16 weights its scale\n"
            "                        search by them. Needs the model's tokenizer\n"
            "  --imatrix FILE        the same statistics from llama.cpp's importance matrix\n"
            "                        (its GGUF form or the legacy .dat of llama-imatrix)\n"
            "  --save-imatrix FILE   also write those statistics to FILE as a legacy\n"
            "                        llama.cpp imatrix (.dat), stored tensor names\n"
            "  --hessian-budget MIB  with --calibration, when the writer asks for each\n"
            "                        linear's Hessian (a GPTQ requantization): at most\n"
            "                        MIB MiB of float32 matrices held at once (default 1024;\n"
            "                        more calibration passes when they do not fit; a linear\n"
            "                        whose own matrix exceeds it gets none). The matrices\n"
            "                        wait in a temporary file beside --output\n"
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

/* --verify under --json: the verify summary goes to stderr, so stdout
 * holds the one JSON document. */
static qb_status verify_step(const convert_args *a, qbh_registry *reg, qbh_source *src,
                             qbh_plugin *writer, const qbh_plan *plan, int *verify_failed)
{
    int saved = -1;
    qb_status rc;
    if (a->json) {
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        if (saved >= 0)
            dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    /* the kernels' CPU linear backend runs its own format's linears in
     * the model check */
    rc = qbh_verify_after_convert(reg, src, a->output, writer, plan, qb_w4a16_backend_open,
                                  verify_failed);
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    return rc;
}

/* Prints the group size the writer chose before the writing starts. */
static void print_group_size(void *ctx, const qbh_plan *plan)
{
    const convert_args *a = ctx;
    if (plan->group_size && !a->quiet)
        fprintf(stderr, "quantbridge: group size %s: %s\n", plan->group_size, plan->group_reason);
}

/* --calibration / --imatrix: the statistics, attached to the source
 * before the writer's begin (qb_stats.h). */
static qb_status prepare_stats(void *ctx, qbh_source *src)
{
    convert_args *a = ctx;
    qb_status rc;
    if (!a->calibration && !a->imatrix)
        return QB_OK;
    rc = a->imatrix ? qbh_imatrix_load(src, a->imatrix, &a->act)
                    : qbh_calibrate(src, a->tokenizer, a->calibration, &a->act);
    if (rc)
        return rc;
    src->act = a->act;
    if (a->act->hess) {
        gchar *dir = a->output ? g_path_get_dirname(a->output) : NULL;
        if (a->hess_budget)
            a->act->hess->budget = a->hess_budget;
        a->act->hess->spill_dir = dir ? qbh_strdup(dir) : NULL;
        g_free(dir);
        if (dir && !a->act->hess->spill_dir)
            return qbh_error_set(QB_E_NOMEM, "out of memory");
    }
    if (a->save_imatrix && (rc = qbh_imatrix_save(src, a->act, a->save_imatrix)))
        return rc;
    if (!a->quiet)
        fprintf(stderr, "quantbridge: activation statistics: %s\n", a->act->origin);
    return QB_OK;
}

/* The conversion (host/pipeline) and what convert shows of it. */
static qb_status run(convert_args *a, qbh_registry *reg, int *usage_err, int *verify_failed)
{
    qbh_convert_request rq;
    qbh_convert_hooks hooks;
    qbh_convert_outcome o;
    qbh_convert_result res;
    qb_status rc;

    memset(&rq, 0, sizeof rq);
    memset(&hooks, 0, sizeof hooks);
    memset(&res, 0, sizeof res);
    rq.source = a->source;
    rq.format = a->format;
    rq.reg = reg;
    rq.writer = a->writer;
    rq.default_writer = QBH_DEFAULT_WRITER;
    rq.cli = a->cli;
    rq.n_cli = a->n_cli;
    rq.output = a->output;
    rq.overwrite = a->overwrite;
    rq.tokenizer = a->tokenizer;
    rq.dry_run = a->dry_run;
    hooks.ctx = (void *)a;
    hooks.planned = print_group_size;
    hooks.prepare = prepare_stats;
    rc = qbh_convert(&rq, &hooks, &o);
    if (rc) {
        *usage_err = o.usage;
        return rc;
    }
    if (a->dry_run) {
        rc = show_plan(a, &o.plan, &o.src);
        goto out;
    }
    if (!a->quiet)
        fprintf(a->json ? stderr : stdout,
                "quantbridge: wrote %s: %zu tensors, %zu files, %llu bytes (%s via %s -> %s)\n",
                a->output, o.n_tensors, o.n_files, (unsigned long long)o.bytes,
                o.src.info.source_format, o.reader->name, o.writer->name);
    res.source = a->source;
    res.output = a->output;
    res.reader = o.reader->name;
    res.writer = o.writer->name;
    res.source_format = o.src.info.source_format;
    res.n_tensors = o.n_tensors;
    res.n_files = o.n_files;
    res.bytes_in = o.plan.bytes_in;
    res.bytes_out = o.bytes;
    res.plan = &o.plan;
    res.seconds = o.seconds;
    res.peak_rss = o.peak_rss;
    if (!a->quiet)
        qbh_convert_summary_print(&res, a->json ? stderr : stdout);
    /* The output is committed before the check: a conversion that does
     * not verify is still evidence worth keeping (the message says so),
     * and deleting it would hide what went wrong. */
    if (a->verify) {
        rc = verify_step(a, reg, &o.src, o.writer, &o.plan, verify_failed);
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
    qbh_convert_end(&o);
    qbh_actstats_free(a->act);
    a->act = NULL;
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
        {"calibration", required_argument, NULL, 'c'},
        {"imatrix", required_argument, NULL, 'I'},
        {"save-imatrix", required_argument, NULL, 'S'},
        {"hessian-budget", required_argument, NULL, 'H'},
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
        case 'c': a.calibration = optarg; break;
        case 'I': a.imatrix = optarg; break;
        case 'S': a.save_imatrix = optarg; break;
        case 'H': {
            char *end = NULL;
            long long mib = strtoll(optarg, &end, 10);
            if (end == optarg || *end || mib < 1 || mib > (1LL << 30)) {
                fprintf(stderr, "quantbridge: error: --hessian-budget %s: expected a number of "
                        "MiB, 1 or more\n", optarg);
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            a.hess_budget = (uint64_t)mib << 20;
            break;
        }
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
    if (a.save_imatrix && !a.calibration && !a.imatrix) {
        fprintf(stderr, "quantbridge: error: convert: --save-imatrix needs --calibration or "
                "--imatrix\n");
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    if (a.hess_budget && !a.calibration) {
        fprintf(stderr, "quantbridge: error: convert: --hessian-budget needs --calibration (an "
                "imatrix holds no Hessian)\n");
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    if (a.calibration && a.imatrix) {
        fprintf(stderr, "quantbridge: error: convert: --calibration and --imatrix give the same "
                "statistics: choose one\n");
        rc = QBH_EXIT_USAGE;
        goto done;
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
