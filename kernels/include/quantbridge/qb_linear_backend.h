/*
 * quantbridge — a linear backend: something that runs some of a model's
 * linear products y = x . W^T itself, from the model's own stored form,
 * instead of the forward pass reading W as dense float rows (docs/forward.md,
 * "Linear backends"). The W4A16 format's library provides two
 * (qb_w4a16.h: qb_w4a16_backend_open on the CPU, qb_w4a16_cuda.h:
 * qb_w4a16_cuda_backend_open on a GPU); the forward pass takes one, opened
 * over the model it runs, and asks it for every linear first.
 *
 * STABILITY: internal to quantbridge and the kernel libraries it ships
 * (installed with them, not part of the plugin SDK's ABI); the struct is
 * append-only with struct_size, as the SDK's are.
 *
 * A backend recognises its own format: opened over a model it does not
 * serve, it says so (*out NULL) and the pass reads every linear as dense
 * rows through the model source. Pure C99.
 */
#ifndef QUANTBRIDGE_QB_LINEAR_BACKEND_H
#define QUANTBRIDGE_QB_LINEAR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_writer.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qb_linear_backend qb_linear_backend;

struct qb_linear_backend {
    uint32_t struct_size;
    /* What runs the products and what its byte counts measure, for the
     * pass's log line ("W4A16 linears (qb_w4a16_gemm_cpu)", "packed +
     * scales"). Static strings. */
    const char *name;
    const char *bytes_what;

    /* y[M][N] = x[M][K] . W^T (+ the linear's bias when the model has
     * one) for the linear `path` ("self_attn.q_proj") of decoder layer
     * `layer`, or of the head (layer -1, path "lm_head"). x and y are
     * float32, row-major, the caller's. Returns QB_OK with *bytes the
     * weight bytes the product read; QB_E_NOT_FOUND, without a message
     * and with y untouched, when the backend does not hold that linear
     * (the caller reads it as dense rows); any other failure with the
     * message set through the host it was opened with (naming the model
     * and the linear). Main thread; may use the host's parallel_for. */
    qb_status (*linear)(qb_linear_backend *b, int64_t layer, const char *path, const float *x,
                        int64_t M, int64_t K, float *y, int64_t N, uint64_t *bytes);

    /* Releases everything the backend holds, the struct too. */
    void (*close)(qb_linear_backend *b);
};

/* qb_linear_backend_open flags. */
#define QB_LINEAR_BACKEND_REQUIRED                                                                 \
    1u /* a model the backend does not serve is an error
                                         (QB_E_UNSUPPORTED naming the model), not *out NULL */

/* How a backend is opened (the signature of qb_w4a16_backend_open and
 * qb_w4a16_cuda_backend_open): over the open model `src`, with the
 * services `h` (memory, errors, thread pool; the pointer must outlive the
 * backend). QB_OK with *out, or with *out NULL when the model is not one
 * the backend serves (unless QB_LINEAR_BACKEND_REQUIRED); a failure with
 * the message set through h and *out NULL. Main thread. */
typedef qb_status (*qb_linear_backend_open_fn)(const qb_host *h, const qb_model_src *src,
                                               unsigned flags, qb_linear_backend **out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_LINEAR_BACKEND_H */
