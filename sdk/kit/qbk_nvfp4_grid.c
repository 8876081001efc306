/* The e2m1 grid view of an NVFP4 linear. See qbk_nvfp4_grid.h. */
#include "qbk_nvfp4_grid.h"

#include "qbk_fp8_decode.h"

void qbk_nvfp4_grid_info(qb_grid_info *out, uint32_t n_groups, uint32_t op, float tensor_scale)
{
    out->bits = 4;
    out->n_groups = n_groups;
    out->group_size = QBK_NVFP4_GROUP;
    out->col_group = NULL;
    out->symmetric = 1;
    out->scale_dtype = QB_DT_F8_E4M3;
    out->code_kind = QB_CODE_F4_E2M1;
    out->scale_rows = 1;
    out->tensor_scale_op = op;
    out->tensor_scale = tensor_scale;
}

void qbk_nvfp4_grid_row(const uint8_t *packed, const uint8_t *e4m3, int64_t cols, uint8_t *codes,
                        float *scales, int32_t *zeros)
{
    int64_t k, g;
    for (k = 0; k < cols; k++)
        codes[k] = (uint8_t)((packed[k / 2] >> (4 * (k & 1))) & 0xF);
    for (g = 0; g < cols / QBK_NVFP4_GROUP; g++) {
        scales[g] = qbk_fp8_e4m3fn_to_f32(e4m3[g]);
        zeros[g] = 0;
    }
}
