/*
 * Inner loops of the symmetric int4 group rules, portable C and AVX2 with
 * bit-identical results (see qbk_int4_eval.h for the operation order both
 * follow). The scale search spends most of a requantizing conversion
 * here (perf: ~90 % in a scalar error loop before this file).
 */
#include "qbk_int4_eval.h"

#include <quantbridge/qb_half.h>

#include <assert.h>
#include <math.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define QBK_I4E_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

/* ---- dispatch ------------------------------------------------------------ */

int qbk_i4e_have_avx2(void)
{
#ifdef QBK_I4E_X86
    /* 0 unknown, 1 no, 2 yes; relaxed atomics: every thread computes the
     * same answer, so a race only repeats the query */
    static int cached;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v == 0) {
        unsigned a, b, c, d;
        __builtin_cpu_init();
        /* F16C: CPUID.1:ECX bit 29 */
        v = __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29))
                ? 2
                : 1;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v == 2;
#else
    return 0;
#endif
}

qbk_i4e_impl qbk_i4e_resolve(qbk_i4e_impl impl)
{
    if (impl == QBK_I4E_AUTO)
        return qbk_i4e_have_avx2() ? QBK_I4E_AVX2 : QBK_I4E_PORTABLE;
    return impl;
}

/* ---- portable ------------------------------------------------------------ */

static float clamp_code(float r)
{
    const float lo = (float)QBK_INT4_QMIN, hi = (float)QBK_INT4_QMAX;
    return r < lo ? lo : r > hi ? hi : r;
}

static int absmax_c(const float *w, size_t n, float *amax, float *extreme)
{
    float m = 0.0f, e = 0.0f;
    size_t i;
    for (i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        if (!isfinite(w[i]))
            return -1;
        if (a > m) {
            m = a;
            e = w[i];
        }
    }
    *amax = m;
    *extreme = e;
    return 0;
}

/* One 8-lane accumulator summed as the AVX2 path does: lane l and l + 4,
 * then (0 + 2) + (1 + 3). */
static float reduce8_f(const float a[8])
{
    float u[4];
    int l;
    for (l = 0; l < 4; l++)
        u[l] = a[l] + a[l + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

static void fit_c(const float *w, size_t n, const float *inv, size_t k, float *qw, float *qq)
{
    float a[4][8], b[4][8];
    size_t i, j;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (i = 0; i < n; i++)
        for (j = 0; j < k; j++) {
            float r = clamp_code(rintf(w[i] * inv[j]));
            a[j][i % 8] += r * w[i];
            b[j][i % 8] += r * r;
        }
    for (j = 0; j < k; j++) {
        qw[j] = reduce8_f(a[j]);
        qq[j] = reduce8_f(b[j]);
    }
}

static int check_c(const uint8_t *codes, const float *ref, size_t n, int32_t zero, float sf,
                   int8_t *q, int64_t *qq)
{
    const unsigned lim = 2u * (unsigned)zero;
    float lut[16];
    uint32_t bad = 0;
    int64_t sq = 0;
    size_t i;
    int k;
    for (k = 0; k < 16; k++)
        lut[k] = (float)(k - zero) * sf;
    for (i = 0; i < n; i++) {
        unsigned code = codes[i];
        int v = (int)code - zero;
        bad |= (uint32_t)(code >= lim) | (qb_f32_bits(lut[code & 15u]) ^ qb_f32_bits(ref[i]));
        q[i] = (int8_t)v;
        sq += v * v;
    }
    *qq = sq;
    return bad != 0;
}

static double codes_c(const float *w, size_t n, float s, float inv, int use_div, int8_t *q)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t[4];
    size_t i;
    for (i = 0; i < n; i++) {
        float r = clamp_code(rintf(use_div ? w[i] / s : w[i] * inv));
        double d = (double)(r * s) - (double)w[i];
        if (q)
            q[i] = (int8_t)(int)r;
        acc[i % 8] += d * d;
    }
    for (i = 0; i < 4; i++)
        t[i] = acc[i] + acc[i + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* codes_c(s, inv, multiply, q) and codes_c(a, -, divide, NULL) in one
 * pass, each sum in its own lanes: the same bits as the two calls. */
static void codes2_c(const float *w, size_t n, float s, float inv, float a, int8_t *q, double *es,
                     double *ea)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, acd[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t[4];
    size_t i;
    for (i = 0; i < n; i++) {
        float r = clamp_code(rintf(w[i] * inv)), ra = clamp_code(rintf(w[i] / a));
        double d = (double)(r * s) - (double)w[i], da = (double)(ra * a) - (double)w[i];
        q[i] = (int8_t)(int)r;
        acc[i % 8] += d * d;
        acd[i % 8] += da * da;
    }
    for (i = 0; i < 4; i++)
        t[i] = acc[i] + acc[i + 4];
    *es = (t[0] + t[2]) + (t[1] + t[3]);
    for (i = 0; i < 4; i++)
        t[i] = acd[i] + acd[i + 4];
    *ea = (t[0] + t[2]) + (t[1] + t[3]);
}

static int to_f16_c(const float *w, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint16_t h = qb_f32_to_f16(w[i]);
        if ((h & 0x7c00u) == 0x7c00u)
            return -1;
        out[i] = h;
    }
    return 0;
}

/* ---- AVX2 ---------------------------------------------------------------- */

#ifdef QBK_I4E_X86
#define QBK_I4E_TARGET __attribute__((target("avx2,f16c")))

QBK_I4E_TARGET static __m256 load_tail(const float *w, size_t m)
{
    float b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(b, w, m * sizeof *w);
    return _mm256_loadu_ps(b);
}

QBK_I4E_TARGET static int absmax_avx2(const float *w, size_t n, float *amax, float *extreme)
{
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i expm = _mm256_set1_epi32(0x7f800000);
    __m256 m = _mm256_setzero_ps();
    __m256i bad = _mm256_setzero_si256();
    __m128 h;
    float mx;
    size_t i;
    for (i = 0; i < n; i += 8) {
        __m256 v = i + 8 <= n ? _mm256_loadu_ps(w + i) : load_tail(w + i, n - i);
        __m256i b = _mm256_and_si256(_mm256_castps_si256(v), expm);
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(b, expm));
        m = _mm256_max_ps(m, _mm256_and_ps(v, absm));
    }
    if (!_mm256_testz_si256(bad, bad))
        return -1;
    h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    mx = _mm_cvtss_f32(h);
    *amax = mx;
    *extreme = 0.0f;
    /* the first element of largest magnitude, as the portable scan finds
     * (eight at a time: the scalar scan was ~5 % of a requantization) */
    if (mx != 0.0f) {
        const __m256 vm = _mm256_set1_ps(mx);
        for (i = 0; i + 8 <= n; i += 8) {
            int hit = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(w + i), absm), vm, _CMP_EQ_OQ));
            if (hit) {
                *extreme = w[i + (size_t)__builtin_ctz((unsigned)hit)];
                return 0;
            }
        }
        for (; i < n; i++)
            if (fabsf(w[i]) == mx) {
                *extreme = w[i];
                break;
            }
    }
    return 0;
}

