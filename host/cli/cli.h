/*
 * quantbridge host — the commands (host/cli): what they share. The commands
 * are the only code that wires the host core, the pipeline, the model
 * library, verify, plugin-check and the kernels' linear backends together.
 */
#ifndef QBH_CLI_H
#define QBH_CLI_H

#include "qbh.h"

/* ---- commands ------------------------------------------------------------- */

/* Options every command accepts. */
typedef struct qbh_common {
    const char *config;
    int verbose;
    uint32_t threads;
    char **plugin_dirs;   /* --plugin-dir values, absolute (qbh_common_add_plugin_dir) */
    size_t n_plugin_dirs;
} qbh_common;

/* Appends --plugin-dir `arg` to co: a relative path is resolved against
 * the cwd (realpath: it is explicit, typed for this run). QB_E_NOT_FOUND
 * when it is no directory, QB_E_NOMEM; the message names the argument and
 * the caller exits with QBH_EXIT_USAGE. Freed by qbh_common_free. */
qb_status qbh_common_add_plugin_dir(qbh_common *co, const char *arg);
void qbh_common_free(qbh_common *co);

int qbh_cmd_plugins(int argc, char **argv, qbh_common *co);
int qbh_cmd_inspect(int argc, char **argv, qbh_common *co);
int qbh_cmd_convert(int argc, char **argv, qbh_common *co);
/* `plugin-check LIB`: the conformance kit (cmd_plugin_check.c). */
int qbh_cmd_plugin_check(int argc, char **argv, qbh_common *co);
/* The CLI: dispatches to a command; returns the exit code. */
int qbh_cli_main(int argc, char **argv);
/* Prints "quantbridge: error: <msg>" for the thread's current error. */
void qbh_cli_report(void);
/* Installs the SIGBUS handler (fatal.c), applies co (verbosity, threads,
 * tty detection), starts the pool and
 * opens the registry from co->config and co->plugin_dirs. Returns QB_OK or an error (message
 * set). Main thread only. */
qb_status qbh_cli_setup(const qbh_common *co, qbh_registry *reg);
/* Parses a --threads value; QB_E_INVALID when not in [1, 1024]. */
qb_status qbh_parse_threads(const char *s, uint32_t *out);

/* ---- cli_args.c ----------------------------------------------------------- */

struct option;
/* Checks every "--NAME[=V]" of argv[1..argc) (up to a lone "--") against
 * opts (getopt_long's table, NULL-name terminated): NAME must be an option
 * name exactly (no prefixes). The value of a required_argument option
 * given apart is skipped. On the first unknown NAME prints one
 * "quantbridge: error: CMD: unknown option" line (with "did you mean
 * --X?" when one is close) and the help hint, and returns -1 (the caller
 * exits QBH_EXIT_USAGE); else 0. cmd may be NULL (global options). */
int qbh_cli_check_long(int argc, char **argv, const struct option *opts, const char *cmd);
/* The option name of opts that `typed` most likely meant: the shortest
 * name it is a prefix of, else the closest by edit distance when within a third
 * of its length (at least 2 edits), else NULL. Pure. */
const char *qbh_cli_suggest(const char *typed, const struct option *opts);
/* Splits an --option value "KEY=VALUE" in place (the '=' becomes NUL) into
 * out (origin "--option"). Returns 0, or -1 after printing one usage
 * error line when there is no '=' or no KEY (the caller exits
 * QBH_EXIT_USAGE). arg must outlive out. */
int qbh_cli_option_kv(char *arg, qbh_opt *out);
/* Handles the options every command shares, by their getopt codes: 'C'
 * (--config), 'P' (--plugin-dir), 'v' (--verbose), 'T' (--threads), with
 * value arg. Returns 0, or -1 after reporting the error (bad --threads or
 * --plugin-dir; the caller exits QBH_EXIT_USAGE). Main thread only. */
int qbh_cli_common_opt(int c, const char *arg, qbh_common *co);
/* Prints "try 'quantbridge help CMD'" on stderr (CMD NULL: no command). */
void qbh_cli_usage_hint(const char *cmd);

/* ---- cmd_forward.c -------------------------------------------------------- */

/* `quantbridge forward`; returns the exit code. */
int qbh_cmd_forward(int argc, char **argv, qbh_common *co);

/* ---- cmd_verify.c --------------------------------------------------------- */

/* `quantbridge verify`; returns the exit code (0 pass, 1 error, 2 usage,
 * 3 compared and failed: QBH_EXIT_VERIFY). */
int qbh_cmd_verify(int argc, char **argv, qbh_common *co);

/* Parses "I,J,K" into a qbh_alloc'd id array. QB_E_INVALID naming the bad
 * item (the caller exits 2). */
qb_status qbh_parse_token_list(const char *s, int64_t **ids, size_t *n);


#endif /* QBH_CLI_H */
