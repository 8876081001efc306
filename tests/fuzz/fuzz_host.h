/*
 * quantbridge fuzzing — a small qb_host for libFuzzer targets.
 *
 * Every service a parser may call is present: set_error keeps the last
 * message (formatted, so a bad format argument is a sanitizer report),
 * log formats and drops, alloc/free are malloc/free, read_small_file
 * serves in-memory "virtual" files first and real files after, list_dir
 * lists a real directory, safetensors is the host's strict parser,
 * parallel_for runs serially. Single-threaded, like libFuzzer.
 *
 * Why not the real host services (tests/support qbt_host, qbh_core) the
 * check tests use: the fuzz targets are built by clang outside CMake
 * (tests/fuzz/build.sh) from a few kit and plugin sources, without GLib or
 * the host library, and they need the virtual files above, which the real
 * read_small_file does not serve. This is the one other qb_host in tests.
 */
#ifndef QBT_FUZZ_HOST_H
#define QBT_FUZZ_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>

/* The host table. Static; valid for the process. */
const qb_host *qbt_fuzz_host(void);

/* Forgets the last error and every virtual file. */
void qbt_fuzz_reset(void);

/* Makes read_small_file(path) answer `len` bytes of `data` (the caller
 * keeps data alive until qbt_fuzz_reset). At most 8 files; returns 0, or
 * -1 when full. */
int qbt_fuzz_vfile(const char *path, const void *data, size_t len);

/* Checks the error contract after a call that returned `st`: a negative
 * status carries a non-empty message set through set_error with the same
 * code (QB_OK needs nothing). Aborts (a libFuzzer crash) when violated,
 * naming `what`. */
void qbt_fuzz_check_status(qb_status st, const char *what);

/* Writes `len` bytes to a file named `name` inside a per-process scratch
 * directory (created once under $TMPDIR or /tmp, removed at exit) and
 * returns its path (static buffer, valid until the next call). NULL on
 * I/O failure. */
const char *qbt_fuzz_write_tmp(const char *name, const void *data, size_t len);

/* The scratch directory itself (created on first use), or NULL. */
const char *qbt_fuzz_tmpdir(void);

#endif /* QBT_FUZZ_HOST_H */
