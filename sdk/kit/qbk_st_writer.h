/*
 * qbk_st_writer.h — one safetensors file written front to back through
 * the host's qb_sink (internal kit; the writers of hf-dense and
 * sm86-w4a16).
 *
 * Layout (huggingface/safetensors README, "Format"): u64 little-endian
 * header size N, N bytes of JSON header, then the data of every tensor at
 * its data_offsets with no holes. The header is padded with spaces to a
 * multiple of 8 so the data starts aligned (safetensors' own serializer
 * does the same). "__metadata__": {"format": "pt"} is always written:
 * transformers' load_state_dict refuses a file whose metadata format is not
 * pt/tf/flax/mlx. Every size is known beforehand, so the header goes first
 * and the data is streamed after it; the file is never revisited.
 *
 * THREADING: one file is written by one thread at a time; distinct files
 * are independent.
 */
#ifndef QBK_ST_WRITER_H
#define QBK_ST_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_writer.h>
#include <quantbridge/qb_tensor.h>

/* One tensor of the header. The writer only reads it (name is char * so
 * that a caller may keep its own malloc'd copy in its plan and free it). */
typedef struct qbk_st_out_tensor {
    char *name;        /* tensor name (any UTF-8; escaped as JSON) */
    const char *dtype; /* safetensors dtype string: "F16", "BF16", "F32", "U8", ... */
    uint32_t n_dims;   /* 0 .. QB_MAX_DIMS */
    int64_t dims[QB_MAX_DIMS];
    uint64_t n_bytes;  /* data bytes; the caller keeps it equal to the shape's */
} qbk_st_out_tensor;

typedef struct qbk_st_writer qbk_st_writer;

/* Creates file `name` through sink->create and writes the complete header
 * for tensors[0 .. n) (data laid out in that order). The array is read
 * only during the call.
 * Returns QB_OK with *out owned by the caller (qbk_st_writer_close or
 * qbk_st_writer_discard), or QB_E_NOMEM / the sink's status with the
 * message set through h naming the file; then *out is NULL and a created
 * sink file has been closed. */
qb_status qbk_st_writer_open(const qb_host *h, const qb_sink *sink, const char *name,
                             const qbk_st_out_tensor *tensors, size_t n, qbk_st_writer **out);

/* Appends len data bytes. Writing past the total the header declares is
 * QB_E_INTERNAL (a writer bug) naming the file; sink errors pass through
 * with the sink's message. */
qb_status qbk_st_writer_write(qbk_st_writer *f, const void *buf, size_t len);

/* Data bytes still owed before the file is complete. Pure. */
uint64_t qbk_st_writer_remaining(const qbk_st_writer *f);

/* Closes the sink file and frees f (always). Returns QB_E_INTERNAL naming
 * the file when data is missing (the file is short), else the sink's
 * close status; bytes / sha256 (either may be NULL) as qb_sink.close.
 * f NULL: no-op, QB_OK. */
qb_status qbk_st_writer_close(qbk_st_writer *f, uint64_t *bytes, uint8_t sha256[32]);

/* Closes and frees f after a failure elsewhere, setting no message (the
 * first failure's message must survive). NULL is a no-op. */
void qbk_st_writer_discard(qbk_st_writer *f);

#endif /* QBK_ST_WRITER_H */
