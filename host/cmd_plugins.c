/*
 * quantbridge host — `quantbridge plugins [--json]`: every configured
 * plugin with kind, version, ABI, library, options and load status (a
 * plugin that failed to load is listed with its category and reason).
 */
#include "qbh.h"

#include <getopt.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char *kind_of(const qbh_plugin *p)
{
    if (p->state != QBH_LOAD_OK)
        return "-";
    if (p->desc->reader && p->desc->writer)
        return "both";
    return p->desc->reader ? "reader" : "writer";
}

static const char *status_of(const qbh_plugin *p)
{
    if (p->state == QBH_LOAD_OK)
        return "loaded";
    return p->state == QBH_LOAD_DISABLED ? "disabled" : "failed";
}

/* Where a plugin comes from and how its probe runs. */
static void print_origin(const qbh_plugin *p)
{
    const char *trust = p->contained ? "untrusted (probe runs in a child)" : "trusted";
    if (p->conf->source)
        printf("    defined in %s (%s layer); %s\n", p->conf->source,
               qbh_layer_kind_name(p->conf->layer), trust);
    else
        printf("    defined nowhere: [plugin:%s] in %s only adjusts it\n", p->name,
               p->conf->seen_in ? p->conf->seen_in : "the config");
}

static void print_text(const qbh_registry *reg)
{
    size_t i, k;
    int w = 4;
    printf("config: %s\n", reg->cfg.path ? reg->cfg.path : "(none found)");
    printf("plugins registered from, in this order:\n");
    for (i = 0; i < reg->cfg.n_layers; i++) {
        const qbh_conf_layer *l = &reg->cfg.layers[i];
        if (l->kind == QBH_LAYER_MAIN)
            continue; /* the config: line */
        printf("  %-11s  %s%s%s%s\n", qbh_layer_kind_name(l->kind), l->path,
               l->skipped ? " (" : "", l->skipped ? l->skipped : "", l->skipped ? ")" : "");
    }
    if (!reg->n_plugins) {
        printf("no plugins configured\n");
        return;
    }
    for (i = 0; i < reg->n_plugins; i++)
        if ((int)strlen(reg->plugins[i]->name) > w)
            w = (int)strlen(reg->plugins[i]->name);
    printf("%-*s  %-6s  %-8s  %-3s  %-8s  %s\n", w, "NAME", "KIND", "VERSION", "ABI", "STATUS",
           "LIBRARY");
    for (i = 0; i < reg->n_plugins; i++) {
        const qbh_plugin *p = reg->plugins[i];
        char abi[16] = "-";
        if (p->state == QBH_LOAD_OK)
            snprintf(abi, sizeof abi, "%u.%u", QB_ABI_GET_MAJOR(p->abi), QB_ABI_GET_MINOR(p->abi));
        printf("%-*s  %-6s  %-8s  %-3s  %-8s  %s\n", w, p->name, kind_of(p),
               p->state == QBH_LOAD_OK ? p->desc->version : "-", abi, status_of(p),
               p->library && *p->library ? p->library : "-");
        print_origin(p);
        if (p->state == QBH_LOAD_OK) {
            if (p->desc->description)
                printf("    %s\n", p->desc->description);
            for (k = 0; p->desc->options && p->desc->options[k]; k++) {
                const qb_option_decl *o = p->desc->options[k];
                printf("    option %s (%s%s%s, default %s): %s\n", o->name,
                       qbh_param_type_name(o->type), o->choices ? ": " : "",
                       o->choices ? o->choices : "", o->default_value ? o->default_value : "unset",
                       o->help ? o->help : "");
            }
        } else if (p->state != QBH_LOAD_DISABLED) {
            printf("    %s: %s\n", qbh_load_state_name(p->state), p->error ? p->error : "");
        }
    }
}

