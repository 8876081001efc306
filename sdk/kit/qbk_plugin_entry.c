/*
 * quantbridge internal kit — the shared body of qb_plugin_entry_v1.
 */
#include "qbk_plugin_entry.h"

#include "qbk_alloc.h"

qb_status qbk_plugin_enter(qb_negotiation *neg, const qb_host *host, uint32_t min_abi,
                           qb_plugin *desc, const qb_plugin **out)
{
    qb_status rc = qb_negotiate(neg, min_abi);
    if (rc)
        return rc;
    if (!host || !out || !desc)
        return QB_E_INVALID;
    desc->abi = neg->plugin_abi;
    qbk_alloc_init(host);
    *out = desc;
    return QB_OK;
}
