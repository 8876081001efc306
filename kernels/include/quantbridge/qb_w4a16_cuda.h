/*
 * quantbridge W4A16 CUDA kernels (libquantbridge-w4a16-cuda): y = x . W^T
 * on the GPU, reading the native format as stored (see qb_w4a16.h for the
 * encoding). Pure C99: the stream is a `void *` holding a cudaStream_t, so
 * this header needs no CUDA headers.
 *
 * Kernels:
 *   - tensor-core mma.sync m16n8k16 kernel, M = 1..16 per launch, used when
 *     K % 32 == 0, group_size % 32 == 0 (after the clamp to K), packed and
 *     x 16-byte aligned (each 32-column block then lies in one group: its
 *     scale is applied once, in fp32); split-K over CTAs for narrow N with
 *     a deterministic two-pass reduction through an fp32 workspace;
 *   - CUDA-core GEMV, any shape, group size and alignment, M = 1..16 per
 *     launch: the fallback and the M = 1 reference.
 * Numerics: q*x exact, fp32 accumulation, one fp16 rounding at the end.
 * Results are deterministic (no atomics) for a given device and inputs.
 */
#ifndef QUANTBRIDGE_QB_W4A16_CUDA_H
#define QUANTBRIDGE_QB_W4A16_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QB_W4A16_CUDA_AUTO 0 /* mma kernel when eligible, else GEMV */
#define QB_W4A16_CUDA_GEMV 1 /* force the CUDA-core GEMV */
#define QB_W4A16_CUDA_MMA 2  /* force the mma kernel (QB_E_UNSUPPORTED when not eligible) */

/* Rows of x one kernel launch takes. A larger M is run as ceil(M / 16)
 * launches in stream order, each re-reading all the weights: correct, but
 * for M well above 16 dequantize + cuBLAS is the faster path. */
#define QB_W4A16_CUDA_MAX_M 16

/*
 * Sizes and their meaning (both functions):
 *   - M, N, K, group_size >= 1, else QB_E_INVALID;
 *   - group_size >= K means one group per row: any such value (up to
 *     INT64_MAX) is clamped to K on the host, as the CPU GEMM does, and the
 *     group count ceil(K / group_size) is computed in 64-bit; the problem
 *     then qualifies for the mma kernel like g = K;
 *   - N <= 134217727 (INT32_MAX / 16), K <= 1073741823 (INT32_MAX / 2),
 *     M <= INT32_MAX, else QB_E_INVALID (the kernels index with int);
 *   - any M is taken (see QB_W4A16_CUDA_MAX_M); no size can make a kernel
 *     loop without end.
 *
 * CUDA errors: a call first looks for a CUDA error left pending by earlier
 * work (cudaPeekAtLastError). If there is one, the call enqueues nothing,
 * returns QB_E_INTERNAL with a message saying "an earlier CUDA error is
 * pending" and naming it, and leaves it uncleared for its owner (clear it
 * with cudaGetLastError and call again). Otherwise a failure of one of the
 * call's own CUDA calls or launches (checked with cudaPeekAtLastError after
 * each) is QB_E_INTERNAL naming the step; a non-sticky error is then
 * consumed, so the error state is as the caller left it; a sticky one
 * (the context is unusable, possibly because of earlier asynchronous work)
 * cannot be. Errors of the kernels while they run surface later, at the
 * caller's next synchronisation, as for any kernel.
 *
 * Threads, streams and workspaces: the library keeps no shared mutable
 * state (the error message is per thread), so any number of threads may
 * call it at once, on one device or several; "thread-safe" means only
 * that. The buffers are the caller's: y and the workspace are written
 * asynchronously, in stream order. Calls on one stream run in order, so
 * one workspace serves any number of calls on that stream without
 * synchronisation; a workspace must never serve two streams (or two
 * threads' calls on different streams) whose work may overlap in time:
 * give each stream its own, or order the streams (events). The same holds
 * for y. Inputs must stay valid and unchanged until the stream has run
 * the call. A call enqueues kernel launches only (no allocation, copy or
 * synchronisation), so it can be captured in a CUDA graph.
 */

/* Bytes of device workspace qb_w4a16_gemm_cuda uses for full speed on this
 * problem on the current device: the permuted copy of x, align16(M * K * 2)
 * bytes, when has_perm, plus the split-K partial sums, splits *
 * min(M, QB_W4A16_CUDA_MAX_M) * N floats, when the shape can take the mma
 * kernel (0 when no split is worth it). The value depends on the current
 * device's multiprocessor count. Returns 0 and *bytes; QB_E_INVALID (bytes
 * NULL, sizes as above: nothing queried); QB_E_INTERNAL on a CUDA error or
 * an earlier pending one (message in qb_w4a16_cuda_error()). Thread-safe. */
qb_status qb_w4a16_cuda_workspace_bytes(int64_t M, int64_t N, int64_t K, int64_t group_size,
                                        int has_perm, size_t *bytes);

