/*
 * Shared helpers of the gguf-dequant tests. Expected values are computed
 * independently of the library: fp16 decoded by its definition, and every
 * arithmetic step done in double and rounded to float once, which gives
 * exactly the float result of that step (double has more than 2*24+2 bits,
 * so the double rounding is innocuous for + - *).
 */
#ifndef TGD_H
#define TGD_H

#include <check.h>
#include <stdint.h>

#include "qbt_st_writer.h"

/* exactly rounded float operations, one rounding each */
static inline float r_mul(float a, float b) { return (float)((double)a * (double)b); }
static inline float r_add(float a, float b) { return (float)((double)a + (double)b); }
static inline float r_sub(float a, float b) { return (float)((double)a - (double)b); }

/* binary16 by its definition (finite values only in these tests) */
float tgd_h2f(uint16_t h);
/* a random finite normal fp16 with magnitude in [2^-10, 2^4), random sign */
uint16_t tgd_rand_f16(qbt_rng *r);
/* asserts bitwise equality of n floats, naming type and element */
void tgd_expect_bits(const char *what, const float *want, const float *got, int64_t n);

/* Add the "iq" and "roundtrip" test cases to s (test_gguf_dequant.c
 * runs them all in its one suite). */
void tgd_add_iq(Suite *s);
void tgd_add_roundtrip(Suite *s);

#endif
