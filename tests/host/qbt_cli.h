/*
 * Test helpers that drive the built `quantbridge` binary ($QB_TEST_BIN):
 * run it with arguments, capture stdout/stderr and the exit status, make
 * scratch directories under $QB_TEST_TMPDIR, read and write small files.
 * Abort the test (ck_abort) on any failure of the helper itself.
 */
#ifndef QBT_CLI_H
#define QBT_CLI_H

#include <stddef.h>
#include <sys/types.h>

typedef struct qbt_result {
    int status;   /* exit code, or 128 + signal */
    char *out;    /* stdout text (free) */
    char *err;    /* stderr text (free) */
} qbt_result;

/* Runs $QB_TEST_BIN with argv (NULL-terminated, without argv[0]). */
void qbt_run(qbt_result *r, const char *const *argv);
/* Starts it in the background with stdout/stderr to /dev/null; returns pid. */
pid_t qbt_spawn(const char *const *argv);
void qbt_result_free(qbt_result *r);

/* New empty directory under $QB_TEST_TMPDIR named after `tag` (free). */
char *qbt_mkdtemp(const char *tag);
/* path = a/b (free). */
char *qbt_path(const char *a, const char *b);
void qbt_write_file(const char *path, const char *text);
/* Whole file (free), or NULL when missing; *len may be NULL. */
char *qbt_read_file(const char *path, size_t *len);
int qbt_exists(const char *path);
/* Number of entries in dir whose names contain `needle`. */
int qbt_count_entries(const char *dir, const char *needle);

#endif
