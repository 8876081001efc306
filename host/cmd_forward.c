/*
 * quantbridge host — `quantbridge forward --model PATH (--tokens I,J,... |
 * --text "...") --output FILE.safetensors`: the CPU reference forward pass
 * (forward_model.c) of any readable model, written as F32 `logits`
 * [n_tokens, vocab] in a safetensors file.
 */
#include "forward.h"
#include "verify_engine.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge forward --model PATH (--tokens I,J,... | --text \"...\")\n"
            "                           --output FILE.safetensors [options]\n"
            "\n"
            "Runs the CPU reference forward pass of the model's decoder over one token\n"
            "sequence (causal, positions 0..n-1, no cache) and writes the logits of every\n"
            "position as the F32 tensor `logits` [n_tokens, vocab] of a safetensors file.\n"
            "Any readable model: weights come through its reader's dense rows, streamed\n"
            "layer by layer (memory does not grow with the number of layers); a W4A16\n"
            "directory runs its linears through libquantbridge-w4a16 (qb_w4a16_gemm_cpu)\n"
            "on the packed weights. Architectures: llama, mistral, qwen2, qwen3, gemma,\n"
            "gemma2, gemma3_text, phi3, mixtral, qwen2_moe, qwen3_moe, deepseek_v2,\n"
            "deepseek_v3 (rope scaling: default, linear, llama3; yarn for deepseek).\n"
            "See docs/forward.md.\n"
            "\n"
            "  --model PATH           the model (file or directory)\n"
            "  --format auto|NAME     its reader (default: probe)\n"
            "  --option KEY=VALUE     option of the reader\n"
            "  --tokens I,J,...       token ids, comma-separated\n"
            "  --text \"...\"           text to tokenize (not supported yet: use --tokens)\n"
            "  --output FILE          the safetensors file to write (atomically)\n"
            "  --threads N            worker threads (default: number of CPUs)\n"
            "  --config FILE          configuration file\n"
            "  --plugin-dir DIR       also register the plugins of DIR (repeatable)\n"
            "  -v, --verbose          progress even when not on a terminal\n"
            "\n"
            "exit status: 0 written, 1 error (an architecture it cannot run is named),\n"
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
 * `path`, through a temporary file beside it and a rename. */
static qb_status write_logits(const char *path, const float *logits, size_t T, int64_t V)
{
    char hdr[256], *tmp = NULL;
    size_t hl, pad, nbytes = T * (size_t)V * sizeof(float);
    uint64_t len;
    FILE *f = NULL;
    qb_status rc = QB_OK;
    int n;

    n = snprintf(hdr, sizeof hdr,
                 "{\"logits\":{\"dtype\":\"F32\",\"shape\":[%zu,%lld],\"data_offsets\":[0,%zu]}}",
                 T, (long long)V, nbytes);
    hl = (size_t)n;
    /* The data starts 8-aligned: the header is padded with spaces. */
    pad = (8 - (8 + hl) % 8) % 8;
    memset(hdr + hl, ' ', pad);
    hl += pad;
    len = hl;
    tmp = qbh_alloc(strlen(path) + 32);
    if (!tmp)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
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
        if (fwrite(le, 1, 8, f) != 8 || fwrite(hdr, 1, hl, f) != hl ||
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
    return rc;
}

int qbh_cmd_forward(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'f'},
        {"option", required_argument, NULL, 'o'},
        {"tokens", required_argument, NULL, 't'},
        {"text", required_argument, NULL, 'x'},
        {"output", required_argument, NULL, 'O'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *format = NULL, *tokens_arg = NULL, *text = NULL, *output = NULL;
    qbh_registry reg;
    qbh_source src;
    qbh_params sp;
    qbh_opt *cli = NULL;
    int64_t *ids = NULL, vocab = 0;
    float *logits = NULL;
    size_t n_ids = 0, n_opt = 0;
    int c, usage_err = 0, rc = QBH_EXIT_FAIL, reg_open = 0;

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
        case 'O': output = optarg; break;
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
    if (optind < argc || !model || !output || !tokens_arg == !text) {
        if (optind < argc)
            fprintf(stderr, "quantbridge: error: forward: unexpected argument '%s'\n",
                    argv[optind]);
        else if (!model || !output)
            fprintf(stderr, "quantbridge: error: forward: --model and --output are required\n");
        else
            fprintf(stderr, "quantbridge: error: forward: give exactly one of --tokens and "
                    "--text\n");
        usage(stderr);
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    if (text) {
        /* Tokenizing needs tokenizer.json's model (BPE/unigram); the host
         * has no tokenizer yet. */
        fprintf(stderr, "quantbridge: error: forward: --text is not supported yet (the host "
                "has no tokenizer); give the ids with --tokens\n");
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    if (qbh_parse_token_list(tokens_arg, &ids, &n_ids)) {
        qbh_cli_report();
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    if (qbh_cli_setup(co, &reg))
        goto report;
    reg_open = 1;
    if (qbh_verify_open(&reg, model, format, cli, n_opt, &src, &sp, &usage_err))
        goto report;
    if (qbh_forward(&src, ids, n_ids, &logits, &vocab))
        goto report;
    qbh_progress_done();
    if (write_logits(output, logits, n_ids, vocab))
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
    qbh_free(logits);
    qbh_free(ids);
    qbh_source_close(&src);
    qbh_params_free(&sp);
    qbh_free(cli);
    if (reg_open)
        qbh_registry_free(&reg);
    return rc;
}
