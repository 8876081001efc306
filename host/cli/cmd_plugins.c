/*
 * quantbridge host — `quantbridge plugins [--json] [--check]`: every
 * configured plugin with kind, version, ABI, library, options (with their
 * roles), what each writer declares (architectures, required facts, who
 * writes side files, the reader of its output) and load status (a plugin
 * that failed to load is listed with its category and reason), then the
 * model families of the one architecture table (qb_archs.h) with the
 * components that take each and the writers that declare it. --check
 * makes a failed load the exit status.
 */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <glib.h>

#include <quantbridge/base/qb_archs.h>

static const char *kind_of(const qbh_plugin *p)
{
    if (p->state != QBH_LOAD_OK)
        return "-";
    if (p->desc->reader && p->desc->writer)
        return "both";
    return p->desc->reader ? "reader" : "writer";
}

/* Configured, enabled, and not loaded. */
static int failed(const qbh_plugin *p)
{
    return p->state != QBH_LOAD_OK && p->state != QBH_LOAD_DISABLED;
}

static const char *status_of(const qbh_plugin *p)
{
    if (p->state == QBH_LOAD_OK)
        return "loaded";
    return p->state == QBH_LOAD_DISABLED ? "disabled" : "failed";
}

/* The roles option `o` of plugin `d` applies to, limited to the halves d
 * has: a 1.0 option of a reader-only plugin is a reader option. */
static uint32_t roles_of(const qb_plugin *d, const qb_option_decl *o)
{
    uint32_t halves = (d->reader ? QB_OPTION_ROLE_READER : 0u) |
                      (d->writer ? QB_OPTION_ROLE_WRITER : 0u);
    return qbh_option_roles(o) & halves;
}

static const char *roles_text(uint32_t r)
{
    if (r == QB_OPTION_ROLE_BOTH)
        return "reader+writer";
    return r == QB_OPTION_ROLE_READER ? "reader" : "writer";
}

static const char *side_files_text(uint32_t side)
{
    if (side == QB_WRITER_SIDE_FILES_HOST)
        return "host copies";
    return side == QB_WRITER_SIDE_FILES_SELF ? "writer copies" : "none";
}

static void print_writer_caps(const qb_plugin *d)
{
    const qb_writer_caps *c = qbh_writer_caps(d);
    char buf[1024];
    qbh_writer_archs(c, buf, sizeof buf);
    printf("    writer architectures: %s\n", buf[0] ? buf : "any (supports() decides)");
    qbh_fact_names(c ? c->required_facts : 0, buf, sizeof buf);
    printf("    writer requires facts: %s\n", buf[0] ? buf : "none");
    printf("    side files: %s\n", side_files_text(qbh_writer_side_files(d)));
    printf("    verify reader: %s\n", c && c->verify_reader ? c->verify_reader
                                                            : "none (the output is probed)");
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

/* 1 when loaded writer p declares model_type among its architectures. */
static int declares(const qbh_plugin *p, const char *model_type)
{
    const qb_writer_caps *c;
    size_t i;
    if (p->state != QBH_LOAD_OK || !p->desc->writer || !(c = qbh_writer_caps(p->desc)) ||
        !c->architectures)
        return 0;
    for (i = 0; c->architectures[i]; i++)
        if (strcmp(c->architectures[i], model_type) == 0)
            return 1;
    return 0;
}

/* The families (qb_archs.h) and the loaded writers declaring each; writers
 * whose supports() decides (no list) take any of them. */
static void print_families(const qbh_registry *reg)
{
    size_t n, i, k;
    const qb_arch_entry *t = qb_arch_table(&n);
    printf("model families (%zu):\n", n);
    printf("  %-18s  %-24s  %-7s  %-5s  %s\n", "MODEL_TYPE", "CLASS", "FORWARD", "W4A16",
           "WRITERS DECLARING IT");
    for (i = 0; i < n; i++) {
        GString *w = g_string_new(NULL);
        for (k = 0; k < reg->n_plugins; k++)
            if (declares(reg->plugins[k], t[i].model_type))
                g_string_append_printf(w, "%s%s", w->len ? ", " : "", reg->plugins[k]->name);
        printf("  %-18s  %-24s  %-7s  %-5s  %s\n", t[i].model_type, t[i].hf_class,
               t[i].flags & QB_ARCH_FORWARD ? "yes" : "no",
               t[i].flags & QB_ARCH_W4A16 ? "yes" : "no", w->len ? w->str : "-");
        g_string_free(w, TRUE);
    }
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
            if (p->desc->writer)
                print_writer_caps(p->desc);
            for (k = 0; p->desc->options && p->desc->options[k]; k++) {
                const qb_option_decl *o = p->desc->options[k];
                printf("    %s option %s (%s%s%s, default %s): %s\n",
                       roles_text(roles_of(p->desc, o)), o->name, qbh_param_type_name(o->type),
                       o->choices ? ": " : "", o->choices ? o->choices : "",
                       o->default_value ? o->default_value : "unset", o->help ? o->help : "");
            }
        } else if (p->state != QBH_LOAD_DISABLED) {
            printf("    %s: %s\n", qbh_load_state_name(p->state), p->error ? p->error : "");
        }
    }
    print_families(reg);
}

