/*
 * qbk_json — the one strict JSON reading of the project (internal kit).
 *
 * Every JSON input (config.json, quantization_config and the quantization
 * side files, tokenizer files, generation_config.json, safetensors headers
 * and indexes, the W4A16 manifest) is parsed here, by the host (its
 * qb_json service, qb_json.h, wraps qbk_json_parse_text), by every plugin
 * and by libquantbridge-w4a16, so one file is judged by one rule in a run.
 * Strict RFC 8259: one value and nothing but whitespace after it, no
 * comments, no trailing commas, no leading zeros ("01"), no "1." or ".5",
 * no raw control character or invalid UTF-8 in a string, no byte order
 * mark; refused as well (the contract of qb_json.h): a key twice in one
 * object, a number beyond a double (1e400), "\u0000" (a C string cannot
 * carry it), nesting deeper than QBK_JSON_MAX_DEPTH. Each refusal has a
 * reason and the byte offset where it was found.
 *
 * The tree is made of cJSON nodes (read it with cJSON's accessors; free it
 * with cJSON_Delete), with two additions in fields cJSON leaves unused:
 *   - a number whose TEXT is an integer of magnitude <= 2^53 (so the double
 *     holds it exactly) carries QBK_JSON_INT_OK in `type` (qbk_json_int);
 *     cJSON reads only `type & 0xFF` and its own two flag bits;
 *   - an array or object holds its member count in `valuedouble` (the
 *     host's qb_json count() is O(1)); adding members later with cJSON
 *     does not update it, which only the host's own trees rely on.
 * cJSON_Parse* is never used on input: it accepts every case above.
 *
 * Memory: nodes come from cJSON's allocator (process-wide malloc hooks,
 * never installed by anyone: qbk_alloc.h), the parser's scratch from
 * qbk_malloc. THREADING: every function is thread-safe (no shared state
 * but the lazily made "C" locale object).
 */
#ifndef QBK_JSON_H
#define QBK_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>

/* Above cJSON's type byte and its flags (cJSON_IsReference 256,
 * cJSON_StringIsConst 512). */
#define QBK_JSON_INT_OK (1 << 12)

/* Deepest nesting the parser accepts (cJSON's own limit); the host's
 * emitter writes no deeper. */
#define QBK_JSON_MAX_DEPTH 1000

/* 2^53: below this magnitude every integer is a double. */
#define QBK_JSON_INT_MAX 9007199254740992.0

/* Why a parse failed. */
typedef struct qbk_json_fail {
    qb_status rc;      /* QB_E_FORMAT (bad text) or QB_E_NOMEM */
    size_t offset;     /* byte offset of the refusal */
    char reason[192];  /* "duplicate key \"bits\" (a key may appear once per object)", ... */
    /* For a duplicate key, the key and the key of the member whose object
     * holds it ("" at the top level or inside an array), both truncated to
     * 63 bytes: lets a reader word the refusal in its own terms ("tensor
     * 'x': duplicate key 'dtype'"). Both "" for any other refusal. */
    char dup_key[64];
    char dup_in[64];
} qbk_json_fail;

/* Parses `len` bytes of `text` (no NUL needed; a NUL byte inside is
 * refused like any control character outside a string) into a new tree in
 * *out. `admit` (may be NULL) is asked before every allocation and a zero
 * answer is treated as an allocation failure: the host passes its fault
 * injection (qbh_alloc_admit). Returns QB_OK, or QB_E_FORMAT / QB_E_NOMEM
 * with *fail filled and *out NULL. text, out and fail must not be NULL. */
qb_status qbk_json_parse_text(const char *text, size_t len, int (*admit)(void), cJSON **out,
                              qbk_json_fail *fail);

/* The one wording of a failure, used by the host and the kit alike:
 * "<what>: invalid JSON at byte <offset>: <reason>" or "<what>: out of
 * memory parsing JSON (at byte <offset>)"; `what` NULL reads "JSON text".
 * Writes at most n bytes (NUL included) into buf. Pure. */
void qbk_json_fail_text(const qbk_json_fail *f, const char *what, char *buf, size_t n);

/* qbk_json_parse_text with the failure reported through h->set_error
 * (qbk_json_fail_text's wording; `what` names the file, e.g.
 * "/m/config.json"). NULL text is QB_E_INVALID. Returns QB_OK with *out
 * owned by the caller (cJSON_Delete), or the status with *out NULL. */
qb_status qbk_json_parse(const qb_host *h, const char *what, const char *text, size_t len,
                         cJSON **out);

/* qbk_json_parse of the file `name` of directory `dir` (text already
 * read): messages name "<dir>/<name>". QB_E_NOMEM when that name cannot
 * be made. */
qb_status qbk_json_parse_file(const qb_host *h, const char *dir, const char *name,
                              const char *text, size_t len, cJSON **out);

/* qbk_json_parse, and a value that is not an object is QB_E_FORMAT
 * "<what>: not a JSON object". */
qb_status qbk_json_parse_object(const qb_host *h, const char *what, const char *text, size_t len,
                                cJSON **out);

/* A writer's reading of the source model's config (qb_model_info
 * .config_json, whichever reader made it): qbk_json_parse_object with
 * `what` "<source>: config.json" (`source`, e.g. qb_model_src.source_path,
 * may be NULL). NULL config_json is QB_E_FORMAT "...: missing". */
qb_status qbk_json_parse_config(const qb_host *h, const char *source, const char *config_json,
                                cJSON **out);

/* For a probe, which reports nothing: the tree, or NULL when text is NULL,
 * refused or out of memory. The caller frees with cJSON_Delete. */
cJSON *qbk_json_parse_quiet(const char *text, size_t len);

/* Nonzero when n is a number this parser marked QBK_JSON_INT_OK (its text
 * states an integer within +-2^53: "4", "4.0" and "4e0" do, "4.5",
 * "1e300" and "9007199254740993" do not); *out (may be NULL) gets it. 0
 * for any other node, NULL included. */
int qbk_json_int(const cJSON *n, int64_t *out);

/* A new root node of cJSON type `type` (cJSON_NULL, cJSON_Array, ...),
 * zeroed, member count 0; NULL when out of memory or when `admit` (may be
 * NULL) says no. What the parser builds with, and the host's qb_json
 * constructors too. Free with cJSON_Delete. */
cJSON *qbk_json_node_new(int type, int (*admit)(void));

/* n bytes from cJSON's allocator (cJSON_Delete frees them as a node's
 * valuestring or key), or NULL (out of memory, or `admit` said no). */
char *qbk_json_buf_new(size_t n, int (*admit)(void));

/* Length of the valid UTF-8 sequence at s (at most n >= 1 bytes may be
 * read), or 0 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF). The one check behind the parser's and the host emitter's
 * refusals. Pure. */
size_t qbk_json_utf8_seq(const unsigned char *s, size_t n);

#endif /* QBK_JSON_H */
