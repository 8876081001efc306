/*
 * GGUF reader — the reader instance behind the plugin vtable, also called
 * directly by the unit tests. Internal to the gguf plugin.
 *
 * Threading: open/close never concurrent on one reader; read_rows and
 * read_grid are pure reads of read-only maps and may run concurrently.
 */
#ifndef GGUF_READER_H
#define GGUF_READER_H

#include "gguf_names.h"

#include <quantbridge/qb_reader.h>

typedef struct gguf_reader gguf_reader;

/* Opens a GGUF model (file, any shard, or directory), maps its tensors and
 * builds its config. Failure: any status of gguf_model_open,
 * gguf_arch_hparams, gguf_names_map, gguf_hfconfig_build; *out NULL. */
qb_status gguf_reader_open(const qb_host *h, const char *path, gguf_reader **out);

/* gguf_reader_open with the reader option tokenizer: skip_tokenizer 0
 * rebuilds the HF tokenizer files from tokenizer.ggml.* into a private
 * temporary directory (qb_model_info.tokenizer_dir; removed by
 * gguf_reader_close) and fails when that cannot be done exactly
 * (gguf_tokenizer_build); 1 leaves them out with a warning. */
qb_status gguf_reader_open_opts(const qb_host *h, const char *path, int skip_tokenizer, gguf_reader **out);

/* Releases the reader. NULL is a no-op. */
void gguf_reader_close(gguf_reader *r);

/* Number of canonical (Hugging Face) tensors. Never fails. */
size_t gguf_reader_count(const gguf_reader *r);
/* Canonical tensor i, or NULL when out of range. Owned by the reader,
 * valid until close. */
const gguf_ctensor *gguf_reader_tensor(const gguf_reader *r, size_t i);
/* config.json text, owned by the reader, valid until close. */
const char *gguf_reader_config_json(const gguf_reader *r);

/* HF rows [row0, row0 + n_rows) of tensor index as float32 into dst
 * (n_rows * cols floats). QB_E_RANGE for a bad index/range, QB_E_NOMEM. */
qb_status gguf_reader_read_rows(const gguf_reader *r, size_t index, int64_t row0, int64_t n_rows, float *dst);

/* Q4_0 integer grid (bits 4, group 32, symmetric zero 8, fp16 scales);
 * QB_E_UNSUPPORTED for a tensor without one. */
qb_status gguf_reader_get_grid_info(const gguf_reader *r, size_t index, qb_grid_info *out);
qb_status gguf_reader_read_grid(const gguf_reader *r, size_t index, int64_t row0, int64_t n_rows, qb_grid_rows *out);

/* The plugin's reader vtable (for tests). */
const qb_reader_vtable *gguf_reader_vtable(void);

#endif /* GGUF_READER_H */
