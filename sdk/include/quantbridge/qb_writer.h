/*
 * quantbridge SDK — the writer interface: canonical tensors in, one target
 * format out, through a host-provided sink (never raw paths).
 *
 * STABILITY: stable.
 *
 * Sequence: supports -> begin -> write_tensor for every tensor, in the order
 * begin chose -> finish (commit) | abort (discard). After finish or abort the
 * handle is gone. The host writes into a temporary directory and renames it
 * into place only after finish succeeds, so a writer never needs to clean up
 * files: abort only frees memory.
 *
 * THREADING: supports is discovery class; begin/write_tensor/finish/abort are
 * never concurrent on one handle. Inside write_tensor the writer may use
 * host->parallel_for and call qb_model_src functions from its workers
 * (those are always thread-safe).
 */
#ifndef QUANTBRIDGE_QB_WRITER_H
#define QUANTBRIDGE_QB_WRITER_H

#include "qb_abi.h"
#include "qb_param.h"
#include "qb_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- output sink --------------------------------------------------------- */

typedef struct qb_sink_file qb_sink_file; /* opaque: one output file being written */

/* Output directory seen by a writer. Owned by the host, valid until
 * finish/abort returns. All functions are thread-safe for different files. */
typedef struct qb_sink {
    uint32_t struct_size;
    void *handle;

    /* Creates file `name` in the output directory. `name` is a plain file
     * name: no '/', not "." or "..", not starting with '.'; creating the
     * same name twice is QB_E_INVALID. Errors: QB_E_INVALID, QB_E_IO, QB_E_NOMEM. */
    qb_status (*create)(void *handle, const char *name, qb_sink_file **out);

    /* Appends len bytes. Buffered by the host. Errors: QB_E_IO, QB_E_NOSPACE
     * (disk full / file size limit), QB_E_CANCELLED. After an error the file
     * is unusable except for close. */
    qb_status (*write)(qb_sink_file *f, const void *buf, size_t len);

    /* Flushes and closes; reports the byte count and the SHA-256 of all
     * bytes written (computed while writing, no re-read). Either out
     * pointer may be NULL. Always releases f, even on error. */
    qb_status (*close)(qb_sink_file *f, uint64_t *bytes, uint8_t sha256[32]);
} qb_sink;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_sink, <first new field>) >= QB_SINK_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_sink);
#define QB_SINK_SIZE_1_0 QB_ABI_SIZE_1_0(qb_sink, close)
QB_ABI_STATIC_ASSERT(QB_SINK_SIZE_1_0 == sizeof(qb_sink), qb_sink_size_1_0);

/* ---- the model, as the writer sees it ------------------------------------ */

/* Host-implemented view of the opened source, forwarding to the reader
 * with thread-safety and error context added. Valid until finish/abort.
 * Every function may be called concurrently from parallel_for workers. */
typedef struct qb_model_src {
    uint32_t struct_size;
    void *handle;
    const qb_model_info *info;
    const char *source_path;    /* path the user gave, as given */
    const char *reader_name;    /* plugin that reads the source */
    const char *reader_version;
    const char *host_version;   /* quantbridge version, for manifests */

    /* Tensor `index` in [0, info->n_tensors); *out valid until finish/abort. */
    qb_status (*tensor_info)(void *handle, size_t index, const qb_tensor_info **out);
    /* Index of the tensor named `name`; QB_E_NOT_FOUND when absent. */
    qb_status (*find)(void *handle, const char *name, size_t *index);
    /* Dense float32 rows (see qb_reader_vtable.read_rows). */
    qb_status (*read_rows)(void *handle, size_t index, int64_t row0, int64_t n_rows, float *dst);
    /* Integer grid; QB_E_UNSUPPORTED when the tensor has none. */
    qb_status (*get_grid_info)(void *handle, size_t index, qb_grid_info *out);
    qb_status (*read_grid)(void *handle, size_t index, int64_t row0, int64_t n_rows,
                           qb_grid_rows *out);
} qb_model_src;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_model_src, <first new field>) >= QB_MODEL_SRC_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_model_src);
#define QB_MODEL_SRC_SIZE_1_0 QB_ABI_SIZE_1_0(qb_model_src, read_grid)
QB_ABI_STATIC_ASSERT(QB_MODEL_SRC_SIZE_1_0 == sizeof(qb_model_src), qb_model_src_size_1_0);

/* ---- writer vtable ------------------------------------------------------- */

typedef void *qb_writer_handle;

typedef struct qb_writer_vtable {
    uint32_t struct_size;

    /* Score 0..100 for writing this model; 0 = cannot (architecture or
     * tensor set unknown). May set a message saying why. Pure. */
    int (*supports)(void *ctx, const qb_model_info *mi);

    /* Plans the whole output before any byte is written: checks every
     * tensor of `src` (an unknown tensor is an error naming it, never
     * dropped), and fills order[0 .. n_tensors) with the order in which the
     * host must call write_tensor (a permutation of the indices).
     * On failure *out is NULL and nothing was written. */
    qb_status (*begin)(void *ctx, const qb_sink *sink, const qb_model_src *src,
                       const qb_param *params, size_t *order, qb_writer_handle *out);

    /* Converts and writes tensor `index`, pulling its rows from src.
     * Memory used must be bounded by a row block, not the tensor. */
    qb_status (*write_tensor)(qb_writer_handle w, size_t index);

    /* Writes what remains (manifest, configs), closes every sink file and
     * frees the handle. The output is complete when this returns QB_OK. */
    qb_status (*finish)(qb_writer_handle w);

    /* Frees the handle after a failure or cancellation; the host discards
     * the output. Open sink files are closed by the writer here. */
    void (*abort)(qb_writer_handle w);
} qb_writer_vtable;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_writer_vtable, <first new field>) >= QB_WRITER_VTABLE_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_writer_vtable);
#define QB_WRITER_VTABLE_SIZE_1_0 QB_ABI_SIZE_1_0(qb_writer_vtable, abort)
QB_ABI_STATIC_ASSERT(QB_WRITER_VTABLE_SIZE_1_0 == sizeof(qb_writer_vtable), qb_writer_vtable_size_1_0);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_WRITER_H */
