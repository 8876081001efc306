/*
 * quantbridge host — `quantbridge forward --model PATH (--tokens I,J,... |
 * --text "..." | --text-file FILE) --output FILE.safetensors`: the CPU
 * reference forward pass (host/model) of any readable model, written as F32
 * `logits` [n_tokens, vocab] in a safetensors file. The command wires the
 * kernels' linear backend in (docs/forward.md, "Linear backends"): the CPU
 * one, or with `--device cuda` the GPU one, each serving the models of its
 * own format and leaving the rest to dense rows.
 */
#include "cli.h"
#include "model.h"
#include "tokenizer.h"
#include "verify.h"

#include <quantbridge/qb_w4a16.h>
#ifdef QBH_HAVE_CUDA_FWD
/* Pure C99 (the stream is a void *): the host sees no CUDA header. */
#include <quantbridge/qb_w4a16_cuda.h>
#endif

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <quantbridge/base/qb_archs.h>

/* The architectures: the forward rows of the one table (qb_archs.h),
 * wrapped at 80 columns. */
static void usage_archs(FILE *f)
{
    char list[1024], *w, *save = NULL;
    size_t col = 0;
    qb_arch_list(QB_ARCH_FORWARD, list, sizeof list);
    fputs("Architectures:", f);
    col = strlen("Architectures:");
    for (w = strtok_r(list, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (col + 1 + strlen(w) > 79) {
            fputc('\n', f);
            col = 0;
        } else {
            fputc(' ', f);
            col++;
        }
        fputs(w, f);
        col += strlen(w);
    }
    fputs(" (rope scaling: default, linear,\nllama3; yarn for deepseek and gpt_oss).\n", f);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge forward --model PATH (--tokens I,J,... | --text \"...\" |\n"
            "                           --text-file FILE)\n"
            "                           --output FILE.safetensors [options]\n"
            "       quantbridge forward (--model PATH | --tokenizer DIR)\n"
            "                           (--text \"...\" | --text-file FILE) --print-tokens\n"
            "\n"
            "Runs the CPU reference forward pass of the model's decoder over one token\n"
            "sequence (causal, positions 0..n-1, no cache) and writes the logits of every\n"
            "position as the F32 tensor `logits` [n_tokens, vocab] of a safetensors file.\n"
            "Any readable model: weights come through its reader's dense rows, streamed\n"
            "layer by layer (memory does not grow with the number of layers); a W4A16\n"
            "directory runs its linears through libquantbridge-w4a16 (qb_w4a16_gemm_cpu)\n"
            "on the packed weights.\n");
    usage_archs(f);
    fprintf(f,
            "See docs/forward.md.\n"
            "\n"
            "  --model PATH           the model (file or directory)\n"
            "  --format auto|NAME     its reader (default: probe)\n"
            "  --option KEY=VALUE     option of the reader\n"
            "  --tokens I,J,...       token ids, comma-separated\n"
            "  --text \"...\"           text, tokenized with the model's tokenizer.json as the\n"
            "                         tokenizers library encodes it (BOS per its template)\n"
            "  --text-file FILE       the text of FILE (all of it, newlines included); NUL\n"
            "                         bytes separate several texts, each encoded on its own\n"
            "                         (--print-tokens: one line of ids per text; a forward\n"
            "                         pass takes one text)\n"
            "  --tokenizer DIR        take tokenizer.json from DIR instead of the model's\n"
            "  --print-tokens         print the token ids on stdout (without --output: only\n"
            "                         that, no forward pass)\n"
            "  --output FILE          the safetensors file to write (atomically)\n"
            "  --device cpu|cuda      where the W4A16 linears run (default cpu; cuda: a\n"
            "                         W4A16 directory on CUDA device 0, the rest on the CPU)\n"
            "  --threads N            worker threads (default: number of CPUs)\n"
            "  --config FILE          configuration file\n"
            "  --plugin-dir DIR       also register the plugins of DIR (repeatable)\n"
            "  -v, --verbose          progress even when not on a terminal\n"
            "\n"
            "The ids are recorded in the output's metadata (token_ids, token_source).\n"
            "\n"
            "exit status: 0 written, 1 error (an architecture it cannot run is named,\n"
            "a tokenizer.json component the encoder does not support is named),\n"
            "2 usage error\n");
}

qb_status qbh_parse_token_list(const char *s, int64_t **ids, size_t *n)
{
    size_t cap = 1, k = 0;
    const char *p;
    int64_t *v;

    assert(s && ids && n);
    *ids = NULL;
    *n = 0;
    for (p = s; *p; p++)
        cap += *p == ',';
    v = qbh_alloc(cap * sizeof *v);
    if (!v)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    p = s;
    for (;;) {
        char *end;
        long long x;
        errno = 0;
        x = strtoll(p, &end, 10);
        if (end == p || errno || x < 0 || (*end && *end != ',')) {
            qbh_free(v);
            return qbh_error_set(QB_E_INVALID, "--tokens %s: item %zu is not a token id "
                                 "(expected non-negative integers separated by commas)", s,
                                 k + 1);
        }
        v[k++] = (int64_t)x;
        if (!*end)
            break;
        p = end + 1;
    }
    *ids = v;
    *n = k;
    return QB_OK;
}

/* Writes `logits` [T, V] as the only tensor of a safetensors file at
 * `path`, through a temporary file beside it and a rename; the ids it
 * was run on and where they came from ("text" or "ids") go in the
 * header's __metadata__ (string values, as safetensors requires). */
static qb_status write_logits(const char *path, const float *logits, const int64_t *ids, size_t T,
                              int64_t V, const char *source)
{
    char *tmp = NULL;
    size_t hl, pad, nbytes = T * (size_t)V * sizeof(float), i;
    uint64_t len;
    FILE *f = NULL;
    qb_status rc = QB_OK;
    GString *hdr = g_string_new("{\"__metadata__\":{\"token_source\":\"");

    g_string_append_printf(hdr, "%s\",\"token_ids\":\"", source);
    for (i = 0; i < T; i++)
        g_string_append_printf(hdr, "%s%lld", i ? "," : "", (long long)ids[i]);
    g_string_append_printf(hdr, "\"},\"logits\":{\"dtype\":\"F32\",\"shape\":[%zu,%lld],"
                           "\"data_offsets\":[0,%zu]}}", T, (long long)V, nbytes);
    hl = hdr->len;
    /* The data starts 8-aligned: the header is padded with spaces. */
    pad = (8 - (8 + hl) % 8) % 8;
    for (i = 0; i < pad; i++)
        g_string_append_c(hdr, ' ');
    hl += pad;
    len = hl;
    tmp = qbh_alloc(strlen(path) + 32);
    if (!tmp) {
        g_string_free(hdr, TRUE);
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    }
    sprintf(tmp, "%s.tmp-%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) {
        rc = qbh_error_set(QB_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto out;
    }
    /* The length prefix is little-endian u64 (safetensors). */
    {
        unsigned char le[8];
        int i;
        for (i = 0; i < 8; i++)
            le[i] = (unsigned char)(len >> (8 * i));
        if (fwrite(le, 1, 8, f) != 8 || fwrite(hdr->str, 1, hl, f) != hl ||
            fwrite(logits, 1, nbytes, f) != nbytes || fflush(f) || fsync(fileno(f))) {
            rc = qbh_error_set(QB_E_IO, "%s: write failed: %s", path, strerror(errno));
            goto out;
        }
    }
    if (fclose(f)) {
        f = NULL;
        rc = qbh_error_set(QB_E_IO, "%s: write failed: %s", path, strerror(errno));
        goto out;
    }
    f = NULL;
    if (rename(tmp, path))
        rc = qbh_error_set(QB_E_IO, "%s: cannot rename into place: %s", path, strerror(errno));
out:
    if (f)
        fclose(f);
    if (rc)
        unlink(tmp);
    qbh_free(tmp);
    g_string_free(hdr, TRUE);
    return rc;
}

/* The ids as "1,2,3" on f, one line. */
static void print_ids(FILE *f, const int64_t *ids, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)ids[i]);
    fputc('\n', f);
}

