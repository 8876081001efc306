/*
 * ggml lookup tables (data from ggml src/ggml-common.h, see
 * ggml_iq_grids.c). Grid entries are little-endian byte vectors: byte j of
 * entry g is (g >> 8j) & 0xFF; iq2/iq3 magnitudes are unsigned, iq1s_grid
 * bytes are int8 in {-1, 0, 1}. Read-only, thread-safe.
 */
#ifndef GGUF_GGML_IQ_GRIDS_H
#define GGUF_GGML_IQ_GRIDS_H

#include <stdint.h>

extern const uint8_t gguf_ggml_kmask_iq2xs[8];
extern const uint8_t gguf_ggml_ksigns_iq2xs[128];
extern const int8_t gguf_ggml_kvalues_iq4nl[16];
extern const int8_t gguf_ggml_kvalues_mxfp4[16];
extern const uint64_t gguf_ggml_iq2xxs_grid[256];
extern const uint64_t gguf_ggml_iq2xs_grid[512];
extern const uint64_t gguf_ggml_iq2s_grid[1024];
extern const uint32_t gguf_ggml_iq3xxs_grid[256];
extern const uint32_t gguf_ggml_iq3s_grid[512];
extern const uint64_t gguf_ggml_iq1s_grid[2048];

#endif
