/*
 * qbk_alloc — plugin-private memory through host->alloc/host->free, so the
 * host's allocation-failure countdown (host/alloc.c,
 * QUANTBRIDGE_TEST_ALLOC_FAIL) reaches plugin code without LD_PRELOAD.
 *
 * Internal kit, never ABI: each plugin .so links its own static copy with
 * hidden symbols, so the host pointer below is per plugin.
 *
 * Every block carries a small header (its size and the allocator that made
 * it), which is what lets qbk_realloc copy: host->alloc has no realloc.
 * Hence the rule: memory from qbk_* is freed ONLY with qbk_free (never
 * free() nor host->free), and memory from anything else is never passed
 * to qbk_free/qbk_realloc. In particular:
 *   - memory handed to the host (none today in ABI 1.0) must come from
 *     host->alloc directly;
 *   - memory from the host (read_small_file, list_dir) goes back with
 *     host->free / host->free_list;
 *   - strings from cJSON_Print & co. go back with cJSON_free: cJSON's
 *     hooks are process-global in the shared libcjson (host and every
 *     plugin) and carry no context, so no plugin may install them.
 *
 * THREADING: qbk_alloc_init is called once, from the plugin's entry
 * function (main thread, before any other call into the plugin, so before
 * any thread the host starts for it). All other functions are thread-safe
 * whenever host->alloc/free and malloc are (qb_host.h: always).
 */
#ifndef QBK_ALLOC_H
#define QBK_ALLOC_H

#include <stddef.h>

#include <quantbridge/qb_host.h>

/* Routes later qbk_* allocations of this plugin through `host`
 * (host->alloc/free). Before it is called (kit code in
 * libquantbridge-w4a16, unit tests without an entry call) qbk_* use
 * malloc/free. Blocks remember their allocator, so a block made before
 * init may be freed after it. host must stay valid for the process. */
void qbk_alloc_init(const qb_host *host);

/* As malloc/calloc/strdup: NULL on failure (or when the host's fault
 * injection refuses), n == 0 gives a unique minimal block. Alignment is
 * that of max_align_t when the host's alloc gives it (malloc does). */
void *qbk_malloc(size_t n);
void *qbk_calloc(size_t count, size_t size);
char *qbk_strdup(const char *s);
/* As strndup: at most `max` bytes of s, always NUL-terminated; NULL on
 * failure. */
char *qbk_strndup(const char *s, size_t max);

/* As realloc for a block from qbk_*: p == NULL is qbk_malloc(n); on
 * failure returns NULL and p is untouched and still owned by the caller. */
void *qbk_realloc(void *p, size_t n);

/* Frees a block from qbk_*; NULL is a no-op. */
void qbk_free(void *p);

#endif