/* --text-file: encodes each text of `path` with tok, printing its ids as
 * a line on stdout when `print`. The texts are the file cut at every NUL
 * byte (a text may hold newlines but never a NUL, which the encoder
 * refuses anyway; a file without one is one text, trailing newline
 * included). With `one`, the file must hold a single text, whose ids go
 * to *ids / *n (the caller's, qbh_free); otherwise *ids stays NULL.
 * Errors name the file and the text's number (from 1). */
static qb_status encode_text_file(const qbh_tok *tok, const char *path, int print, int one,
                                  int64_t **ids, size_t *n)
{
    gchar *buf = NULL;
    gsize len = 0, start = 0, i, k = 0;
    GError *gerr = NULL;
    qb_status rc = QB_OK;

    assert(tok && path && ids && n);
    *ids = NULL;
    *n = 0;
    if (!g_file_get_contents(path, &buf, &len, &gerr)) {
        rc = qbh_error_set(gerr->code == G_FILE_ERROR_NOENT ? QB_E_NOT_FOUND : QB_E_IO,
                           "--text-file %s: %s", path, gerr->message);
        g_error_free(gerr);
        return rc;
    }
    if (one && memchr(buf, 0, len)) {
        rc = qbh_error_set(QB_E_INVALID, "--text-file %s: NUL bytes separate several texts here; "
                           "a forward pass takes one text (--print-tokens alone takes many)",
                           path);
        goto out;
    }
    for (i = 0; i <= len; i++) {
        int64_t *v = NULL;
        size_t m = 0;
        if (i < len && buf[i])
            continue;
        k++;
        if ((rc = qbh_tok_encode(tok, buf + start, i - start, 1, &v, &m))) {
            char *why = g_strdup(qbh_error_message());
            rc = qbh_error_set(rc, "--text-file %s: text %zu (byte %zu): %s", path, (size_t)k,
                               (size_t)start, why);
            g_free(why);
            goto out;
        }
        if (print)
            print_ids(stdout, v, m);
        if (one) {
            *ids = v;
            *n = m;
        } else {
            qbh_free(v);
        }
        start = i + 1;
    }
    if (print && (fflush(stdout) || ferror(stdout)))
        rc = qbh_error_set(QB_E_IO, "stdout: write failed: %s", strerror(errno));
out:
    g_free(buf);
    return rc;
}

