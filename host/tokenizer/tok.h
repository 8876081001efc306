/*
 * quantbridge tokenizer — its private structures and internals
 * (tokenizer.h is the public interface; nothing outside host/tokenizer
 * includes this header).
 *
 *   load.c      tokenizer.json -> qbh_tok (every refusal)
 *   bpe.c       the BPE model: vocabulary, merges by rank, byte
 *               fallback, unk
 *   normalize.c normalizers (Prepend, Replace, NFC/NFD/NFKC/NFKD)
 *   pretok.c    pre-tokenizers (Split, ByteLevel, Metaspace, Digits)
 *   added.c     added tokens matched in the text before the rest
 *   encode.c    the pipeline and the post-processor's tokens
 *   sample.c    verify's built-in multilingual text
 */
#ifndef QBH_TOK_H
#define QBH_TOK_H

#include <glib.h>

#include "tokenizer.h"

/* ---- the loaded tokenizer ------------------------------------------------ */

typedef enum qbh_tok_norm_kind {
    QBH_TOK_N_PREPEND = 1, /* prepend `a` to a non-empty string */
    QBH_TOK_N_REPLACE,     /* every match of rx becomes `a` */
    QBH_TOK_N_UNICODE      /* Unicode normalization form `mode` */
} qbh_tok_norm_kind;

typedef struct qbh_tok_norm {
    qbh_tok_norm_kind kind;
    char *a;             /* g_malloc'd */
    GRegex *rx;          /* REPLACE */
    GNormalizeMode mode; /* UNICODE */
} qbh_tok_norm;

typedef enum qbh_tok_pre_kind {
    QBH_TOK_P_SPLIT = 1, /* pieces from the matches of rx, by `behavior` */
    QBH_TOK_P_BYTELEVEL, /* GPT-2's byte -> character map (and its regex) */
    QBH_TOK_P_METASPACE  /* ' ' -> replacement, prepend, split on it */
} qbh_tok_pre_kind;

/* tokenizers' SplitDelimiterBehavior. */
typedef enum qbh_tok_behavior {
    QBH_TOK_S_REMOVED = 1,
    QBH_TOK_S_ISOLATED,
    QBH_TOK_S_MERGED_PREV,
    QBH_TOK_S_MERGED_NEXT,
    QBH_TOK_S_CONTIGUOUS
} qbh_tok_behavior;

typedef struct qbh_tok_pre {
    qbh_tok_pre_kind kind;
    GRegex *rx; /* SPLIT; BYTELEVEL with use_regex */
    qbh_tok_behavior behavior;
    int add_prefix_space; /* BYTELEVEL */
    char *replacement;    /* METASPACE, g_malloc'd (one character) */
    int prepend;          /* METASPACE: 0 never, 1 always, 2 first */
    int split;            /* METASPACE */
} qbh_tok_pre;

typedef struct qbh_tok_added {
    char *content; /* g_malloc'd, non-empty */
    size_t len;
    int64_t id;
    int lstrip, rstrip, normalized;
} qbh_tok_added;

/* A byte trie over added-token patterns (added.c): node 0 is the
 * root; the edges live in one open-addressing table keyed by
 * (node + 1) << 8 | byte; `term` holds per node the index in qbh_tok.added
 * of the token whose pattern ends there, or -1. */
typedef struct qbh_tok_trie {
    uint64_t *key;  /* g_malloc'd, 0: empty slot */
    int32_t *child; /* g_malloc'd, per slot */
    size_t mask;    /* slots - 1 */
    int32_t *term;  /* g_malloc'd, per node */
    size_t n_nodes; /* 0: no pattern at all */
} qbh_tok_trie;

/* One merge: the pair (left id, right id) -> (rank, merged id). */
typedef struct qbh_tok_merge {
    gint64 key; /* left << 32 | right: the hash key */
    int32_t rank;
    int32_t id;
} qbh_tok_merge;

