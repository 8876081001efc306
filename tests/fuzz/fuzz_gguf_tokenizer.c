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
#include <stdlib.h>
#include <string.h>

#include "fuzz_host.h"
#include "gguf_container.h"
#include "gguf_tokenizer.h"
#include "qbk_alloc.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    gguf_file *f = NULL;
    gguf_tokenizer tok;
    char *why = NULL;
    qb_status st, refusal = QB_OK;

    qbt_fuzz_reset();
    st = gguf_file_parse(h, "fuzz.gguf", data, size, &f);
    qbt_fuzz_check_status(st, "gguf_file_parse");
    if (st != QB_OK)
        return 0;
    memset(&tok, 0, sizeof(tok));
    qbt_fuzz_reset();
    st = gguf_tokenizer_try(h, f, 2048, &tok, &why, &refusal);
    qbt_fuzz_check_status(st, "gguf_tokenizer_try");
    if (st == QB_OK && refusal != QB_OK && (!why || !why[0] || tok.tokenizer_json))
        __builtin_trap();
    if (st == QB_OK && refusal == QB_OK && tok.tokenizer_json) {
        qbh_tok *t = NULL;
        qbt_fuzz_reset();
        st = qbh_tok_load_json(h, "tokenizer.json", tok.tokenizer_json,
                               strlen(tok.tokenizer_json), &t);
        qbt_fuzz_check_status(st, "qbh_tok_load_json (rebuilt)");
        qbh_tok_free(t);
    }
    qbk_free(why);
    gguf_tokenizer_free(&tok);
    gguf_file_close(f);
    return 0;
}
