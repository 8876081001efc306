/*
 * Tensor-core W4A16 kernel for M = 1..16 ("swap-AB", docs/kernels.md "Swap-AB mma kernel"):
 * the weights are the A operand of mma.sync.m16n8k16 (16 rows x 16 k, read
 * straight from global memory into registers), the activations the B
 * operand (k x up to 8 tokens, staged in shared memory); D is 16 rows x 8
 * tokens in fp32. NT = 2 runs a second B tile for tokens 8..15.
 *
 * A CTA (8 warps) owns 16 rows and a K range (all of K, or one split).
 * The K range is walked in chunks of 128 columns = 64 bytes per row; a
 * warp takes whole chunks. In a chunk, lane (r = lane/4, t = lane%4) loads
 * 16 bytes at byte 16t of rows r and r+8 (one 128-bit load each; a warp
 * instruction reads 8 rows x 64 contiguous bytes). A 4x4 word transpose
 * across the quad (two shuffle rounds) then gives lane t the word of
 * columns 32s + 8t .. +7 for s = 0..3, so each pair of MMAs covers one
 * 32-column block: with group_size % 32 == 0 that block lies in a single
 * group, and its fp32 result is multiplied by the group's scale once.
 *
 * Which k goes to which MMA slot is free as long as A and B agree (the
 * product sums over k): slot 2t/2t+1 of register a0 gets columns (k0, k4)
 * of the lane's word, the order the magic-number dequant produces, and the
 * B fragment is built from x in the same order with byte permutes.
 *
 * Split-K: splits > 1 writes fp32 partial sums [split][M][N]; a second
 * kernel adds them in split order (deterministic, no atomics).
 */
#include "w4a16_cuda_internal.cuh"

namespace {

constexpr int kWarps = W4A16_MMA_WARPS;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = W4A16_MMA_CHUNK; /* columns per chunk */
/* halves of padding per smem row: 64 B keeps the 8 rows a quad-group reads
 * on distinct banks */
constexpr int kPad = W4A16_MMA_PAD;
/* The piece of x a CTA stages (w4a16_cuda_mma_piece) is a positive
 * multiple of the warp count for every M the launcher accepts. */
static_assert((W4A16_MMA_SMEM_BYTES / (2 * QB_W4A16_CUDA_MAX_M) - kPad) / kChunk >= kWarps,
              "shared-memory budget too small for QB_W4A16_CUDA_MAX_M tokens");
static_assert(QB_W4A16_CUDA_MAX_M <= 16, "the kernel has two 8-token tiles (NT <= 2)");

/* 4x4 transpose of 32-bit words across the 4 lanes of a quad: afterwards
 * position j of lane t holds word t of lane j. Round 1 swaps across lane
 * bit 0 the positions whose bit 0 differs from the lane's; round 2 the
 * same for bit 1. All 32 lanes must call it. */
__device__ __forceinline__ void quad_transpose(uint4 &w, int t)
{
    const unsigned full = 0xffffffffu;
    const bool b0 = t & 1, b1 = t & 2;
    uint32_t s0 = b0 ? w.x : w.y, s1 = b0 ? w.z : w.w;
    s0 = __shfl_xor_sync(full, s0, 1);
    s1 = __shfl_xor_sync(full, s1, 1);
    if (b0) {
        w.x = s0;
        w.z = s1;
    } else {
        w.y = s0;
        w.w = s1;
    }
    uint32_t u0 = b1 ? w.x : w.z, u1 = b1 ? w.y : w.w;
    u0 = __shfl_xor_sync(full, u0, 2);
    u1 = __shfl_xor_sync(full, u1, 2);
    if (b1) {
        w.x = u0;
        w.y = u1;
    } else {
        w.z = u0;
        w.w = u1;
    }
}

__device__ __forceinline__ uint32_t word_at(const uint4 &w, int s)
{
    return s == 0 ? w.x : s == 1 ? w.y : s == 2 ? w.z : w.w;
}

/* D = A * B + 0 with A 16x16 fp16 (row), B 16x8 fp16 (col), D fp32. */
__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], uint32_t b0,
                                          uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f),
                   "f"(0.0f), "f"(0.0f), "f"(0.0f));
}

/* One chunk's worth of work for a warp: w0/w1 are the transposed words of
 * rows r and r+8; xs points at this chunk's columns in shared memory. */
