/*
 * AWQ reader — decoders of the AutoAWQ GEMM and GEMV layouts (facts and
 * their upstream origin in awq_layout.c). Pure functions over validated
 * mapped data; thread-safe.
 */
#ifndef AWQ_LAYOUT_H
#define AWQ_LAYOUT_H

#include "qlinear.h"

/* version "gemm": qweight [K, N/8], qzeros [K/gs, N/8], scales [K/gs, N]. */
extern const qlinear_decoder awq_gemm_decoder;
/* version "gemv": qweight [N, K/8], qzeros [N, Wz], scales [N, 8*Wz]. */
extern const qlinear_decoder awq_gemv_decoder;

/* Width Wz of GEMV qzeros (and Wz*8 of scales) for K inputs at group size
 * gs, or -1 when AutoAWQ has no such layout (gs not >= 128, 64 or 32). */
int64_t awq_gemv_zeros_width(int64_t K, int64_t gs);

#endif /* AWQ_LAYOUT_H */
