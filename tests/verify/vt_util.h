/*
 * Helpers of the verify tests: run the built quantbridge, temporary
 * directories, and surgical edits of written checkpoints (a safetensors
 * tensor's bytes, dropping a tensor, re-sealing a W4A16 manifest) so a
 * test can corrupt an output on purpose. Test code: failures abort via
 * check's ck_assert.
 */
#ifndef VT_UTIL_H
#define VT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Fresh directory under $QB_TEST_TMPDIR (or /tmp); malloc'd path. */
char *vt_tmpdir(const char *tag);
void vt_rmtree(const char *path);
/* "%s/%s" into a rotating static buffer (8 slots). */
const char *vt_path(const char *dir, const char *name);
/* Copies directory `from` to the new path `to` (cp -r). */
void vt_copy_dir(const char *from, const char *to);

/* Runs $QB_TEST_BIN with ARGS split by qbt_args_split (no shell) through
 * qbt_run; stdout into *out, stderr into *err (malloc'd, either may be NULL
 * to discard). Returns the exit status (128 + signal when killed). */
int vt_run(const char *args, char **out, char **err);

char *vt_slurp(const char *path, size_t *len);
void vt_spit(const char *path, const void *data, size_t len);

/* Absolute file offset and byte size of tensor `name` in a safetensors
 * file. */
void vt_st_locate(const char *file, const char *name, size_t *off, size_t *len);
/* Rewrites a safetensors file without tensor `name` (offsets of the
 * others recomputed, header padded to 8 bytes). */
void vt_st_drop(const char *file, const char *name);
/* Recomputes bytes and sha256 of `file_name` in <dir>/manifest.json. */
void vt_manifest_reseal(const char *dir, const char *file_name);

#endif
