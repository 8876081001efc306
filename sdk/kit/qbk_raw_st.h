/*
 * The stored-tensor view (qb_raw_tensor_info, SDK ABI 1.2) of a
 * safetensors tensor, for readers of safetensors checkpoints. Internal
 * kit code, never ABI.
 */
#ifndef QBK_RAW_ST_H
#define QBK_RAW_ST_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_reader.h>
#include <quantbridge/qb_safetensors.h>

/* Fills *out (struct_size set by the caller) from st: name, the file's
 * dtype name, dims as stored, n_bytes, file path, and `canonical` (the
 * index of the canonical tensor it feeds, or -1). Pointers are borrowed
 * from st (valid while its set is open). Cannot fail; thread-safe. */
void qbk_raw_from_st(const qb_st_tensor *st, int64_t canonical, qb_raw_tensor_info *out);

/* Name of canonical tensor i of a reader's model m (a callback, so each
 * reader keeps its own tensor table). */
typedef const char *(*qbk_raw_name_fn)(const void *m, size_t i);

/* The canonical tensor of a stored side tensor "<module>.<part>" (scales,
 * zero points, group maps, shapes of a quantized linear): the index i in
 * [0, n) whose name is "<module>.weight", or -1. Use after matching the
 * stored tensors a reader points to directly. Pure; thread-safe. */
int64_t qbk_raw_module_of(const char *stored, qbk_raw_name_fn name_at, const void *m, size_t n);

#endif /* QBK_RAW_ST_H */
