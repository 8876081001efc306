/*
 * The inner loops of the symmetric int4 group rules (qbk_int4_rules.h,
 * codes -8..7 times one scale per group; qbk_int4_eval.c): absmax
 * scan, a candidate scale's error, and a group's codes. Each exists as
 * portable C and as AVX2 (chosen at run time); the two give bit-identical
 * results because both fix the same order of float operations: elements go
 * to fixed lanes of fixed accumulators (stated per function), and the lanes
 * are summed in one fixed tree. No fused multiply-add is used on either
 * side (the AVX2 code is compiled for "avx2" only, not "fma").
 */
#ifndef QBK_INT4_EVAL_H
#define QBK_INT4_EVAL_H

#include <stddef.h>
#include <stdint.h>

/* The int4 code range: q in [-8, 7]. */
#define QBK_INT4_QMIN (-8)
#define QBK_INT4_QMAX 7

/* Which implementation a call uses. */
typedef enum qbk_i4e_impl {
    QBK_I4E_AUTO = 0,     /* AVX2 when the CPU has it, else portable */
    QBK_I4E_PORTABLE = 1, /* plain C */
    QBK_I4E_AVX2 = 2      /* AVX2; only valid when qbk_i4e_have_avx2() */
} qbk_i4e_impl;

/* 1 when this CPU runs the AVX2 kernels: AVX2 and F16C (cached after the
 * first call; thread-safe). */
int qbk_i4e_have_avx2(void);

/* Resolves QBK_I4E_AUTO to the implementation this CPU runs; other values
 * pass through. Thread-safe. */
qbk_i4e_impl qbk_i4e_resolve(qbk_i4e_impl impl);

/* Largest |w[i]| into *amax and the first element with that magnitude
 * into *extreme (both 0 for an all-zero group). Returns 0, or -1 when an
 * element is NaN or infinite (outputs then unspecified). Pure. */
int qbk_i4e_absmax(qbk_i4e_impl impl, const float *w, size_t n, float *amax, float *extreme);

/* The sums a scale search needs, for k (1..4) candidates at once: for
 * candidate j, codes q = clamp(rint(w * inv[j]), -8, 7), qw[j] = sum of
 * q * w[i] and qq[j] = sum of q * q, in float; element i goes to lane i % 8
 * of one accumulator per candidate, lanes summed in a fixed tree. With
 * them the squared error of scale s is sum(w^2) - 2 s qw + s^2 qq, and
 * qw / qq is the scale of least error for these codes. Pure. */
void qbk_i4e_fit(qbk_i4e_impl impl, const float *w, size_t n, const float *inv, size_t k, float *qw,
                float *qq);

/* Writes the codes of w[0..n) against s into q (unless q is NULL) and returns their squared
 * error in double, (double)(q*s) - (double)w squared, summed in a fixed
 * lane order (8 lanes). use_div: q = clamp(rint(w / s), -8, 7) (the
 * ABSMAX rule); else q = clamp(rint(w * inv), -8, 7) as qbk_i4e_fit.
 * s == 0 gives all-zero codes. Pure. */
double qbk_i4e_codes(qbk_i4e_impl impl, const float *w, size_t n, float s, float inv, int use_div,
                    int8_t *q);

/* fp16 of w[0..n) into out, rounded to nearest even as qb_f32_to_f16
 * (AVX2 path: the F16C conversion, identical for every finite float).
 * Returns 0, or -1 when an element is NaN, infinite or rounds to
 * infinity (out then unspecified). Pure. */
int qbk_i4e_to_f16(qbk_i4e_impl impl, const float *w, size_t n, uint16_t *out);

/* Both errors the search ends with, in one pass: *es and q as
 * qbk_i4e_codes(impl, w, n, s, inv, 0, q) and *ea as qbk_i4e_codes(impl, w,
 * n, a, -, 1, NULL) return them, bit for bit (each sum keeps its own
 * lanes). a != 0. Pure. */
void qbk_i4e_codes2(qbk_i4e_impl impl, const float *w, size_t n, float s, float inv, float a,
                   int8_t *q, double *es, double *ea);

/* The exact-repack check of one group: for each i, codes[i] < lim
 * (lim = 2 * zero <= 16) and the fp32 product (codes[i] - zero) * sf has
 * the bits of ref[i]. Writes q[i] = codes[i] - zero and *qq = sum of q[i]^2
 * (an integer, the same on every path). Returns 0 when every element
 * passed, nonzero otherwise (q and qq then unspecified; the caller finds
 * the element). Pure. */
int qbk_i4e_check_group(qbk_i4e_impl impl, const uint8_t *codes, const float *ref, size_t n,
                       int32_t zero, float sf, int8_t *q, int64_t *qq);

#endif