/* "a|b|c" as ["a", "b", "c"]. */
static cJSON *choices_json(const char *choices)
{
    cJSON *arr = cJSON_CreateArray();
    const char *c = choices;
    for (;;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        char *one = g_strndup(c, len);
        cJSON_AddItemToArray(arr, cJSON_CreateString(one));
        g_free(one);
        if (!bar)
            break;
        c = bar + 1;
    }
    return arr;
}

static cJSON *option_json(const qb_plugin *d, const qb_option_decl *o)
{
    cJSON *j = cJSON_CreateObject(), *roles;
    uint32_t r = roles_of(d, o);
    cJSON_AddStringToObject(j, "name", o->name);
    roles = cJSON_AddArrayToObject(j, "roles");
    if (r & QB_OPTION_ROLE_READER)
        cJSON_AddItemToArray(roles, cJSON_CreateString("reader"));
    if (r & QB_OPTION_ROLE_WRITER)
        cJSON_AddItemToArray(roles, cJSON_CreateString("writer"));
    cJSON_AddStringToObject(j, "type", qbh_param_type_name(o->type));
    if (o->default_value)
        cJSON_AddStringToObject(j, "default", o->default_value);
    else
        cJSON_AddNullToObject(j, "default");
    cJSON_AddStringToObject(j, "help", o->help ? o->help : "");
    if (o->choices)
        cJSON_AddItemToObject(j, "choices", choices_json(o->choices));
    if ((o->type == QB_PARAM_INT || o->type == QB_PARAM_SIZE) && o->min_int <= o->max_int) {
        cJSON_AddNumberToObject(j, "min", (double)o->min_int);
        cJSON_AddNumberToObject(j, "max", (double)o->max_int);
    }
    return j;
}

