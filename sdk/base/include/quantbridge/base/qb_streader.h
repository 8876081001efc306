/*
 * quantbridge reader base library — the reader of a safetensors directory
 * format, around the format's own tensor table (qb_base.h).
 *
 * A format fills a qb_streader_class: how to build its table of canonical
 * tensors from the opened directory (open), how to describe tensor i, how
 * to read its rows (and, for an integer grid, its grid). The base does the
 * rest of the reader vtable (qb_reader.h) the same way for every format:
 * opening the directory (qb_stdir.h) before the format and closing it
 * after, index checks with their one message, get_model_info from the
 * directory, get_tensor_info from describe, dense float rows, and the ABI
 * 1.2 stored-tensor view (get_raw_tensor_info) from the stored tensors each
 * canonical tensor names. A plugin's vtable is then its probe, its open
 * (one call to qb_streader_open) and QB_STREADER_VT_ENTRIES.
 *
 *   static const qb_streader_class my_class = {
 *       .struct_size = sizeof(qb_streader_class), .format = "myfmt",
 *       .open = my_build, .close = my_free, .describe = my_describe,
 *       .read_rows = my_rows,
 *   };
 *   static qb_status my_open(void *ctx, const char *path, const qb_param *params,
 *                            qb_reader_handle *out)
 *   {
 *       return qb_streader_open(g_host, &my_class, path, params, out);
 *   }
 *   static const qb_reader_vtable my_reader = {
 *       .struct_size = sizeof(qb_reader_vtable), .probe = my_probe, .open = my_open,
 *       QB_STREADER_VT_ENTRIES,
 *   };
 *
 * THREADING: open and close are instance calls (qb_reader.h); after open
 * the handle is immutable and the data calls may run concurrently, so a
 * format's describe, read_rows, grid_info and read_grid must be safe to
 * call from several threads at once on an opened model.
 */
#ifndef QUANTBRIDGE_BASE_QB_STREADER_H
#define QUANTBRIDGE_BASE_QB_STREADER_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_param.h>
#include <quantbridge/qb_reader.h>
#include <quantbridge/qb_safetensors.h>
#include <quantbridge/qb_tensor.h>

#include "qb_base.h"
#include "qb_stdir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most stored tensors one canonical tensor reads directly. */
#define QB_STREADER_MAX_STORED 4

typedef struct qb_streader qb_streader;

/* What a format says of canonical tensor i (describe). */
typedef struct qb_streader_tensor {
    const char *name;           /* canonical Hugging Face name; lives as long as the model */
    uint32_t n_dims;            /* 1 .. QB_MAX_DIMS */
    int64_t dims[QB_MAX_DIMS];  /* unused dims 0 */
    qb_dtype source_dtype;      /* a stored dtype, or QB_DT_QUANTIZED */
    const char *encoding;       /* source_encoding text; lives as long as the model */
    int has_grid;               /* the tensor offers the integer grid view */
    /* The stored tensors it reads directly, stored[0] its data, NULL after
     * the last: the stored-tensor view names this tensor as theirs. A
     * stored "<module>.<part>" listed by no tensor is given to the tensor
     * named "<module>.weight" when there is one (scales, group maps, shapes
     * of a quantized linear), else to none. */
    const qb_st_tensor *stored[QB_STREADER_MAX_STORED];
    uint32_t grid_codes;        /* QB_CODES_* bits of the float-coded grids it offers
                                   (qb_tensor_info.grid_codes); the format's grid_info
                                   refuses a caller that accepts none of them */
} qb_streader_tensor;

/* A format. Fields appended in later minor versions follow the last one
 * here; fill it with designated initializers and set struct_size. */
typedef struct qb_streader_class {
    uint32_t struct_size;       /* sizeof(qb_streader_class) */
    const char *format;         /* qb_model_info.source_format, e.g. "fp8" */
    uint32_t dir_flags;         /* qb_stdir_open flags (QB_STDIR_FILE_OK, QB_STDIR_DEFER_SET) */
    /* Builds the format's model from r->dir (opened; r->dir->st NULL with
     * QB_STDIR_DEFER_SET until the format calls qb_stdir_open_set): sets
     * r->model, r->n_tensors and the summary (qb_streader_set_summary).
     * Returns QB_OK or a negative status with the message set naming the
     * file and tensor; close is called on failure too, so whatever it
     * built must be reachable from r->model. Required. */
    qb_status (*open)(qb_streader *r, const qb_param *params);
    /* Frees r->model (may be NULL: open failed before making it). */
    void (*close)(qb_streader *r);
    /* Describes canonical tensor i < r->n_tensors into *out (zeroed by the
     * base). Cannot fail. Required. */
    void (*describe)(const qb_streader *r, size_t i, qb_streader_tensor *out);
    /* Rows [row0, row0 + n_rows) of tensor i as float32 into dst (n_rows
     * times its last dim floats); i is checked, the range is not. NULL:
     * every tensor is a dense float tensor read from stored[0]
     * (qb_streader_dense_rows). */
    qb_status (*read_rows)(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                           float *dst);
    /* The integer grid view (qb_reader.h get_grid_info / read_grid) of a
     * tensor whose describe sets has_grid; i is checked, and a tensor
     * without a grid is refused by the base. Both NULL or both set. */
    qb_status (*grid_info)(const qb_streader *r, size_t i, qb_grid_info *out);
    qb_status (*read_grid)(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                           qb_grid_rows *out);
} qb_streader_class;

