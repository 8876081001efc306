/*
 * quantbridge host — how the JSON service (qb_json.h) keeps its trees,
 * shared by json.c (the qb_json_api table, parse through the kit's strict
 * parser, sdk/kit/qbk_json.h) and json_emit.c. Host-internal; nothing here
 * crosses the SDK boundary.
 *
 * A qb_json is a cJSON node (cast), as the kit's parser builds it. Two facts
 * live in fields cJSON leaves unused by the node kinds concerned:
 *   - a number that get_int may answer (its text or value is an integer
 *     held exactly, within +-2^53) carries QBH_JSON_INT_OK in `type`;
 *     cJSON reads only `type & 0xFF` and its own two flag bits;
 *   - an array or object keeps its member count in `valuedouble`, so
 *     count() is O(1).
 * A root has prev == next == NULL and no key; every node inside a tree has
 * prev != NULL (cJSON's first child points back at the last one).
 *
 * Allocation: cJSON allocates through its process-wide hooks, which the
 * host leaves at malloc/free. libcjson is one shared library for the host
 * and every plugin (ldd: libcjson.so.1 in both), so hooks installed here
 * would reach plugin code too, which frees cJSON memory with cJSON_free
 * (sdk/kit/qbk_alloc.h: "no plugin may install them"; nor does the host).
 * Each allocation point asks qbh_alloc_admit() first, so the host's fault
 * injection still reaches every one of them.
 */
#ifndef QBH_JSON_NODE_H
#define QBH_JSON_NODE_H

#include <cjson/cJSON.h>

#include "qbh.h"
#include "qbk_json.h"

/* The kit parser's marks and limits (qbk_json.h), under the host's names. */
#define QBH_JSON_INT_OK QBK_JSON_INT_OK
#define QBH_JSON_MAX_DEPTH QBK_JSON_MAX_DEPTH
#define QBH_JSON_INT_MAX QBK_JSON_INT_MAX

static inline size_t qbh_json_utf8_seq(const unsigned char *s, size_t n)
{
    return qbk_json_utf8_seq(s, n);
}

static inline cJSON *qbh_jnode(qb_json *n)
{
    return (cJSON *)(void *)n;
}

static inline const cJSON *qbh_jcnode(const qb_json *n)
{
    return (const cJSON *)(const void *)n;
}

/* A new root node of cJSON type `type` (cJSON_NULL, cJSON_Array, ...),
 * zeroed, count 0; NULL when out of memory (or refused by injection). */
static inline cJSON *qbh_jnode_new(int type)
{
    return qbk_json_node_new(type, qbh_alloc_admit);
}

/* n bytes from cJSON's allocator (freed by cJSON_Delete when stored as a
 * node's valuestring or key), or NULL. */
static inline char *qbh_jbuf_new(size_t n)
{
    return qbk_json_buf_new(n, qbh_alloc_admit);
}

static inline size_t qbh_jcount(const cJSON *n)
{
    return (size_t)n->valuedouble;
}

static inline void qbh_jcount_set(cJSON *n, size_t c)
{
    n->valuedouble = (double)c;
}

/* Sets QBH_JSON_INT_OK from the value alone: integral and within +-2^53.
 * (The parser decides from the text instead: sdk/kit/qbk_json.c.) */
static inline void qbh_jnumber_flag_from_value(cJSON *n)
{
    double v = n->valuedouble;
    /* the range test first: (int64_t)v is undefined outside int64_t */
    if (v >= -QBH_JSON_INT_MAX && v <= QBH_JSON_INT_MAX && v == (double)(int64_t)v)
        n->type |= QBH_JSON_INT_OK;
    else
        n->type &= ~QBH_JSON_INT_OK;
}

/* Called before every change to any tree (add, append, free): invalidates
 * the per-thread cursor that keeps at() O(1) when walking forward. */
void qbh_json_touch(void);

#endif
