/*
 * The ggml type table: names, block sizes and bytes per block by type id.
 *
 * Origin of the numbers: ggml-org/ggml src/ggml.c `type_traits[]`
 * (blck_size, type_size) and src/ggml-common.h block structs/static_asserts;
 * also docs/formats/gguf.md "ggml type table". Removed ids (4, 5, 31-33, 36-38) have no row.
 */
#include "ggml_types.h"

#include <quantbridge/qb_abi.h>

#include <stddef.h>

#define QK_K GGUF_GGML_QK_K

/* `supported` = ggml_dequant.c has a decoder (all known ids today).
 * `scale_cols` from the block structs of ggml-common.h: the legacy blocks
 * have one d per 32 elements; block_q4_K / block_q5_K 8 six-bit scales per
 * 256 (sub-blocks of 32); block_q2_K, block_q3_K and block_q6_K 16 scales
 * per 256 (sub-blocks of 16); block_iq4_xs 8 per 256; block_iq4_nl and
 * block_mxfp4 one per 32. The other I-quants and ternary types are left
 * unstated (0). */
static const gguf_ggml_type_info ggml_type_rows[GGUF_GGML_TYPE_ID_END] = {
    [GGUF_GGML_TYPE_F32] = {"F32", 1, 4, 1, 0},
    [GGUF_GGML_TYPE_F16] = {"F16", 1, 2, 1, 0},
    [GGUF_GGML_TYPE_Q4_0] = {"Q4_0", 32, 18, 1, 32},
    [GGUF_GGML_TYPE_Q4_1] = {"Q4_1", 32, 20, 1, 32},
    [GGUF_GGML_TYPE_Q5_0] = {"Q5_0", 32, 22, 1, 32},
    [GGUF_GGML_TYPE_Q5_1] = {"Q5_1", 32, 24, 1, 32},
    [GGUF_GGML_TYPE_Q8_0] = {"Q8_0", 32, 34, 1, 32},
    [GGUF_GGML_TYPE_Q8_1] = {"Q8_1", 32, 36, 1, 32},
    [GGUF_GGML_TYPE_Q2_K] = {"Q2_K", QK_K, 84, 1, 16},
    [GGUF_GGML_TYPE_Q3_K] = {"Q3_K", QK_K, 110, 1, 16},
    [GGUF_GGML_TYPE_Q4_K] = {"Q4_K", QK_K, 144, 1, 32},
    [GGUF_GGML_TYPE_Q5_K] = {"Q5_K", QK_K, 176, 1, 32},
    [GGUF_GGML_TYPE_Q6_K] = {"Q6_K", QK_K, 210, 1, 16},
    [GGUF_GGML_TYPE_Q8_K] = {"Q8_K", QK_K, 292, 1, 0},
    [GGUF_GGML_TYPE_IQ2_XXS] = {"IQ2_XXS", QK_K, 66, 1, 0},
    [GGUF_GGML_TYPE_IQ2_XS] = {"IQ2_XS", QK_K, 74, 1, 0},
    [GGUF_GGML_TYPE_IQ3_XXS] = {"IQ3_XXS", QK_K, 98, 1, 0},
    [GGUF_GGML_TYPE_IQ1_S] = {"IQ1_S", QK_K, 50, 1, 0},
    [GGUF_GGML_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18, 1, 32},
    [GGUF_GGML_TYPE_IQ3_S] = {"IQ3_S", QK_K, 110, 1, 0},
    [GGUF_GGML_TYPE_IQ2_S] = {"IQ2_S", QK_K, 82, 1, 0},
    [GGUF_GGML_TYPE_IQ4_XS] = {"IQ4_XS", QK_K, 136, 1, 32},
    [GGUF_GGML_TYPE_I8] = {"I8", 1, 1, 1, 0},
    [GGUF_GGML_TYPE_I16] = {"I16", 1, 2, 1, 0},
    [GGUF_GGML_TYPE_I32] = {"I32", 1, 4, 1, 0},
    [GGUF_GGML_TYPE_I64] = {"I64", 1, 8, 1, 0},
    [GGUF_GGML_TYPE_F64] = {"F64", 1, 8, 1, 0},
    [GGUF_GGML_TYPE_IQ1_M] = {"IQ1_M", QK_K, 56, 1, 0},
    [GGUF_GGML_TYPE_BF16] = {"BF16", 1, 2, 1, 0},
    [GGUF_GGML_TYPE_TQ1_0] = {"TQ1_0", QK_K, 54, 1, 0},
    [GGUF_GGML_TYPE_TQ2_0] = {"TQ2_0", QK_K, 66, 1, 0},
    [GGUF_GGML_TYPE_MXFP4] = {"MXFP4", 32, 17, 1, 32},
    [GGUF_GGML_TYPE_NVFP4] = {"NVFP4", 64, 36, 1, 0},
    [GGUF_GGML_TYPE_Q1_0] = {"Q1_0", 128, 18, 1, 0},
    [GGUF_GGML_TYPE_Q2_0] = {"Q2_0", 64, 18, 1, 0},
};

const gguf_ggml_type_info *gguf_ggml_type_get(uint32_t type)
{
    if (type >= GGUF_GGML_TYPE_ID_END || ggml_type_rows[type].name == NULL)
        return NULL;
    return &ggml_type_rows[type];
}

const char *gguf_ggml_type_name(uint32_t type)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    return t ? t->name : NULL;
}

int gguf_ggml_type_supported(uint32_t type)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    return t != NULL && t->supported;
}

int gguf_ggml_row_bytes(uint32_t type, int64_t n_elems, uint64_t *out)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    uint64_t blocks;
    if (t == NULL)
        return QB_E_UNSUPPORTED;
    if (n_elems < 0 || (uint64_t)n_elems % t->blck != 0)
        return QB_E_INVALID;
    blocks = (uint64_t)n_elems / t->blck;
    if (blocks != 0 && t->bytes > UINT64_MAX / blocks)
        return QB_E_RANGE;
    *out = blocks * t->bytes;
    return QB_OK;
}
