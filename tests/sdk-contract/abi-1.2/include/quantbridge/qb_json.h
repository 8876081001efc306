/*
 * quantbridge SDK — the host's JSON service (ABI 1.1): parse and emit JSON
 * without linking a JSON library, so a plugin reads config.json or writes a
 * manifest with the same strict parser the host uses.
 *
 * STABILITY: stable (append-only; added in ABI 1.1).
 *
 * Reach it as host->json after checking QB_HAS_FIELD(host, qb_host, json)
 * (a 1.0 host has no such field) and that it is not NULL.
 *
 * Values are opaque qb_json nodes that belong to one tree. A tree comes from
 * parse() or from one of the new_*() constructors and is released as a
 * whole by free() on its root. Nodes are never shared between trees:
 * add()/append() move a root into another tree, which then owns it.
 *
 * Numbers: JSON numbers are IEEE doubles here (RFC 8259, section 6);
 * get_int() succeeds only for an integral value within +-2^53, so an
 * integer the parser could not hold exactly is refused, never rounded.
 *
 * THREADING: every function may be called from any thread; calls on
 * different trees never interfere. One tree is not safe for concurrent
 * mutation (reads of an unchanging tree may run concurrently).
 */
#ifndef QUANTBRIDGE_QB_JSON_H
#define QUANTBRIDGE_QB_JSON_H

#include "qb_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qb_json qb_json; /* opaque node */

typedef enum qb_json_type {
    QB_JSON_INVALID = 0, /* a NULL node */
    QB_JSON_NULL = 1,
    QB_JSON_BOOL = 2,
    QB_JSON_NUMBER = 3,
    QB_JSON_STRING = 4,
    QB_JSON_ARRAY = 5,
    QB_JSON_OBJECT = 6,
    QB_JSON_TYPE_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not a type */
} qb_json_type;
QB_ABI_STATIC_ASSERT(sizeof(qb_json_type) == 4, qb_json_type_is_32_bits);

typedef struct qb_json_api {
    uint32_t struct_size;

    /* Parses `len` bytes of UTF-8 `text` (no NUL needed) into a new tree
     * in *out. Strict RFC 8259: one value, nothing but whitespace after
     * it, no comments, no trailing commas; a duplicate key in an object is
     * QB_E_FORMAT (a JSON file must not mean two things), as are invalid
     * UTF-8, a byte order mark and nesting deeper than 1000. Errors, with a
     * message naming `what` (a file name for messages; may be NULL) and the
     * byte offset: QB_E_FORMAT, QB_E_NOMEM, QB_E_INVALID (NULL text or
     * out). On failure *out is NULL. */
    qb_status (*parse)(const struct qb_host *h, const char *what, const char *text, size_t len,
                       qb_json **out);
    /* Releases a whole tree (a root from parse or new_*; NULL is a no-op).
     * Never call it on a node inside another tree. */
    void (*free)(qb_json *root);

    /* ---- reading (all pure; a NULL node answers "absent") ---- */
    qb_json_type (*type)(const qb_json *node);
    /* Member `key` of an object; NULL when absent or `obj` is not an object. */
    const qb_json *(*get)(const qb_json *obj, const char *key);
    /* Number of elements (array) or members (object); 0 for anything else. */
    size_t (*count)(const qb_json *node);
    /* Element i of an array, or member i (in document order) of an object;
     * NULL when out of range. For objects *key (may be NULL) gets the
     * member's name, valid as long as the tree. */
    const qb_json *(*at)(const qb_json *node, size_t i, const char **key);
    /* The string's text (NUL-terminated UTF-8, valid as long as the tree),
     * or NULL when the node is not a string. A string holding U+0000 is
     * refused by parse, so the text is the whole string. */
    const char *(*get_string)(const qb_json *node);
    /* Nonzero when the node is a number; *out gets its value. */
    int (*get_number)(const qb_json *node, double *out);
    /* Nonzero when the node is a number that is an integer within +-2^53;
     * *out gets it. */
    int (*get_int)(const qb_json *node, int64_t *out);
    /* Nonzero when the node is true or false; *out gets 1 or 0. */
    int (*get_bool)(const qb_json *node, int32_t *out);

    /* ---- building (each returns a new root, or NULL when out of memory) ---- */
    qb_json *(*new_object)(void);
    qb_json *(*new_array)(void);
    qb_json *(*new_string)(const char *utf8); /* copies; NULL text -> NULL */
    qb_json *(*new_number)(double v);         /* NaN or infinity -> NULL (not JSON) */
    qb_json *(*new_bool)(int32_t v);
    qb_json *(*new_null)(void);
    /* Moves root `item` into object `obj` under `key` (copied), replacing a
     * member of that name. Returns QB_OK, QB_E_INVALID (obj not an object,
     * item NULL; item is freed), QB_E_NOMEM (item is freed). The caller
     * never frees item after the call. Exception: an item that is obj
     * itself or a node inside a tree is QB_E_INVALID and left alone. */
    qb_status (*add)(qb_json *obj, const char *key, qb_json *item);
    /* Moves root `item` to the end of array `arr`. Same statuses and item
     * ownership as add. */
    qb_status (*append)(qb_json *arr, qb_json *item);

    /* Serialises `node` as UTF-8 JSON into a new NUL-terminated
     * host->alloc buffer (*out, free with host->free; *len its length
     * without the NUL, may be NULL). `indent` 0: compact; 1..8: that many
     * spaces per level and a newline at the end. Object members keep their
     * insertion order. QB_E_NOMEM, QB_E_INVALID (also for a string or key
     * that is not valid UTF-8). On failure *out is NULL. */
    qb_status (*emit)(const struct qb_host *h, const qb_json *node, int indent, char **out,
                      size_t *len);
} qb_json_api;

/* Introduced in ABI 1.1; its first size is QB_JSON_API_SIZE_1_1. */
QB_ABI_ALIGN_HELPER(qb_json_api);
#define QB_JSON_API_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_json_api, emit)
QB_ABI_STATIC_ASSERT(QB_JSON_API_SIZE_1_1 == sizeof(qb_json_api), qb_json_api_size_1_1);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_JSON_H */
