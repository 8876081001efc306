/*
 * sm86-w4a16 — the inner loops of the int4 rules (quant_eval.c): absmax
 * scan, a candidate scale's error, and a group's codes. Each exists as
 * portable C and as AVX2 (chosen at run time); the two give bit-identical
 * results because both fix the same order of float operations: elements go
 * to fixed lanes of fixed accumulators (stated per function), and the lanes
 * are summed in one fixed tree. No fused multiply-add is used on either
 * side (the AVX2 code is compiled for "avx2" only, not "fma").
 */
#ifndef W4W_QUANT_EVAL_H
#define W4W_QUANT_EVAL_H

#include <stddef.h>
#include <stdint.h>

/* Which implementation a call uses. */
typedef enum w4w_qe_impl {
    W4W_QE_AUTO = 0,     /* AVX2 when the CPU has it, else portable */
    W4W_QE_PORTABLE = 1, /* plain C */
    W4W_QE_AVX2 = 2      /* AVX2; only valid when w4w_qe_have_avx2() */
} w4w_qe_impl;

/* 1 when this CPU runs the AVX2 kernels: AVX2 and F16C (cached after the
 * first call; thread-safe). */
int w4w_qe_have_avx2(void);

/* Resolves W4W_QE_AUTO to the implementation this CPU runs; other values
 * pass through. Thread-safe. */
w4w_qe_impl w4w_qe_resolve(w4w_qe_impl impl);

/* Largest |w[i]| into *amax and the first element with that magnitude
 * into *extreme (both 0 for an all-zero group). Returns 0, or -1 when an
 * element is NaN or infinite (outputs then unspecified). Pure. */
int w4w_qe_absmax(w4w_qe_impl impl, const float *w, size_t n, float *amax, float *extreme);

/* The sums a scale search needs, for k (1..4) candidates at once: for
 * candidate j, codes q = clamp(rint(w * inv[j]), -8, 7), qw[j] = sum of
 * q * w[i] and qq[j] = sum of q * q, in float; element i goes to lane i % 8
 * of one accumulator per candidate, lanes summed in a fixed tree. With
 * them the squared error of scale s is sum(w^2) - 2 s qw + s^2 qq, and
 * qw / qq is the scale of least error for these codes. Pure. */
void w4w_qe_fit(w4w_qe_impl impl, const float *w, size_t n, const float *inv, size_t k, float *qw,
                float *qq);

/* Writes the codes of w[0..n) against s into q (unless q is NULL) and returns their squared
 * error in double, (double)(q*s) - (double)w squared, summed in a fixed
 * lane order (8 lanes). use_div: q = clamp(rint(w / s), -8, 7) (the
 * ABSMAX rule); else q = clamp(rint(w * inv), -8, 7) as w4w_qe_err.
 * s == 0 gives all-zero codes. Pure. */
double w4w_qe_codes(w4w_qe_impl impl, const float *w, size_t n, float s, float inv, int use_div,
                    int8_t *q);

/* fp16 of w[0..n) into out, rounded to nearest even as qb_f32_to_f16
 * (AVX2 path: the F16C conversion, identical for every finite float).
 * Returns 0, or -1 when an element is NaN, infinite or rounds to
 * infinity (out then unspecified). Pure. */
int w4w_qe_to_f16(w4w_qe_impl impl, const float *w, size_t n, uint16_t *out);

/* Both errors the search ends with, in one pass: *es and q as
 * w4w_qe_codes(impl, w, n, s, inv, 0, q) and *ea as w4w_qe_codes(impl, w,
 * n, a, -, 1, NULL) return them, bit for bit (each sum keeps its own
 * lanes). a != 0. Pure. */
void w4w_qe_codes2(w4w_qe_impl impl, const float *w, size_t n, float s, float inv, float a,
                   int8_t *q, double *es, double *ea);

/* The exact-repack check of one group: for each i, codes[i] < lim
 * (lim = 2 * zero <= 16) and the fp32 product (codes[i] - zero) * sf has
 * the bits of ref[i]. Writes q[i] = codes[i] - zero and *qq = sum of q[i]^2
 * (an integer, the same on every path). Returns 0 when every element
 * passed, nonzero otherwise (q and qq then unspecified; the caller finds
 * the element). Pure. */
int w4w_qe_check_group(w4w_qe_impl impl, const uint8_t *codes, const float *ref, size_t n,
                       int32_t zero, float sf, int8_t *q, int64_t *qq);

/* w4w_quant_group (quantize.c) with a chosen implementation: the tests
 * compare W4W_QE_PORTABLE and W4W_QE_AVX2 for identical codes, scales
 * and errors. Same contract as w4w_quant_group. */
int w4w_quant_group_impl(w4w_qe_impl impl, const float *w, size_t n, int rule, int8_t *q,
                         uint16_t *scale, double *err);

#endif
