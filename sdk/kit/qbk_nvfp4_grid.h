/*
 * The e2m1 grid view of an NVFP4 linear (qb_tensor.h, QB_CODE_F4_E2M1, ABI
 * 1.5), shared by the readers of the two NVFP4 layouts (compressed-tensors
 * nvfp4-pack-quantized, ModelOpt NVFP4): both store two E2M1 codes a byte
 * with column 2i in the low nibble and one E4M3 scale per 16 columns, and
 * differ only in their second-level scale (docs/formats/nvfp4.md, "The
 * e2m1 grid (ABI 1.5)").
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI). Pure
 * and thread-safe; nothing allocates or keeps state.
 */
#ifndef QBK_NVFP4_GRID_H
#define QBK_NVFP4_GRID_H

#include <stdint.h>

#include <quantbridge/qb_tensor.h>

/* NVFP4 elements per E4M3 scale. */
#define QBK_NVFP4_GROUP 16

/* Fills the grid description of an NVFP4 tensor of n_groups groups a row
 * whose second-level scale enters as `op` (QB_TENSOR_SCALE_MUL or _DIV)
 * with value `tensor_scale`. The caller has checked that `out` holds the
 * ABI 1.5 fields (QB_HAS_FIELD) and accepts QB_CODE_F4_E2M1. */
void qbk_nvfp4_grid_info(qb_grid_info *out, uint32_t n_groups, uint32_t op, float tensor_scale);

/* One row of the grid: cols codes (cols even, a multiple of 16) unpacked
 * from packed[cols / 2] into codes[cols], the cols / 16 E4M3 bytes of
 * e4m3[] decoded into scales[], zeros[] set to 0 (unused by float codes).
 * The caller guarantees the buffer sizes. */
void qbk_nvfp4_grid_row(const uint8_t *packed, const uint8_t *e4m3, int64_t cols, uint8_t *codes,
                        float *scales, int32_t *zeros);

#endif /* QBK_NVFP4_GRID_H */
