/*
 * Test helpers for the W4A16 kernels: a random problem built from known
 * integer codes (the ground truth), packed independently of the library
 * per w4a16-format.md, and a float64 reference product.
 */
#ifndef QBT_W4A16_CASE_H
#define QBT_W4A16_CASE_H

#include <stdint.h>

#include "qbt_st_writer.h"

typedef struct qbt_w4a16_case {
    int64_t M, N, K, g;
    int8_t *q;          /* [N][K] codes in [-8, 7] */
    uint8_t *packed;    /* [N][ceil(K/2)] */
    uint16_t *scales;   /* [N][ceil(K/g)] fp16, some negative, some zero */
    uint16_t *x;        /* [M][K] fp16 */
    int32_t *perm;      /* [K] or NULL */
    double *ref;        /* [M][N] float64 product */
    double *abs_sum;    /* [M][N] sum |q s x| (for the error bound) */
} qbt_w4a16_case;

/* Builds a case; outliers != 0 puts a few |x| ~ 1e3 values in x. Aborts on
 * allocation failure (tests only). */
void qbt_w4a16_case_make(qbt_w4a16_case *c, qbt_rng *rng, int64_t M, int64_t N, int64_t K,
                         int64_t g, int with_perm, int outliers);
/* An exact case: random codes, scales from {1, -1, 0.5, -0.5}, x sparse
 * +-1 (at most 256 nonzeros per row, so |y| <= 2048), no outliers. Every
 * product, partial sum and scaled group sum is then a multiple of 0.5
 * below 2^11, exact in fp32 in any order, so a correct kernel returns
 * exactly qbt_w4a16_exact_f16() (the one fp16 rounding of the exact
 * value): compared for equality, no tolerance to hide a wrong column. */
void qbt_w4a16_case_make_exact(qbt_w4a16_case *c, qbt_rng *rng, int64_t M, int64_t N, int64_t K,
                               int64_t g, int with_perm);
/* fp16 bits of the exact output i of an exact case. */
uint16_t qbt_w4a16_exact_f16(const qbt_w4a16_case *c, int64_t i);
void qbt_w4a16_case_free(qbt_w4a16_case *c);

/* Packs codes [N][K] per the format (low nibble = even column, q + 8, odd K
 * padded with code 8). */
void qbt_w4a16_pack(const int8_t *q, int64_t N, int64_t K, uint8_t *packed);

/* Error bound for one fp16 output y of an fp32-accumulated product, given
 * the float64 reference and sum |terms| (see the test file for why). */
double qbt_w4a16_bound(double ref, double abs_sum, int64_t K, int64_t g);

#endif