template <int NT>
__device__ __forceinline__ void chunk_compute(float acc[NT][4], const uint4 &w0, const uint4 &w1,
                                              const __half *xs, int srow_halves, int c, int K,
                                              int M, int g, const __half *s0p,
                                              const __half *s1p, int gq, int t)
{
#pragma unroll
    for (int s = 0; s < 4; s++) {
        const int kb = c * kChunk + 32 * s; /* first column of this 32-block */
        if (kb >= K)
            break; /* warp-uniform */
        const int grp = kb / g;
        const float sc0 = s0p ? __half2float(s0p[grp]) : 0.0f;
        const float sc1 = s1p ? __half2float(s1p[grp]) : 0.0f;
        uint32_t h0[4], h1[4];
        w4a16_dequant8(word_at(w0, s), h0);
        w4a16_dequant8(word_at(w1, s), h1);
        /* a0 = row r slots (2t, 2t+1), a1 = row r+8 same slots,
         * a2 = row r slots (2t+8, 2t+9), a3 = row r+8 same slots */
        const uint32_t a_lo[4] = {h0[0], h1[0], h0[1], h1[1]}; /* k0,k4 | k1,k5 */
        const uint32_t a_hi[4] = {h0[2], h1[2], h0[3], h1[3]}; /* k2,k6 | k3,k7 */
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const int m = nt * 8 + gq;
            uint4 xv = make_uint4(0, 0, 0, 0);
            if (m < M)
                xv = *reinterpret_cast<const uint4 *>(xs + (size_t)m * srow_halves + 32 * s +
                                                      8 * t);
            /* xv = (x0,x1) (x2,x3) (x4,x5) (x6,x7); B pairs follow A's
             * order: (x0,x4), (x1,x5) then (x2,x6), (x3,x7). */
            const uint32_t b_lo0 = __byte_perm(xv.x, xv.z, 0x5410);
            const uint32_t b_lo1 = __byte_perm(xv.x, xv.z, 0x7632);
            const uint32_t b_hi0 = __byte_perm(xv.y, xv.w, 0x5410);
            const uint32_t b_hi1 = __byte_perm(xv.y, xv.w, 0x7632);
            float d[4], e[4];
            mma_16816(d, a_lo, b_lo0, b_lo1);
            mma_16816(e, a_hi, b_hi0, b_hi1);
            /* d0, d1: row r, tokens 2t, 2t+1; d2, d3: row r+8 */
            acc[nt][0] = fmaf(sc0, d[0] + e[0], acc[nt][0]);
            acc[nt][1] = fmaf(sc0, d[1] + e[1], acc[nt][1]);
            acc[nt][2] = fmaf(sc1, d[2] + e[2], acc[nt][2]);
            acc[nt][3] = fmaf(sc1, d[3] + e[3], acc[nt][3]);
        }
    }
}

