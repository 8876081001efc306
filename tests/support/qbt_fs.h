/*
 * Files and directories for tests: scratch directories under
 * $QB_TEST_TMPDIR (or /tmp), whole-file reads and writes, copies and tree
 * removal -- in C, so no test needs a shell for them.
 * Functions abort the running check test (ck_abort) on failure unless the
 * contract says otherwise.
 */
#ifndef QBT_FS_H
#define QBT_FS_H

#include <stddef.h>

/* New empty directory $QB_TEST_TMPDIR/<tag>-XXXXXX (or under /tmp); the
 * malloc'd path is the caller's. */
char *qbt_mkdtemp(const char *tag);
/* Same as qbt_mkdtemp (the name the reader tests use). */
char *qbt_tmpdir(const char *tag);
/* A new directory like qbt_mkdtemp whose path qbt_fs keeps: the process
 * removes it (tree and all) and frees the path at exit, so a test can use
 * it without cleanup. At most 64 per process (the test aborts beyond). */
const char *qbt_scratch(const char *tag);
/* mkdir -p; existing directories are fine. */
void qbt_mkdir_p(const char *path);
/* Removes a file or directory tree; best effort, never aborts. */
void qbt_rmtree(const char *path);
/* "a/b" (malloc'd, the caller's). */
char *qbt_path(const char *a, const char *b);
/* Writes text (creating or truncating). */
void qbt_write_file(const char *path, const char *text);
/* Writes len bytes (creating or truncating). */
void qbt_write_bytes(const char *path, const void *data, size_t len);
/* Whole file, NUL-terminated (malloc'd), or NULL when it cannot be opened;
 * *len (may be NULL) gets the byte count. */
char *qbt_read_file(const char *path, size_t *len);
/* 1 when path exists (lstat), else 0. */
int qbt_exists(const char *path);
/* Entries of dir whose names contain `needle`; -1 when dir cannot be read. */
int qbt_count_entries(const char *dir, const char *needle);
/* Copies the first `len` bytes of `from` to `to` ((size_t)-1: all of it). */
void qbt_copy_file(const char *from, const char *to, size_t len);
/* Copies directory `from` recursively to the new path `to` (cp -r). */
void qbt_copy_dir(const char *from, const char *to);

#endif
