/*
 * quantbridge SDK — the host's strict safetensors parser, shared with every
 * reader through qb_host.safetensors.
 *
 * STABILITY: stable.
 *
 * What "strict" means (format facts: huggingface/safetensors tensor.rs,
 * Metadata::validate): header length <= 100,000,000 bytes and inside the
 * file; the header is one JSON object without duplicate keys; every dtype
 * known; dims non-negative and their product (times element size) computed
 * without overflow; data_offsets within the data buffer, sorted, gap-free,
 * non-overlapping, and each range's length equal to the byte count the dtype
 * and shape imply; the last range ends exactly at the end of the file.
 * Anything else is QB_E_FORMAT with a message naming the file and tensor.
 *
 * Files are memory-mapped read-only; data pointers may be unaligned (copy
 * with memcpy, never cast). A mapping stays valid until close().
 *
 * THREADING: a qb_st_set is immutable after open; every query may run
 * concurrently. open/close are not concurrent with queries on that set.
 */
#ifndef QUANTBRIDGE_QB_SAFETENSORS_H
#define QUANTBRIDGE_QB_SAFETENSORS_H

#include "qb_abi.h"
#include "qb_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qb_st_set qb_st_set; /* opaque: one file or a sharded checkpoint */

/* One tensor of a set. Owned by the set; valid until close(). */
typedef struct qb_st_tensor {
    uint32_t struct_size;
    const char *name;
    qb_dtype dtype;             /* QB_DT_UNKNOWN never appears: unknown dtypes fail open */
    const char *dtype_name;     /* as in the file, e.g. "BF16" */
    uint32_t n_dims;            /* 0 for a scalar */
    int64_t dims[QB_MAX_DIMS];
    const uint8_t *data;        /* mapped bytes; may be unaligned */
    uint64_t n_bytes;
    const char *file;           /* path of the file holding it */
} qb_st_tensor;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_st_tensor, <first new field>) >= QB_ST_TENSOR_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_st_tensor);
#define QB_ST_TENSOR_SIZE_1_0 QB_ABI_SIZE_1_0(qb_st_tensor, file)
QB_ABI_STATIC_ASSERT(QB_ST_TENSOR_SIZE_1_0 == sizeof(qb_st_tensor), qb_st_tensor_size_1_0);

typedef struct qb_st_api {
    uint32_t struct_size;

    /* Opens one .safetensors file. Errors: QB_E_NOT_FOUND, QB_E_IO,
     * QB_E_FORMAT, QB_E_NOMEM; message set. *out NULL on failure. */
    qb_status (*open_file)(const struct qb_host *h, const char *path, qb_st_set **out);

    /* Opens the safetensors checkpoint of a Hugging Face directory:
     *   - `model.safetensors.index.json` present: its weight_map decides;
     *     every shard named must be a plain file name inside `dir` (no '/',
     *     no "..", not a symlink leading outside), every mapped tensor must
     *     be in its shard, every tensor of a shard must be mapped to that
     *     shard, names unique across shards (else QB_E_MISMATCH);
     *   - else `model.safetensors`;
     *   - else the single *.safetensors file of the directory (older GPTQ
     *     names such as gptq_model-4bit-128g.safetensors);
     *   - several candidates without an index: QB_E_MISMATCH.
     * Errors as open_file plus QB_E_MISMATCH. */
    qb_status (*open_dir)(const struct qb_host *h, const char *dir, qb_st_set **out);

    /* Releases the set and its mappings. NULL is a no-op. */
    void (*close)(qb_st_set *set);

    size_t (*count)(const qb_st_set *set);
    /* Tensor i in [0, count), ordered by (file, offset). NULL when out of range. */
    const qb_st_tensor *(*tensor)(const qb_st_set *set, size_t i);
    /* Tensor by exact name or NULL. O(1). */
    const qb_st_tensor *(*find)(const qb_st_set *set, const char *name);
    /* Value of a `__metadata__` key of the (first) file, or NULL. */
    const char *(*metadata)(const qb_st_set *set, const char *key);
} qb_st_api;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_st_api, <first new field>) >= QB_ST_API_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_st_api);
#define QB_ST_API_SIZE_1_0 QB_ABI_SIZE_1_0(qb_st_api, metadata)
QB_ABI_STATIC_ASSERT(QB_ST_API_SIZE_1_0 == sizeof(qb_st_api), qb_st_api_size_1_0);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_SAFETENSORS_H */