/* min 2 CTAs per SM: lets ptxas use up to 128 registers (NT = 2 spilled at 64) */
template <int NT>
__global__ void __launch_bounds__(kThreads, 2)
    w4a16_mma_kernel(const __half *__restrict__ x, __half *__restrict__ y,
                     float *__restrict__ partial, const uint8_t *__restrict__ packed,
                     const __half *__restrict__ scales, int M, int N, int K, int g, int scols,
                     int chunks_per_split, int piece_chunks)
{
    extern __shared__ uint4 smem_x[]; /* [M][piece_chunks * 128 + kPad] halves */
    __shared__ float red[kWarps][32][NT * 4];
    __half *xs = reinterpret_cast<__half *>(smem_x);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gq = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const int r0 = n0 + gq, r1 = n0 + gq + 8;
    const int chunks = (K + kChunk - 1) / kChunk;
    const int c_begin = blockIdx.y * chunks_per_split;
    const int c_end = min(chunks, c_begin + chunks_per_split);
    const size_t row_bytes = (size_t)K / 2;
    const int srow_halves = piece_chunks * kChunk + kPad;
    const uint8_t *p0 = packed + (size_t)r0 * row_bytes, *p1 = packed + (size_t)r1 * row_bytes;
    const __half *s0p = r0 < N ? scales + (size_t)r0 * scols : nullptr;
    const __half *s1p = r1 < N ? scales + (size_t)r1 * scols : nullptr;
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;

    for (int pc = c_begin; pc < c_end; pc += piece_chunks) {
        const int pend = min(c_end, pc + piece_chunks);
        const int units = (pend - pc) * (kChunk / 8); /* 16-byte units of x per token */
        __syncthreads(); /* the previous piece is consumed */
        for (int i = threadIdx.x; i < M * units; i += kThreads) {
            const int m = i / units, u = i % units, k = pc * kChunk + u * 8;
            uint4 v = make_uint4(0, 0, 0, 0); /* columns past K multiply nothing */
            if (k < K)
                v = __ldg(reinterpret_cast<const uint4 *>(x + (size_t)m * K + k));
            *reinterpret_cast<uint4 *>(xs + (size_t)m * srow_halves + u * 8) = v;
        }
        __syncthreads();
        /* two chunks per step so each lane has 64 bytes of weights in flight */
        for (int c = pc + warp; c < pend; c += 2 * kWarps) {
            const int c2 = c + kWarps;
            const uint4 q88 = make_uint4(0x88888888u, 0x88888888u, 0x88888888u, 0x88888888u);
            uint4 wa0 = q88, wa1 = q88, wb0 = q88, wb1 = q88; /* nibble 8 = code 0 */
            const size_t off_a = (size_t)c * 64 + 16 * t, off_b = (size_t)c2 * 64 + 16 * t;
            /* K % 32 == 0: a 16-byte piece is wholly inside or outside the row */
            if (off_a < row_bytes) {
                if (r0 < N)
                    wa0 = w4a16_ld_stream(p0 + off_a);
                if (r1 < N)
                    wa1 = w4a16_ld_stream(p1 + off_a);
            }
            if (c2 < pend && off_b < row_bytes) {
                if (r0 < N)
                    wb0 = w4a16_ld_stream(p0 + off_b);
                if (r1 < N)
                    wb1 = w4a16_ld_stream(p1 + off_b);
            }
            quad_transpose(wa0, t);
            quad_transpose(wa1, t);
            chunk_compute<NT>(acc, wa0, wa1, xs + (size_t)(c - pc) * kChunk, srow_halves, c, K, M,
                              g, s0p, s1p, gq, t);
            if (c2 < pend) { /* warp-uniform */
                quad_transpose(wb0, t);
                quad_transpose(wb1, t);
                chunk_compute<NT>(acc, wb0, wb1, xs + (size_t)(c2 - pc) * kChunk, srow_halves, c2,
                                  K, M, g, s0p, s1p, gq, t);
            }
        }
    }

    /* Reduce the 8 warps' tiles in a fixed order. */
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            red[warp][lane][nt * 4 + j] = acc[nt][j];
    __syncthreads();
    if (threadIdx.x < 32 * NT * 4) {
        const int l = threadIdx.x / (NT * 4), i = threadIdx.x % (NT * 4);
        const int nt = i / 4, j = i % 4;
        const int row = n0 + (l >> 2) + (j >= 2 ? 8 : 0);
        const int m = nt * 8 + 2 * (l & 3) + (j & 1);
        float v = 0.0f;
        for (int w = 0; w < kWarps; w++)
            v += red[w][l][i];
        if (row < N && m < M) {
            if (partial)
                partial[((size_t)blockIdx.y * M + m) * N + row] = v;
            else
                y[(size_t)m * N + row] = __float2half_rn(v);
        }
    }
}

__global__ void w4a16_splitk_reduce(const float *__restrict__ partial, __half *__restrict__ y,
                                    int splits, size_t MN)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < MN;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < splits; s++) /* fixed order: deterministic */
            v += partial[(size_t)s * MN + i];
        y[i] = __float2half_rn(v);
    }
}

} // namespace

cudaError_t w4a16_launch_mma(const __half *x, __half *y, const uint8_t *packed,
                             const __half *scales, int M, int N, int K, int g, int scols,
                             int splits, float *partial, cudaStream_t stream)
{
    if (M < 1 || M > QB_W4A16_CUDA_MAX_M || N < 1 || K < 1 || g < 1 || scols < 1 || splits < 1 ||
        (splits > 1 && !partial))
        return cudaErrorInvalidValue;
    const int chunks = (K + kChunk - 1) / kChunk;
    const int cps = (chunks + splits - 1) / splits;
    const int real_splits = (chunks + cps - 1) / cps;
    const int piece = w4a16_cuda_mma_piece(M, cps);
    if (piece < 1) /* unreachable for M <= QB_W4A16_CUDA_MAX_M (static_assert above) */
        return cudaErrorInvalidValue;
    const size_t smem = (size_t)M * (piece * kChunk + kPad) * sizeof(__half);
    const dim3 grid((unsigned)((N + 15) / 16), (unsigned)real_splits);
    float *part = real_splits > 1 ? partial : nullptr;
    if (M <= 8)
        w4a16_mma_kernel<1><<<grid, kThreads, smem, stream>>>(x, y, part, packed, scales, M, N, K,
                                                               g, scols, cps, piece);
    else
        w4a16_mma_kernel<2><<<grid, kThreads, smem, stream>>>(x, y, part, packed, scales, M, N, K,
                                                               g, scols, cps, piece);
    cudaError_t e = cudaPeekAtLastError();
    if (e != cudaSuccess || real_splits == 1)
        return e;
    const size_t MN = (size_t)M * (size_t)N;
    w4a16_splitk_reduce<<<(unsigned)((MN + 255) / 256), 256, 0, stream>>>(partial, y, real_splits,
                                                                         MN);
    return cudaPeekAtLastError();
}
