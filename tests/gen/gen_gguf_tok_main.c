/*
 * qb-gen-gguf-tok TOKDIR PRE|- OUT.gguf [ARCH]: a tiny llama (or ARCH,
 * e.g. gemma3: transformers picks its GGUF tokenizer by it) GGUF (f16) whose
 * tokenizer.ggml.* metadata is made from TOKDIR/tokenizer.json[.xz] and
 * TOKDIR/tokenizer_config.json the way llama.cpp's converter does
 * (gen_gguf_tok.h; "-": no tokenizer.ggml.pre, as for SentencePiece), for CLI tests of the tokenizer rebuild. The
 * embedding has one row per token id. Tests only.
 */
#include "gen_gguf.h"
#include "gen_gguf_tok.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Largest id in model.vocab and added_tokens, plus one; -1 when none. */
static long n_ids(const char *json)
{
    cJSON *tj = cJSON_Parse(json);
    const cJSON *e;
    long n = -1;
    if (!tj)
        return -1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "vocab"))
        if (cJSON_IsNumber(e) && (long)e->valuedouble + 1 > n)
            n = (long)e->valuedouble + 1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsNumber(id) && (long)id->valuedouble + 1 > n)
            n = (long)id->valuedouble + 1;
    }
    cJSON_Delete(tj);
    return n;
}

int main(int argc, char **argv)
{
    char path[4096];
    char *tok = NULL, *cfg = NULL;
    qbt_gguf_spec s;
    qbt_gguf *g = NULL;
    qbt_hf_model ref;
    int built = 0, rc = 1;
    long n;
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s TOKDIR PRE OUT.gguf [ARCH]\n", argv[0]);
        return 2;
    }
    snprintf(path, sizeof(path), "%s/tokenizer.json.xz", argv[1]);
    tok = access(path, R_OK) == 0 ? qbt_read_maybe_xz(path) : NULL;
    if (!tok) {
        snprintf(path, sizeof(path), "%s/tokenizer.json", argv[1]);
        tok = qbt_read_maybe_xz(path);
    }
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", argv[1]);
    cfg = qbt_read_maybe_xz(path);
    if (!tok || !cfg) {
        fprintf(stderr, "%s: tokenizer.json[.xz] or tokenizer_config.json missing\n", argv[1]);
        goto out;
    }
    n = n_ids(tok);
    if (n <= 0) {
        fprintf(stderr, "%s: tokenizer.json has no ids\n", argv[1]);
        goto out;
    }
    memset(&s, 0, sizeof(s));
    s.arch = argc == 5 ? argv[4] : "llama";
    if (strncmp(s.arch, "gemma", 5) == 0)
        s.head_dim = 16;
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_ff = 64;
    s.n_head = 2;
    s.n_head_kv = 2;
    s.n_vocab = (int)n;
    s.tied = 1;
    s.wtype = 1; /* f16 */
    s.no_tokenizer = 1;
    s.seed = 7;
    if (qbt_gguf_build_model(&s, &g, &ref))
        goto out;
    built = 1;
    if (qbt_gguf_add_hf_tokenizer(g, tok, cfg, strcmp(argv[2], "-") ? argv[2] : NULL) != n) {
        fprintf(stderr, "%s: tokenizer metadata not made\n", argv[1]);
        goto out;
    }
    rc = qbt_gguf_save(g, NULL, argv[3]) ? 1 : 0;
out:
    if (built)
        qbt_hf_model_free(&ref);
    qbt_gguf_free(g);
    free(tok);
    free(cfg);
    return rc;
}
