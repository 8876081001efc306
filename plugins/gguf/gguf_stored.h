/*
 * GGUF reader — the stored-rows view of a canonical tensor (ABI 1.4,
 * stored.c). Internal to the gguf plugin.
 */
#ifndef GGUF_STORED_H
#define GGUF_STORED_H

#include "gguf_names.h"

#include <quantbridge/qb_reader.h>

/* "ggml:<TYPE>" for ggml type id `type` (docs/plugin-design.md, "Stored
 * encodings"), a static string; NULL for an unknown id. Thread-safe. */
const char *gguf_stored_encoding(uint32_t type);

/* Fills encoding, layout, rows, cols and row_bytes of *out for canonical
 * tensor c; QB_E_UNSUPPORTED (no message) when its values are not whole
 * stored rows as they are. Pure. */
qb_status gguf_stored_info(const gguf_ctensor *c, qb_stored_rows_info *out);

/* The bytes of stored row r of c's view (gguf_stored_info succeeded,
 * 0 <= r < rows): row_bytes bytes inside the file's map. Pure. */
const uint8_t *gguf_stored_row(const gguf_ctensor *c, int64_t r);

#endif /* GGUF_STORED_H */