static cJSON *caps_json(const qb_plugin *d)
{
    const qb_writer_caps *c = qbh_writer_caps(d);
    cJSON *j = cJSON_CreateObject(), *arr;
    uint32_t side = qbh_writer_side_files(d), bit;
    size_t i;
    if (c->architectures) {
        arr = cJSON_AddArrayToObject(j, "architectures");
        for (i = 0; c->architectures[i]; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateString(c->architectures[i]));
    } else {
        cJSON_AddNullToObject(j, "architectures");
    }
    arr = cJSON_AddArrayToObject(j, "required_facts");
    for (bit = 1; bit; bit <<= 1)
        if (c->required_facts & bit)
            cJSON_AddItemToArray(arr, cJSON_CreateString(qbh_fact_name(bit)));
    cJSON_AddStringToObject(j, "side_files", side == QB_WRITER_SIDE_FILES_HOST ? "host"
                                             : side == QB_WRITER_SIDE_FILES_SELF ? "writer"
                                                                                  : "none");
    if (c->verify_reader)
        cJSON_AddStringToObject(j, "verify_reader", c->verify_reader);
    else
        cJSON_AddNullToObject(j, "verify_reader");
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
        cJSON_AddStringToObject(j, "library", p->library ? p->library : "");
        cJSON_AddBoolToObject(j, "enabled", p->conf->enabled);
        cJSON_AddNumberToObject(j, "priority", p->conf->priority);
        if (p->conf->source)
            cJSON_AddStringToObject(j, "defined_in", p->conf->source);
        else
            cJSON_AddNullToObject(j, "defined_in");
        cJSON_AddBoolToObject(j, "trusted", !p->contained);
        if (failed(p)) {
            cJSON_AddStringToObject(j, "error_category", qbh_load_state_name(p->state));
            cJSON_AddStringToObject(j, "error", p->error ? p->error : "");
        } else {
            cJSON_AddNullToObject(j, "error_category");
            cJSON_AddNullToObject(j, "error");
        }
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
                cJSON_AddItemToArray(opts, option_json(p->desc, p->desc->options[k]));
            if (qbh_writer_caps(p->desc))
                cJSON_AddItemToObject(j, "writer_caps", caps_json(p->desc));
        }
        cJSON_AddItemToArray(arr, j);
    }
    {
        /* the one architecture table (qb_archs.h) */
        size_t n;
        const qb_arch_entry *t = qb_arch_table(&n);
        arr = cJSON_AddArrayToObject(root, "families");
        for (i = 0; i < n; i++) {
            cJSON *j = cJSON_CreateObject(), *wr;
            cJSON_AddStringToObject(j, "model_type", t[i].model_type);
            cJSON_AddStringToObject(j, "class", t[i].hf_class);
            cJSON_AddBoolToObject(j, "forward", (t[i].flags & QB_ARCH_FORWARD) != 0);
            cJSON_AddBoolToObject(j, "w4a16", (t[i].flags & QB_ARCH_W4A16) != 0);
            wr = cJSON_AddArrayToObject(j, "writers");
            for (k = 0; k < reg->n_plugins; k++)
                if (declares(reg->plugins[k], t[i].model_type))
                    cJSON_AddItemToArray(wr, cJSON_CreateString(reg->plugins[k]->name));
            cJSON_AddItemToArray(arr, j);
        }
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
    fprintf(f, "usage: quantbridge plugins [--json] [--check] [--config FILE] [--plugin-dir DIR]...\n"
               "                          [--verbose]\n"
               "Lists the places plugins were registered from, then every configured plugin:\n"
               "name, kind, version, ABI, library, the conf file defining it, whether it is\n"
               "trusted, load status (failed plugins with the reason), its options with the\n"
               "role each applies to (reader, writer), and for a writer what it declares: the\n"
               "architectures it writes, the model facts it requires, who copies the tokenizer\n"
               "and other side files (host copies / writer copies / none) and the reader of\n"
               "its output.\n"
               "\n"
               "  --json    the listing as JSON\n"
               "  --check   exit 1 when a configured, enabled plugin failed to load\n"
               "\n"
               "exit status: 0 (also with failed plugins, unless --check), 1 failure, 2 usage\n");
}

int qbh_cmd_plugins(int argc, char **argv, qbh_common *co)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"check", no_argument, NULL, 'c'},
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qbh_registry reg;
    int c, json = 0, check = 0, rc = QBH_EXIT_OK;
    size_t i;

    if (qbh_cli_check_long(argc, argv, opts, "plugins"))
        return QBH_EXIT_USAGE;
    optind = 0; /* 0: glibc re-initialises its scan state (the global parse ran first) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'c': check = 1; break;
        case 'C':
        case 'P':
        case 'v':
        case 'T':
            if (qbh_cli_common_opt(c, optarg, co))
                return QBH_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return QBH_EXIT_OK;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            return QBH_EXIT_USAGE;
        default:
            fprintf(stderr, "quantbridge: error: plugins: unknown option '%s'\n", argv[optind - 1]);
            qbh_cli_usage_hint("plugins");
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
    /* After the listing, which says why each one failed. */
    if (check && rc == QBH_EXIT_OK) {
        char names[1024];
        size_t n = 0, len = 0;
        names[0] = '\0';
        for (i = 0; i < reg.n_plugins; i++)
            if (failed(reg.plugins[i]) && len < sizeof names)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", n++ ? ", " : "",
                                        reg.plugins[i]->name);
        if (n) {
            fflush(stdout);
            fprintf(stderr, "quantbridge: error: plugins --check: %zu configured plugin%s failed "
                    "to load: %s\n", n, n == 1 ? "" : "s", names);
            rc = QBH_EXIT_FAIL;
        }
    }
    qbh_registry_free(&reg);
    return rc;
}
