/*
 * Tests: compares a reader plugin's view of a checkpoint with the ground
 * truth of tests/gen/gen_ct.h (shared by the fp8 and compressed-tensors
 * tests). Every tensor: name, shape, dense rows bit for bit (whole tensor
 * and in uneven row chunks); grid tensors: bits, groups, group map,
 * symmetric flag, codes / zeros / scales, and the grid promise
 * (code - zero) * scale == dense value.
 */
#ifndef QBT_CQ_CHECK_H
#define QBT_CQ_CHECK_H

#include <stddef.h>

#include <quantbridge/quantbridge.h>

#include "gen_ct.h"

typedef struct qbt_cq_stats {
    size_t n_tensors, n_quant, n_grid, n_values;
} qbt_cq_stats;

/* Opens `dir` with plugin p and checks everything against truth.
 * Returns 0, or -1 with the first difference in why[cap]. */
int qbt_cq_check(const qb_plugin *p, const char *dir, const qbt_cq_model *truth,
                 qbt_cq_stats *stats, char *why, size_t cap);

/* Encoding text of tensor `name` in `dir` into out[cap]; -1 on failure. */
int qbt_cq_encoding(const qb_plugin *p, const char *dir, const char *name, char *out, size_t cap);

#endif
