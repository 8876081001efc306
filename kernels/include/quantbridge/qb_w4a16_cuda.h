/*
 * quantbridge W4A16 CUDA kernels (libquantbridge-w4a16-cuda): y = x . W^T
 * on the GPU, reading the native format as stored (see qb_w4a16.h for the
 * encoding). Pure C99: the stream is a `void *` holding a cudaStream_t, so
 * this header needs no CUDA headers.
 *
 * Kernels:
 *   - tensor-core mma.sync m16n8k16 kernel, M = 1..16, used when K % 32 == 0,
 *     group_size % 32 == 0, packed and x 16-byte aligned (each 32-column
 *     block then lies in one group: its scale is applied once, in fp32);
 *     split-K over CTAs for narrow N with a deterministic two-pass
 *     reduction through an fp32 workspace;
 *   - CUDA-core GEMV, any shape and group size, M = 1..16: the fallback and
 *     the M = 1 reference.
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

/* Largest M the kernels take; a runtime uses dequantize + cuBLAS above. */
#define QB_W4A16_CUDA_MAX_M 16

/* Bytes of device workspace qb_w4a16_gemm_cuda uses for this problem on the
 * current device: the permuted copy of x (when has_perm) plus the split-K
 * partial sums. Returns 0 and *bytes, QB_E_INVALID, or QB_E_INTERNAL on a
 * CUDA error (message in qb_w4a16_cuda_error()). Thread-safe. */
qb_status qb_w4a16_cuda_workspace_bytes(int64_t M, int64_t N, int64_t K, int64_t group_size,
                                        int has_perm, size_t *bytes);

/* Enqueues y = x[perm] . W^T on `stream` (a cudaStream_t; NULL = legacy
 * default stream). Every pointer is device memory:
 *   x fp16 [M][K]; y fp16 [M][N]; packed [N][ceil(K/2)]; scales fp16
 *   [N][ceil(K/g)]; perm NULL or int32 [K], a permutation of 0..K-1 (an
 *   out-of-range entry yields NaN outputs, never an out-of-bounds read;
 *   qb_w4a16_linear_get validates perms on load);
 *   workspace at least qb_w4a16_cuda_workspace_bytes() bytes, 16-byte
 *   aligned; with less (or NULL) the call still works without split-K, but
 *   a perm needs its M*K*2 bytes (else QB_E_INVALID).
 * Returns 0 once the kernels are enqueued (they run asynchronously);
 * QB_E_INVALID (bad sizes, NULL pointers, unknown kernel), QB_E_UNSUPPORTED
 * (M > 16, or QB_W4A16_CUDA_MMA on an ineligible problem), QB_E_INTERNAL
 * when a CUDA call fails (message in qb_w4a16_cuda_error()). Thread-safe;
 * calls on one stream run in order. */
qb_status qb_w4a16_gemm_cuda(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                             const uint16_t *scales, const int32_t *perm, int64_t M, int64_t N,
                             int64_t K, int64_t group_size, void *workspace, size_t workspace_bytes,
                             int kernel, void *stream);

/* Message of the calling thread's last failure ("" if none). */
const char *qb_w4a16_cuda_error(void);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_W4A16_CUDA_H */
