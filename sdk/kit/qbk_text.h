/*
 * qbk_text.h — a growable text buffer for the JSON the writers build by
 * hand (safetensors headers, shard indexes, edited config files), where
 * exact 64-bit integers matter more than a JSON library's double-based
 * numbers (internal kit).
 *
 * A zero-initialised qbk_text is empty and valid. Appends never fail
 * loudly: on allocation failure the buffer stops growing and sets oom, and
 * the caller checks oom once at the end (then reports QB_E_NOMEM naming
 * its file). THREADING: one buffer is not shared between threads.
 */
#ifndef QBK_TEXT_H
#define QBK_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct qbk_text {
    char *p;    /* NUL-terminated once anything was appended; qbk_malloc'd, owned */
    size_t n;   /* length without the NUL */
    size_t cap; /* allocated bytes */
    int oom;    /* set when an append failed; later appends are no-ops */
} qbk_text;

/* Appends len bytes of s (may contain NUL bytes; p stays NUL-terminated
 * after them). No-op once oom is set. */
void qbk_text_put(qbk_text *b, const char *s, size_t len);

/* Appends the NUL-terminated string s. */
void qbk_text_str(qbk_text *b, const char *s);

/* Appends s as a JSON string literal: quotes, with the escapes RFC 8259
 * requires ('"', '\\' and control characters as \u00XX); other bytes,
 * UTF-8 included, go through unchanged. */
void qbk_text_json_str(qbk_text *b, const char *s);

/* Appends v in decimal (exact for every 64-bit value). */
void qbk_text_u64(qbk_text *b, uint64_t v);

/* Frees the text and resets b to empty (oom cleared). Safe on an empty
 * buffer; b itself is not freed. */
void qbk_text_free(qbk_text *b);

#endif /* QBK_TEXT_H */
