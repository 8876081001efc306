/*
 * quantbridge host — the command-line dispatcher: global options, the
 * command table, and the set-up every command shares.
 *
 * Exit status: 0 success, 1 failure, 2 usage error, 3 a verify ran and
 * failed (QBH_EXIT_VERIFY). Errors print one line,
 * "quantbridge: error: <message>", on stderr.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void qbh_cli_report(void)
{
    const char *m = qbh_error_message();
    qbh_progress_done();
    fprintf(stderr, "quantbridge: error: %s\n", m[0] ? m : qbh_status_name(qbh_error_code()));
}

qb_status qbh_parse_threads(const char *s, uint32_t *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > 1024)
        return qbh_error_set(QB_E_INVALID, "--threads %s: expected an integer in [1, 1024]", s);
    *out = (uint32_t)v;
    return QB_OK;
}

qb_status qbh_common_add_plugin_dir(qbh_common *co, const char *arg)
{
    char *canon, **grown;
    struct stat st;

    /* Relative is fine here, unlike in $QUANTBRIDGE_PLUGIN_PATH: the user
     * typed it for this run, in this cwd, as with --config FILE. */
    canon = realpath(arg, NULL);
    if (!canon || stat(canon, &st) != 0 || !S_ISDIR(st.st_mode)) {
        qb_status rc = qbh_error_set(QB_E_NOT_FOUND, "--plugin-dir %s: %s", arg,
                                     canon ? "not a directory" : strerror(errno));
        free(canon);
        return rc;
    }
    grown = qbh_alloc((co->n_plugin_dirs + 1) * sizeof *grown);
    if (!grown) {
        free(canon);
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    }
    if (co->n_plugin_dirs)
        memcpy(grown, co->plugin_dirs, co->n_plugin_dirs * sizeof *grown);
    grown[co->n_plugin_dirs] = qbh_strdup(canon);
    free(canon);
    qbh_free(co->plugin_dirs);
    co->plugin_dirs = grown;
    if (!grown[co->n_plugin_dirs])
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    co->n_plugin_dirs++;
    return QB_OK;
}

void qbh_common_free(qbh_common *co)
{
    size_t i;
    for (i = 0; i < co->n_plugin_dirs; i++)
        qbh_free(co->plugin_dirs[i]);
    qbh_free(co->plugin_dirs);
    co->plugin_dirs = NULL;
    co->n_plugin_dirs = 0;
}

qb_status qbh_cli_setup(const qbh_common *co, qbh_registry *reg)
{
    qbh_config_request req;
    qbh_config cfg;
    qb_status rc;
    /* Every command may read mapped sources (inspect, verify): a file
     * truncated under them ends in one error line, not a bare SIGBUS. */
    qbh_fatal_install();
    qbh_rt.verbose = co->verbose;
    qbh_rt.progress_tty = isatty(STDERR_FILENO);
    rc = qbh_pool_start(co->threads);
    if (rc)
        return rc;
    qbh_rt.threads = qbh_pool_threads();
    memset(&req, 0, sizeof req);
    req.config = co->config;
    req.plugin_dirs = co->plugin_dirs;
    req.n_plugin_dirs = co->n_plugin_dirs;
    rc = qbh_config_open(&req, &cfg);
    if (rc)
        return rc;
    return qbh_registry_open_config(&cfg, reg);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quantbridge [--config FILE] [--plugin-dir DIR]... [--verbose] <command> "
            "[options]\n"
            "\n"
            "Converts quantized LLM checkpoints into the native W4A16 format.\n"
            "\n"
            "commands:\n"
            "  plugins [--json] [--check]  list configured plugins and their load status\n"
            "  inspect PATH [--json]       probe a source and list its tensors\n"
            "  convert --source PATH --output DIR [options]\n"
            "                              convert a checkpoint\n"
            "  verify --source PATH --converted DIR [--json] [--report FILE.html]\n"
            "                              compare a conversion with its source\n"
            "  forward --model PATH --tokens I,J,... --output FILE.safetensors\n"
            "                              CPU reference logits of a model\n"
            "  plugin-check LIB [--sample PATH]\n"
            "                              check a plugin library against the SDK contract\n"
            "\n"
            "global options:\n"
            "  --config FILE   configuration file (else $QUANTBRIDGE_CONFIG, the user's\n"
            "                  ~/.config/quantbridge/quantbridge.conf, the installed one);\n"
            "                  it sets [general] and adjusts plugins; the built-ins stay\n"
            "  --plugin-dir DIR  also register the plugins of DIR (NAME.conf files and the\n"
            "                  libraries they name; untrusted unless trusted=true);\n"
            "                  repeatable, after $QUANTBRIDGE_PLUGIN_PATH's directories\n"
            "  -v, --verbose   more output (repeat for debug)\n"
            "  --version       print the version, ABI, git commit, build type and whether\n"
            "                  the CUDA kernels were built\n"
            "  -h, --help      this help; `quantbridge help <command>` for a command\n"
            "\n"
            "exit status: 0 success, 1 failure, 2 usage error, 3 a verify (`verify`,\n"
            "`convert --verify`) ran and the models do not match\n");
}

/* The commands: one table for dispatch, `help CMD` and suggestions, so a
 * command cannot be runnable yet unknown to `help`. */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv, qbh_common *co);
} cli_command;

