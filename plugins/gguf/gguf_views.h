/*
 * GGUF reader — the source as stored (SDK ABI 1.2 reader views): every
 * tensor of every shard with its ggml type, and the key/values of the
 * metadata shard. Internal to the gguf plugin.
 *
 * Threading: pure reads of the read-only maps; callable from any thread
 * while the model is open.
 */
#ifndef GGUF_VIEWS_H
#define GGUF_VIEWS_H

#include "gguf_names.h"
#include "gguf_split.h"

#include <quantbridge/qb_reader.h>

/* Stored tensor `index` of m, counting shard by shard in file order, into
 * *out (struct_size set by the caller). canonical: index into t[0..n) of
 * the one canonical tensor that reads it, -1 when none or several do.
 * Returns QB_OK or QB_E_RANGE past the last tensor (no message). */
qb_status gguf_view_raw(const gguf_model *m, const gguf_ctensor *t, size_t n, size_t index,
                        qb_raw_tensor_info *out);

/* Metadata entry `index` into *out (see qb_meta_entry): first the
 * key/values of the metadata shard, GGUF type name ("u32", "string",
 * "array[string]") and the value as text, strings quoted, arrays as
 * "[count] first, ..." cut to out->value_cap; then one
 * "quantbridge.scale_block:NAME" (type "int", the decimal columns per
 * source scale) per canonical tensor of t[0..n) with a block_key, in
 * tensor order. Returns QB_OK or QB_E_RANGE past the last entry (no
 * message). */
qb_status gguf_view_meta(const gguf_model *m, const gguf_ctensor *t, size_t n, size_t index,
                         qb_meta_entry *out);

#endif /* GGUF_VIEWS_H */