/* one vector of 8 elements: codes, then q*w into *a and q*q into *b */
QBK_I4E_TARGET static void fit8(__m256 v, __m256 vi, __m256 lo, __m256 hi, __m256 *a, __m256 *b)
{
    __m256 r = _mm256_round_ps(_mm256_mul_ps(v, vi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    *a = _mm256_add_ps(*a, _mm256_mul_ps(r, v));
    *b = _mm256_add_ps(*b, _mm256_mul_ps(r, r));
}

QBK_I4E_TARGET static float reduce8_v(__m256 a)
{
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    __m128 x = _mm_add_ps(u, _mm_movehl_ps(u, u)); /* u0+u2, u1+u3 */
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}

/* One candidate; accumulators stay in registers (indexing them by a
 * runtime j put them in memory: the 4-candidate pass ran slower than four
 * single ones). */
QBK_I4E_TARGET static void fit1_avx2(const float *w, size_t n, float inv, float *qw, float *qq)
{
    const __m256 lo = _mm256_set1_ps((float)QBK_INT4_QMIN), hi = _mm256_set1_ps((float)QBK_INT4_QMAX);
    const __m256 vi = _mm256_set1_ps(inv);
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    size_t i;
    for (i = 0; i < n; i += 8) {
        /* zero padding: code 0, adds +0 to both sums */
        __m256 v = i + 8 <= n ? _mm256_loadu_ps(w + i) : load_tail(w + i, n - i);
        fit8(v, vi, lo, hi, &a, &b);
    }
    *qw = reduce8_v(a);
    *qq = reduce8_v(b);
}

/* Four candidates, four independent chains per element vector. */
QBK_I4E_TARGET static void fit4_avx2(const float *w, size_t n, const float *inv, float *qw, float *qq)
{
    const __m256 lo = _mm256_set1_ps((float)QBK_INT4_QMIN), hi = _mm256_set1_ps((float)QBK_INT4_QMAX);
    const __m256 v0 = _mm256_set1_ps(inv[0]), v1 = _mm256_set1_ps(inv[1]);
    const __m256 v2 = _mm256_set1_ps(inv[2]), v3 = _mm256_set1_ps(inv[3]);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    size_t i;
    for (i = 0; i < n; i += 8) {
        __m256 v = i + 8 <= n ? _mm256_loadu_ps(w + i) : load_tail(w + i, n - i);
        fit8(v, v0, lo, hi, &a0, &b0);
        fit8(v, v1, lo, hi, &a1, &b1);
        fit8(v, v2, lo, hi, &a2, &b2);
        fit8(v, v3, lo, hi, &a3, &b3);
    }
    qw[0] = reduce8_v(a0);
    qq[0] = reduce8_v(b0);
    qw[1] = reduce8_v(a1);
    qq[1] = reduce8_v(b1);
    qw[2] = reduce8_v(a2);
    qq[2] = reduce8_v(b2);
    qw[3] = reduce8_v(a3);
    qq[3] = reduce8_v(b3);
}

QBK_I4E_TARGET static int check_avx2(const uint8_t *codes, const float *ref, size_t n, int32_t zero,
                               float sf, int8_t *q, int64_t *qq)
{
    float lut[16];
    __m256 lo, hi;
    const __m256i vz = _mm256_set1_epi32(zero), vl = _mm256_set1_epi32(2 * zero - 1);
    __m256i bad = _mm256_setzero_si256(), sq = _mm256_setzero_si256();
    int32_t part[8];
    int64_t tot = 0;
    size_t i;
    int k;
    for (k = 0; k < 16; k++)
        lut[k] = (float)(k - zero) * sf;
    lo = _mm256_loadu_ps(lut);
    hi = _mm256_loadu_ps(lut + 8);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(codes + i)));
        /* entries 0-7 or 8-15 by bit 3 of the code (moved to the sign bit) */
        __m256 dec = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, c), _mm256_permutevar8x32_ps(hi, c),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)));
        __m256i v = _mm256_sub_epi32(c, vz);
        __m128i v16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(c, vl));
        bad = _mm256_or_si256(bad, _mm256_xor_si256(_mm256_castps_si256(dec),
                                                    _mm256_castps_si256(_mm256_loadu_ps(ref + i))));
        _mm_storel_epi64((__m128i *)(void *)(q + i), _mm_packs_epi16(v16, v16));
        sq = _mm256_add_epi32(sq, _mm256_mullo_epi32(v, v));
    }
    _mm256_storeu_si256((__m256i *)(void *)part, sq);
    for (k = 0; k < 8; k++)
        tot += part[k];
    if (i < n) {
        int64_t t2;
        if (check_c(codes + i, ref + i, n - i, zero, sf, q + i, &t2))
            return 1;
        tot += t2;
    }
    *qq = tot;
    return !_mm256_testz_si256(bad, bad);
}

