/*
 * Test fixtures: ggml block quantizers (float -> ggml blocks), so tests can
 * write GGUF tensors of any common ggml type from known weights without a
 * download. Any reasonable quantizer: the blocks are valid for the format
 * (docs/formats/gguf.md, "Block layouts") and decode close to the input, but the codes are not
 * promised to equal what ggml's own quantize_row_*_ref would choose.
 *
 * Block layouts and type ids: plugins/gguf/ggml/ggml_types.h.
 * All functions are pure and thread-safe; nothing allocates.
 */
#ifndef QBT_GGML_QUANT_H
#define QBT_GGML_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* 1 when qbt_ggml_quantize_row can produce `type`. Types: F32, F16, BF16,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
 * IQ4_XS, TQ1_0, TQ2_0, MXFP4. */
int qbt_ggml_can_quantize(uint32_t type);

/* Quantizes x[0..n) into dst, which must hold gguf_ggml_row_bytes(type, n)
 * bytes. Returns 0, or -1 when the type cannot be quantized here or n is
 * not a positive multiple of the block size (dst untouched then). Inputs
 * must be finite. */
int qbt_ggml_quantize_row(uint32_t type, const float *x, void *dst, int64_t n);

/* Known-code builders (ground truth for tests): one block from chosen codes
 * and fp16 scale bits.
 * Q4_0: codes[e] in 0..15 for element e (value (codes[e] - 8) * d); writes
 *   18 bytes in ggml's split-half nibble order.
 * Q8_0: codes[e] in -128..127; writes 34 bytes.
 * IQ4_NL: idx[e] in 0..15 into kvalues_iq4nl; writes 18 bytes. */
void qbt_ggml_q4_0_from_codes(const uint8_t codes[32], uint16_t d_f16, uint8_t out[18]);
void qbt_ggml_q8_0_from_codes(const int8_t codes[32], uint16_t d_f16, uint8_t out[34]);
void qbt_ggml_iq4_nl_from_codes(const uint8_t idx[32], uint16_t d_f16, uint8_t out[18]);
/* Q4_K: codes[e] in 0..15, per 32-element sub-block s a 6-bit scale sc[s]
 *   and min m[s]: value d*sc[s]*codes[e] - dmin*m[s]; writes 144 bytes.
 * Q6_K: codes[e] in -32..31, per 16-element sub-block an int8 scale
 *   sc[s]: value d*sc[s]*codes[e]; writes 210 bytes. */
void qbt_ggml_q4_k_from_codes(const uint8_t codes[256], const uint8_t sc[8], const uint8_t m[8],
                              uint16_t d_f16, uint16_t dmin_f16, uint8_t out[144]);
void qbt_ggml_q6_k_from_codes(const int8_t codes[256], const int8_t sc[16], uint16_t d_f16,
                              uint8_t out[210]);

#endif
