/*
 * Runs the built `quantbridge` ($QB_TEST_BIN) the way the fault tests need:
 * with extra environment variables, an optional RLIMIT_FSIZE (SIGXFSZ
 * ignored, so write(2) fails with EFBIG instead of killing the process),
 * and an action taken whenever the process stops itself with SIGSTOP
 * (QUANTBRIDGE_TEST_STOP_AFTER): the action runs while the tool is frozen
 * at a known point, then the tool is continued. Output is captured.
 * ck_abort on any failure of the helper itself.
 */
#ifndef QBT_FAULT_RUN_H
#define QBT_FAULT_RUN_H

#include <sys/types.h>

typedef struct qbt_frun {
    int status;      /* exit code, or 128 + signal */
    char *out, *err; /* captured stdout / stderr (free) */
    pid_t pid;       /* the tool's pid */
} qbt_frun;

/* Called with the stopped tool's pid; what it does (a signal, a
 * truncation) happens before SIGCONT. */
typedef void (*qbt_on_stop)(pid_t pid, void *arg);

/* env: NULL-terminated "K=V" list added to the environment (may be NULL);
 * fsize_limit > 0 sets RLIMIT_FSIZE; cwd NULL keeps the test's. */
void qbt_frun_run(qbt_frun *r, const char *const *argv, const char *const *env,
                  long fsize_limit, const char *cwd, qbt_on_stop on_stop, void *arg);
void qbt_frun_free(qbt_frun *r);
/* Lines of `text` that contain `needle`. */
int qbt_count_lines(const char *text, const char *needle);

#endif
