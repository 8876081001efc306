/*
 * quantbridge SDK — the reader interface: one source format in, canonical
 * tensors (qb_tensor.h) out.
 *
 * STABILITY: stable.
 *
 * Call classes (THREADING):
 *   discovery: probe              — never concurrent with another call into
 *                                   the same plugin library
 *   instance:  open, close, get_model_info, get_tensor_info, get_grid_info
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
} qb_reader_vtable;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_reader_vtable, <first new field>) >= QB_READER_VTABLE_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_reader_vtable);
#define QB_READER_VTABLE_SIZE_1_0 QB_ABI_SIZE_1_0(qb_reader_vtable, read_grid)
QB_ABI_STATIC_ASSERT(QB_READER_VTABLE_SIZE_1_0 == sizeof(qb_reader_vtable), qb_reader_vtable_size_1_0);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_READER_H */
