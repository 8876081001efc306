/*
 * libFuzzer target: tokenizer.json as verify's model check and `forward
 * --text` read it (issue 30): qbh_tok_load_json (host/tokenizer, the
 * SDK-only encoder) on the input, and when it loads, qbh_tok_encode of
 * verify's built-in text and of a short mixed text, with and without the
 * post-processor's tokens. A failure must carry its message (fuzz_host.h);
 * an encoding gives ids exactly when it gives a count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_host.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void encode(const qb_host *h, const qbh_tok *t, const char *text, int add_special)
{
    int64_t *ids = NULL;
    size_t n = 0;
    qb_status st;
    qbt_fuzz_reset();
    st = qbh_tok_encode(t, text, strlen(text), add_special, &ids, &n);
    qbt_fuzz_check_status(st, "qbh_tok_encode");
    if (st == QB_OK && (n == 0) != (ids == NULL))
        __builtin_trap();
    h->free(h, ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    qbh_tok *t = NULL;
    qb_status st;

    qbt_fuzz_reset();
    st = qbh_tok_load_json(h, "tokenizer.json", (const char *)data, size, &t);
    qbt_fuzz_check_status(st, "qbh_tok_load_json");
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
