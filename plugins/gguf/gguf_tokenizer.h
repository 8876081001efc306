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

/* Most notes one rebuild carries (gguf_tokenizer.notes). */
#define GGUF_TOK_MAX_NOTES 8

/* What was rebuilt, for the reader's summary and inspect. */
typedef struct gguf_tokenizer {
    char *tokenizer_json;        /* malloc'd (cJSON allocator), or NULL: no tokenizer */
    char *tokenizer_config_json; /* malloc'd, or NULL */
    char kind[16];               /* "gpt2", "llama", "gemma4" */
    char pre[48];                /* tokenizer.ggml.pre, "" when none */
    int64_t n_vocab;
    int32_t bos_id, eos_id, unk_id, pad_id; /* -1 = none */
    char text[4][64];            /* their texts (truncated), for messages */
    int add_bos, add_eos;
    int n_templates;             /* chat templates (default + named) */
    /* What the GGUF cannot tell about this vocabulary, one sentence each
     * naming the token ids (docs/formats/gguf.md "Tokenizer", "What a GGUF
     * does not store"): malloc'd (qbk), also written into
     * tokenizer_config.json as "quantbridge_rebuild_notes". */
    char *notes[GGUF_TOK_MAX_NOTES];
    int n_notes;
} gguf_tokenizer;

/* llama.cpp gguf-py constants.py TokenType. */
enum { GGUF_TT_UNDEFINED = 0, GGUF_TT_NORMAL, GGUF_TT_UNKNOWN, GGUF_TT_CONTROL, GGUF_TT_USER, GGUF_TT_UNUSED, GGUF_TT_BYTE };

/* The vocabulary as tokenizer.c read it, for gguf_tokenizer_notes. */
typedef struct gguf_tok_view {
    const char *const *s;  /* token texts, NUL-terminated (valid UTF-8, unique) */
    const size_t *len;
    const int32_t *type;   /* GGUF_TT_* */
    int64_t n;
    int spm;               /* tokenizer.ggml.model llama */
    size_t n_space_merges; /* merges left out because a part holds a space */
} gguf_tok_view;

/* Appends to out->notes what the rebuild of vocabulary v from metadata
 * file f cannot recover or states differently from llama.cpp, only what
 * applies to this vocabulary: user-defined tokens holding a literal space
 * (their U+2581 form lost; the merges left out), the added-token flags a
 * GGUF does not store (with the ids of control and user-defined tokens),
 * added tokens that overlap (leftmost-longest against llama.cpp's
 * longest-first partition), llama.cpp's name-based rstrip of phi-3.
 * QB_E_NOMEM (message set) or QB_OK. Thread-safe. */
qb_status gguf_tokenizer_notes(const qb_host *h, const gguf_file *f, const gguf_tok_view *v, gguf_tokenizer *out);

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

/* gguf_tokenizer_build for a reader that reports a refusal instead of
 * failing: a failure other than QB_E_NOMEM (the vocabulary cannot be
 * rebuilt exactly, or its keys are malformed) returns QB_OK with *out
 * empty (no files), *why the message gguf_tokenizer_build would have set
 * (malloc'd with qbk_malloc, the caller frees; the host's error is left
 * untouched) and *refusal its status (QB_E_UNSUPPORTED, QB_E_FORMAT).
 * Success: *why NULL, *refusal QB_OK. QB_E_NOMEM is returned as such, its
 * message set. Thread-safe. */
qb_status gguf_tokenizer_try(const qb_host *h, const gguf_file *f, int64_t ctx_len, gguf_tokenizer *out, char **why,
                             qb_status *refusal);

/* Writes tokenizer.json / tokenizer_config.json (those present) into a
 * new private directory mkdtemp'd under $TMPDIR (else /tmp); *dir is its
 * malloc'd path. Failure: QB_E_IO naming the path, nothing left behind. */
qb_status gguf_tokenizer_write_dir(const qb_host *h, const gguf_tokenizer *t, char **dir);

/* Removes the files gguf_tokenizer_write_dir wrote and the directory, and
 * frees dir. NULL-safe; errors ignored (a temporary directory). */
void gguf_tokenizer_remove_dir(char *dir);

#endif /* GGUF_TOKENIZER_H */
