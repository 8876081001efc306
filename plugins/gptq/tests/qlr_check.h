/*
 * Tests: compares an opened quantized-linear model (plugins/gptq/
 * qlinear_model.h) against fixture ground truth (tests/gen/gen_gptq.h): every
 * tensor present once, dense rows bit-identical to (code - zero) * scale
 * from the known integers, grid views equal to the known codes, scales,
 * zeros and group map. Shared by plugins/gptq/tests and plugins/awq/tests.
 */
#ifndef QLR_CHECK_H
#define QLR_CHECK_H

#include "gen_gptq.h"
#include "qlinear.h"

/* Asserts (check ck_assert_*) that m matches truth exactly. Returns the
 * number of quantized tensors checked. */
int qlr_check_against_truth(const qlinear_model *m, const qbt_qmodel *truth);

/* Index of tensor `name` in m, or -1. */
int qlr_check_find(const qlinear_model *m, const char *name);

#endif