/* Squared error of reconstruction x = r * vs against v, into (a0, a1) in
 * double: lanes 0-3 and 4-7, as codes_avx2 sums them. */
QBK_I4E_TARGET static void err_pd(__m256 r, __m256 vs, __m256 v, __m256d *a0, __m256d *a1)
{
    __m256 d = _mm256_mul_ps(r, vs);
    __m256d e0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(d)),
                               _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    __m256d e1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(d, 1)),
                               _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    *a0 = _mm256_add_pd(*a0, _mm256_mul_pd(e0, e0));
    *a1 = _mm256_add_pd(*a1, _mm256_mul_pd(e1, e1));
}

QBK_I4E_TARGET static double sum_pd(__m256d a0, __m256d a1)
{
    __m128d t;
    a0 = _mm256_add_pd(a0, a1);
    t = _mm_add_pd(_mm256_castpd256_pd128(a0), _mm256_extractf128_pd(a0, 1)); /* t0+t2, t1+t3 */
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

/* m (1..8) integral codes r to q as int8 */
QBK_I4E_TARGET static void store_codes(__m256 r, int8_t *q, size_t m)
{
    __m256i qi = _mm256_cvtps_epi32(r); /* r is integral: exact */
    __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
    __m128i q8 = _mm_packs_epi16(q16, q16);
    if (m == 8) {
        _mm_storel_epi64((__m128i *)(void *)q, q8);
    } else {
        int8_t b[16];
        _mm_storeu_si128((__m128i *)(void *)b, q8);
        memcpy(q, b, m);
    }
}

/* clamp(rint(x), -8, 7) */
QBK_I4E_TARGET static __m256 code8(__m256 x, __m256 lo, __m256 hi)
{
    return _mm256_min_ps(_mm256_max_ps(_mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
}

QBK_I4E_TARGET static double codes_avx2(const float *w, size_t n, float s, float inv, int use_div,
                                  int8_t *q)
{
    const __m256 vi = _mm256_set1_ps(inv), vs = _mm256_set1_ps(s);
    const __m256 lo = _mm256_set1_ps((float)QBK_INT4_QMIN), hi = _mm256_set1_ps((float)QBK_INT4_QMAX);
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    size_t i;
    for (i = 0; i < n; i += 8) {
        size_t m = n - i < 8 ? n - i : 8;
        __m256 v = m == 8 ? _mm256_loadu_ps(w + i) : load_tail(w + i, m);
        __m256 x = use_div ? _mm256_div_ps(v, vs) : _mm256_mul_ps(v, vi);
        __m256 r = code8(x, lo, hi);
        err_pd(r, vs, v, &a0, &a1);
        if (q)
            store_codes(r, q + i, m);
    }
    return sum_pd(a0, a1);
}

/* codes2_c with AVX2 (the same operations as codes_avx2 for each error). */
QBK_I4E_TARGET static void codes2_avx2(const float *w, size_t n, float s, float inv, float a, int8_t *q,
                                 double *es, double *ea)
{
    const __m256 vi = _mm256_set1_ps(inv), vs = _mm256_set1_ps(s), va = _mm256_set1_ps(a);
    const __m256 lo = _mm256_set1_ps((float)QBK_INT4_QMIN), hi = _mm256_set1_ps((float)QBK_INT4_QMAX);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, d0 = s0, d1 = s0;
    size_t i;
    for (i = 0; i < n; i += 8) {
        size_t m = n - i < 8 ? n - i : 8;
        __m256 v = m == 8 ? _mm256_loadu_ps(w + i) : load_tail(w + i, m);
        __m256 r = code8(_mm256_mul_ps(v, vi), lo, hi), ra = code8(_mm256_div_ps(v, va), lo, hi);
        err_pd(r, vs, v, &s0, &s1);
        err_pd(ra, va, v, &d0, &d1);
        store_codes(r, q + i, m);
    }
    *es = sum_pd(s0, s1);
    *ea = sum_pd(d0, d1);
}

QBK_I4E_TARGET static int to_f16_avx2(const float *w, size_t n, uint16_t *out)
{
    const __m128i expm = _mm_set1_epi16(0x7c00);
    __m128i bad = _mm_setzero_si128();
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(w + i), _MM_FROUND_TO_NEAREST_INT);
        /* inf, nan and overflow all come out with an all-ones exponent */
        bad = _mm_or_si128(bad, _mm_cmpeq_epi16(_mm_and_si128(h, expm), expm));
        _mm_storeu_si128((__m128i *)(void *)(out + i), h);
    }
    if (!_mm_testz_si128(bad, bad))
        return -1;
    return to_f16_c(w + i, n - i, out + i);
}
#endif

/* ---- entry points -------------------------------------------------------- */

int qbk_i4e_absmax(qbk_i4e_impl impl, const float *w, size_t n, float *amax, float *extreme)
{
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2)
        return absmax_avx2(w, n, amax, extreme);
#endif
    (void)impl;
    return absmax_c(w, n, amax, extreme);
}