/* Enqueues y = x[perm] . W^T on `stream` (a cudaStream_t of the current
 * device; NULL = legacy default stream), then returns; the kernels run
 * asynchronously. Every pointer is device memory of the current device:
 *   x       fp16 [M][K], 2-byte aligned (16 for the mma kernel without perm);
 *   y       fp16 [M][N], 2-byte aligned, overlapping no other buffer;
 *   packed  [N][ceil(K/2)] (16-byte aligned for the mma kernel);
 *   scales  fp16 [N][ceil(K/group_size)], 2-byte aligned;
 *   perm    NULL or int32 [K], 4-byte aligned, a permutation of 0..K-1 (an
 *           out-of-range entry yields NaN outputs, never an out-of-bounds
 *           read; qb_w4a16_linear_get validates perms on load);
 *   workspace  NULL or workspace_bytes of device memory, 16-byte aligned,
 *           overlapping none of the inputs (nor y); it holds the permuted x
 *           (a perm needs align16(M * K * 2) bytes: else QB_E_INVALID),
 *           then the split-K partial sums: with less than
 *           qb_w4a16_cuda_workspace_bytes() the call still works, unsplit
 *           (slower; same result up to fp32 summation order). Never
 *           written past workspace_bytes.
 * Every check (pointers, sizes, alignment, overlap, workspace, kernel
 * eligibility, an earlier pending CUDA error) is done before anything is
 * enqueued: a refused call enqueues nothing (not even the perm gather)
 * and writes neither y nor the workspace.
 * Returns 0 once the kernels are enqueued; QB_E_INVALID (sizes as above,
 * NULL x/y/packed/scales, misalignment, overlap, perm without enough
 * workspace, unknown kernel); QB_E_UNSUPPORTED (QB_W4A16_CUDA_MMA on a
 * problem the mma kernel cannot take: K % 32 != 0, group_size % 32 != 0
 * after the clamp, or x / packed not 16-byte aligned); QB_E_INTERNAL (CUDA
 * errors, above; when a launch after the first fails, y is unspecified).
 * Message in qb_w4a16_cuda_error(). Thread-safe (above). */
qb_status qb_w4a16_gemm_cuda(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                             const uint16_t *scales, const int32_t *perm, int64_t M, int64_t N,
                             int64_t K, int64_t group_size, void *workspace, size_t workspace_bytes,
                             int kernel, void *stream);

/* Message of the calling thread's last failure ("" if none); valid until
 * that thread's next call of this library. */
const char *qb_w4a16_cuda_error(void);

/* ---------------------------------------------------------------- session
 * A device and its buffers for running products whose operands live in
 * host memory (the forward pass of `quantbridge forward --device cuda`):
 * each call copies the packed weights, scales, perm and x to device
 * buffers the session keeps (grown, never shrunk: device memory is that of
 * the largest product, not of the model), runs qb_w4a16_gemm_cuda on the
 * session's stream and copies y back. One session serves one thread at a
 * time; use one per thread. */
typedef struct qb_w4a16_cuda_session qb_w4a16_cuda_session; /* opaque */

/* Opens a session on CUDA device `device` (0 = the first). Returns 0 and
 * *out; else *out NULL and a message in err (when err_len > 0):
 * QB_E_UNSUPPORTED starting "no CUDA device" when the runtime finds no
 * device (no GPU, no driver, or a driver too old for this runtime; the
 * CUDA error follows), QB_E_INVALID for a device number out of range or
 * NULL out, QB_E_INTERNAL for another CUDA error, QB_E_NOMEM. Thread-safe. */
qb_status qb_w4a16_cuda_session_open(int device, qb_w4a16_cuda_session **out, char *err,
                                     size_t err_len);

/* Frees the session's device buffers and stream. NULL is a no-op. */
void qb_w4a16_cuda_session_close(qb_w4a16_cuda_session *s);

/* y = x[perm] . W^T as qb_w4a16_gemm_cpu (same arguments, same layouts, all
 * in host memory; group_size >= K clamped to K): the operands go to the
 * device, qb_w4a16_gemm_cuda runs with QB_W4A16_CUDA_AUTO and the
 * workspace it asks for, y comes back, and the call returns when y is
 * written (synchronous). Returns 0; QB_E_INVALID (NULL pointers, sizes as
 * qb_w4a16_gemm_cuda); QB_E_NOMEM when device memory runs out;
 * QB_E_INTERNAL for a CUDA error. Message in qb_w4a16_cuda_session_error().
 * Not thread-safe on one session. */
qb_status qb_w4a16_cuda_session_gemm(qb_w4a16_cuda_session *s, const uint16_t *x, uint16_t *y,
                                     const uint8_t *packed, const uint16_t *scales,
                                     const int32_t *perm, int64_t M, int64_t N, int64_t K,
                                     int64_t group_size);

/* The device's name and compute capability ("NVIDIA H200, sm_90"), for
 * logs. Valid until the session is closed. */
const char *qb_w4a16_cuda_session_device(const qb_w4a16_cuda_session *s);

/* Message of the session's last failure ("" if none); valid until its next
 * call. */
const char *qb_w4a16_cuda_session_error(const qb_w4a16_cuda_session *s);

/* ---------------------------------------------------------------- backend
 * The format's linear backend on the GPU (qb_linear_backend.h): over a
 * model its reader names the format ("sm86-w4a16"), the packed linears run
 * through a session on CUDA device 0, the operands copied per product
 * (qb_w4a16_cuda_session_gemm: the same contract as the CPU GEMM, another
 * summation order). Opened over another model: *out NULL, or with
 * QB_LINEAR_BACKEND_REQUIRED QB_E_UNSUPPORTED "PATH is not a W4A16
 * directory (read by READER): only packed W4A16 linears run on the GPU".
 * Errors (through h): the loader's (qb_w4a16_open), the session's
 * (qb_w4a16_cuda_session_open: "no CUDA device ..."), QB_E_NOMEM. The
 * backend's products run on the calling thread only. Logs the device at
 * info level. Main thread. Declared with the struct types only, so this
 * header needs none of the SDK's headers. */
struct qb_host;
struct qb_model_src;
struct qb_linear_backend;
qb_status qb_w4a16_cuda_backend_open(const struct qb_host *h, const struct qb_model_src *src,
                                     unsigned flags, struct qb_linear_backend **out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_W4A16_CUDA_H */
