/*
 * Internal to libquantbridge-w4a16-cuda: every decision qb_w4a16_gemm_cuda
 * and qb_w4a16_cuda_workspace_bytes make before anything is enqueued (the
 * argument checks, the group_size clamp, the 64-bit group count, the kernel
 * choice, the split-K count and the workspace layout), as plain C with no
 * CUDA dependency. qb_w4a16_cuda.cu adds only the device queries and the
 * launches, so tests check all of this on machines without a GPU
 * (tests/kernels/test_w4a16_cuda_plan.c); kernels/cuda/emulate_mma.py
 * transliterates the same rules.
 */
#ifndef W4A16_CUDA_PLAN_H
#define W4A16_CUDA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_abi.h>
#include <quantbridge/qb_w4a16_cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest sizes the kernels index with int: the mma grid and its row
 * indices reach N + 16 and the split-K reduction M * N with M <= 16, hence
 * N <= INT32_MAX / 16; column indices reach K + 128, hence K <= INT32_MAX / 2.
 * M is only a loop bound on the host (row chunks) and a size_t factor. */
#define W4A16_CUDA_MAX_N (INT32_MAX / 16)
#define W4A16_CUDA_MAX_K (INT32_MAX / 2)
#define W4A16_CUDA_MAX_ROWS INT32_MAX

/* Geometry of the mma kernel (w4a16_mma.cu): columns per chunk, warps per
 * CTA, dynamic shared memory for the staged x (with the static reduction
 * buffer, <= 8 KiB, a CTA stays within the 48 KiB a launch gets without
 * opt-in), padding halves per staged row. Here because the split-K count
 * and the piece size depend on them. */
#define W4A16_MMA_CHUNK 128
#define W4A16_MMA_WARPS 8
#define W4A16_MMA_SMEM_BYTES (40 * 1024)
#define W4A16_MMA_PAD 32

/* One qb_w4a16_gemm_cuda call as the checks see it: device addresses are
 * only compared and tested for alignment, never dereferenced. */
typedef struct w4a16_cuda_args {
    uintptr_t x, y, packed, scales, perm, workspace; /* 0 = NULL */
    size_t workspace_bytes;
    int64_t M, N, K, group_size;
    int kernel; /* QB_W4A16_CUDA_* */
} w4a16_cuda_args;

/* What the launches use. Every int field fits the kernels' int indexing. */
typedef struct w4a16_cuda_plan {
    int64_t M;         /* rows of x and y; launches take QB_W4A16_CUDA_MAX_M at a time */
    int N, K;
    int g;             /* group_size clamped to K: g >= K means one group per row */
    int scols;         /* scales per row: ceil(K / g), computed in 64-bit */
    int use_mma;       /* 1: the mma kernel; 0: the GEMV */
    int splits;        /* K splits of the mma kernel, 1 = none (w4a16_cuda_plan_splits) */
    size_t perm_bytes; /* bytes at the start of the workspace for x[perm]; 0 without perm */
} w4a16_cuda_plan;

/* Checks the sizes and fills p->M, N, K, g, scols (use_mma 0, splits 1,
 * perm_bytes 0). M, N, K, group_size >= 1; group_size > K is clamped to K
 * (same meaning, so any int64 value is accepted); N <= W4A16_CUDA_MAX_N,
 * K <= W4A16_CUDA_MAX_K, M <= W4A16_CUDA_MAX_ROWS. Returns QB_OK, or
 * QB_E_INVALID with a message naming `fn` and the value in err (err_len
 * > 0). Pure; thread-safe. */
qb_status w4a16_cuda_plan_sizes(const char *fn, int64_t M, int64_t N, int64_t K,
                                int64_t group_size, w4a16_cuda_plan *p, char *err, size_t err_len);

/* Every check of one qb_w4a16_gemm_cuda call, in this order, before
 * anything is enqueued:
 *   - x, y, packed, scales not NULL; kernel a QB_W4A16_CUDA_* value;
 *   - the sizes (w4a16_cuda_plan_sizes);
 *   - x, y, scales 2-byte aligned, perm 4-byte, workspace 16-byte;
 *   - no buffer wraps the address space, y overlaps no other buffer and
 *     the workspace overlaps none of the inputs (x, packed, scales, perm);
 *   - a perm needs perm_bytes = align16(M * K * 2) of workspace;
 *   - the kernel: the mma kernel is eligible when K % 32 == 0, g % 32 == 0
 *     (g clamped), packed and the x the kernels read (the workspace copy
 *     with a perm) 16-byte aligned; QB_W4A16_CUDA_MMA on an ineligible
 *     problem is QB_E_UNSUPPORTED.
 * Returns QB_OK and *p (splits 1), else QB_E_INVALID or QB_E_UNSUPPORTED
 * with a message in err. Pure; thread-safe. */
qb_status w4a16_cuda_plan_call(const w4a16_cuda_args *a, w4a16_cuda_plan *p, char *err,
                               size_t err_len);

/* K splits the mma kernel wants for N x K on a device with `sms`
 * multiprocessors: doubling while the grid has fewer than 4 CTAs per SM
 * and every split keeps >= W4A16_MMA_WARPS chunks, at most 16. */
int w4a16_cuda_mma_splits(int N, int K, int sms);

/* Chunks of 128 columns of x the mma kernel stages in shared memory at a
 * time for M tokens, when a split spans `chunks_per_split` chunks: M rows
 * of piece * 128 + W4A16_MMA_PAD halves within W4A16_MMA_SMEM_BYTES, a
 * multiple of W4A16_MMA_WARPS, at most 64, at most chunks_per_split.
 * Returns >= 1 for M in 1..QB_W4A16_CUDA_MAX_M and chunks_per_split >= 1;
 * 0 (the launcher refuses it) for any other M or chunks_per_split < 1,
 * so the piece loop always advances. */
int w4a16_cuda_mma_piece(int M, int chunks_per_split);

/* Sets p->splits for the mma kernel: w4a16_cuda_mma_splits, or 1 when
 * `ws_left` bytes (the workspace after perm_bytes) cannot hold the
 * partial sums (slower, same result up to fp32 summation order). 1 for the
 * GEMV. */
void w4a16_cuda_plan_splits(w4a16_cuda_plan *p, int sms, size_t ws_left);

/* Workspace bytes for full speed: perm_bytes when has_perm, plus
 * splits * min(M, QB_W4A16_CUDA_MAX_M) * N floats for the split-K partial
 * sums (one row chunk at a time reuses them). Uses the sizes of p only. */
size_t w4a16_cuda_workspace_need(const w4a16_cuda_plan *p, int has_perm, int sms);

#ifdef __cplusplus
}
#endif
#endif
