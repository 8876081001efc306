/*
 * GGUF reader — one model from one file or from a complete set of split
 * files (`<prefix>-00001-of-0000N.gguf`, keys split.no / split.count /
 * split.tensors.count). Facts: llama.cpp src/llama.cpp llama_split_path
 * and tools/gguf-split; docs/formats/gguf.md "Split files". Internal to the gguf plugin.
 */
#ifndef GGUF_SPLIT_H
#define GGUF_SPLIT_H

#include "gguf_container.h"

typedef struct gguf_model {
    size_t n_files;
    gguf_file **files;        /* files[0]: shard 1, holds the metadata */
    size_t n_tensors;         /* over all shards */
    const gguf_tinfo **by_name; /* every tensor, sorted by name */
} gguf_model;

/* Opens `path`: a GGUF file, any shard of a split set (the others are
 * found in the same directory), or a directory holding exactly one model.
 * Checks that a split set is complete and consistent (every shard present,
 * split.no matching its file name, equal split.count and
 * split.tensors.count, total tensor count, no tensor name twice).
 * Failure: the container errors, QB_E_NOT_FOUND (a shard is missing),
 * QB_E_MISMATCH (shards disagree), QB_E_FORMAT; *out NULL. Owns what it
 * returns; free with gguf_model_close. */
qb_status gguf_model_open(const qb_host *h, const char *path, gguf_model **out);

/* Releases the model and every file. NULL is a no-op. */
void gguf_model_close(gguf_model *m);

/* Metadata file (shard 1). */
const gguf_file *gguf_model_meta(const gguf_model *m);

/* Tensor by GGUF name over all shards, or NULL. O(log n). */
const gguf_tinfo *gguf_model_find(const gguf_model *m, const char *name);

/* Parses "<prefix>-NNNNN-of-MMMMM.gguf" (5 digits each) at the end of a
 * file name; returns 1 and sets *prefix_len, *no (1-based), *count, else 0. */
int gguf_split_parse_name(const char *name, size_t *prefix_len, int *no, int *count);

#endif /* GGUF_SPLIT_H */
