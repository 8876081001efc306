/*
 * quantbridge host — per-thread error slot.
 *
 * qb_host.set_error copies the plugin's text here (no plugin pointer
 * survives the call); host code uses the same slot, and the CLI prints it
 * once as "quantbridge: error: <message>".
 */
#include "qbh.h"

#include <stdio.h>
#include <string.h>

#define QBH_ERROR_MAX 2048

typedef struct qbh_error_slot {
    qb_status code;
    char msg[QBH_ERROR_MAX];
} qbh_error_slot;

static _Thread_local qbh_error_slot slot;

qb_status qbh_error_setv(qb_status code, const char *fmt, va_list ap)
{
    char tmp[QBH_ERROR_MAX];
    /* Format into a scratch buffer first: fmt's arguments may point into
     * the slot itself (re-raising an earlier message with context). */
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(slot.msg, tmp, sizeof tmp);
    slot.code = code;
    return code;
}

qb_status qbh_error_set(qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qbh_error_setv(code, fmt, ap);
    va_end(ap);
    return code;
}

const char *qbh_error_message(void)
{
    return slot.msg;
}

qb_status qbh_error_code(void)
{
    return slot.code;
}

void qbh_error_clear(void)
{
    slot.code = QB_OK;
    slot.msg[0] = '\0';
}

const char *qbh_status_name(qb_status code)
{
    switch (code) {
    case QB_OK: return "QB_OK";
    case QB_E_NOMEM: return "QB_E_NOMEM";
    case QB_E_INVALID: return "QB_E_INVALID";
    case QB_E_UNSUPPORTED: return "QB_E_UNSUPPORTED";
    case QB_E_IO: return "QB_E_IO";
    case QB_E_FORMAT: return "QB_E_FORMAT";
    case QB_E_ABI: return "QB_E_ABI";
    case QB_E_CANCELLED: return "QB_E_CANCELLED";
    case QB_E_INTERNAL: return "QB_E_INTERNAL";
    case QB_E_NOT_FOUND: return "QB_E_NOT_FOUND";
    case QB_E_MISMATCH: return "QB_E_MISMATCH";
    case QB_E_RANGE: return "QB_E_RANGE";
    case QB_E_NOSPACE: return "QB_E_NOSPACE";
    default: return "QB_E_UNKNOWN";
    }
}
