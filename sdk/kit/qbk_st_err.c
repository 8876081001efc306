/*
 * quantbridge internal kit — the error sink of the safetensors parser
 * (qbk_safetensors.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "qbk_safetensors.h"

qb_status qbk_st_fail(qbk_st_err *err, qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}
