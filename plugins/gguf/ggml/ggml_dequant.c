/*
 * gguf_ggml_dequantize_row: dispatch by type id to the per-type decoders.
 * The table's `supported` flag and this switch must agree; the tests check
 * that every supported id decodes and every other id is refused.
 */
#include "ggml_dequant_impl.h"

#include <assert.h>
#include <stddef.h>

static gguf_ggml_deq_fn gguf_ggml_deq_lookup(uint32_t type)
{
    switch (type) {
    case GGUF_GGML_TYPE_F32: return gguf_ggml_deq_f32;
    case GGUF_GGML_TYPE_F16: return gguf_ggml_deq_f16;
    case GGUF_GGML_TYPE_BF16: return gguf_ggml_deq_bf16;
    case GGUF_GGML_TYPE_I8: return gguf_ggml_deq_i8;
    case GGUF_GGML_TYPE_I16: return gguf_ggml_deq_i16;
    case GGUF_GGML_TYPE_I32: return gguf_ggml_deq_i32;
    case GGUF_GGML_TYPE_I64: return gguf_ggml_deq_i64;
    case GGUF_GGML_TYPE_F64: return gguf_ggml_deq_f64;
    case GGUF_GGML_TYPE_Q4_0: return gguf_ggml_deq_q4_0;
    case GGUF_GGML_TYPE_Q4_1: return gguf_ggml_deq_q4_1;
    case GGUF_GGML_TYPE_Q5_0: return gguf_ggml_deq_q5_0;
    case GGUF_GGML_TYPE_Q5_1: return gguf_ggml_deq_q5_1;
    case GGUF_GGML_TYPE_Q8_0: return gguf_ggml_deq_q8_0;
    case GGUF_GGML_TYPE_Q8_1: return gguf_ggml_deq_q8_1;
    case GGUF_GGML_TYPE_Q1_0: return gguf_ggml_deq_q1_0;
    case GGUF_GGML_TYPE_Q2_0: return gguf_ggml_deq_q2_0;
    case GGUF_GGML_TYPE_Q2_K: return gguf_ggml_deq_q2_k;
    case GGUF_GGML_TYPE_Q3_K: return gguf_ggml_deq_q3_k;
    case GGUF_GGML_TYPE_Q4_K: return gguf_ggml_deq_q4_k;
    case GGUF_GGML_TYPE_Q5_K: return gguf_ggml_deq_q5_k;
    case GGUF_GGML_TYPE_Q6_K: return gguf_ggml_deq_q6_k;
    case GGUF_GGML_TYPE_Q8_K: return gguf_ggml_deq_q8_k;
    case GGUF_GGML_TYPE_TQ1_0: return gguf_ggml_deq_tq1_0;
    case GGUF_GGML_TYPE_TQ2_0: return gguf_ggml_deq_tq2_0;
    case GGUF_GGML_TYPE_IQ4_NL: return gguf_ggml_deq_iq4_nl;
    case GGUF_GGML_TYPE_IQ4_XS: return gguf_ggml_deq_iq4_xs;
    case GGUF_GGML_TYPE_MXFP4: return gguf_ggml_deq_mxfp4;
    case GGUF_GGML_TYPE_NVFP4: return gguf_ggml_deq_nvfp4;
    case GGUF_GGML_TYPE_IQ2_XXS: return gguf_ggml_deq_iq2_xxs;
    case GGUF_GGML_TYPE_IQ2_XS: return gguf_ggml_deq_iq2_xs;
    case GGUF_GGML_TYPE_IQ2_S: return gguf_ggml_deq_iq2_s;
    case GGUF_GGML_TYPE_IQ3_XXS: return gguf_ggml_deq_iq3_xxs;
    case GGUF_GGML_TYPE_IQ3_S: return gguf_ggml_deq_iq3_s;
    case GGUF_GGML_TYPE_IQ1_S: return gguf_ggml_deq_iq1_s;
    case GGUF_GGML_TYPE_IQ1_M: return gguf_ggml_deq_iq1_m;
    default: return NULL;
    }
}

void gguf_ggml_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    gguf_ggml_deq_fn fn = gguf_ggml_deq_lookup(type);
    assert(t != NULL && t->supported && fn != NULL);
    assert(n >= 0 && n % t->blck == 0);
    /* without asserts (NDEBUG) a bad call decodes nothing rather than
     * reading out of bounds */
    if (t == NULL || fn == NULL || n <= 0 || n % t->blck != 0)
        return;
    fn((const uint8_t *)src, dst, n);
}
