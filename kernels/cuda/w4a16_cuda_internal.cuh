/*
 * Internal to libquantbridge-w4a16-cuda: device helpers shared by the
 * kernels, and the launchers qb_w4a16_cuda.cu dispatches to.
 */
#ifndef W4A16_CUDA_INTERNAL_CUH
#define W4A16_CUDA_INTERNAL_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "w4a16_cuda_plan.h"

/* 16 bytes of weights that are read once: skip L1 (ld.global.nc with
 * L1::no_allocate, the same policy Marlin uses for its weight stream). */
__device__ __forceinline__ uint4 w4a16_ld_stream(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ half2 w4a16_u32_h2(uint32_t u)
{
    half2 h;
    memcpy(&h, &u, sizeof(h));
    return h;
}

__device__ __forceinline__ uint32_t w4a16_h2_u32(half2 h)
{
    uint32_t u;
    memcpy(&u, &h, sizeof(u));
    return u;
}

/* One 32-bit word = 8 nibbles = columns k0..k7 of a row (nibble i is column
 * i: low nibble of each byte is the even column, w4a16-format.md). Decodes
 * to four fp16x2 registers holding the exact codes q = nibble - 8:
 *   h[0] = (q0, q4), h[1] = (q1, q5), h[2] = (q2, q6), h[3] = (q3, q7)
 * with the magic-number trick (FasterTransformer / CUTLASS
 * FastInterleavedAndBiasedNumericArrayConverter, docs/kernels.md "Int4 to fp16"): OR-ing a
 * nibble into the mantissa of fp16 1024 (0x6400) gives 1024 + n; the high
 * nibble of a byte gives 1024 + 16n, scaled by 1/16 (0x2C00) -> 64 + n.
 * Subtracting 1032 (0x6408) or adding -72 (0xD480) folds in the -8 offset.
 * All intermediate values are small integers, exact in fp16. */
__device__ __forceinline__ void w4a16_dequant8(uint32_t w, uint32_t h[4])
{
    const uint32_t lo_mask = 0x000f000fu, hi_mask = 0x00f000f0u, magic = 0x64006400u;
    const uint32_t w8 = w >> 8;
    const half2 sub = w4a16_u32_h2(0x64086408u);    /* 1032 */
    const half2 sixteenth = w4a16_u32_h2(0x2c002c00u); /* 1/16 */
    const half2 neg72 = w4a16_u32_h2(0xd480d480u);  /* -72 */
    h[0] = w4a16_h2_u32(__hsub2(w4a16_u32_h2((w & lo_mask) | magic), sub));
    h[1] = w4a16_h2_u32(__hfma2(w4a16_u32_h2((w & hi_mask) | magic), sixteenth, neg72));
    h[2] = w4a16_h2_u32(__hsub2(w4a16_u32_h2((w8 & lo_mask) | magic), sub));
    h[3] = w4a16_h2_u32(__hfma2(w4a16_u32_h2((w8 & hi_mask) | magic), sixteenth, neg72));
}

/* Launchers (stream-ordered, asynchronous). The caller has checked the
 * problem (w4a16_cuda_plan_call): g is group_size clamped to K, scols =
 * ceil(K / g) computed on the host in 64-bit, M one row chunk. Each
 * launcher still refuses, with cudaErrorInvalidValue and without
 * launching, an M outside 1..QB_W4A16_CUDA_MAX_M or a size < 1, so no
 * caller can reach a kernel loop that does not advance. They return
 * cudaPeekAtLastError() after their launches (the caller made sure no
 * earlier error was pending).
 *
 * GEMV: any K, g and alignment. */
cudaError_t w4a16_launch_gemv(const __half *x, __half *y, const uint8_t *packed,
                              const __half *scales, int M, int N, int K, int g, int scols,
                              cudaStream_t stream);

/* mma kernel: K % 32 == 0, g % 32 == 0, packed and x 16-byte aligned.
 * `partial` holds splits * M * N floats when splits > 1 (splits from
 * w4a16_cuda_plan_splits). */
cudaError_t w4a16_launch_mma(const __half *x, __half *y, const uint8_t *packed,
                             const __half *scales, int M, int N, int K, int g, int scols,
                             int splits, float *partial, cudaStream_t stream);

#endif
