/*
 * qbk_shards.h — a safetensors checkpoint split into shard files (internal
 * kit): greedy cut points over the tensors' byte sizes in file order, the
 * shard file names and model.safetensors.index.json, for every writer that
 * shards (docs/formats/hf-dense.md, "Sharding"; docs/formats/mlx.md,
 * "Shards").
 *
 * Where the loaders' own writers differ (huggingface_hub's
 * split_state_dict_into_shards_factory behind save_pretrained, mlx-lm's
 * save_model), the caller picks: the cut rule (qbk_shard_cut), the index's
 * metadata members, its indentation and final newline, and whether one
 * shard gets an index at all (the caller writes it or not).
 * THREADING: a qbk_shards is built and read by one thread; the functions
 * keep no state.
 */
#ifndef QBK_SHARDS_H
#define QBK_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>

/* Which open shard counts as non-empty, so that a tensor that would take
 * it past the cap starts a new one instead. */
typedef enum qbk_shard_cut {
    /* the open shard holds at least one byte */
    QBK_SHARD_CUT_IF_BYTES = 0,
    /* the open shard holds at least one tensor (zero-byte ones count) */
    QBK_SHARD_CUT_IF_TENSORS = 1
} qbk_shard_cut;

typedef struct qbk_shards {
    uint32_t n;     /* shard count; >= 1 */
    size_t *first;  /* [n + 1]: shard s holds items [first[s], first[s + 1]); qbk_malloc'd */
    uint64_t total; /* sum of the item sizes */
} qbk_shards;

/* Cuts items 0..n_items-1 of bytes[i] bytes each, in order, into shards of
 * at most max_bytes (greedy: an item opens a new shard exactly when adding
 * it to the open one would pass max_bytes and the open shard is non-empty
 * by `rule`). No item: one empty shard. max_bytes >= 1, else
 * QB_E_INVALID; QB_E_NOMEM.
 * Messages go through h and name `what` (the writer). On failure *out
 * holds nothing to free. */
qb_status qbk_shards_cut(const qb_host *h, const char *what, const uint64_t *bytes,
                         size_t n_items, uint64_t max_bytes, qbk_shard_cut rule,
                         qbk_shards *out);

/* The shard holding item i (i < first[n]). Pure. */
uint32_t qbk_shards_of(const qbk_shards *s, size_t i);

/* File name of shard i into buf: "model.safetensors" when there is one
 * shard, else "model-%05u-of-%05u.safetensors" with i + 1 and n (both
 * loaders' pattern). Truncated to len - 1 characters. Pure. */
void qbk_shards_name(const qbk_shards *s, uint32_t i, char *buf, size_t len);

/* Frees s->first and zeroes *s. Safe on a zeroed struct. */
void qbk_shards_free(qbk_shards *s);

/* What goes into model.safetensors.index.json besides the map. */
typedef struct qbk_shard_index {
    const char *const *meta_keys; /* metadata members, in the order written */
    const uint64_t *meta_values;  /* their (integer) values */
    size_t n_meta;
    int indent;                   /* spaces per level (json.dump's indent) */
    int final_newline;            /* end the file with "\n" */
} qbk_shard_index;

/* Writes model.safetensors.index.json through sink:
 *   {"metadata": {<meta_keys[k]>: <meta_values[k]>, ...},
 *    "weight_map": {<name>: <shard file>, ...}}
 * laid out as Python's json.dump with that indent writes it (one member a
 * line, ": " and ","), weight_map sorted by name in byte order (sorted()
 * of ASCII names). names[t] is output tensor t, held in shard shard_of[t]
 * (< s->n). n_names >= 1. QB_E_NOMEM (message naming the file) or the
 * sink's failure. */
qb_status qbk_shards_write_index(const qb_host *h, const qb_sink *sink, const qbk_shards *s,
                                 const char *const *names, const uint32_t *shard_of,
                                 size_t n_names, const qbk_shard_index *ix);

#endif /* QBK_SHARDS_H */
