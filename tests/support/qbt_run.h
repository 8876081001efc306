/*
 * Runs a program -- by default the built `quantbridge` ($QB_TEST_BIN) --
 * with an argv vector through fork/execv: no shell. Captures stdout and
 * stderr (separately, or merged in order), the exit status, with optional
 * environment additions, working directory, RLIMIT_FSIZE, timeout, and an
 * action taken whenever the child stops itself with SIGSTOP.
 * Every function aborts the running check test (ck_abort) when the helper
 * itself fails (fork, temporary files, a missing $QB_TEST_BIN).
 */
#ifndef QBT_RUN_H
#define QBT_RUN_H

#include <stddef.h>
#include <sys/types.h>

typedef struct qbt_result {
    int status;    /* exit code, or 128 + signal */
    int timed_out; /* 1 when killed by the timeout (status 128 + SIGKILL) */
    char *out;     /* stdout text, or stdout+stderr when merged (free) */
    char *err;     /* stderr text, "" when merged (free) */
    pid_t pid;     /* the child's pid */
} qbt_result;

/* Called with the stopped child's pid; what it does (a signal, a
 * truncation) happens before the runner sends SIGCONT. */
typedef void (*qbt_on_stop)(pid_t pid, void *arg);

typedef struct qbt_run_opts {
    const char *prog;            /* program path; NULL: $QB_TEST_BIN */
    const char *const *env;      /* NULL-terminated "K=V" additions, or NULL */
    const char *cwd;             /* working directory, NULL: the test's */
    long fsize_limit;            /* > 0: RLIMIT_FSIZE, SIGXFSZ ignored */
    unsigned timeout_s;          /* > 0: SIGKILL after this many seconds */
    int merge_err;               /* 1: stderr into the same capture as stdout */
    qbt_on_stop on_stop;         /* NULL: a stopped child is just continued */
    void *on_stop_arg;
} qbt_run_opts;

/* Runs $QB_TEST_BIN with argv (NULL-terminated, without argv[0]); fills
 * *r, which the caller releases with qbt_result_free. */
void qbt_run(qbt_result *r, const char *const *argv);
/* Same with options (o may be NULL: defaults). argv excludes argv[0]; the
 * child's argv[0] is the program path. */
void qbt_run_ex(qbt_result *r, const qbt_run_opts *o, const char *const *argv);
/* Runs $QB_TEST_BIN with `args` split by qbt_args_split (quoting, no shell)
 * and stderr merged into stdout; *out gets the text (free; out may be NULL to
 * discard). Returns the exit status (128 + signal when killed). */
int qbt_run_line(const char *args, char **out);
/* Same for a whole command line whose first word is the program path
 * (e.g. a fixture generator, or "'$QB_TEST_BIN' inspect x"). */
int qbt_run_cmd(const char *cmdline, char **out);
/* Starts $QB_TEST_BIN in the background with stdout/stderr to /dev/null;
 * returns its pid, which the caller waits for. */
pid_t qbt_spawn(const char *const *argv);
/* Frees the captured texts; r is zeroed. */
void qbt_result_free(qbt_result *r);
/* Number of lines of `text` (NULL: 0) that contain `needle`. */
int qbt_count_lines(const char *text, const char *needle);

#endif