struct qbh_tok {
    const qb_host *h;     /* memory and errors (not owned) */
    const qb_json_api *J; /* h->json */
    char *what;           /* the file, for messages */
    GArray *norms;        /* qbh_tok_norm, in order */
    GArray *pres;         /* qbh_tok_pre, in order */
    qbh_tok_added *added; /* n_added, in the file's order */
    size_t n_added;
    qbh_tok_trie added_trie[2]; /* patterns of tokens with normalized 0 / 1 */
    /* The post-processor's single template around the sequence. */
    GArray *before, *after; /* int64_t ids */
    /* BPE */
    GHashTable *vocab; /* token text -> GINT_TO_POINTER(id + 1); keys in `strings` */
    GStringChunk *strings;
    qbh_tok_merge *merges; /* n_merges, keys of `merge_index` */
    size_t n_merges;
    GHashTable *merge_index; /* &key -> qbh_tok_merge (a mixing hash: load.c) */
    int64_t unk;             /* -1: none */
    int byte_fallback, fuse_unk, ignore_merges;
    int64_t max_id; /* the largest id of vocabulary, added tokens, template */
};

/* ---- bpe.c ------------------------------------------------------- */

/* Appends to ids (int64_t) the BPE encoding of one pre-token `word`
 * (UTF-8, len bytes, non-empty): the whole word when ignore_merges and it
 * is a token, else its characters (missing ones as <0xNN> byte tokens
 * with byte_fallback, else unk, fused when fuse_unk) merged pair by pair,
 * lowest rank first, leftmost first among equals (tokenizers' BPE
 * merge_word). QB_E_UNSUPPORTED naming the character when it has no token
 * and the model no unk (tokenizers would drop it silently). Thread-safe
 * on a const t. */
qb_status qbh_tok_bpe_word(const qbh_tok *t, const char *word, size_t len, GArray *ids);
/* The id of token text s, or -1. Pure. */
int64_t qbh_tok_vocab_id(const qbh_tok *t, const char *s);

/* ---- normalize.c ------------------------------------------------- */

/* Applies t's normalizers in order to s (replaced in place). Pure. */
void qbh_tok_normalize(const qbh_tok *t, GString *s);

/* ---- pretok.c ---------------------------------------------------- */

/* One piece of text on its way through the pre-tokenizers. */
typedef struct qbh_tok_piece {
    GString *s;
    int at_origin; /* starts at offset 0 of the original text (Metaspace "first") */
} qbh_tok_piece;

/* Runs t's pre-tokenizers over *pieces (qbh_tok_piece, replaced by the
 * pieces they produce; empty ones dropped). Pure. */
void qbh_tok_pretokenize(const qbh_tok *t, GArray **pieces);
/* Splits `s` (len bytes) by the non-empty matches of rx with `behavior`,
 * appending each non-empty part to out as a g_malloc'd GString. Pure. */
void qbh_tok_split(const GRegex *rx, qbh_tok_behavior behavior, const char *s, size_t len,
                   GPtrArray *out);
/* GPT-2's bytes_to_unicode: the UTF-8 text (at most 2 bytes + NUL) of the
 * character byte b stands for. Pure. */
const char *qbh_tok_byte_char(unsigned b);

/* ---- added.c ----------------------------------------------------- */

/* Builds t->added_trie from t->added once the normalizers are loaded: a
 * token with normalized == 0 is matched as written, one with normalized ==
 * 1 as t's normalizers rewrite it (tokenizers' AddedVocabulary
 * refresh_added_tokens normalizes those patterns); a pattern two tokens
 * share keeps the first in file order. Cannot fail (GLib aborts when out
 * of memory). */
void qbh_tok_added_index(qbh_tok *t);
/* Frees what qbh_tok_added_index built (NULL-safe fields). */
void qbh_tok_added_free(qbh_tok *t);

/* Where an added token matches in s: the leftmost match of any added token
 * with normalized == `normalized` at or after `from`, the longest there
 * (tokenizers' AddedVocabulary, leftmost-longest), widened over the
 * whitespace beside it for lstrip / rstrip. Returns the token index and
 * sets [*start, *end), or -1 when none. O(length of the longest match) per
 * position of s. Pure. */
long qbh_tok_added_find(const qbh_tok *t, int normalized, const char *s, size_t len, size_t from,
                        size_t *start, size_t *end);

#endif /* QBH_TOK_H */