/* Whether `--device cuda` can run here: QB_OK, or QB_E_UNSUPPORTED with
 * "--device cuda: this build has no CUDA" (built without the CUDA kernels)
 * or "--device cuda: no CUDA device (...)" (the CUDA runtime's reason).
 * Opens and closes a session to find out. */
static qb_status cuda_check(void)
{
#ifdef QBH_HAVE_CUDA_FWD
    qb_w4a16_cuda_session *s = NULL;
    char err[512];
    qb_status rc = qb_w4a16_cuda_session_open(0, &s, err, sizeof err);
    qb_w4a16_cuda_session_close(s);
    if (rc)
        return qbh_error_set(rc, "--device cuda: %s", err);
    return QB_OK;
#else
    return qbh_error_set(QB_E_UNSUPPORTED, "--device cuda: this build has no CUDA (configure "
                         "with the CUDA toolkit and -DQB_ENABLE_CUDA=ON)");
#endif
}

/* The linear backend of model s (NULL when none serves it): the kernels'
 * CPU one, or with cuda the GPU one, which must serve s. */
static qb_status open_linears(int cuda, qbh_source *s, qb_linear_backend **lb)
{
    const qb_host *fh = qbh_services_named("forward");
    char why[1536];
    qb_status rc;
    *lb = NULL;
    if (!cuda) {
        rc = qb_w4a16_backend_open(fh, &s->src, 0, lb);
        if (rc) {
            snprintf(why, sizeof why, "%s", qbh_error_message());
            return qbh_error_set(rc, "forward: %s", why);
        }
        return QB_OK;
    }
#ifdef QBH_HAVE_CUDA_FWD
    rc = qb_w4a16_cuda_backend_open(fh, &s->src, QB_LINEAR_BACKEND_REQUIRED, lb);
#else
    rc = qbh_error_set(QB_E_UNSUPPORTED, "this build has no CUDA");
#endif
    if (rc) {
        snprintf(why, sizeof why, "%s", qbh_error_message());
        return qbh_error_set(rc, "--device cuda: %s; use --device cpu", why);
    }
    return QB_OK;
}

