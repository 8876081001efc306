/*
 * CUDA-core W4A16 GEMV: one warp per output row, lanes along K.
 *
 * Fast path (K % 32 == 0, g % 32 == 0, packed and x 16-byte aligned): a
 * lane takes 16 packed bytes (32 columns, one group) per step with one
 * 128-bit load, decodes the codes exactly in fp32 (a nibble OR-ed into the
 * mantissa of 2^23, minus 2^23 + 8), sums q*x in fp32 and multiplies by the
 * group's scale once. Generic path (any shape): byte loads, w = q*s exact in
 * fp32 per column. Either way the warp's partial sums are reduced with
 * shuffles and rounded to fp16 once.
 */
#include "w4a16_cuda_internal.cuh"

namespace {

constexpr int kWarps = 4;

template <int MT, bool FAST>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_gemv_kernel(const __half *__restrict__ x, __half *__restrict__ y,
                      const uint8_t *__restrict__ packed, const __half *__restrict__ scales,
                      int M, int N, int K, int g, int scols)
{
    const int lane = threadIdx.x & 31;
    const int n = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (n >= N)
        return; /* whole warp: no block-level synchronisation below */
    const size_t row_bytes = (size_t)(K + 1) / 2;
    const uint8_t *prow = packed + (size_t)n * row_bytes;
    const __half *srow = scales + (size_t)n * scols;
    float acc[MT];
#pragma unroll
    for (int m = 0; m < MT; m++)
        acc[m] = 0.0f;

    if (FAST) {
        const int units = K / 32;
        for (int u = lane; u < units; u += 32) {
            const uint4 wv = w4a16_ld_stream(prow + (size_t)u * 16);
            const uint32_t words[4] = {wv.x, wv.y, wv.z, wv.w};
            const float s = __half2float(srow[(u * 32) / g]);
            float q[32];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    /* 0x4B000000 is 2^23: OR-ing n into the mantissa gives
                     * 2^23 + n exactly; subtracting 2^23 + 8 leaves q. */
                    q[i * 8 + j] = __int_as_float(0x4b000000 | ((words[i] >> (4 * j)) & 15)) -
                                   8388616.0f;
#pragma unroll
            for (int m = 0; m < MT; m++) {
                if (m >= M)
                    break;
                const uint4 *xp = reinterpret_cast<const uint4 *>(x + (size_t)m * K + u * 32);
                float sum = 0.0f;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const uint4 xv = __ldg(xp + i);
                    const uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const float2 f = __half22float2(w4a16_u32_h2(xs[j]));
                        sum = fmaf(q[i * 8 + 2 * j], f.x, sum);
                        sum = fmaf(q[i * 8 + 2 * j + 1], f.y, sum);
                    }
                }
                acc[m] = fmaf(s, sum, acc[m]);
            }
        }
    } else {
        for (size_t b = lane; b < row_bytes; b += 32) {
            const unsigned byte = prow[b];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int k = (int)(2 * b) + h;
                if (k >= K)
                    break;
                /* q*s is exact in fp32 (4-bit times 11-bit significands) */
                const float w = (float)((int)((byte >> (4 * h)) & 15) - 8) *
                                __half2float(srow[k / g]);
#pragma unroll
                for (int m = 0; m < MT; m++)
                    if (m < M)
                        acc[m] = fmaf(w, __half2float(x[(size_t)m * K + k]), acc[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
        float v = acc[m];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0 && m < M)
            y[(size_t)m * N + n] = __float2half_rn(v);
    }
}

template <int MT>
cudaError_t launch(bool fast, const __half *x, __half *y, const uint8_t *packed,
                   const __half *scales, int M, int N, int K, int g, int scols,
                   cudaStream_t stream)
{
    const dim3 grid((unsigned)((N + kWarps - 1) / kWarps)), block(kWarps * 32);
    if (fast)
        w4a16_gemv_kernel<MT, true><<<grid, block, 0, stream>>>(x, y, packed, scales, M, N, K, g,
                                                                   scols);
    else
        w4a16_gemv_kernel<MT, false><<<grid, block, 0, stream>>>(x, y, packed, scales, M, N, K, g,
                                                                   scols);
    return cudaPeekAtLastError();
}

} // namespace

cudaError_t w4a16_launch_gemv(const __half *x, __half *y, const uint8_t *packed,
                              const __half *scales, int M, int N, int K, int g, int scols,
                              cudaStream_t stream)
{
    if (M < 1 || M > QB_W4A16_CUDA_MAX_M || N < 1 || K < 1 || g < 1 || scols < 1)
        return cudaErrorInvalidValue;
    const bool fast = K % 32 == 0 && g % 32 == 0 && ((uintptr_t)packed & 15) == 0 &&
                      ((uintptr_t)x & 15) == 0;
    if (M == 1)
        return launch<1>(fast, x, y, packed, scales, M, N, K, g, scols, stream);
    if (M <= 4)
        return launch<4>(fast, x, y, packed, scales, M, N, K, g, scols, stream);
    return launch<16>(fast, x, y, packed, scales, M, N, K, g, scols, stream);
}