/* The reader handle qb_streader_open makes. */
struct qb_streader {
    const qb_streader_class *klass;
    const qb_host *host;
    qb_stdir *dir;              /* the opened directory */
    void *model;                /* the format's, set by klass->open */
    size_t n_tensors;           /* canonical tensors, set by klass->open */
    char *summary;              /* one line for inspect; qb_streader_set_summary */
    void *base_private;         /* the base's own (the stored-view index) */
};

/* A reader's open: opens the directory at `path` (qb_stdir_open with
 * klass->dir_flags), calls klass->open(r, params), then indexes the stored
 * tensors for the stored-tensor view. Returns QB_OK with *out the handle
 * (free with qb_streader_vt_close), or the first failure's status with the
 * message set and *out NULL (klass->close has run). QB_E_INVALID for a
 * class without open or describe, or one without a summary after open. */
qb_status qb_streader_open(const qb_host *h, const qb_streader_class *klass, const char *path,
                           const qb_param *params, qb_reader_handle *out);

/* Sets r->summary to the printf-formatted text (host->alloc'd, replacing
 * an earlier one). QB_OK or QB_E_NOMEM with the message set. For klass->open. */
qb_status qb_streader_set_summary(qb_streader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Checks tensor index i against r->n_tensors: QB_OK, or QB_E_RANGE with
 * "<dir>: tensor index <i> outside [0, <n>)". Thread-safe. */
qb_status qb_streader_check_index(const qb_streader *r, size_t i);

/* The matrix view of a shape (qb_tensor.h): *cols the last dim (1 for a
 * scalar), *rows the product of the others. Pure. */
void qb_streader_matrix(uint32_t n_dims, const int64_t *dims, int64_t *rows, int64_t *cols);

/* 1 when st is a dense float tensor the base reads (F32, F16, BF16: a
 * qb_rows.h type), else 0. Pure. */
int qb_streader_is_dense(const qb_st_tensor *st);

/* Describes a dense float tensor passed through under its own name: name,
 * shape (a scalar as one element), dtype, encoding "f32"/"f16"/"bf16",
 * stored[0] = st. Cannot fail. */
void qb_streader_describe_dense(const qb_st_tensor *st, qb_streader_tensor *out);

/* Rows [row0, row0 + n_rows) of the matrix view of dense float tensor st
 * as float32 into dst; the mapped pages of those rows are then released
 * (qb_rows_drop_pages). QB_OK, QB_E_RANGE "<file>: <tensor>: rows [..)
 * outside [0, rows)" for a bad range, QB_E_UNSUPPORTED for a dtype that is
 * not dense float. Thread-safe. */
qb_status qb_streader_dense_rows(const qb_host *h, const qb_st_tensor *st, int64_t row0,
                                 int64_t n_rows, float *dst);

/* Fills *out (struct_size set by the caller) with the stored-tensor view
 * of st (ABI 1.2, qb_reader.h get_raw_tensor_info): name, the file's
 * dtype name, dims as stored, n_bytes, file, and `canonical` (the index
 * of the canonical tensor it feeds, or -1). Pointers are borrowed from st.
 * For a reader that keeps its own vtable; qb_streader_vt_raw_tensor uses
 * it. Cannot fail; thread-safe. */
void qb_streader_raw_info(const qb_st_tensor *st, int64_t canonical, qb_raw_tensor_info *out);

/* The reader vtable entries (qb_reader.h) for a handle from
 * qb_streader_open: put them straight into the plugin's qb_reader_vtable
 * (QB_STREADER_VT_ENTRIES, and QB_STREADER_VT_GRID_ENTRIES for a format
 * with an integer grid). Contracts as in qb_reader.h: close frees the
 * format's model (klass->close), the directory and the handle; the others
 * check the index and forward to the directory, to describe, to read_rows
 * (or the dense reading) and to the grid functions; get_raw_tensor_info
 * lists the set's stored tensors in file order with the canonical tensor
 * each feeds (QB_E_RANGE, no message, past the last). */
void qb_streader_vt_close(qb_reader_handle r);
qb_status qb_streader_vt_model_info(qb_reader_handle r, qb_model_info *out);
qb_status qb_streader_vt_tensor_info(qb_reader_handle r, size_t i, qb_tensor_info *out);
qb_status qb_streader_vt_read_rows(qb_reader_handle r, size_t i, int64_t row0, int64_t n_rows,
                                   float *dst);
qb_status qb_streader_vt_grid_info(qb_reader_handle r, size_t i, qb_grid_info *out);
qb_status qb_streader_vt_read_grid(qb_reader_handle r, size_t i, int64_t row0, int64_t n_rows,
                                   qb_grid_rows *out);
qb_status qb_streader_vt_raw_tensor(qb_reader_handle r, size_t i, qb_raw_tensor_info *out);

#define QB_STREADER_VT_ENTRIES                                                                 \
    .close = qb_streader_vt_close, .get_model_info = qb_streader_vt_model_info,               \
    .get_tensor_info = qb_streader_vt_tensor_info, .read_rows = qb_streader_vt_read_rows,     \
    .get_raw_tensor_info = qb_streader_vt_raw_tensor
#define QB_STREADER_VT_GRID_ENTRIES                                                            \
    .get_grid_info = qb_streader_vt_grid_info, .read_grid = qb_streader_vt_read_grid

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_BASE_QB_STREADER_H */
