/*
 * libquantbridge-w4a16 — what the CPU and the CUDA linear backends of the
 * W4A16 format share (w4a16_backend.c): the model they were opened over
 * and the lookup of one packed linear. Internal to kernels/; hidden.
 */
#ifndef W4A16_BACKEND_INTERNAL_H
#define W4A16_BACKEND_INTERNAL_H

#include <quantbridge/qb_linear_backend.h>
#include <quantbridge/qb_w4a16.h>

#include "w4a16_names.h"

/* The reader's source_format of a model of this format. */
#define W4A16_BACKEND_FORMAT W4A16_FORMAT

/* One opened model of the format. */
typedef struct w4a16_backend {
    const qb_host *h;      /* services of the backend's user */
    const char *path;      /* the model source's path (for messages; the source's) */
    qb_w4a16_model *model; /* owned (qb_w4a16_close) */
} w4a16_backend;

/* What both backends start with: the interface, then the model. */
typedef struct w4a16_backend_base {
    qb_linear_backend pub;
    w4a16_backend m;
} w4a16_backend_base;

/* A backend of `size` bytes (a struct starting with w4a16_backend_base,
 * zeroed, pub.struct_size and bytes_what set) over src, its model open
 * (w4a16_backend_model): *out NULL and QB_OK when src is not of the
 * format and flags do not require it. Errors through h, *out NULL; free
 * a backend with w4a16_backend_free. */
qb_status w4a16_backend_new(const qb_host *h, const qb_model_src *src, unsigned flags, size_t size,
                            w4a16_backend_base **out);
/* Closes the model and frees the backend (NULL: nothing). */
void w4a16_backend_free(w4a16_backend_base *b);

/* 1 when src was read by the format's own reader. Pure. */
int w4a16_backend_is_mine(const qb_model_src *src);

/* Fills *b for src: *mine 0 and QB_OK when src is not of the format
 * (QB_E_UNSUPPORTED naming it with QB_LINEAR_BACKEND_REQUIRED in flags);
 * else the directory opened with qb_w4a16_open (its failure with the
 * loader's message, naming the file). Errors through h. */
qb_status w4a16_backend_model(w4a16_backend *b, const qb_host *h, const qb_model_src *src,
                              unsigned flags, int *mine);

/* The packed linear `path` of `layer` (-1: the head) with K input columns
 * and N output rows into *q: QB_E_NOT_FOUND without a message when the
 * model holds no such packed linear; the loader's failure, or
 * QB_E_MISMATCH when it has another number of rows, with the message set.
 * Thread-safe (the loader's queries are). */
qb_status w4a16_backend_find(w4a16_backend *b, int64_t layer, const char *path, int64_t K,
                             int64_t N, qb_w4a16_linear *q);

/* Packed + scales bytes of q. Pure. */
uint64_t w4a16_backend_bytes(const qb_w4a16_linear *q);

/* x[M][K] rounded to fp16, in h->alloc memory (h->free); NULL with the
 * message set when out of memory. */
uint16_t *w4a16_backend_x16(const qb_host *h, const float *x, int64_t M, int64_t K);

/* y[M][N] += q's bias (fp16), when q has one. */
void w4a16_backend_bias(const qb_w4a16_linear *q, float *y, int64_t M, int64_t N);

#endif
