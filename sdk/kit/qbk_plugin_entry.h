/*
 * quantbridge internal kit — the shared body of a bundled plugin's
 * qb_plugin_entry_v1 (sdk/include/quantbridge/qb_plugin.h).
 *
 * Internal: linked statically into each plugin, hidden, never ABI. A
 * third-party plugin writes the same few lines itself with qb_negotiate.
 */
#ifndef QBK_PLUGIN_ENTRY_H
#define QBK_PLUGIN_ENTRY_H

#include <stdint.h>

#include <quantbridge/qb_plugin.h>

/* Negotiates with qb_negotiate(neg, min_abi) (QB_MAKE_ABI(1, 0) for a
 * plugin that checks QB_HAS_FIELD for everything newer), refuses a NULL
 * host or out with QB_E_INVALID, writes the negotiated ABI into desc->abi
 * (a descriptor fixed at QB_ABI_CURRENT would be refused by an older 1.x
 * host), routes the kit's allocations of this plugin through host
 * (qbk_alloc_init) and stores desc in *out.
 * Returns QB_OK, or qb_negotiate's status (QB_E_ABI / QB_E_INVALID) with
 * desc and *out untouched. desc is the plugin's static descriptor; the
 * caller keeps `host` (valid for the process) on QB_OK.
 * THREADING: the entry's contract — once, on the host's main thread. */
qb_status qbk_plugin_enter(qb_negotiation *neg, const qb_host *host, uint32_t min_abi,
                           qb_plugin *desc, const qb_plugin **out);

#endif /* QBK_PLUGIN_ENTRY_H */
