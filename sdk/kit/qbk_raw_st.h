/*
 * The stored-tensor view (qb_raw_tensor_info, SDK ABI 1.2) of a
 * safetensors tensor, for readers of safetensors checkpoints. Internal
 * kit code, never ABI.
 */
#ifndef QBK_RAW_ST_H
#define QBK_RAW_ST_H

#include <stdint.h>

#include <quantbridge/qb_reader.h>
#include <quantbridge/qb_safetensors.h>

/* Fills *out (struct_size set by the caller) from st: name, the file's
 * dtype name, dims as stored, n_bytes, file path, and `canonical` (the
 * index of the canonical tensor it feeds, or -1). Pointers are borrowed
 * from st (valid while its set is open). Cannot fail; thread-safe. */
void qbk_raw_from_st(const qb_st_tensor *st, int64_t canonical, qb_raw_tensor_info *out);

#endif /* QBK_RAW_ST_H */
