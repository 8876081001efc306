/*
 * The strict JSON reading (sdk/kit/qbk_json.h) as every reader must show
 * it: one JSON file of a good fixture is spoiled in each way the parser
 * refuses (a duplicate key, 1e400, a leading zero, "\u0000", invalid
 * UTF-8, a raw control character, a trailing comma, a comment) and the
 * reader's open must fail with QB_E_FORMAT and a message naming the file
 * and the reason, every time. One helper, so each reader's test is one
 * call with its own fixture and opener.
 */
#ifndef QBT_JSON_REFUSALS_H
#define QBT_JSON_REFUSALS_H

#include <quantbridge/qb_abi.h>

/* Opens the checkpoint at `path` the way the reader under test does and
 * closes it again on success. Returns the open's status; on failure the
 * message is what `msg` (may be NULL: qbt_host_last_error()) returns. */
typedef qb_status (*qbt_json_open_fn)(const char *path, void *ctx);

/* A qbt_json_open_fn for a plugin's reader: ctx is its const qb_plugin *;
 * opens through reader->open with no options and closes on success. */
qb_status qbt_json_open_reader(const char *path, void *ctx);

/* For each refused case: copies the fixture directory `fixture` to a
 * scratch directory, rewrites its file `file` (a JSON object whose member
 * `key` exists: the duplicate case repeats it) with the spoiled text,
 * calls open(copy, ctx) and asserts QB_E_FORMAT, a message containing
 * `file`'s name and the case's reason ("duplicate key" and `key`, "range
 * of a double", "leading zero", "U+0000", "UTF-8", "control character",
 * "trailing comma", "comments"). `open_path` names what to open inside the
 * copy ("" or NULL: the copy itself). `msg` returns the last error
 * message (NULL: the qbt_host one). Aborts the running check test on the
 * first case that opens or fails otherwise. */
void qbt_json_refusals(const char *fixture, const char *file, const char *key,
                       const char *open_path, qbt_json_open_fn open, void *ctx,
                       const char *(*msg)(void));

#endif
