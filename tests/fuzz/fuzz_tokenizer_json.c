/*
 * libFuzzer target: tokenizer.json as verify's model check and `forward
 * --text` read it (issue 30): qbh_tok_load_json (host/tokenizer, the
 * SDK-only encoder) on the input, and when it loads, qbh_tok_encode of
 * verify's built-in text and of a short mixed text, with and without the
 * post-processor's tokens. A failure must carry its message (fuzz_host.h);
 * an encoding gives ids exactly when it gives a count.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The host's own services table (host/services.c), whose JSON service the
 * tokenizer reads tokenizer.json through and whose error slot its
 * messages land in (fuzz_host.h's host serves no JSON). */
static const qb_host *tok_host(void)
{
    return qbh_services_anonymous();
}

/* The error contract against the host's error slot: a failure carries its
 * message and code (as qbt_fuzz_check_status for the fuzz host). */
static void check_status(qb_status st, const char *what)
{
    if (st == QB_OK)
        return;
    if (st > 0 || !qbh_error_message()[0] || qbh_error_code() != st) {
        fprintf(stderr, "%s: status %d without its message (last: %d '%s')\n", what, (int)st,
                (int)qbh_error_code(), qbh_error_message());
        abort();
    }
}

static void encode(const qb_host *h, const qbh_tok *t, const char *text, int add_special)
{
    int64_t *ids = NULL;
    size_t n = 0;
    qb_status st;
    qbh_error_clear();
    st = qbh_tok_encode(t, text, strlen(text), add_special, &ids, &n);
    check_status(st, "qbh_tok_encode");
    if (st == QB_OK && (n == 0) != (ids == NULL))
        __builtin_trap();
    h->free(h, ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = tok_host();
    qbh_tok *t = NULL;
    qb_status st;

    qbh_error_clear();
    st = qbh_tok_load_json(h, "tokenizer.json", (const char *)data, size, &t);
    check_status(st, "qbh_tok_load_json");
    if (st != QB_OK) {
        if (t)
            __builtin_trap();
        return 0;
    }
    encode(h, t, qbh_tok_sample_text(), 1);
    encode(h, t, "Hello  world!\n\tcaf\xc3\xa9 <s> 12345 \xe4\xbd\xa0\xe5\xa5\xbd", 0);
    qbh_tok_free(t);
    return 0;
}
