/*
 * quantbridge host — `quantbridge inspect PATH [--json] [--metadata]
 * [--raw]`: what each reader thinks of PATH, which one wins, and the model
 * it describes (architecture, summary, the model facts the host computed,
 * every tensor with shape, source encoding, parameters, bytes and bits per
 * weight, totals per encoding); --metadata adds the source's metadata and
 * config.json fields, --raw lists the tensors as stored instead of the
 * canonical view (inspect.h).
 */
#include "inspect.h"
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static void shape_text(const qb_tensor_info *t, char *out, size_t n)
{
    size_t len = 0;
    uint32_t d;
    out[0] = '\0';
    for (d = 0; d < t->n_dims && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
}

/* BPW column text: "4.50", or "-" when unknown. */
static void bpw_text(int64_t bytes, int64_t params, char *out, size_t n)
{
    double b = qbh_bits_per_weight(bytes, params);
    if (b < 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.2f", b);
}

static void bytes_text(int64_t bytes, char *out, size_t n)
{
    if (bytes < 0)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%lld", (long long)bytes);
}

static void print_tensors(const qbh_source *s, const qbh_sizes *z)
{
    size_t i, w = 4, ew = 8;
    for (i = 0; i < s->info.n_tensors; i++) {
        if (strlen(s->tensors[i].name) > w)
            w = strlen(s->tensors[i].name);
        if (strlen(s->tensors[i].source_encoding) > ew)
            ew = strlen(s->tensors[i].source_encoding);
    }
    printf("tensors: %zu\n", s->info.n_tensors);
    printf("  %-*s  %-18s  %-*s  %12s  %12s  %6s\n", (int)w, "NAME", "SHAPE", (int)ew, "ENCODING",
           "PARAMS", "BYTES", "BPW");
    for (i = 0; i < s->info.n_tensors; i++) {
        char sh[160], by[32], bpw[16];
        shape_text(&s->tensors[i], sh, sizeof sh);
        bytes_text(z->t[i].bytes, by, sizeof by);
        bpw_text(z->t[i].bytes, z->t[i].params, bpw, sizeof bpw);
        printf("  %-*s  %-18s  %-*s  %12lld  %12s  %6s%s\n", (int)w, s->tensors[i].name, sh, (int)ew,
               s->tensors[i].source_encoding, (long long)z->t[i].params, by, bpw,
               s->tensors[i].has_grid ? "  [grid]" : "");
    }
}

static void print_totals(const qbh_sizes *z)
{
    size_t i, ew = 8;
    char by[32], bpw[16], hb[32];
    for (i = 0; i < z->n_enc; i++)
        if (strlen(z->enc[i].encoding) > ew)
            ew = strlen(z->enc[i].encoding);
    printf("per encoding:\n");
    printf("  %-*s  %7s  %12s  %12s  %6s\n", (int)ew, "ENCODING", "TENSORS", "PARAMS", "BYTES", "BPW");
    for (i = 0; i < z->n_enc; i++) {
        const qbh_encoding_total *e = &z->enc[i];
        bytes_text(e->bytes_known ? e->bytes : -1, by, sizeof by);
        bpw_text(e->bytes_known ? e->bytes : -1, e->params, bpw, sizeof bpw);
        printf("  %-*s  %7zu  %12lld  %12s  %6s\n", (int)ew, e->encoding, e->n_tensors,
               (long long)e->params, by, bpw);
    }
    bpw_text(z->bytes_known ? z->bytes : -1, z->params, bpw, sizeof bpw);
    qbh_human_bytes((uint64_t)z->bytes, hb, sizeof hb);
    {
        double p = (double)z->params;
        char hp[32];
        if (p >= 1e9)
            snprintf(hp, sizeof hp, " (%.2f B)", p / 1e9);
        else if (p >= 1e6)
            snprintf(hp, sizeof hp, " (%.2f M)", p / 1e6);
        else
            hp[0] = '\0';
        printf("total: %lld parameters%s, %s%lld bytes (%s) of tensor data, %s bits per weight\n",
               (long long)z->params, hp, z->bytes_known ? "" : "at least ", (long long)z->bytes, hb, bpw);
    }
    if (z->other_bytes > 0)
        printf("  plus %lld stored bytes that feed no single tensor above (see --raw)\n",
               (long long)z->other_bytes);
}

static void print_legend(const qbh_sizes *z)
{
    printf("legend:\n"
           "  [grid]  the reader offers this tensor's integer grid (codes, per-group scales and\n"
           "          zero points), so a writer whose format fits that grid repacks it exactly,\n"
           "          without requantizing; tensors without it are read as float values\n"
           "  BYTES   bytes the tensor occupies in the source, %s; - unknown\n"
           "  BPW     bits per weight: BYTES x 8 / PARAMS\n",
           z->from_raw ? "its scales, zero points and group maps included"
                       : "from the element size of its stored type (this reader offers no "
                         "stored-tensor view)");
}

/* What inspect read besides the source (before printing anything). */
typedef struct inspect_read {
    cJSON *cfg; /* config.json, strictly read (NULL: none) */
    cJSON *tok; /* the tokenizer summary (qbh_inspect_tokenizer_json; NULL: none) */
} inspect_read;

static qb_status print_text(const char *path, const qbh_probe_score *sc, size_t n_sc,
                            const qbh_source *s, const qbh_sizes *z, const inspect_read *rd,
                            int raw, int meta)
{
    size_t i;
    qb_status rc;
    printf("source: %s\n", path);
    if (n_sc) {
        size_t nw = 0;
        for (i = 0; i < n_sc; i++)
            if (strlen(sc[i].plugin->name) > nw)
                nw = strlen(sc[i].plugin->name);
        printf("probe scores:\n");
        for (i = 0; i < n_sc; i++)
            printf("  %-*s %3d%s\n", (int)nw, sc[i].plugin->name, sc[i].score,
                   sc[i].plugin == s->reader ? "  <- chosen" : "");
    }
    printf("format: %s (reader %s %s)\n", s->info.source_format, s->reader->name,
           s->reader->desc->version);
    printf("architecture: %s\n", s->info.architecture);
    if (s->info.source_summary)
        printf("summary: %s\n", s->info.source_summary);
    if (s->info.tokenizer_dir)
        printf("tokenizer: %s\n", s->info.tokenizer_dir);
    if (s->info.tokenizer_state == QB_TOKENIZER_REFUSED)
        /* reported, never fatal here: convert and forward --text refuse */
        printf("tokenizer: refused: %s; or give the tokenizer files with --tokenizer DIR\n",
               s->info.tokenizer_note);
    else if (s->info.tokenizer_state == QB_TOKENIZER_SKIPPED)
        printf("tokenizer: skipped: %s\n", s->info.tokenizer_note);
    if (!s->info.tokenizer_note || s->info.tokenizer_dir || s->info.chat_template)
        qbh_inspect_tokenizer_text(stdout, rd->tok); /* not "none" after the line above */
    {
        char facts[512];
        qbh_model_facts_text(&s->facts, facts, sizeof facts);
        printf("facts: %s\n", facts);
    }
    if (meta && (rc = qbh_inspect_meta_text(s, rd->cfg)))
        return rc;
    if (raw) {
        if ((rc = qbh_inspect_raw_text(s)))
            return rc;
    } else {
        print_tensors(s, z);
    }
    print_totals(z);
    if (!raw)
        print_legend(z);
    return QB_OK;
}

/* "facts": the known ones only, under qb_model_facts' field names. */
static void add_facts(cJSON *root, const qb_model_facts *f)
{
    const struct {
        uint32_t bit;
        const char *name;
        int64_t v;
    } ints[] = {
        {QB_FACT_LAYERS, "n_layers", f->n_layers},
        {QB_FACT_HIDDEN, "hidden_size", f->hidden_size},
        {QB_FACT_VOCAB, "vocab_size", f->vocab_size},
        {QB_FACT_HEADS, "n_heads", f->n_heads},
        {QB_FACT_KV_HEADS, "n_kv_heads", f->n_kv_heads},
        {QB_FACT_HEAD_DIM, "head_dim", f->head_dim},
        {QB_FACT_INTERMEDIATE, "intermediate_size", f->intermediate_size},
        {QB_FACT_EXPERTS, "n_experts", f->n_experts},
        {QB_FACT_EXPERTS, "n_experts_used", f->n_experts_used},
    };
    cJSON *j = cJSON_AddObjectToObject(root, "facts");
    size_t i;
    for (i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (f->known & ints[i].bit)
            cJSON_AddNumberToObject(j, ints[i].name, (double)ints[i].v);
    if (f->known & QB_FACT_TIED_EMBEDDINGS)
        cJSON_AddBoolToObject(j, "tied_embeddings", f->tied_embeddings != 0);
}

/* "bytes" and "bits_per_weight" of one object: numbers, or null when unknown. */
static void add_size(cJSON *j, int64_t params, int64_t bytes)
{
    double b = qbh_bits_per_weight(bytes, params);
    cJSON_AddNumberToObject(j, "parameters", (double)params);
    if (bytes >= 0)
        cJSON_AddNumberToObject(j, "bytes", (double)bytes);
    else
        cJSON_AddNullToObject(j, "bytes");
    if (b >= 0)
        cJSON_AddNumberToObject(j, "bits_per_weight", b);
    else
        cJSON_AddNullToObject(j, "bits_per_weight");
}

static qb_status print_json(const char *path, const qbh_probe_score *sc, size_t n_sc,
                            const qbh_source *s, const qbh_sizes *z, const inspect_read *rd,
                            int raw, int meta)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    char *text;
    size_t i;
    uint32_t d;
    qb_status rc;

    cJSON_AddStringToObject(root, "source", path);
    arr = cJSON_AddArrayToObject(root, "probe");
    for (i = 0; i < n_sc; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "reader", sc[i].plugin->name);
        cJSON_AddNumberToObject(j, "score", sc[i].score);
        cJSON_AddItemToArray(arr, j);
    }
    cJSON_AddStringToObject(root, "reader", s->reader->name);
    cJSON_AddStringToObject(root, "format", s->info.source_format);
    cJSON_AddStringToObject(root, "architecture", s->info.architecture);
    if (s->info.source_summary)
        cJSON_AddStringToObject(root, "summary", s->info.source_summary);
    if (s->info.tokenizer_dir)
        cJSON_AddStringToObject(root, "tokenizer_dir", s->info.tokenizer_dir);
    cJSON_AddStringToObject(root, "tokenizer_state", qbh_source_tokenizer_state(s)
                                                         ? qbh_source_tokenizer_state(s)
                                                         : "unstated");
    if (s->info.tokenizer_note)
        cJSON_AddStringToObject(root, "tokenizer_note", s->info.tokenizer_note);
    cJSON_AddItemToObject(root, "tokenizer",
                          rd->tok ? cJSON_Duplicate(rd->tok, 1) : cJSON_CreateNull());
    add_facts(root, &s->facts);
    add_size(root, z->params, z->bytes_known ? z->bytes : -1);
    if (meta && (rc = qbh_inspect_meta_json(s, rd->cfg, root))) {
        cJSON_Delete(root);
        return rc;
    }
    if (raw) {
        if ((rc = qbh_inspect_raw_json(s, root))) {
            cJSON_Delete(root);
            return rc;
        }
    } else {
        arr = cJSON_AddArrayToObject(root, "tensors");
        for (i = 0; i < s->info.n_tensors; i++) {
            const qb_tensor_info *t = &s->tensors[i];
            cJSON *j = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(j, "shape");
            cJSON_AddStringToObject(j, "name", t->name);
            for (d = 0; d < t->n_dims; d++)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dims[d]));
            cJSON_AddStringToObject(j, "encoding", t->source_encoding);
            cJSON_AddBoolToObject(j, "grid", t->has_grid != 0);
            add_size(j, z->t[i].params, z->t[i].bytes);
            cJSON_AddItemToArray(arr, j);
        }
    }
    arr = cJSON_AddArrayToObject(root, "encodings");
    for (i = 0; i < z->n_enc; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "encoding", z->enc[i].encoding);
        cJSON_AddNumberToObject(j, "tensors", (double)z->enc[i].n_tensors);
        add_size(j, z->enc[i].params, z->enc[i].bytes_known ? z->enc[i].bytes : -1);
        cJSON_AddItemToArray(arr, j);
    }
    cJSON_AddNumberToObject(root, "other_bytes", (double)z->other_bytes);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: quantbridge inspect PATH [--json] [--metadata] [--raw] [--format auto|NAME]\n"
               "                          [--option KEY=VALUE]... [--config FILE] [--plugin-dir DIR]...\n"
               "                          [--verbose]\n"
               "Shows each reader's probe score for PATH, the chosen format, the architecture,\n"
               "the model facts and every tensor (name, shape, source encoding, parameters,\n"
               "bytes, bits per weight), with totals per encoding. [grid] marks a tensor whose\n"
               "integer grid the reader offers (exact repacking, no requantization).\n"
               "\n"
               "  --json        the same as one JSON object (keys parameters, bytes,\n"
               "                bits_per_weight at the top, per tensor and per encoding)\n"
               "  --metadata    also the source's metadata (GGUF key/values with their types,\n"
               "                arrays summarised) and the config.json fields\n"
               "  --raw         the tensors as stored (GGUF blocks, GPTQ qweight/qzeros/scales/\n"
               "                g_idx) instead of the canonical view\n"
               "  --format NAME use this reader instead of probing (see `quantbridge plugins`)\n"
               "  --option KEY=VALUE  a reader option\n");
}

