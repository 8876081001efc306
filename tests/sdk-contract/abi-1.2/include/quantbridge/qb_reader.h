/*
 * quantbridge SDK — the reader interface: one source format in, canonical
 * tensors (qb_tensor.h) out.
 *
 * STABILITY: stable.
 *
 * Call classes (THREADING):
 *   discovery: probe              — never concurrent with another call into
 *                                   the same plugin library
 *   instance:  open, close, get_model_info, get_tensor_info, get_grid_info,
 *              get_raw_tensor_info, get_metadata (ABI 1.2)
 *                                 — never concurrent on the same handle
 *   data:      read_rows, read_grid
 *                                 — concurrent on ONE handle (from parallel_for
 *                                   workers) only when the plugin sets
 *                                   QB_PLUGIN_CONCURRENT_READS; the host
 *                                   serialises them otherwise. Data calls may
 *                                   overlap instance-class *queries*
 *                                   (get_*_info) but never open/close.
 *
 * Errors: every qb_status-returning call sets a message via host->set_error
 * naming the file and tensor. The host treats QB_E_UNSUPPORTED from
 * get_grid_info as "no grid" and anything else as failure.
 */
#ifndef QUANTBRIDGE_QB_READER_H
#define QUANTBRIDGE_QB_READER_H

#include "qb_abi.h"
#include "qb_param.h"
#include "qb_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Probe scores. */
#define QB_PROBE_NONE 0      /* certainly not mine */
#define QB_PROBE_WEAK 25     /* name or extension only */
#define QB_PROBE_POSSIBLE 50
#define QB_PROBE_LIKELY 80
#define QB_PROBE_CERTAIN 100 /* magic and structure checked */

/* Zero bytes the host guarantees after head[head_len], so probes may
 * over-read a fixed-size magic without a length check. */
#define QB_PROBE_PADDING 64

/* What the host hands every probe. Owned by the host, valid during the call. */
typedef struct qb_probe_input {
    uint32_t struct_size;
    const char *path;            /* what the user named */
    int32_t is_dir;              /* path is a directory */
    const char *main_file;       /* file whose head[] is given (path itself when
                                    it is a file); NULL for a directory */
    const uint8_t *head;         /* first head_len bytes + QB_PROBE_PADDING zeros;
                                    NULL for a directory */
    size_t head_len;             /* up to 64 KiB */
    const char *const *siblings; /* NULL-terminated sorted names of the directory
                                    (path itself, or the file's directory) */
    const char *config_json;     /* NUL-terminated text of config.json in that
                                    directory (<= 4 MiB), or NULL */
} qb_probe_input;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_probe_input, <first new field>) >= QB_PROBE_INPUT_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_probe_input);
#define QB_PROBE_INPUT_SIZE_1_0 QB_ABI_SIZE_1_0(qb_probe_input, config_json)
QB_ABI_STATIC_ASSERT(QB_PROBE_INPUT_SIZE_1_0 == sizeof(qb_probe_input), qb_probe_input_size_1_0);

typedef void *qb_reader_handle; /* plugin-defined instance, opaque to the host */

/* ABI 1.2. One tensor as the source stores it, before the reader's
 * canonical view (`quantbridge inspect --raw`, and the on-disk bytes
 * behind each canonical tensor). Filled by the reader; every pointer is
 * owned by the reader and valid until its close(). */
typedef struct qb_raw_tensor_info {
    uint32_t struct_size;
    const char *name;          /* as stored: "blk.0.attn_q.weight", "...q_proj.qweight" */
    const char *type;          /* the format's own type name: "Q4_K", "I32", "F16"; never NULL */
    uint32_t n_dims;           /* 0..QB_MAX_DIMS (0: a scalar) */
    int64_t dims[QB_MAX_DIMS]; /* as stored, in the format's own order (GGUF: ne[0] first) */
    uint64_t n_bytes;          /* bytes of tensor data in the file */
    const char *file;          /* path of the file holding it, or NULL */
    int64_t canonical;         /* index of the canonical tensor (get_tensor_info) whose
                                  values it holds, or -1 when it feeds none or several */
} qb_raw_tensor_info;

QB_ABI_ALIGN_HELPER(qb_raw_tensor_info);
#define QB_RAW_TENSOR_INFO_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_raw_tensor_info, canonical)
QB_ABI_STATIC_ASSERT(QB_RAW_TENSOR_INFO_SIZE_1_2 == sizeof(qb_raw_tensor_info),
                     qb_raw_tensor_info_size_1_2);

