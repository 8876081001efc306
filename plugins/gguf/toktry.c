/*
 * A tokenizer that cannot be rebuilt, as a state instead of an open
 * failure (gguf_tokenizer.h, gguf_tokenizer_try): the reader of an ABI 1.3
 * host opens the model and states the refusal in qb_model_info
 * (tokenizer_state, tokenizer_note); the host decides per command. The
 * message is the one gguf_tokenizer_build sets, caught on its way to the
 * host through a copy of the host table whose set_error keeps it.
 */
#include "gguf_tokenizer.h"

#include "qbk_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct catch_host {
    qb_host h; /* first: set_error receives &c->h and finds the rest */
    char msg[2048];
} catch_host;

static qb_status catch_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    catch_host *c = (catch_host *)(void *)h;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    return code;
}

qb_status gguf_tokenizer_try(const qb_host *h, const gguf_file *f, int64_t ctx_len, gguf_tokenizer *out, char **why,
                             qb_status *refusal)
{
    catch_host c;
    size_t n = h->struct_size < sizeof(c.h) ? h->struct_size : sizeof(c.h);
    qb_status st;
    *why = NULL;
    *refusal = QB_OK;
    /* Every other service (log, alloc, host_private) stays the host's; a
     * shorter (older) host table leaves the fields it lacks zeroed. */
    memset(&c, 0, sizeof(c));
    memcpy(&c.h, h, n);
    c.h.set_error = catch_set_error;
    st = gguf_tokenizer_build(&c.h, f, ctx_len, out);
    if (st == QB_E_NOMEM)
        return h->set_error(h, st, "%s", c.msg[0] ? c.msg : "out of memory");
    if (st) {
        size_t len = strlen(c.msg);
        if (!len)
            len = (size_t)snprintf(c.msg, sizeof(c.msg), "%s: the tokenizer cannot be rebuilt", f->path);
        if (!(*why = qbk_malloc(len + 1)))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
        memcpy(*why, c.msg, len + 1);
        *refusal = st;
    }
    return QB_OK;
}
