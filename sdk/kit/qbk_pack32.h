/*
 * Packing b-bit codes into little-endian 32-bit words, value k of a row at
 * bits [b * (k % pf), ...) of word k / pf with pf = 32 / b: the layout of
 * compressed-tensors' pack_to_int32 (for 4 and 8 bits) and of MLX's
 * quantized weights, shared by both writers.
 */
#ifndef QBK_PACK32_H
#define QBK_PACK32_H

#include <stdint.h>

/* Packs u[cols] (each < 2^bits; bits 2, 4 or 8) into ceil(cols / pf) words
 * as little-endian bytes at dst; the last word's unused high bits are 0.
 * Pure. */
void qbk_pack32_row(int bits, const uint8_t *u, int64_t cols, uint8_t *dst);

#endif /* QBK_PACK32_H */
