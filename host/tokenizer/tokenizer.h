/*
 * quantbridge tokenizer (host/tokenizer, qbh_tokenizer) — an ENCODER for
 * the Hugging Face `tokenizer.json` kinds quantbridge produces and meets
 * (docs/forward.md, "Text"): byte-level BPE (GPT-2, llama3, qwen2: Split +
 * ByteLevel) and SentencePiece-style BPE (llama2: Prepend/Replace
 * normalizers or a Metaspace pre-tokenizer, byte fallback), added tokens
 * split off first, BOS/EOS from a TemplateProcessing post-processor. It
 * encodes as the `tokenizers` library's Tokenizer.encode(text) does; any
 * other model, normalizer, pre-tokenizer or post-processor is refused by
 * name. Written against the SDK only: its files, memory and errors come
 * from a qb_host table (and GLib). Its files and private structures: tok.h.
 */
#ifndef QBH_TOKENIZER_H
#define QBH_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>

/* A loaded tokenizer (opaque outside host/tokenizer). */
typedef struct qbh_tok qbh_tok;

/* ---- load.c ------------------------------------------------------------------ */

/* Reads `dir`/tokenizer.json through h (read_small_file; the strict JSON
 * parser, qb_json.h: a file it refuses, a duplicate key or a number beyond
 * a double, is QB_E_FORMAT naming the file and the byte) and builds the
 * encoder; h serves its memory and errors for as long as it lives.
 * QB_E_NOT_FOUND when the file is absent; QB_E_UNSUPPORTED naming the file and the component
 * (model type, normalizer, pre-tokenizer, post-processor, option) it
 * cannot encode exactly like the tokenizers library; QB_E_FORMAT naming
 * the file and key for malformed content (a merge of tokens outside the
 * vocabulary, a bad regex); QB_E_IO, QB_E_NOMEM. *out is the caller's
 * (qbh_tok_free). Thread-safe (no shared state). */
qb_status qbh_tok_load(const qb_host *h, const char *dir, qbh_tok **out);
/* The same from the text of a tokenizer.json (`what` names it). */
qb_status qbh_tok_load_json(const qb_host *h, const char *what, const char *json, size_t len,
                            qbh_tok **out);
/* Frees t and everything it owns; NULL is a no-op. */
void qbh_tok_free(qbh_tok *t);

/* ---- encode.c ---------------------------------------------------------------- */

/* Encodes UTF-8 `text` (len bytes) as tokenizers' Tokenizer.encode(text,
 * add_special_tokens) does: added tokens split off, the rest normalized,
 * pre-tokenized and BPE-encoded, then (add_special) the post-processor's
 * template tokens around it. *ids (t's h->alloc'd, the caller's; NULL when
 * *n is 0). QB_E_INVALID when text is not valid UTF-8; QB_E_UNSUPPORTED
 * from qbh_tok_bpe_word; QB_E_NOMEM. Thread-safe on a const t. */
qb_status qbh_tok_encode(const qbh_tok *t, const char *text, size_t len, int add_special,
                         int64_t **ids, size_t *n);

/* Loads dir/tokenizer.json (qbh_tok_load) and encodes the NUL-terminated
 * text with the post-processor's tokens (possibly none: *n 0, *ids NULL).
 * Errors as qbh_tok_load and qbh_tok_encode. *ids is h->alloc'd, the
 * caller's. Thread-safe. */
qb_status qbh_tok_encode_text(const qb_host *h, const char *dir, const char *text, int64_t **ids,
                              size_t *n);

/* ---- sample.c ---------------------------------------------------------------- */

/* verify's built-in text (English, German, French, Chinese, Russian,
 * code, figures; 320-420 tokens in the vocabularies we meet). Static;
 * pure. */
const char *qbh_tok_sample_text(void);

#endif /* QBH_TOKENIZER_H */
