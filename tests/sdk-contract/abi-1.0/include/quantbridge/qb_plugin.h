/*
 * quantbridge SDK — plugin entry point, version negotiation and descriptor.
 *
 * STABILITY: stable.
 *
 * A plugin library exports exactly one symbol, qb_plugin_entry_v1 (the
 * suffix is the ABI major; an incompatible ABI 2 would add
 * qb_plugin_entry_v2 and old plugins are then simply not found). Build with
 * -fvisibility=hidden; QuantbridgePlugin.cmake does it for you.
 *
 * Negotiation (as Vulkan's loader/ICD): the host fills [host_abi_min,
 * host_abi_max]; the plugin writes plugin_abi = min(its compiled ABI,
 * host_abi_max) and returns QB_OK, or returns QB_E_ABI when it needs more
 * than the host offers. The host refuses an answer outside its range and
 * names the plugin file, the plugin's ABI and the host's range.
 *
 * A plugin is one format: a reader, a writer, or both. Its name is unique
 * among the loaded plugins; a second plugin with the same name is refused.
 */
#ifndef QUANTBRIDGE_QB_PLUGIN_H
#define QUANTBRIDGE_QB_PLUGIN_H

#include "qb_abi.h"
#include "qb_host.h"
#include "qb_param.h"
#include "qb_reader.h"
#include "qb_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qb_negotiation {
    uint32_t struct_size;
    uint32_t host_abi_min; /* oldest ABI the host serves (QB_MAKE_ABI) */
    uint32_t host_abi_max; /* newest ABI the host implements */
    uint32_t plugin_abi;   /* OUT: ABI the plugin speaks, within the range */
} qb_negotiation;

/* Descriptor flags. */
#define QB_PLUGIN_CONCURRENT_READS (1u << 0) /* read_rows/read_grid may overlap on one handle */

/* What a plugin is. Lives in the plugin's static data for the life of the
 * process; the host never frees or writes it. */
typedef struct qb_plugin {
    uint32_t struct_size;      /* sizeof(qb_plugin) as compiled into the plugin */
    uint32_t abi;              /* equals neg->plugin_abi */
    const char *name;          /* unique, [a-z0-9-]+, e.g. "gptq", "sm86-w4a16" */
    const char *version;       /* plugin's own version, e.g. "1.2.0" */
    const char *description;   /* one line for `quantbridge plugins` */
    const char *vendor;        /* or NULL */
    const char *license;       /* or NULL */
    uint32_t flags;            /* QB_PLUGIN_* */
    void *ctx;                 /* passed back to probe/open/supports/begin/teardown */
    /* Optional: called once at process exit after every handle is closed. */
    void (*teardown)(void *ctx);
    const qb_reader_vtable *reader; /* NULL when not a reader */
    const qb_writer_vtable *writer; /* NULL when not a writer */
    /* NULL-terminated array of option declarations, or NULL for none.
     * Options apply to the reader and the writer of this plugin alike. */
    const qb_option_decl *const *options;
    /* Optional: vendor or experimental functions by name; NULL if unknown. */
    void *(*get_proc)(void *ctx, const char *name);
} qb_plugin;

/* The entry point's type and the symbol name of ABI major 1.
 *
 * Called once per process, on the host's main thread, before any other
 * call into the library. `host` stays valid for the process lifetime.
 * Returns QB_OK with *out set, QB_E_ABI when the range does not fit, or any
 * other negative status when the plugin cannot initialise (after
 * host->set_error explaining why). */
typedef qb_status (*qb_plugin_entry_fn)(qb_negotiation *neg, const qb_host *host,
                                        const qb_plugin **out);
#define QB_PLUGIN_ENTRY_SYMBOL "qb_plugin_entry_v1"

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_PLUGIN_H */
