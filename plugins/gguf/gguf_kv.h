/*
 * GGUF reader — typed access to metadata values of a parsed file
 * (gguf_container.h). Integer widths vary between converters (u32, u64,
 * i32; docs/formats/gguf.md "Metadata values"), so integer getters accept every integer
 * type. Internal to the gguf plugin. All functions are pure reads of the
 * parsed file and safe to call from any thread.
 */
#ifndef GGUF_KV_H
#define GGUF_KV_H

#include "gguf_container.h"

/* The entry named `key`, or NULL. */
const gguf_kv *gguf_kv_find(const gguf_file *f, const char *key);

/* Scalar integer (any integer type, or BOOL) as int64. QB_E_NOT_FOUND when
 * absent (no message set), QB_E_FORMAT when present with another type or a
 * u64 above INT64_MAX (message names file and key). */
qb_status gguf_kv_int(const qb_host *h, const gguf_file *f, const char *key, int64_t *out);

/* Like gguf_kv_int, but also accepts an integer ARRAY (llama.cpp
 * get_key_or_arr: per-layer values) whose elements are all equal; an array
 * with differing values is QB_E_UNSUPPORTED naming the key. */
qb_status gguf_kv_int_uniform(const qb_host *h, const gguf_file *f, const char *key, int64_t *out);

/* Scalar FLOAT32/FLOAT64 (or integer) as double. Errors as gguf_kv_int. */
qb_status gguf_kv_float(const qb_host *h, const gguf_file *f, const char *key, double *out);

/* Scalar BOOL. Errors as gguf_kv_int. */
qb_status gguf_kv_bool(const qb_host *h, const gguf_file *f, const char *key, int *out);

/* STRING value as a new malloc'd NUL-terminated copy (*out owned by the
 * caller). Errors as gguf_kv_int, plus QB_E_NOMEM. */
qb_status gguf_kv_string(const qb_host *h, const gguf_file *f, const char *key, char **out);

/* Element count of an ARRAY value. Errors as gguf_kv_int. */
qb_status gguf_kv_array_len(const qb_host *h, const gguf_file *f, const char *key, uint64_t *out);

/* Integer value i of a fixed-width integer array element type `et`
 * stored at `p` (no bounds check: the caller indexes within arr_n). */
int64_t gguf_kv_int_at(uint32_t et, const uint8_t *p, uint64_t i, int *ok);

#endif /* GGUF_KV_H */
