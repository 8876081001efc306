/*
 * gguf_ggml_dequantize_row: dispatch by type id to the per-type decoders.
 */
#include "ggml_dequant_impl.h"

#include <assert.h>
#include <stddef.h>

static ggml_deq_fn ggml_deq_lookup(uint32_t type)
{
    switch (type) {
    case GGUF_GGML_TYPE_F32: return ggml_deq_f32;
    case GGUF_GGML_TYPE_F16: return ggml_deq_f16;
    case GGUF_GGML_TYPE_BF16: return ggml_deq_bf16;
    case GGUF_GGML_TYPE_I8: return ggml_deq_i8;
    case GGUF_GGML_TYPE_I16: return ggml_deq_i16;
    case GGUF_GGML_TYPE_I32: return ggml_deq_i32;
    case GGUF_GGML_TYPE_I64: return ggml_deq_i64;
    case GGUF_GGML_TYPE_F64: return ggml_deq_f64;
    default: return NULL;
    }
}

void gguf_ggml_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const gguf_ggml_type_info *t = gguf_ggml_type_get(type);
    ggml_deq_fn fn = ggml_deq_lookup(type);
    assert(t != NULL && t->supported && fn != NULL);
    assert(n >= 0 && n % t->blck == 0);
    if (fn == NULL || n <= 0)
        return;
    fn((const uint8_t *)src, dst, n);
}