int qbh_cmd_forward(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'f'},
        {"option", required_argument, NULL, 'o'},
        {"tokens", required_argument, NULL, 't'},
        {"text", required_argument, NULL, 'x'},
        {"text-file", required_argument, NULL, 'X'},
        {"tokenizer", required_argument, NULL, 'k'},
        {"print-tokens", no_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'O'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *format = NULL, *tokens_arg = NULL, *text = NULL, *output = NULL;
    int cuda = 0;
    const char *tokenizer = NULL, *text_file = NULL;
    qbh_tok *tok = NULL;
    qb_linear_backend *lb = NULL;
    qbh_registry reg;
    qbh_source src;
    qbh_params sp;
    qbh_opt *cli = NULL;
    int64_t *ids = NULL, vocab = 0;
    float *logits = NULL;
    size_t n_ids = 0, n_opt = 0;
    int c, usage_err = 0, rc = QBH_EXIT_FAIL, reg_open = 0, print_tokens = 0;

    memset(&src, 0, sizeof src);
    memset(&sp, 0, sizeof sp);
    cli = qbh_calloc((size_t)argc + 1, sizeof *cli);
    if (!cli) {
        qbh_error_set(QB_E_NOMEM, "out of memory");
        qbh_cli_report();
        return QBH_EXIT_FAIL;
    }
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'f': format = optarg; break;
        case 't': tokens_arg = optarg; break;
        case 'x': text = optarg; break;
        case 'X': text_file = optarg; break;
        case 'k': tokenizer = optarg; break;
        case 'p': print_tokens = 1; break;
        case 'O': output = optarg; break;
        case 'D':
            if (strcmp(optarg, "cpu") == 0)
                cuda = 0;
            else if (strcmp(optarg, "cuda") == 0)
                cuda = 1;
            else {
                fprintf(stderr, "quantbridge: error: forward: --device %s: expected cpu or "
                        "cuda\n", optarg);
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
        case 'h': usage(stdout); rc = QBH_EXIT_OK; goto done;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            rc = QBH_EXIT_USAGE;
            goto done;
        default:
            fprintf(stderr, "quantbridge: error: forward: unknown option '%s'\n",
                    argv[optind - 1]);
            usage(stderr);
            rc = QBH_EXIT_USAGE;
            goto done;
        }
    }
    {
        const char *why = NULL;
        if (optind < argc)
            fprintf(stderr, "quantbridge: error: forward: unexpected argument '%s'\n",
                    argv[optind]);
        else if (!!tokens_arg + !!text + !!text_file != 1)
            why = "give exactly one of --tokens, --text and --text-file";
        else if (!output && !print_tokens)
            why = "--output is required (or --print-tokens)";
        else if (!model && (output || !tokenizer))
            why = output ? "--model is required" : "--model or --tokenizer is required";
        else if (tokenizer && tokens_arg)
            why = "--tokenizer applies to --text and --text-file only";
        if (optind < argc || why) {
            if (why)
                fprintf(stderr, "quantbridge: error: forward: %s\n", why);
            usage(stderr);
            rc = QBH_EXIT_USAGE;
            goto done;
        }
    }
    if (tokens_arg && qbh_parse_token_list(tokens_arg, &ids, &n_ids)) {
        qbh_cli_report();
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    /* Before the model is read: a build or machine without CUDA says so
     * at once (the forward tests probe the device this way). */
    if (cuda && cuda_check())
        goto report;
    if (model) {
        if (qbh_cli_setup(co, &reg))
            goto report;
        reg_open = 1;
        if (qbh_verify_open(&reg, model, format, cli, n_opt, &src, &sp, &usage_err))
            goto report;
    }
    if (text || text_file) {
        const char *dir = tokenizer ? tokenizer : src.info.tokenizer_dir;
        qb_status e;
        if (!dir) {
            if (src.info.tokenizer_state == QB_TOKENIZER_REFUSED)
                qbh_source_tokenizer_refused(&src);
            else if (src.info.tokenizer_state == QB_TOKENIZER_SKIPPED)
                qbh_error_set(QB_E_NOT_FOUND, "%s: %s: give --tokenizer DIR or the ids with "
                              "--tokens", model, src.info.tokenizer_note);
            else
                qbh_error_set(QB_E_NOT_FOUND, "%s: the model has no tokenizer files "
                              "(tokenizer.json): give --tokenizer DIR or the ids with --tokens",
                              model);
            goto report;
        }
        if (qbh_tok_load(qbh_services_named("forward"), dir, &tok)) {
            if (qbh_error_code() == QB_E_NOT_FOUND)
                qbh_error_set(QB_E_NOT_FOUND, "%s/tokenizer.json does not exist: give --tokenizer "
                              "DIR or the ids with --tokens", dir);
            goto report;
        }
        /* The tokenizer is loaded once: --text-file's texts all reuse it. */
        e = text ? qbh_tok_encode(tok, text, strlen(text), 1, &ids, &n_ids)
                 : encode_text_file(tok, text_file, print_tokens, !!output, &ids, &n_ids);
        if (e)
            goto report;
        if (co->verbose && (text || output)) {
            fprintf(stderr, "quantbridge: forward: %zu tokens from the text (%s/tokenizer.json): ",
                    n_ids, dir);
            print_ids(stderr, ids, n_ids);
        }
    }
    if (print_tokens) {
        if (!text_file) /* encode_text_file printed them */
            print_ids(stdout, ids, n_ids);
        fflush(stdout);
        if (!output) {
            rc = QBH_EXIT_OK;
            goto done;
        }
    }
    if (!n_ids) {
        qbh_error_set(QB_E_INVALID, "%s: the text gives no tokens", text ? "--text" : text_file);
        goto report;
    }
    if (open_linears(cuda, &src, &lb))
        goto report;
    {
        qbh_fwd_model m = {qbh_services_named("forward"), &src.src, lb, NULL, NULL, 0};
        rc = qbh_forward(&m, ids, n_ids, &logits, &vocab) ? QBH_EXIT_FAIL : QBH_EXIT_OK;
    }
    if (rc)
        goto report;
    qbh_progress_done();
    if (write_logits(output, logits, ids, n_ids, vocab, tokens_arg ? "ids" : "text"))
        goto report;
    fprintf(stderr, "quantbridge: logits [%zu, %lld] written to %s\n", n_ids, (long long)vocab,
            output);
    rc = QBH_EXIT_OK;
    goto done;
report:
    qbh_progress_done();
    qbh_cli_report();
    rc = usage_err ? QBH_EXIT_USAGE : QBH_EXIT_FAIL;
done:
    if (lb)
        lb->close(lb);
    qbh_free(logits);
    qbh_free(ids);
    qbh_tok_free(tok);
    if (model)
        qbh_source_close(&src);
    qbh_params_free(&sp);
    qbh_free(cli);
    if (reg_open)
        qbh_registry_free(&reg);
    return rc;
}
