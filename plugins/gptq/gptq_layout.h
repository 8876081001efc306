/*
 * GPTQ reader — decoder of the packed qweight/qzeros/scales layout (see
 * gptq_layout.c for the format facts and their upstream origin).
 * Pure functions over validated mapped data; thread-safe.
 */
#ifndef GPTQ_LAYOUT_H
#define GPTQ_LAYOUT_H

#include "qlinear.h"

/* Decoder for a qlinear_tensor whose qweight/qzeros/scales/word_bits/bits/K/N/G/
 * zero_add fields were validated by the GPTQ open code. */
extern const qlinear_decoder gptq_decoder;

/* Scans every STORED zero field of t (before any convention offset):
 * *all_lo = every field is 2^(bits-1) - 1 (what symmetric v1 stores),
 * *all_hi = every field is 2^(bits-1) (what symmetric v2 stores).
 * t->qzeros must be non-NULL. */
void gptq_stored_zero_uniform(const qlinear_tensor *t, int *all_lo, int *all_hi);

#endif /* GPTQ_LAYOUT_H */
