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

/* gguf_reader_open_opts flags. */
#define GGUF_OPEN_SKIP_TOKENIZER 1u  /* reader option tokenizer=skip */
#define GGUF_OPEN_TOKENIZER_STATE 2u /* the host reads qb_model_info.tokenizer_state (ABI >= 1.3) */

/* gguf_reader_open with options. Without GGUF_OPEN_SKIP_TOKENIZER the HF
 * tokenizer files are rebuilt from tokenizer.ggml.* into a private
 * temporary directory (qb_model_info.tokenizer_dir; removed by
 * gguf_reader_close), with one warning naming what the GGUF cannot tell
 * (gguf_tokenizer_notes); when that cannot be done exactly
 * (gguf_tokenizer_build), open fails with its status and message plus the
 * reader option that skips it -- or, with GGUF_OPEN_TOKENIZER_STATE, opens
 * with no tokenizer and states QB_TOKENIZER_REFUSED and that message
 * (gguf_reader_tokenizer_state). With GGUF_OPEN_SKIP_TOKENIZER nothing is
 * rebuilt: a warning says the output gets no tokenizer.json, or, with
 * GGUF_OPEN_TOKENIZER_STATE, QB_TOKENIZER_SKIPPED is stated and the host
 * warns. Other failures as gguf_reader_open. */
qb_status gguf_reader_open_opts(const qb_host *h, const char *path, unsigned flags, gguf_reader **out);

/* What the reader states about its tokenizer (qb_model_info.tokenizer_state)
 * and *note its one line (NULL with UNSTATED), owned by r. Pure. */
qb_tokenizer_state gguf_reader_tokenizer_state(const gguf_reader *r, const char **note);

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
