/*
 * GGUF reader -- Hugging Face tokenizer files rebuilt from the
 * tokenizer.ggml.* metadata (llama.cpp gguf-py/gguf/constants.py, class
 * Keys.Tokenizer) and tokenizer.chat_template*: tokenizer.json (the HF
 * tokenizers schema) and tokenizer_config.json. What each GGUF tokenizer
 * model and pre type becomes: docs/formats/gguf.md "Tokenizer". Internal to
 * the gguf plugin.
 */
#ifndef GGUF_TOKENIZER_H
#define GGUF_TOKENIZER_H

#include "gguf_container.h"

#include <quantbridge/qb_host.h>

#include <stdint.h>

/* ByteLevel flags (HF tokenizers pre_tokenizers/byte_level.rs). */
typedef struct gguf_bytelevel {
    int add_prefix_space, trim_offsets, use_regex;
} gguf_bytelevel;

/* One HF pre-tokenizer setup for a tokenizer.ggml.pre value (gpt2 model):
 * pre_tokenizer = Sequence[Split(regex[i], Isolated)..., Digits(individual)?,
 * ByteLevel(pre)] (just ByteLevel(pre) when neither), normalizer NFC or
 * null, decoder ByteLevel(dec), post_processor ByteLevel(post). */
typedef struct gguf_pretok {
    const char *name;   /* the tokenizer.ggml.pre value */
    const char *const *regex; /* Split patterns, applied in order, NULL-terminated; or NULL */
    int digits;         /* Digits(individual_digits = true) */
    int nfc;            /* NFC normalizer */
    int ignore_merges;  /* BPE ignore_merges (llama.cpp: ignore_merges) */
    gguf_bytelevel pre, post, dec;
} gguf_pretok;

/* The table entry for `name`, or NULL when the pre type is not handled.
 * Static data; thread-safe. */
const gguf_pretok *gguf_pretok_find(const char *name);

/* Comma-separated list of every handled pre type (static text), for
 * messages. */
const char *gguf_pretok_names(void);

/* What was rebuilt, for the reader's summary and inspect. */
typedef struct gguf_tokenizer {
    char *tokenizer_json;        /* malloc'd (cJSON allocator), or NULL: no tokenizer */
    char *tokenizer_config_json; /* malloc'd, or NULL */
    char kind[16];               /* "gpt2", "llama" */
    char pre[48];                /* tokenizer.ggml.pre, "" when none */
    int64_t n_vocab;
    int32_t bos_id, eos_id, unk_id, pad_id; /* -1 = none */
    char text[4][64];            /* their texts (truncated), for messages */
    int add_bos, add_eos;
    int n_templates;             /* chat templates (default + named) */
} gguf_tokenizer;

/* Rebuilds the tokenizer of metadata file f. `ctx_len` (> 0) becomes
 * model_max_length. When f has no tokenizer.ggml.model, only
 * tokenizer_config.json is built when f has chat templates (kind "").
 * Failure (nothing returned, message names the file and key):
 * QB_E_UNSUPPORTED for a tokenizer model or pre type that cannot be
 * rebuilt exactly (named, with what is handled), QB_E_FORMAT for missing or
 * malformed keys (token list, merges, types, ids out of range, duplicate
 * token texts, invalid UTF-8), QB_E_NOMEM. Thread-safe (no shared state). */
qb_status gguf_tokenizer_build(const qb_host *h, const gguf_file *f, int64_t ctx_len, gguf_tokenizer *out);

/* Frees what gguf_tokenizer_build returned (fields zeroed). NULL-safe. */
void gguf_tokenizer_free(gguf_tokenizer *t);

/* Writes tokenizer.json / tokenizer_config.json (those present) into a
 * new private directory mkdtemp'd under $TMPDIR (else /tmp); *dir is its
 * malloc'd path. Failure: QB_E_IO naming the path, nothing left behind. */
qb_status gguf_tokenizer_write_dir(const qb_host *h, const gguf_tokenizer *t, char **dir);

/* Removes the files gguf_tokenizer_write_dir wrote and the directory, and
 * frees dir. NULL-safe; errors ignored (a temporary directory). */
void gguf_tokenizer_remove_dir(char *dir);

#endif /* GGUF_TOKENIZER_H */