static const cli_command CMDS[] = {
    {"plugins", qbh_cmd_plugins}, {"inspect", qbh_cmd_inspect},
    {"convert", qbh_cmd_convert}, {"verify", qbh_cmd_verify},
    {"forward", qbh_cmd_forward}, {"plugin-check", qbh_cmd_plugin_check},
};
#define N_CMDS (sizeof CMDS / sizeof CMDS[0])

/* The command names (and "help"), in getopt's table shape for
 * qbh_cli_suggest. */
static const struct option COMMANDS[] = {
    {"plugins", 0, NULL, 0}, {"inspect", 0, NULL, 0},      {"convert", 0, NULL, 0},
    {"verify", 0, NULL, 0},  {"forward", 0, NULL, 0},      {"plugin-check", 0, NULL, 0},
    {"help", 0, NULL, 0},    {NULL, 0, NULL, 0},
};

static const cli_command *find_command(const char *name)
{
    size_t i;
    for (i = 0; i < N_CMDS; i++)
        if (strcmp(CMDS[i].name, name) == 0)
            return &CMDS[i];
    return NULL;
}

/* `help CMD`: that command's own --help. */
static int help_command(int argc, char **argv, qbh_common *co)
{
    char *sub[3];
    const char *s;
    const cli_command *cmd;
    if (argc > 2) {
        fprintf(stderr, "quantbridge: error: help: one command at a time\n");
        qbh_cli_usage_hint(NULL);
        return QBH_EXIT_USAGE;
    }
    sub[0] = argv[1];
    sub[1] = (char *)"--help";
    sub[2] = NULL;
    if ((cmd = find_command(argv[1])))
        return cmd->run(2, sub, co);
    if (strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return QBH_EXIT_OK;
    }
    s = qbh_cli_suggest(argv[1], COMMANDS);
    fprintf(stderr, "quantbridge: error: help: unknown command '%s'%s%s%s\n", argv[1],
            s ? "; did you mean " : "", s ? s : "", s ? "?" : "");
    qbh_cli_usage_hint(NULL);
    return QBH_EXIT_USAGE;
}

int qbh_cli_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'C'},
        {"plugin-dir", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* cleanup: every return below frees the --plugin-dir list. */
    qbh_common co __attribute__((cleanup(qbh_common_free)));
    const char *cmd;
    int c, rc;

    memset(&co, 0, sizeof co);
    {
        /* only the global options, before the command name */
        int end = 1;
        while (end < argc && argv[end][0] == '-')
            end += (strcmp(argv[end], "--config") == 0 || strcmp(argv[end], "--plugin-dir") == 0 ||
                    strcmp(argv[end], "--threads") == 0) ? 2 : 1;
        if (qbh_cli_check_long(end < argc ? end : argc, argv, opts, NULL))
            return QBH_EXIT_USAGE;
    }
    opterr = 0;
    optind = 1;
    /* '+': stop at the command name; its own options follow it. */
    while ((c = getopt_long(argc, argv, "+:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'C': co.config = optarg; break;
        case 'P':
            if (qbh_common_add_plugin_dir(&co, optarg)) {
                qbh_cli_report();
                return QBH_EXIT_USAGE;
            }
            break;
        case 'v': co.verbose++; break;
        case 'T':
            if (qbh_parse_threads(optarg, &co.threads)) {
                qbh_cli_report();
                return QBH_EXIT_USAGE;
            }
            break;
        case 'V':
            printf("quantbridge %s (plugin ABI %u.0 to %u.%u)\ncommit %s, build type %s, CUDA "
                   "kernels %s\n", QBH_VERSION_STRING, QB_ABI_MAJOR, QB_ABI_MAJOR, QB_ABI_MINOR,
                   qbh_build_commit(), qbh_build_type()[0] ? qbh_build_type() : "(none)",
                   qbh_build_cuda() ? "built" : "not built");
            return QBH_EXIT_OK;
        case 'h': usage(stdout); return QBH_EXIT_OK;
        case ':':
            fprintf(stderr, "quantbridge: error: option '%s' needs a value\n", argv[optind - 1]);
            return QBH_EXIT_USAGE;
        default:
            fprintf(stderr, "quantbridge: error: unknown option '%s'\n", argv[optind - 1]);
            qbh_cli_usage_hint(NULL);
            return QBH_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return QBH_EXIT_USAGE;
    }
    cmd = argv[optind];
    argc -= optind;
    argv += optind;
    if (find_command(cmd))
        rc = find_command(cmd)->run(argc, argv, &co);
    else if (strcmp(cmd, "help") == 0 && argc > 1)
        rc = help_command(argc, argv, &co);
    else if (strcmp(cmd, "help") == 0) {
        usage(stdout);
        rc = QBH_EXIT_OK;
    } else {
        const char *s = qbh_cli_suggest(cmd, COMMANDS);
        fprintf(stderr, "quantbridge: error: unknown command '%s'%s%s%s\n", cmd,
                s ? "; did you mean " : "", s ? s : "", s ? "?" : "");
        qbh_cli_usage_hint(NULL);
        rc = QBH_EXIT_USAGE;
    }
    qbh_pool_stop();
    return rc;
}