/* ABI 1.2. One metadata entry of the source (a GGUF key/value, a
 * safetensors __metadata__ key), for `quantbridge inspect --metadata`.
 * The caller sets struct_size, value and value_cap; the reader sets key
 * and type (reader-owned, valid until close()) and writes the value as
 * NUL-terminated text into value[value_cap], cut to fit. Arrays are
 * summarised (element type, count, the first few elements). */
typedef struct qb_meta_entry {
    uint32_t struct_size;
    const char *key;           /* OUT: never NULL */
    const char *type;          /* OUT: the format's type name: "u32", "string",
                                  "array[string]"; never NULL */
    char *value;               /* IN: caller's buffer; OUT: the value as text */
    size_t value_cap;          /* IN: bytes at value, >= 1 */
} qb_meta_entry;

QB_ABI_ALIGN_HELPER(qb_meta_entry);
#define QB_META_ENTRY_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_meta_entry, value_cap)
QB_ABI_STATIC_ASSERT(QB_META_ENTRY_SIZE_1_2 == sizeof(qb_meta_entry), qb_meta_entry_size_1_2);

typedef struct qb_reader_vtable {
    uint32_t struct_size;

    /* Confidence 0..100 that `in` is this reader's format. Pure: no
     * writes, no state, nothing allocated that outlives the call. Must not
     * crash on any input. */
    int (*probe)(void *ctx, const qb_probe_input *in);

    /* Opens `path` (file or directory) with this reader's typed options.
     * Validates the whole model description up front (every tensor found,
     * paired and consistent), so later data calls fail only on I/O.
     * On failure *out is NULL and nothing is left allocated. */
    qb_status (*open)(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out);

    /* Releases everything the handle owns. NULL is a no-op. */
    void (*close)(qb_reader_handle r);

    /* Fills *out (caller set out->struct_size). */
    qb_status (*get_model_info)(qb_reader_handle r, qb_model_info *out);

    /* Fills *out for tensor index in [0, n_tensors) (caller set struct_size).
     * QB_E_RANGE for a bad index. */
    qb_status (*get_tensor_info)(qb_reader_handle r, size_t index, qb_tensor_info *out);

    /* Rows [row0, row0 + n_rows) of the matrix view as float32 into dst
     * (n_rows * cols floats, caller-owned). QB_E_RANGE when the range is
     * outside the tensor. */
    qb_status (*read_rows)(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                           float *dst);

    /* Optional (NULL when the reader never has grids). Describes the integer
     * grid of a tensor; QB_E_UNSUPPORTED when this tensor has none. */
    qb_status (*get_grid_info)(qb_reader_handle r, size_t index, qb_grid_info *out);

    /* Optional, with get_grid_info. Fills the caller's buffers for rows
     * [row0, row0 + n_rows). */
    qb_status (*read_grid)(qb_reader_handle r, size_t index, int64_t row0, int64_t n_rows,
                           qb_grid_rows *out);

    /* ABI 1.2. Both optional (NULL: the reader offers no such view); the
     * host checks QB_HAS_FIELD first, a 1.0/1.1 table does not have them. */

    /* Fills *out (caller set struct_size) for stored tensor `index`,
     * counting from 0 in the order the source stores them; QB_E_RANGE
     * (no message needed) once index passes the last. */
    qb_status (*get_raw_tensor_info)(qb_reader_handle r, size_t index, qb_raw_tensor_info *out);

    /* Fills *out (see qb_meta_entry) for metadata entry `index` in the
     * source's order; QB_E_RANGE (no message needed) past the last. */
    qb_status (*get_metadata)(qb_reader_handle r, size_t index, qb_meta_entry *out);
} qb_reader_vtable;

/* ABI 1.0 size (qb_abi.h): a 1.0 table ends at read_grid. */
QB_ABI_ALIGN_HELPER(qb_reader_vtable);
#define QB_READER_VTABLE_SIZE_1_0 QB_ABI_SIZE_1_0(qb_reader_vtable, read_grid)
QB_ABI_STATIC_ASSERT(offsetof(qb_reader_vtable, get_raw_tensor_info) >= QB_READER_VTABLE_SIZE_1_0,
                     qb_reader_vtable_size_1_0);
#define QB_READER_VTABLE_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_reader_vtable, get_metadata)
QB_ABI_STATIC_ASSERT(QB_READER_VTABLE_SIZE_1_2 == sizeof(qb_reader_vtable), qb_reader_vtable_size_1_2);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_READER_H */
