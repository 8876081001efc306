/*
 * quantbridge host — `quantbridge inspect PATH [--json]`: what each reader
 * thinks of PATH, which one wins, and the model it describes (architecture,
 * summary, the model facts the host computed, every tensor with shape and
 * source encoding).
 */
#include "qbh.h"

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

static void print_text(const char *path, const qbh_probe_score *sc, size_t n_sc,
                       const qbh_source *s)
{
    size_t i, w = 4;
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
    qbh_inspect_tokenizer_text(stdout, &s->info);
    {
        char facts[512];
        qbh_model_facts_text(&s->facts, facts, sizeof facts);
        printf("facts: %s\n", facts);
    }
    printf("tensors: %zu\n", s->info.n_tensors);
    for (i = 0; i < s->info.n_tensors; i++)
        if (strlen(s->tensors[i].name) > w)
            w = strlen(s->tensors[i].name);
    printf("  %-*s  %-18s  %s\n", (int)w, "NAME", "SHAPE", "ENCODING");
    for (i = 0; i < s->info.n_tensors; i++) {
        char sh[160];
        shape_text(&s->tensors[i], sh, sizeof sh);
        printf("  %-*s  %-18s  %s%s\n", (int)w, s->tensors[i].name, sh,
               s->tensors[i].source_encoding, s->tensors[i].has_grid ? " [grid]" : "");
    }
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

static int print_json(const char *path, const qbh_probe_score *sc, size_t n_sc,
                      const qbh_source *s)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    char *text;
    size_t i;
    uint32_t d;

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
    {
        cJSON *tok = qbh_inspect_tokenizer_json(&s->info);
        cJSON_AddItemToObject(root, "tokenizer", tok ? tok : cJSON_CreateNull());
    }
    add_facts(root, &s->facts);
    arr = cJSON_AddArrayToObject(root, "tensors");
    for (i = 0; i < s->info.n_tensors; i++) {
        const qb_tensor_info *t = &s->tensors[i];
        cJSON *j = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(j, "shape");
        cJSON_AddStringToObject(j, "name", t->name);
        for (d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dims[d]));
        cJSON_AddStringToObject(j, "encoding", t->source_encoding);
        cJSON_AddBoolToObject(j, "grid", t->has_grid != 0);
        cJSON_AddItemToArray(arr, j);
    }
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
    fprintf(f, "usage: quantbridge inspect PATH [--json] [--format auto|NAME] "
               "[--option KEY=VALUE]...\n"
               "                          [--config FILE] [--plugin-dir DIR]... [--verbose]\n"
               "Shows each reader's probe score for PATH, the chosen format, the architecture,\n"
               "the model facts and every tensor (name, shape, source encoding).\n");
}

int qbh_cmd_inspect(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
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
    int c, json = 0, usage_err = 0, rc = QBH_EXIT_FAIL, reg_open = 0;

    memset(&src, 0, sizeof src);
    memset(&rp, 0, sizeof rp);
    memset(&wp, 0, sizeof wp);
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
        case 'j': json = 1; break;
        case 'f': format = optarg; break;
        case 'o': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "quantbridge: error: --option %s: expected KEY=VALUE\n", optarg);
                rc = QBH_EXIT_USAGE;
                goto done;
            }
            *eq = '\0';
            cli[n_opt].key = optarg;
            cli[n_opt].value = eq + 1;
            cli[n_opt].origin = "--option";
            n_opt++;
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
            fprintf(stderr, "quantbridge: error: inspect: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
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
    if (json ? print_json(path, scores, n_scores, &src) : (print_text(path, scores, n_scores, &src), 0))
        goto report;
    rc = QBH_EXIT_OK;
    goto done;
report:
    qbh_cli_report();
    rc = usage_err ? QBH_EXIT_USAGE : QBH_EXIT_FAIL;
done:
    qbh_source_close(&src);
    qbh_params_free(&rp);
    qbh_params_free(&wp);
    qbh_free(scores);
    qbh_free(cli);
    if (reg_open)
        qbh_registry_free(&reg);
    return rc;
}
