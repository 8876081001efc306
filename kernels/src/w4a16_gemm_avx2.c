/*
 * AVX2+FMA row kernel of qb_w4a16_gemm_cpu, compiled with target
 * attributes so the library builds (and runs, on the plain path) without
 * -mavx2; qb_w4a16_gemm_cpu dispatches here at run time only when the CPU
 * reports avx2 and fma. Same numerics as the plain kernel except the fp32
 * summation order inside a group (16 partial sums in two vectors) and FMA
 * contraction. Two ways through a row: fused decode+FMA when group_size %
 * 16 == 0 (groups start on a byte), else decode to an fp32 row buffer.
 */
#include "w4a16_cpu_internal.h"

#include <quantbridge/qb_half.h>

#include "w4a16_int4.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

int w4a16_cpu_avx2_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* 32 packed bytes -> 64 fp32 codes. Nibble order per the format: the low
 * nibble of byte i is column 2i, so interleaving (lo, hi) bytes restores
 * column order; unpack works per 128-bit lane, hence the cross-lane
 * permute. Codes are exact small integers in fp32. */
__attribute__((target("avx2,fma"))) static void decode_row(const uint8_t *prow, int64_t K,
                                                            float *codes)
{
    const __m256i mask = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(W4A16_INT4_BIAS);
    int64_t c = 0;
    for (; c + 64 <= K; c += 64) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(prow + (c >> 1)));
        __m256i lo = _mm256_and_si256(b, mask);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
        __m256i u0 = _mm256_unpacklo_epi8(lo, hi), u1 = _mm256_unpackhi_epi8(lo, hi);
        __m256i c0 = _mm256_sub_epi8(_mm256_permute2x128_si256(u0, u1, 0x20), eight);
        __m256i c1 = _mm256_sub_epi8(_mm256_permute2x128_si256(u0, u1, 0x31), eight);
        __m128i p[4] = {_mm256_castsi256_si128(c0), _mm256_extracti128_si256(c0, 1),
                        _mm256_castsi256_si128(c1), _mm256_extracti128_si256(c1, 1)};
        for (int i = 0; i < 4; i++) {
            _mm256_storeu_ps(codes + c + 16 * i, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(p[i])));
            _mm256_storeu_ps(codes + c + 16 * i + 8,
                             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(p[i], 8))));
        }
    }
    /* c is a multiple of 64 here: the tail starts on a byte */
    w4a16_int4_codes_f32(prow + (c >> 1), K - c, codes + c);
}

__attribute__((target("avx2,fma"))) static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float group_dot(const float *q, const float *x,
                                                           int64_t n)
{
    __m256 v0 = _mm256_setzero_ps(), v1 = _mm256_setzero_ps();
    float sum;
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        v0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(x + c), v0);
        v1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c + 8), _mm256_loadu_ps(x + c + 8), v1);
    }
    for (; c + 8 <= n; c += 8)
        v0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(x + c), v0);
    sum = hsum(_mm256_add_ps(v0, v1));
    for (; c < n; c++)
        sum += q[c] * x[c];
    return sum;
}

/* group_size % 16 == 0: every group starts on a byte and a 16-column block
 * is 8 packed bytes, so decoding fuses with the FMAs (no row buffer): the
 * 16 codes are decoded once and used for MB (1..4) tokens. Always inlined
 * with a constant MB so the accumulators stay in registers. Same per-group
 * numerics as the buffered path. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
row_fused(const uint8_t *prow, const uint16_t *srow, const float *x, int64_t K, int64_t g,
          const int MB, float *acc)
{
    const int64_t scols = w4a16_int4_n_groups(K, g);
    const __m128i mask = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(W4A16_INT4_BIAS);
    for (int t = 0; t < MB; t++)
        acc[t] = 0.0f;
    for (int64_t grp = 0; grp < scols; grp++) {
        const int64_t k0 = grp * g, k1 = k0 + g < K ? k0 + g : K;
        const float s = qb_f16_to_f32(srow[grp]);
        __m256 v[4][2];
        int64_t c = k0;
        for (int t = 0; t < MB; t++)
            v[t][0] = v[t][1] = _mm256_setzero_ps();
        for (; c + 16 <= k1; c += 16) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(prow + (c >> 1)));
            __m128i lo = _mm_and_si128(b, mask);
            __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
            __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight);
            __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
            __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
            for (int t = 0; t < MB; t++) {
                v[t][0] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(x + t * K + c), v[t][0]);
                v[t][1] = _mm256_fmadd_ps(q1, _mm256_loadu_ps(x + t * K + c + 8), v[t][1]);
            }
        }
        for (int t = 0; t < MB; t++) {
            float sum = hsum(_mm256_add_ps(v[t][0], v[t][1]));
            for (int64_t cc = c; cc < k1; cc++)
                sum += (float)w4a16_int4_code(prow, cc) * x[t * K + cc];
            acc[t] += s * sum;
        }
    }
}

__attribute__((target("avx2,fma"))) static void rows_fused(const w4a16_rows_job *job, int64_t n0,
                                                            int64_t n1)
{
    const int64_t K = job->K, g = job->g, M = job->M;
    const int64_t pcols = w4a16_int4_packed_bytes(K), scols = w4a16_int4_n_groups(K, g);
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *prow = job->packed + n * pcols;
        const uint16_t *srow = job->scales + n * scols;
        for (int64_t m0 = 0; m0 < M; m0 += 4) {
            const float *x = job->xf + m0 * K;
            float acc[4];
            int mb = M - m0 < 4 ? (int)(M - m0) : 4;
            switch (mb) {
            case 1:
                row_fused(prow, srow, x, K, g, 1, acc);
                break;
            case 2:
                row_fused(prow, srow, x, K, g, 2, acc);
                break;
            case 3:
                row_fused(prow, srow, x, K, g, 3, acc);
                break;
            default:
                row_fused(prow, srow, x, K, g, 4, acc);
                break;
            }
            for (int t = 0; t < mb; t++)
                job->y[(m0 + t) * job->N + n] = qb_f32_to_f16(acc[t]);
        }
    }
}

__attribute__((target("avx2,fma"))) void w4a16_rows_avx2(const w4a16_rows_job *job, int64_t n0,
                                                          int64_t n1, float *codes)
{
    const int64_t K = job->K, g = job->g;
    const int64_t pcols = w4a16_int4_packed_bytes(K), scols = w4a16_int4_n_groups(K, g);
    if (g % 16 == 0) {
        rows_fused(job, n0, n1);
        return;
    }
    for (int64_t n = n0; n < n1; n++) {
        const uint16_t *srow = job->scales + n * scols;
        decode_row(job->packed + n * pcols, K, codes);
        for (int64_t m = 0; m < job->M; m++) {
            const float *xm = job->xf + m * K;
            float acc = 0.0f;
            for (int64_t grp = 0; grp < scols; grp++) {
                int64_t k0 = grp * g, k1 = k0 + g < K ? k0 + g : K;
                acc += qb_f16_to_f32(srow[grp]) * group_dot(codes + k0, xm + k0, k1 - k0);
            }
            job->y[m * job->N + n] = qb_f32_to_f16(acc);
        }
    }
}

#else /* not x86: the plain kernel is the only one */

int w4a16_cpu_avx2_usable(void)
{
    return 0;
}

void w4a16_rows_avx2(const w4a16_rows_job *job, int64_t n0, int64_t n1, float *codes)
{
    w4a16_rows_plain(job, n0, n1, codes);
}

#endif
