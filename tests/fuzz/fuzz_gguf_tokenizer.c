/*
 * libFuzzer target: the gguf reader's tokenizer rebuild (issue 30): a
 * GGUF file's metadata (gguf_file_parse, in memory) through
 * gguf_tokenizer_try, which rebuilds tokenizer.json and
 * tokenizer_config.json from tokenizer.ggml.* or says why it cannot. A
 * rebuilt tokenizer.json must be strict JSON the host's tokenizer loads or
 * refuses with a message (host/tokenizer, qbh_tok_load_json): the file the
 * reader hands on is read by verify and forward.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"
#include "gguf_container.h"
#include "gguf_tokenizer.h"
#include "qbk_alloc.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = tok_host();
    gguf_file *f = NULL;
    gguf_tokenizer tok;
    char *why = NULL;
    qb_status st, refusal = QB_OK;

    qbh_error_clear();
    st = gguf_file_parse(h, "fuzz.gguf", data, size, &f);
    check_status(st, "gguf_file_parse");
    if (st != QB_OK)
        return 0;
    memset(&tok, 0, sizeof(tok));
    qbh_error_clear();
    st = gguf_tokenizer_try(h, f, 2048, &tok, &why, &refusal);
    check_status(st, "gguf_tokenizer_try");
    if (st == QB_OK && refusal != QB_OK && (!why || !why[0] || tok.tokenizer_json))
        __builtin_trap();
    if (st == QB_OK && refusal == QB_OK && tok.tokenizer_json) {
        qbh_tok *t = NULL;
        qbh_error_clear();
        st = qbh_tok_load_json(h, "tokenizer.json", tok.tokenizer_json,
                               strlen(tok.tokenizer_json), &t);
        check_status(st, "qbh_tok_load_json (rebuilt)");
        qbh_tok_free(t);
    }
    qbk_free(why);
    gguf_tokenizer_free(&tok);
    gguf_file_close(f);
    return 0;
}
