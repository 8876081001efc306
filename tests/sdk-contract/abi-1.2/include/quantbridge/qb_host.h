/*
 * quantbridge SDK — the host services table.
 *
 * STABILITY: stable (append-only; check QB_HAS_FIELD for fields after 1.0).
 *
 * A plugin links nothing from the host: every service arrives in this
 * table, passed once to the entry function. The pointer and everything it
 * points to stay valid until the process exits (plugins are never
 * unloaded), so a plugin may keep it in a static.
 *
 * THREADING: every function in this table may be called from any thread at
 * any time, concurrently, including from inside parallel_for workers.
 */
#ifndef QUANTBRIDGE_QB_HOST_H
#define QUANTBRIDGE_QB_HOST_H

#include "qb_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qb_log_level {
    QB_LOG_ERROR = 1,
    QB_LOG_WARN = 2,
    QB_LOG_INFO = 3,
    QB_LOG_DEBUG = 4,
    QB_LOG_LEVEL_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not a level */
} qb_log_level;
QB_ABI_STATIC_ASSERT(sizeof(qb_log_level) == 4, qb_log_level_is_32_bits);


/* Work item for parallel_for: process item i of [0, n). Return QB_OK or a
 * negative status (after set_error). */
typedef qb_status (*qb_parallel_fn)(void *arg, size_t i);

typedef struct qb_host {
    uint32_t struct_size;
    uint32_t abi;              /* highest ABI the host implements */
    void *host_private;        /* the host's; one qb_host per plugin */

    /* Logs one line (no trailing newline needed). Never fails. WARN and
     * ERROR are always shown; INFO/DEBUG depend on --verbose. */
    void (*log)(const struct qb_host *h, qb_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    /* Records the error message of the current failure for this thread and
     * returns `code` unchanged, so `return h->set_error(h, QB_E_FORMAT, ...)`
     * reads naturally. The host copies the text: no plugin pointer outlives
     * the call. Messages name the file and tensor involved. A later call on
     * the same thread replaces the message. */
    qb_status (*set_error)(const struct qb_host *h, qb_status code, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    /* Memory that the other side frees. alloc returns NULL on failure (and
     * under fault injection); free(NULL) is a no-op. Plugins may use malloc
     * for their private memory, but host->alloc lets the host's allocation
     * fault-injection tests reach plugin code too. */
    void *(*alloc)(const struct qb_host *h, size_t n);
    void (*free)(const struct qb_host *h, void *p);

    /* Reads a whole regular file of at most max_len bytes into a new
     * host->alloc buffer with one extra NUL byte (not counted in *len).
     * Errors: QB_E_NOT_FOUND (missing), QB_E_IO, QB_E_RANGE (larger than
     * max_len), QB_E_NOMEM. Message set on failure. */
    qb_status (*read_small_file)(const struct qb_host *h, const char *path, size_t max_len,
                                 void **data, size_t *len);

    /* Lists the entries of a directory (names only, no "." or "..") sorted
     * bytewise, as a host->alloc'd NULL-terminated array of host->alloc'd
     * strings; free with free_list. Errors: QB_E_NOT_FOUND, QB_E_IO, QB_E_NOMEM. */
    qb_status (*list_dir)(const struct qb_host *h, const char *dir, char ***names);
    void (*free_list)(const struct qb_host *h, char **names);

    /* Raw text of `key` in this plugin's config section (the part after
     * "option."), or NULL. Typed, validated values arrive as qb_param
     * arrays in open()/begin(); prefer those. Owned by the host. */
    const char *(*get_config)(const struct qb_host *h, const char *key);

    /* Progress: `done` of `total` units in a stage ("tensor", "bytes").
     * Returns nonzero when the user asked to stop: the plugin then
     * returns QB_E_CANCELLED promptly (after releasing what it holds). */
    int (*progress)(const struct qb_host *h, uint64_t done, uint64_t total, const char *stage);
    /* Nonzero once cancellation was requested. Cheap; call in long loops. */
    int (*cancelled)(const struct qb_host *h);

    /* Runs fn(arg, i) for every i in [0, n) on the host's thread pool and
     * the calling thread, returns when all started items finished. After
     * the first failure no new item starts; that failure's status is
     * returned (its message kept). Order of execution is unspecified.
     * Nested calls from inside fn run serially on the calling worker. */
    qb_status (*parallel_for)(const struct qb_host *h, size_t n, qb_parallel_fn fn, void *arg);
    /* Number of threads parallel_for may use (>= 1). */
    uint32_t (*thread_count)(const struct qb_host *h);

    /* The strict safetensors parser (qb_safetensors.h). Never NULL. */
    const struct qb_st_api *safetensors;

    /* Named optional host functions (experimental or newer services);
     * NULL when the host has no function of that name. */
    void *(*get_proc)(const struct qb_host *h, const char *name);

    /* ABI 1.1 */
    /* The JSON parser and emitter (qb_json.h). Never NULL in a 1.1 host;
     * check QB_HAS_FIELD(h, qb_host, json) first. */
    const struct qb_json_api *json;
} qb_host;

/* ABI 1.0 size (qb_abi.h): a 1.0 host table ends at get_proc. */
QB_ABI_ALIGN_HELPER(qb_host);
#define QB_HOST_SIZE_1_0 QB_ABI_SIZE_1_0(qb_host, get_proc)
QB_ABI_STATIC_ASSERT(offsetof(qb_host, json) >= QB_HOST_SIZE_1_0, qb_host_size_1_0);
#define QB_HOST_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_host, json)
QB_ABI_STATIC_ASSERT(QB_HOST_SIZE_1_1 == sizeof(qb_host), qb_host_size_1_1);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_HOST_H */