static cJSON *option_json(const qb_option_decl *o)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", o->name);
    cJSON_AddStringToObject(j, "type", qbh_param_type_name(o->type));
    if (o->default_value)
        cJSON_AddStringToObject(j, "default", o->default_value);
    else
        cJSON_AddNullToObject(j, "default");
    cJSON_AddStringToObject(j, "help", o->help ? o->help : "");
    if (o->choices)
        cJSON_AddStringToObject(j, "choices", o->choices);
    if ((o->type == QB_PARAM_INT || o->type == QB_PARAM_SIZE) && o->min_int <= o->max_int) {
        cJSON_AddNumberToObject(j, "min", (double)o->min_int);
        cJSON_AddNumberToObject(j, "max", (double)o->max_int);
    }
    return j;
}

static int print_json(const qbh_registry *reg)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    char *text;
    size_t i, k;
    char abi[16];

    cJSON_AddStringToObject(root, "quantbridge_version", QBH_VERSION_STRING);
    snprintf(abi, sizeof abi, "%u.%u", QB_ABI_MAJOR, QB_ABI_MINOR);
    cJSON_AddStringToObject(root, "host_abi", abi);
    if (reg->cfg.path)
        cJSON_AddStringToObject(root, "config", reg->cfg.path);
    else
        cJSON_AddNullToObject(root, "config");
    arr = cJSON_AddArrayToObject(root, "plugins");
    for (i = 0; i < reg->n_plugins; i++) {
        const qbh_plugin *p = reg->plugins[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", p->name);
        cJSON_AddStringToObject(j, "status", status_of(p));
        cJSON_AddStringToObject(j, "state", qbh_load_state_name(p->state));
        cJSON_AddStringToObject(j, "library", p->library ? p->library : "");
        cJSON_AddBoolToObject(j, "enabled", p->conf->enabled);
        cJSON_AddNumberToObject(j, "priority", p->conf->priority);
        if (p->conf->source)
            cJSON_AddStringToObject(j, "defined_in", p->conf->source);
        else
            cJSON_AddNullToObject(j, "defined_in");
        cJSON_AddBoolToObject(j, "trusted", !p->contained);
        if (p->error)
            cJSON_AddStringToObject(j, "error", p->error);
        else
            cJSON_AddNullToObject(j, "error");
        if (p->state == QBH_LOAD_OK) {
            cJSON *opts = NULL;
            snprintf(abi, sizeof abi, "%u.%u", QB_ABI_GET_MAJOR(p->abi), QB_ABI_GET_MINOR(p->abi));
            cJSON_AddStringToObject(j, "kind", kind_of(p));
            cJSON_AddStringToObject(j, "version", p->desc->version);
            cJSON_AddStringToObject(j, "abi", abi);
            cJSON_AddStringToObject(j, "description",
                                    p->desc->description ? p->desc->description : "");
            opts = cJSON_AddArrayToObject(j, "options");
            for (k = 0; p->desc->options && p->desc->options[k]; k++)
                cJSON_AddItemToArray(opts, option_json(p->desc->options[k]));
        }
        cJSON_AddItemToArray(arr, j);
    }
    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        qbh_error_set(QB_E_NOMEM, "out of memory");
        return -1;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: quantbridge plugins [--json] [--config FILE] [--plugin-dir DIR]... "
               "[--verbose]\n"
               "Lists the places plugins were registered from, then every plugin: name,\n"
               "kind, version, ABI, library, the conf file defining it, whether it is\n"
               "trusted, options and load status (failed plugins with the reason).\n");
}

int qbh_cmd_plugins(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qbh_registry reg;
    int c, json = 0, rc = QBH_EXIT_OK;

    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
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
                return QBH_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return QBH_EXIT_OK;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            return QBH_EXIT_USAGE;
        default:
            fprintf(stderr, "quantbridge: error: plugins: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return QBH_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "quantbridge: error: plugins: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return QBH_EXIT_USAGE;
    }
    if (qbh_cli_setup(co, &reg)) {
        qbh_cli_report();
        return QBH_EXIT_FAIL;
    }
    if (json) {
        if (print_json(&reg)) {
            qbh_cli_report();
            rc = QBH_EXIT_FAIL;
        }
    } else {
        print_text(&reg);
    }
    qbh_registry_free(&reg);
    return rc;
}
