/*
 * quantbridge host — `quantbridge verify --source SRC --converted DIR`:
 * opens both through their readers and reports, per tensor, how far the
 * converted values are from the source's (host/verify/verify.h has the metric
 * definitions). Exit 0 when every tensor is present on both sides and
 * passes, 3 when the comparison ran and failed, 1 on an error, 2 on usage
 * errors.
 */
#include "cli.h"
#include "verify.h"

#include <quantbridge/qb_w4a16.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge verify --source PATH --converted DIR [options]\n"
            "\n"
            "Reads the source and the converted model through their readers, matches tensors\n"
            "by canonical name and reports per tensor: shape, source encoding, exact (bit-equal\n"
            "float32), max abs error, relative RMSE ||conv - src|| / ||src||, cosine, SNR in dB,\n"
            "and for the 2-D weights of decoder layers the cosine between W_src.x and W_conv.x\n"
            "pooled over %d fixed pseudo-random vectors x. Then the worst tensors and\n"
            "per-layer means. Both models are streamed in row blocks, never loaded whole.\n"
            "\n"
            "  --source PATH          the original checkpoint (file or directory)\n"
            "  --converted DIR        the conversion's output (probed: sm86-w4a16 by\n"
            "                         manifest.json, hf-dense by config + safetensors)\n"
            "  --format auto|NAME     reader of the source (default: probe)\n"
            "  --converted-format auto|NAME   reader of the converted model (default: probe);\n"
            "                         the name of a writer-only plugin means the reader its\n"
            "                         capabilities name (`quantbridge plugins`: verify reader)\n"
            "  --option KEY=VALUE     option of the source's reader\n"
            "  --max-rel-rmse X       also fail a tensor above this relative RMSE (default:\n"
            "                         no such bound; 0 demands bit-exact values)\n"
            "  --min-cosine X         also fail a tensor whose cosine or W.x cosine is below X\n"
            "                         (default: no such bound)\n"
            "  --no-model-check       skip the model check (below)\n"
            "  --text-file FILE       text of the model check: all of FILE, one text\n"
            "                         (default: a built-in text of a few hundred tokens,\n"
            "                         English, German, French, Chinese, Russian, code and\n"
            "                         numbers)\n"
            "  --text \"...\"           text of the model check, given inline\n"
            "  --tokenizer DIR        encode the text with DIR/tokenizer.json (default: the\n"
            "                         source's, else the converted model's; without any,\n"
            "                         the built-in text gives way to %d fixed ids)\n"
            "  --tokens I,J,...       token ids of the model check instead of text (no\n"
            "                         perplexity)\n"
            "  --max-kl X             fail when the model check's KL max exceeds X (nats)\n"
            "  --min-top1 X           fail when its top-1 agreement is below X (0..1)\n"
            "  --json                 the report as JSON on stdout instead of the table\n"
            "  --report FILE.html     also write a self-contained HTML report (charts per\n"
            "                         layer, sortable table); written atomically\n"
            "  --threads N            worker threads (default: number of CPUs)\n"
            "  --config FILE          configuration file\n"
            "  --plugin-dir DIR       also register the plugins of DIR (repeatable)\n"
            "  -v, --verbose          progress even when not on a terminal\n"
            "\n"
            "Pass/fail, per compared tensor (the metrics above are reported, not judged,\n"
            "unless --max-rel-rmse / --min-cosine are given):\n"
            "  exact    a tensor its writer declares exact fails on any difference\n"
            "  absmax   a tensor on a symmetric integer grid (the W4A16 linears) fails when\n"
            "           any group's error exceeds that of the plain rule on the same source\n"
            "           values (scale absmax/7 in the grid's scale precision, round to\n"
            "           nearest) by more than %g%% RMSE: the writer keeps that rule whenever\n"
            "           its search does no better, so more is a bug (a wrong scale row, a\n"
            "           permuted or transposed tensor), whatever the weights' outliers\n"
            "  nearest  a float tensor (f16, bf16, f32) fails where an element is farther\n"
            "           from the source than round-to-nearest-even in that dtype\n"
            "  none     any other encoding must be bit-exact unless a threshold is given\n"
            "Any NaN or Inf not kept bit for bit fails, as do missing, extra and reshaped\n"
            "tensors.\n"
            "\n"
            "Model check (architectures the CPU forward pass runs: docs/forward.md): the\n"
            "forward pass of both models over one token sequence; reports KL(src || conv)\n"
            "mean, p99 and max, top-1 agreement, the minimum logits cosine and, from text,\n"
            "both perplexities and their ratio. It fails on --max-kl / --min-top1.\n"
            "\n"
            "Model verdict: a third pass runs the baseline model, the converted model's\n"
            "structure with the source's values put through the plain rules at the\n"
            "converted model's own grids (absmax/(2^(b-1)-1) per group, the scale rounded\n"
            "to the grid's scale dtype; floats rounded to their dtype), and the\n"
            "conversion's KL mean KL_c is placed against the baseline's KL_b:\n"
            "  exact codes     every grid tensor declared exact and passing (no third pass)\n"
            "  better          KL_c < 0.9 KL_b\n"
            "  as expected     KL_c <= 1.1 KL_b + 0.001: what any sound rounding rule gets,\n"
            "                  give or take the W4A16 kernel's fp16 activations\n"
            "  worse           above that: a warning, not a failure (the rule the writer\n"
            "                  chose loses to absmax on this model)\n"
            "  defect          KL_c > 1.5 KL_b + 0.01: no rounding rule is that much worse\n"
            "                  than the plainest; a wrong permutation or a broken tensor is.\n"
            "                  Fails the verification (exit 3)\n"
            "Without a grid (a float conversion), or where the baseline cannot be formed,\n"
            "the verdict says why it was not computed. JSON: \"model_verdict\".\n"
            "\n"
            "exit status: 0 every tensor present and passing, 1 error (nothing compared),\n"
            "2 usage error, 3 the comparison ran and failed\n",
            QBH_VERIFY_N_VECTORS, QBH_MC_DEFAULT_TOKENS, 100.0 * QBH_VERIFY_BASELINE_MARGIN);
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "quantbridge: error: %s %s: expected a number in [%g, %g]\n", opt, s, lo,
                hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* --text-file: all of FILE as one text (*text g_malloc'd). QB_E_IO naming
 * the file when it cannot be read, QB_E_INVALID when it holds a NUL (the
 * encoder takes NUL-terminated text: `forward --text-file` reads NUL as a
 * separator of several texts; the model check runs on one). */
static qb_status read_text_file(const char *path, char **text)
{
    GError *gerr = NULL;
    gsize len = 0;
    qb_status rc;
    *text = NULL;
    if (!g_file_get_contents(path, text, &len, &gerr)) {
        rc = qbh_error_set(QB_E_IO, "--text-file %s: %s", path, gerr->message);
        g_error_free(gerr);
        return rc;
    }
    if (memchr(*text, '\0', len)) {
        g_free(*text);
        *text = NULL;
        return qbh_error_set(QB_E_INVALID, "--text-file %s: holds a NUL byte; the model check "
                             "runs on one text", path);
    }
    return QB_OK;
}

int qbh_cmd_verify(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"source", required_argument, NULL, 's'},
        {"converted", required_argument, NULL, 'c'},
        {"format", required_argument, NULL, 'f'},
        {"converted-format", required_argument, NULL, 'F'},
        {"option", required_argument, NULL, 'o'},
        {"max-rel-rmse", required_argument, NULL, 'm'},
        {"min-cosine", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"report", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"no-model-check", no_argument, NULL, 'N'},
        {"tokens", required_argument, NULL, 'k'},
        {"text", required_argument, NULL, 'x'},
        {"text-file", required_argument, NULL, 'X'},
        {"tokenizer", required_argument, NULL, 't'},
        {"max-kl", required_argument, NULL, 'K'},
        {"min-top1", required_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
    };
    qbh_model_check mc;
    int64_t *mc_ids = NULL;
    size_t mc_n = 0;
    const char *mc_text = NULL, *text_file = NULL, *tokenizer = NULL;
    char *file_text = NULL, text_what[1100];
    qbh_mc_opts mo;
    double max_kl = NAN, min_top1 = NAN;
    int no_mc = 0;
    const char *source = NULL, *converted = NULL, *format = NULL, *conv_format = NULL;
    const char *report = NULL;
    qbh_verify_opts vo;
    qbh_verify_result *res = NULL;
    qbh_registry reg;
    qbh_source src, conv;
    qbh_params sp, cp;
    qbh_opt *cli = NULL;
    size_t n_opt = 0;
    int c, json = 0, usage_err = 0, rc = QBH_EXIT_FAIL, reg_open = 0;

    memset(&mc, 0, sizeof mc);
    memset(&src, 0, sizeof src);
    memset(&conv, 0, sizeof conv);
    memset(&sp, 0, sizeof sp);
    memset(&cp, 0, sizeof cp);
    qbh_verify_opts_default(&vo);
    cli = qbh_calloc((size_t)argc + 1, sizeof *cli);
    if (!cli) {
        qbh_error_set(QB_E_NOMEM, "out of memory");
        qbh_cli_report();
        return QBH_EXIT_FAIL;
    }
    if (qbh_cli_check_long(argc, argv, opts, "verify")) {
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 's': source = optarg; break;
        case 'c': converted = optarg; break;
        case 'f': format = optarg; break;
        case 'F': conv_format = optarg; break;
        case 'j': json = 1; break;
        case 'r': report = optarg; break;
        case 'm':
            if (parse_double("--max-rel-rmse", optarg, 0.0, 1e6, &vo.max_rel_rmse)) {
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'n':
            if (parse_double("--min-cosine", optarg, -1.0, 1.0, &vo.min_cosine)) {
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'o':
            if (qbh_cli_option_kv(optarg, &cli[n_opt++])) {
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
        case 'N': no_mc = 1; break;
        case 'k':
            qbh_free(mc_ids);
            if (qbh_parse_token_list(optarg, &mc_ids, &mc_n)) {
                qbh_cli_report();
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'x': mc_text = optarg; break;
        case 'X': text_file = optarg; break;
        case 't': tokenizer = optarg; break;
        case 'K':
            if (parse_double("--max-kl", optarg, 0.0, 1e6, &max_kl)) {
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            break;
        case 'p':
            if (parse_double("--min-top1", optarg, 0.0, 1.0, &min_top1)) {
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
            fprintf(stderr, "quantbridge: error: verify: unknown option '%s'\n", argv[optind - 1]);
            qbh_cli_usage_hint("verify");
            rc = QBH_EXIT_USAGE;
            goto done;
        }
    }
    if (optind < argc || !source || !converted || !!mc_ids + !!mc_text + !!text_file > 1 ||
        (tokenizer && mc_ids)) {
        if (!!mc_ids + !!mc_text + !!text_file > 1)
            fprintf(stderr, "quantbridge: error: verify: --tokens, --text and --text-file "
                    "exclude each other\n");
        else if (tokenizer && mc_ids)
            fprintf(stderr, "quantbridge: error: verify: --tokenizer applies to text (--text, "
                    "--text-file, the built-in text), not to --tokens\n");
        else if (optind < argc)
            fprintf(stderr, "quantbridge: error: verify: unexpected argument '%s'\n",
                    argv[optind]);
        else
            fprintf(stderr, "quantbridge: error: verify: --source and --converted are required\n");
        usage(stderr);
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    /* before the comparison, which may take minutes */
    if (report && qbh_outdir_check_parent(report, "--report"))
        goto report;
    if (text_file && read_text_file(text_file, &file_text))
        goto report;
    if (tokenizer && !g_file_test(tokenizer, G_FILE_TEST_IS_DIR)) {
        qbh_error_set(QB_E_NOT_FOUND, "--tokenizer %s: not a directory", tokenizer);
        goto report;
    }
    if (qbh_cli_setup(co, &reg))
        goto report;
    reg_open = 1;
    if (qbh_verify_open(&reg, source, format, cli, n_opt, &src, &sp, &usage_err))
        goto report;
    if (qbh_verify_open(&reg, converted, qbh_verify_reader_for(&reg, conv_format), NULL, 0,
                        &conv, &cp, &usage_err))
        goto report;
    if (qbh_verify_sources(&src, &conv, &vo, &res))
        goto report;
    if (!no_mc) {
        qbh_mc_opts_default(&mo);
        mo.tokens = mc_ids;
        mo.n_tokens = mc_n;
        mo.text = file_text ? file_text : mc_text;
        snprintf(text_what, sizeof text_what, "--text-file %s", text_file ? text_file : "");
        mo.text_what = file_text ? text_what : "--text";
        mo.tokenizer = tokenizer;
        mo.max_kl = max_kl;
        mo.min_top1 = min_top1;
        mo.exact_codes = qbh_verify_exact_codes(res);
        mo.linears = qb_w4a16_backend_open; /* the kernels' CPU backend, for its own format */
        if (qbh_model_check_run(&src, &conv, &mo, &mc))
            goto report;
        res->model_check = &mc;
    }
    {
        /* an activation-aware rule's tensors are judged at the output: the
         * model check must have placed the model against its baseline */
        char why[256];
        int judged = qbh_mc_judges(no_mc ? NULL : &mc, "--no-model-check", why, sizeof why);
        qbh_verify_settle_output(res, judged, why);
    }
    if (!no_mc) {
        if (mc.ran && !mc.pass)
            res->pass = 0;
        qbh_mc_verdict_warn(&mc);
    }
    if (report && qbh_verify_write_html(res, report))
        goto report;
    if (json) {
        char *text = qbh_verify_json(res);
        if (!text) {
            qbh_error_set(QB_E_NOMEM, "out of memory");
            goto report;
        }
        printf("%s\n", text);
        cJSON_free(text);
    } else {
        qbh_verify_print_table(stdout, res);
        if (!no_mc)
            qbh_model_check_print(stdout, &mc);
    }
    if (report)
        fprintf(stderr, "quantbridge: report written to %s\n", report);
    fflush(stdout);
    rc = res->pass ? QBH_EXIT_OK : QBH_EXIT_VERIFY;
    if (!res->pass) {
        size_t i, bad = 0;
        const char *first = NULL;
        for (i = 0; i < res->n; i++)
            if (res->t[i].state != QBH_VT_OK) {
                fprintf(stderr, "quantbridge: verify: %s %s: %s\n",
                        res->t[i].state == QBH_VT_FAIL ? "failed" :
                        res->t[i].state == QBH_VT_MISSING ? "missing" :
                        res->t[i].state == QBH_VT_EXTRA ? "extra" : "shape mismatch",
                        res->t[i].name, res->t[i].reason);
                if (!bad++)
                    first = res->t[i].name;
            }
        if (mc.ran && !mc.pass)
            fprintf(stderr, "quantbridge: verify: model check: %s\n", mc.reason);
        if (bad)
            fprintf(stderr, "quantbridge: error: %s does not match %s: %zu tensor(s) fail, "
                    "first %s\n", converted, source, bad, first);
        else
            fprintf(stderr, "quantbridge: error: %s does not match %s: %s\n", converted,
                    source, mc.reason);
    }
    goto done;
report:
    qbh_cli_report();
    rc = usage_err ? QBH_EXIT_USAGE : QBH_EXIT_FAIL;
done:
    qbh_verify_result_free(res);
    qbh_model_check_free(&mc);
    qbh_free(mc_ids);
    g_free(file_text);
    qbh_source_close(&conv);
    qbh_source_close(&src);
    qbh_params_free(&sp);
    qbh_params_free(&cp);
    qbh_free(cli);
    if (reg_open)
        qbh_registry_free(&reg);
    return rc;
}
