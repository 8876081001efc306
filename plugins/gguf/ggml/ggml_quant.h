/*
 * ggml block quantizers: float rows to ggml blocks, written from the block
 * layouts (docs/formats/gguf.md, "Legacy blocks", "Quantizing legacy
 * blocks"). Each quantizer makes the bytes llama.cpp's reference
 * quantizer (ggml-quants.c quantize_row_<type>_ref, used by
 * llama_model_quantize without an importance matrix) makes for the same
 * float input.
 *
 * Threading: pure functions; any thread.
 */
#ifndef GGUF_GGML_QUANT_H
#define GGUF_GGML_QUANT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when gguf_ggml_quantize_row can write `type`: F32, F16, BF16, Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K. Pure. */
int gguf_ggml_can_quantize(uint32_t type);

/* Writes n elements of x (n a multiple of the type's block size, checked
 * by the caller) as `type` blocks into dst (gguf_ggml_row_bytes(type, n)
 * bytes, little-endian). F16 / BF16 round to nearest, ties to even.
 * Precondition: gguf_ggml_can_quantize(type). */
void gguf_ggml_quantize_row(uint32_t type, const float *x, uint8_t *dst, int64_t n);

/* The K types' part of gguf_ggml_quantize_row (n a multiple of 256):
 * Q4_K, Q5_K, Q6_K. */
void gguf_ggml_quantize_k_row(uint32_t type, const float *x, uint8_t *dst, int64_t n);

/* One Q4_0 block from integer codes: nibble codes[j] (0..15, value
 * (codes[j] - 8) * d) and the fp16 bits of d, in the split-half order. */
void gguf_ggml_q4_0_pack(const uint8_t codes[32], uint16_t d_f16, uint8_t out[18]);

/* One Q8_0 block from signed codes q[j] (value q[j] * d) and the fp16 bits of d. */
void gguf_ggml_q8_0_pack(const int8_t q[32], uint16_t d_f16, uint8_t out[34]);

#ifdef __cplusplus
}
#endif
#endif /* GGUF_GGML_QUANT_H */
