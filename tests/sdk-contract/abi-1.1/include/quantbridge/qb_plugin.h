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
#include "qb_json.h"
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

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_negotiation, <first new field>) >= QB_NEGOTIATION_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_negotiation);
#define QB_NEGOTIATION_SIZE_1_0 QB_ABI_SIZE_1_0(qb_negotiation, plugin_abi)
QB_ABI_STATIC_ASSERT(QB_NEGOTIATION_SIZE_1_0 == sizeof(qb_negotiation), qb_negotiation_size_1_0);

/* The plugin's half of the negotiation (header-only, so every plugin
 * answers the same way and an old binary keeps its compiled-in answer).
 *
 * plugin_abi_min_needed: the oldest host ABI whose fields and functions
 * this plugin uses unconditionally, QB_MAKE_ABI(1, m) with m <= QB_ABI_MINOR
 * (QB_MAKE_ABI(1, 0) for a plugin that checks QB_HAS_FIELD for everything
 * newer). The plugin always compiles against QB_ABI_CURRENT.
 *
 * On QB_OK, neg->plugin_abi = min(QB_ABI_CURRENT, host_abi_max), which is
 * inside the host's range and >= plugin_abi_min_needed; copy it into the
 * descriptor's `abi`. Returns QB_E_ABI when no ABI fits (neg->plugin_abi
 * then says what the plugin would have needed, for the host's message),
 * QB_E_INVALID for a NULL or pre-1.0-sized `neg` or a
 * plugin_abi_min_needed of another major or newer than these headers.
 * Touches nothing but neg->plugin_abi. */
static inline qb_status qb_negotiate(qb_negotiation *neg, uint32_t plugin_abi_min_needed)
{
    uint32_t abi;
    if (!neg || neg->struct_size < QB_NEGOTIATION_SIZE_1_0)
        return QB_E_INVALID;
    if (QB_ABI_GET_MAJOR(plugin_abi_min_needed) != QB_ABI_MAJOR ||
        plugin_abi_min_needed > QB_ABI_CURRENT)
        return QB_E_INVALID;
    abi = neg->host_abi_max < QB_ABI_CURRENT ? neg->host_abi_max : QB_ABI_CURRENT;
    if (neg->host_abi_min > neg->host_abi_max || abi < neg->host_abi_min) {
        neg->plugin_abi = QB_ABI_CURRENT; /* the host is newer than this major */
        return QB_E_ABI;
    }
    if (abi < plugin_abi_min_needed) {
        neg->plugin_abi = plugin_abi_min_needed; /* the host is too old */
        return QB_E_ABI;
    }
    neg->plugin_abi = abi;
    return QB_OK;
}

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
     * Each applies to the roles its `roles` field names (ABI 1.1; both
     * for a 1.0 declaration). */
    const qb_option_decl *const *options;
    /* Optional: vendor or experimental functions by name; NULL if unknown. */
    void *(*get_proc)(void *ctx, const char *name);
    /* ABI 1.1 */
    /* What the writer declares (qb_writer.h), or NULL: nothing declared
     * (no architecture list, no required facts, no side files, output
     * probed for --verify). Ignored when `writer` is NULL. */
    const qb_writer_caps *writer_caps;
} qb_plugin;

/* ABI 1.0 size (qb_abi.h): a 1.0 descriptor ends at get_proc. */
QB_ABI_ALIGN_HELPER(qb_plugin);
#define QB_PLUGIN_SIZE_1_0 QB_ABI_SIZE_1_0(qb_plugin, get_proc)
QB_ABI_STATIC_ASSERT(offsetof(qb_plugin, writer_caps) >= QB_PLUGIN_SIZE_1_0, qb_plugin_size_1_0);
#define QB_PLUGIN_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_plugin, writer_caps)
QB_ABI_STATIC_ASSERT(QB_PLUGIN_SIZE_1_1 == sizeof(qb_plugin), qb_plugin_size_1_1);

/* The entry point's type and the symbol name of ABI major 1.
 *
 * Called once per process, on the host's main thread, before any other
 * call into the library. `host` stays valid for the process lifetime.
 * Returns QB_OK with *out set, QB_E_ABI when the range does not fit, or any
 * other negative status when the plugin cannot initialise. A message set
 * with host->set_error before returning a failure (the refusal: "needs
 * GPU driver 550", "built for ABI 1.3") is shown to the user with the
 * plugin's name and file; without one the host says what it knows. */
typedef qb_status (*qb_plugin_entry_fn)(qb_negotiation *neg, const qb_host *host,
                                        const qb_plugin **out);
#define QB_PLUGIN_ENTRY_SYMBOL "qb_plugin_entry_v1"

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_PLUGIN_H */