int qbh_cmd_inspect(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"metadata", no_argument, NULL, 'm'},
        {"raw", no_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'f'},
        {"option", required_argument, NULL, 'o'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qbh_registry reg;
    qbh_plugin *reader = NULL;
    qbh_probe_score *scores = NULL;
    size_t n_scores = 0, n_opt = 0;
    qbh_opt *cli = NULL;
    qbh_params rp, wp;
    qbh_source src;
    const char *format = NULL, *path;
    int c, json = 0, raw = 0, meta = 0, usage_err = 0, rc = QBH_EXIT_FAIL, reg_open = 0;
    qbh_sizes sizes;
    inspect_read rd;

    memset(&src, 0, sizeof src);
    memset(&rd, 0, sizeof rd);
    memset(&sizes, 0, sizeof sizes);
    memset(&rp, 0, sizeof rp);
    memset(&wp, 0, sizeof wp);
    cli = qbh_calloc((size_t)argc + 1, sizeof *cli);
    if (!cli) {
        qbh_error_set(QB_E_NOMEM, "out of memory");
        qbh_cli_report();
        return QBH_EXIT_FAIL;
    }
    if (qbh_cli_check_long(argc, argv, opts, "inspect")) {
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'm': meta = 1; break;
        case 'r': raw = 1; break;
        case 'f': format = optarg; break;
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
            fprintf(stderr, "quantbridge: error: inspect: unknown option '%s'\n", argv[optind - 1]);
            qbh_cli_usage_hint("inspect");
            rc = QBH_EXIT_USAGE;
            goto done;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "quantbridge: error: inspect: expected exactly one PATH\n");
        usage(stderr);
        rc = QBH_EXIT_USAGE;
        goto done;
    }
    path = argv[optind];
    if (qbh_cli_setup(co, &reg))
        goto report;
    reg_open = 1;
    if (qbh_select_reader(&reg, path, format, &reader, &scores, &n_scores, &usage_err)) {
        /* Show what each reader said before the arbitration error. */
        size_t i;
        for (i = 0; i < n_scores; i++)
            fprintf(stderr, "quantbridge: probe %s: %d\n", scores[i].plugin->name,
                    scores[i].score);
        goto report;
    }
    if (qbh_params_route(reader, NULL, cli, n_opt, &rp, &wp, &usage_err))
        goto report;
    if (qbh_source_open(reader, path, rp.items, &src))
        goto report;
    /* Refused before anything is printed: also a config.json or tokenizer
     * file the strict JSON parser refuses. */
    if ((raw && qbh_inspect_raw_check(&src)) || qbh_sizes_compute(&src, &sizes) ||
        qbh_inspect_config(&src, &rd.cfg) || qbh_inspect_tokenizer_json(&src.info, &rd.tok))
        goto report;
    if (json ? print_json(path, scores, n_scores, &src, &sizes, &rd, raw, meta)
             : print_text(path, scores, n_scores, &src, &sizes, &rd, raw, meta))
        goto report;
    rc = QBH_EXIT_OK;
    goto done;
report:
    qbh_cli_report();
    rc = usage_err ? QBH_EXIT_USAGE : QBH_EXIT_FAIL;
done:
    cJSON_Delete(rd.cfg);
    cJSON_Delete(rd.tok);
    qbh_sizes_free(&sizes);
    qbh_source_close(&src);
    qbh_params_free(&rp);
    qbh_params_free(&wp);
    qbh_free(scores);
    qbh_free(cli);
    if (reg_open)
        qbh_registry_free(&reg);
    return rc;
}
