/*
 * Tests: compares a reader plugin's view of a 4-bit float checkpoint with
 * the ground truth of tests/gen/gen_fp4.h (shared by the compressed-tensors
 * and modelopt tests). Every tensor: name, shape, no integer grid for FP4
 * (NVFP4: the e2m1 grid of ABI 1.5 with the truth's codes and both scales,
 * its promise bit for bit; MXFP4: none), dense
 * rows bit for bit against qbt_fp4_value / qbt_cq_value (whole tensor and
 * in uneven row chunks); every truth tensor present.
 */
#ifndef QBT_FP4_CHECK_H
#define QBT_FP4_CHECK_H

#include <stddef.h>

#include <quantbridge/quantbridge.h>

#include "gen_fp4.h"

/* Opens `dir` with plugin p and checks everything against truth; *n_quant
 * gets the number of FP4 tensors seen. Returns 0, or -1 with the first
 * difference in why[cap]. */
int qbt_fp4_check(const qb_plugin *p, const char *dir, const qbt_fp4_model *truth,
                  size_t *n_quant, char *why, size_t cap);

#endif