void qbk_i4e_fit(qbk_i4e_impl impl, const float *w, size_t n, const float *inv, size_t k, float *qw,
                float *qq)
{
    assert(k >= 1 && k <= 4);
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2) {
        size_t j;
        if (k == 4) {
            fit4_avx2(w, n, inv, qw, qq);
            return;
        }
        for (j = 0; j < k; j++)
            fit1_avx2(w, n, inv[j], &qw[j], &qq[j]);
        return;
    }
#endif
    (void)impl;
    fit_c(w, n, inv, k, qw, qq);
}

double qbk_i4e_codes(qbk_i4e_impl impl, const float *w, size_t n, float s, float inv, int use_div,
                    int8_t *q)
{
    /* s == 0: codes 0 and error sum(w^2), as w * 0 gives */
    if (s == 0.0f) {
        use_div = 0;
        inv = 0.0f;
    }
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2)
        return codes_avx2(w, n, s, inv, use_div, q);
#endif
    (void)impl;
    return codes_c(w, n, s, inv, use_div, q);
}

void qbk_i4e_codes2(qbk_i4e_impl impl, const float *w, size_t n, float s, float inv, float a,
                   int8_t *q, double *es, double *ea)
{
    assert(a != 0.0f);
    if (s == 0.0f)
        inv = 0.0f;
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2) {
        codes2_avx2(w, n, s, inv, a, q, es, ea);
        return;
    }
#endif
    (void)impl;
    codes2_c(w, n, s, inv, a, q, es, ea);
}

int qbk_i4e_check_group(qbk_i4e_impl impl, const uint8_t *codes, const float *ref, size_t n,
                       int32_t zero, float sf, int8_t *q, int64_t *qq)
{
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2)
        return check_avx2(codes, ref, n, zero, sf, q, qq);
#endif
    (void)impl;
    return check_c(codes, ref, n, zero, sf, q, qq);
}

int qbk_i4e_to_f16(qbk_i4e_impl impl, const float *w, size_t n, uint16_t *out)
{
#ifdef QBK_I4E_X86
    if (qbk_i4e_resolve(impl) == QBK_I4E_AVX2)
        return to_f16_avx2(w, n, out);
#endif
    (void)impl;
    return to_f16_c(w, n, out);
}
