/*
 * quantbridge SDK — the canonical tensor interchange between readers and
 * writers.
 *
 * STABILITY: stable (see qb_abi.h for the growth rules).
 *
 * Data flow: source -> reader -> canonical tensors -> writer -> output.
 * A reader describes a model as a list of tensors under their canonical
 * Hugging Face names ("model.layers.3.self_attn.q_proj.weight") with the
 * Hugging Face shapes and values: every format quirk (packing, zero-point
 * conventions, permuted rows, fused tensors, norm offsets) is undone inside
 * the reader. Writers see only this view.
 *
 * Matrix view. Every tensor is read as a row-major matrix:
 *   n_dims == 1:  rows = 1,                      cols = dims[0]
 *   n_dims >= 2:  rows = dims[0]*...*dims[n-2],  cols = dims[n-1]
 * (dims in Hugging Face / PyTorch order: last dimension is contiguous;
 * for a linear weight rows = out_features, cols = in_features).
 *
 * Two ways to read values:
 *   - dense rows as float32: every reader, every tensor;
 *   - the integer grid (optional): codes, per-group scales and zero points,
 *     the column-to-group map, so a writer can repack without loss.
 * A reader that offers a grid for a tensor PROMISES that its dense rows are,
 * bit for bit, (float)((int32_t)code - zero) * scale computed in float32 for
 * every element — so "exact" can be checked by any writer. A float-coded
 * grid (ABI 1.4, QB_CODE_*: FP8 weights) makes the same promise with the
 * code's float value in place of code - zero; it is offered only to a
 * caller that says it decodes that kind (qb_grid_info.accept_codes).
 */
#ifndef QUANTBRIDGE_QB_TENSOR_H
#define QUANTBRIDGE_QB_TENSOR_H

#include "qb_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QB_MAX_DIMS 8

/* Storage element types. Values are never reused. Used for a tensor's
 * source storage (informational) and by the safetensors service. */
typedef enum qb_dtype {
    QB_DT_UNKNOWN = 0,
    QB_DT_F32 = 1,
    QB_DT_F16 = 2,
    QB_DT_BF16 = 3,
    QB_DT_F64 = 4,
    QB_DT_F8_E4M3 = 5,
    QB_DT_F8_E5M2 = 6,
    QB_DT_I8 = 16,
    QB_DT_U8 = 17,
    QB_DT_I16 = 18,
    QB_DT_U16 = 19,
    QB_DT_I32 = 20,
    QB_DT_U32 = 21,
    QB_DT_I64 = 22,
    QB_DT_U64 = 23,
    QB_DT_BOOL = 24,
    QB_DT_F8_E8M0 = 25,
    QB_DT_QUANTIZED = 64, /* a format-specific quantized encoding */
    QB_DTYPE_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not a dtype */
} qb_dtype;
QB_ABI_STATIC_ASSERT(sizeof(qb_dtype) == 4, qb_dtype_is_32_bits);


/* Description of one canonical tensor. Filled by the reader; all pointers
 * are owned by the reader and stay valid until its close(). */
typedef struct qb_tensor_info {
    uint32_t struct_size;
    const char *name;            /* canonical Hugging Face name, unique */
    uint32_t n_dims;             /* 1..QB_MAX_DIMS */
    int64_t dims[QB_MAX_DIMS];   /* Hugging Face order, each >= 1 */
    qb_dtype source_dtype;       /* storage type in the source */
    const char *source_encoding; /* human text, e.g. "bf16", "gptq int4 g128 sym v1",
                                    "gguf Q4_K"; never NULL */
    int32_t has_grid;            /* 1: get_grid_info/read_grid work for it */
    /* ABI 1.4 (float-coded grids); check QB_HAS_FIELD. */
    uint32_t pad_1_3;            /* keeps grid_codes out of 1.0's tail padding; 0 */
    uint32_t grid_codes;         /* QB_CODES_* bits: the float-coded grids get_grid_info
                                    offers a caller that accepts them (has_grid stays 0
                                    when the tensor has no integer grid); 0: none */
} qb_tensor_info;

/* ABI 1.0 size (qb_abi.h). */
QB_ABI_ALIGN_HELPER(qb_tensor_info);
#define QB_TENSOR_INFO_SIZE_1_0 QB_ABI_SIZE_1_0(qb_tensor_info, has_grid)
QB_ABI_STATIC_ASSERT(offsetof(qb_tensor_info, grid_codes) >= QB_TENSOR_INFO_SIZE_1_0,
                     qb_tensor_info_size_1_0);

/* Code kinds of a grid (qb_grid_info.code_kind), ABI 1.4. Values are never
 * reused. The value of code c, v(c), is:
 *   QB_CODE_INT      (int32_t)c - zero                     (the 1.0 grid)
 *   QB_CODE_F8_E4M3  c as float8 e4m3fn (1 sign, 4 exponent bits with bias 7,
 *                    3 mantissa bits; 0x7f and 0xff are NaN, no infinities),
 *                    exactly in float32; zeros are 0 and not used
 *   QB_CODE_F4_E2M1  (ABI 1.5) the low 4 bits of c as float4 e2m1 (1 sign,
 *                    2 exponent bits with bias 1, 1 mantissa bit: 0, 0.5,
 *                    1, 1.5, 2, 3, 4, 6 and their negatives), exactly in
 *                    float32; zeros are 0 and not used
 * and the grid's promise is dense = v(c) * s, one float32 product, where s
 * is the group's scale, or (ABI 1.5, qb_grid_info.tensor_scale_op) the
 * group's scale times or divided by the tensor's second-level scale,
 * rounded to float32 first: NVFP4's two scale levels. */
#define QB_CODE_INT 0u
#define QB_CODE_F8_E4M3 1u
#define QB_CODE_F4_E2M1 2u
/* Bit of a code kind in accept_codes / grid_codes. */
#define QB_CODES_BIT(kind) (1u << (kind))

/* Integer-grid description of one tensor (see the file comment for the
 * promise it carries). Filled by the reader; pointers owned by the reader,
 * valid until close(). */
typedef struct qb_grid_info {
    uint32_t struct_size;
    uint32_t bits;           /* code width, 1..8; codes are 0 .. 2^bits-1 */
    uint32_t n_groups;       /* groups per row (scales/zeros per row) */
    int64_t group_size;      /* columns per group when col_group == NULL:
                                groups are contiguous runs, the last may be
                                shorter; 0 when col_group != NULL */
    const int32_t *col_group;/* [cols] group index of each column (act-order
                                g_idx), or NULL for contiguous groups */
    int32_t symmetric;       /* 1: every zero point equals 2^(bits-1) */
    qb_dtype scale_dtype;    /* precision the source stored scales in */
    /* ABI 1.4 (float-coded grids); check QB_HAS_FIELD. */
    uint32_t accept_codes;   /* IN, set by the caller: QB_CODES_BIT of each float code
                                kind it decodes; 0 (or a shorter struct): integer
                                grids only, and a tensor with only a float-coded
                                grid answers QB_E_UNSUPPORTED */
    uint32_t code_kind;      /* OUT: QB_CODE_INT, or a kind the caller accepted */
    int64_t scale_rows;      /* OUT, float codes: rows that share one row of scales
                                in the source (1: per row; rows of the tensor: one
                                per tensor; bn: [bn, group_size] blocks), so a
                                writer can store the source's scale tensor as it
                                was; 0: not stated */
    /* ABI 1.5 (two-level scales); check QB_HAS_FIELD. A reader offers a
     * grid whose scales need the second level (QB_CODE_F4_E2M1 today) only
     * to a caller whose struct holds these fields. */
    uint32_t tensor_scale_op;/* OUT: QB_TENSOR_SCALE_*: how tensor_scale enters s */
    float tensor_scale;      /* OUT: the tensor's second-level scale, finite and > 0
                                when tensor_scale_op is not NONE; scales[] then hold
                                the first-level group scales only */
} qb_grid_info;

/* qb_grid_info.tensor_scale_op (ABI 1.5). Values are never reused.
 *   QB_TENSOR_SCALE_NONE  s = scale                        (every older grid)
 *   QB_TENSOR_SCALE_MUL   s = (float)(scale * tensor_scale)  (ModelOpt's
 *                         weight_scale times weight_scale_2)
 *   QB_TENSOR_SCALE_DIV   s = (float)(scale / tensor_scale)  (compressed-
 *                         tensors' weight_scale over weight_global_scale) */
#define QB_TENSOR_SCALE_NONE 0u
#define QB_TENSOR_SCALE_MUL 1u
#define QB_TENSOR_SCALE_DIV 2u

/* ABI 1.0 size (qb_abi.h). */
QB_ABI_ALIGN_HELPER(qb_grid_info);
#define QB_GRID_INFO_SIZE_1_0 QB_ABI_SIZE_1_0(qb_grid_info, scale_dtype)
QB_ABI_STATIC_ASSERT(offsetof(qb_grid_info, accept_codes) >= QB_GRID_INFO_SIZE_1_0,
                     qb_grid_info_size_1_0);

/* Caller-provided buffers for a grid row range [row0, row0 + n_rows).
 * The caller sets struct_size and the three pointers; the reader fills:
 *   codes  [n_rows * cols]      one code per element, row-major
 *   scales [n_rows * n_groups]  float32
 *   zeros  [n_rows * n_groups]  integer zero points */
typedef struct qb_grid_rows {
    uint32_t struct_size;
    uint8_t *codes;
    float *scales;
    int32_t *zeros;
} qb_grid_rows;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_grid_rows, <first new field>) >= QB_GRID_ROWS_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_grid_rows);
#define QB_GRID_ROWS_SIZE_1_0 QB_ABI_SIZE_1_0(qb_grid_rows, zeros)
QB_ABI_STATIC_ASSERT(QB_GRID_ROWS_SIZE_1_0 == sizeof(qb_grid_rows), qb_grid_rows_size_1_0);

/* Model facts (ABI 1.1): the numbers a writer usually needs, so it need
 * not parse config.json. Bits of qb_model_facts.known and of
 * qb_writer_caps.required_facts. */
#define QB_FACT_LAYERS (1u << 0)          /* n_layers: decoder layers */
#define QB_FACT_HIDDEN (1u << 1)          /* hidden_size */
#define QB_FACT_VOCAB (1u << 2)           /* vocab_size: rows of the embedding */
#define QB_FACT_HEADS (1u << 3)           /* n_heads: attention heads */
#define QB_FACT_KV_HEADS (1u << 4)        /* n_kv_heads */
#define QB_FACT_HEAD_DIM (1u << 5)        /* head_dim */
#define QB_FACT_INTERMEDIATE (1u << 6)    /* intermediate_size (dense MLP) */
#define QB_FACT_TIED_EMBEDDINGS (1u << 7) /* tied_embeddings */
#define QB_FACT_EXPERTS (1u << 8)         /* n_experts, n_experts_used (0, 0: dense) */
#define QB_FACT_ALL ((1u << 9) - 1u)      /* the bits these headers define */

/* Structured model facts. Filled by the HOST (never the reader) before a
 * writer sees the model, each fact from one stated source:
 *   vocab_size, hidden_size  rows and columns of model.embed_tokens.weight
 *   tied_embeddings          1 when the model has model.embed_tokens.weight
 *                            and no lm_head.weight, 0 when it has both
 *   n_layers                 config.json num_hidden_layers, else one more
 *                            than the largest N of model.layers.N.*
 *   n_heads, n_kv_heads, head_dim, intermediate_size
 *                            config.json num_attention_heads,
 *                            num_key_value_heads, head_dim, intermediate_size
 *   n_experts, n_experts_used config.json num_local_experts, num_experts or
 *                            n_routed_experts, and num_experts_per_tok; both
 *                            0 (known) when the config names none of them
 *                            and no tensor name holds ".experts."; count
 *                            keys that disagree state nothing
 * (the keys are transformers' PretrainedConfig attribute names, read from
 * the top-level object; a key whose value is null is not stated; from a
 * config that is absent or not strict JSON (qb_json.h) nothing is read,
 * nor concluded from its silence). A fact is
 * never guessed or derived from a default: its bit is clear when its source
 * does not state it (or states a non-integer or a value < 0), and the field
 * then holds 0. Owned by the host; valid as long as the qb_model_info that
 * points to it. */
typedef struct qb_model_facts {
    uint32_t struct_size;
    uint32_t known;             /* QB_FACT_* bits whose fields hold a value */
    int64_t n_layers;
    int64_t hidden_size;
    int64_t vocab_size;
    int64_t n_heads;
    int64_t n_kv_heads;
    int64_t head_dim;
    int64_t intermediate_size;
    int64_t n_experts;          /* routed experts per MoE layer; 0: dense */
    int64_t n_experts_used;     /* experts per token; 0: dense */
    int32_t tied_embeddings;    /* 1: lm_head shares model.embed_tokens.weight */
} qb_model_facts;

/* Introduced in ABI 1.1; its first size is QB_MODEL_FACTS_SIZE_1_1. */
QB_ABI_ALIGN_HELPER(qb_model_facts);
#define QB_MODEL_FACTS_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_model_facts, tied_embeddings)
QB_ABI_STATIC_ASSERT(QB_MODEL_FACTS_SIZE_1_1 == sizeof(qb_model_facts), qb_model_facts_size_1_1);

/* What a reader says about the tokenizer it does not give (ABI 1.3,
 * qb_model_info.tokenizer_state). A reader that gives tokenizer files sets
 * tokenizer_dir and leaves the state UNSTATED. */
typedef enum qb_tokenizer_state {
    QB_TOKENIZER_UNSTATED = 0, /* nothing said: tokenizer_dir tells (NULL: the
                                  source has no tokenizer files) */
    QB_TOKENIZER_SKIPPED = 1,  /* the source has a tokenizer the reader left out
                                  at the user's request (a reader option) */
    QB_TOKENIZER_REFUSED = 2,  /* the source has a tokenizer the reader cannot
                                  give exactly; tokenizer_note says why and
                                  names the reader option that skips it */
    QB_TOKENIZER_STATE_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not a state */
} qb_tokenizer_state;
QB_ABI_STATIC_ASSERT(sizeof(qb_tokenizer_state) == 4, qb_tokenizer_state_is_32_bits);

/* Description of a whole model. Filled by the reader; pointers owned by the
 * reader, valid until close(). */
typedef struct qb_model_info {
    uint32_t struct_size;
    const char *architecture;      /* Hugging Face model_type: "llama", "qwen2", ... */
    const char *config_json;       /* Hugging Face config.json text for the model,
                                      UTF-8; may keep the source's
                                      quantization_config (writers drop it) */
    const char *generation_config_json; /* or NULL */
    size_t n_tensors;
    const char *source_format;     /* reader's format name, e.g. "gptq" */
    const char *source_summary;    /* one line, e.g. "GPTQ 4-bit g128 sym v1 act-order" */
    const char *tokenizer_dir;     /* directory holding Hugging Face tokenizer files
                                      to copy, or NULL */
    const char *chat_template;     /* chat template text the source carries
                                      outside tokenizer files (GGUF), or NULL */
    /* ABI 1.1 */
    const qb_model_facts *facts;   /* set by the HOST in the info a writer sees
                                      (qb_model_src.info); a reader leaves it
                                      NULL and the host ignores what a reader
                                      puts there. Check QB_HAS_FIELD first:
                                      a 1.0 host does not have it. */
    /* ABI 1.3 */
    qb_tokenizer_state tokenizer_state; /* QB_TOKENIZER_*; with SKIPPED or
                                      REFUSED tokenizer_dir is NULL. A reader
                                      states a refusal only to a host that
                                      negotiated ABI >= 1.3 (and writes the
                                      field under QB_HAS_FIELD); to an older
                                      host it fails open() instead, as before
                                      1.3. The host refuses a state it does
                                      not know, or SKIPPED / REFUSED with a
                                      tokenizer_dir (docs/plugin-design.md,
                                      "Tokenizer state added in 1.3"). */
    const char *tokenizer_note;    /* one line on SKIPPED / REFUSED (the
                                      reason, naming the reader option that
                                      skips the tokenizer), else NULL */
} qb_model_info;

/* ABI 1.0 size (qb_abi.h): a 1.0 info ends at chat_template. */
QB_ABI_ALIGN_HELPER(qb_model_info);
#define QB_MODEL_INFO_SIZE_1_0 QB_ABI_SIZE_1_0(qb_model_info, chat_template)
QB_ABI_STATIC_ASSERT(offsetof(qb_model_info, facts) >= QB_MODEL_INFO_SIZE_1_0,
                     qb_model_info_size_1_0);
#define QB_MODEL_INFO_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_model_info, facts)
QB_ABI_STATIC_ASSERT(offsetof(qb_model_info, tokenizer_state) >= QB_MODEL_INFO_SIZE_1_1,
                     qb_model_info_size_1_1);
#define QB_MODEL_INFO_SIZE_1_3 QB_ABI_SIZE_THROUGH(qb_model_info, tokenizer_note)
QB_ABI_STATIC_ASSERT(QB_MODEL_INFO_SIZE_1_3 == sizeof(qb_model_info), qb_model_info_size_1_3);

/* Number of rows/cols of the matrix view (see file comment). */
static inline int64_t qb_tensor_rows(const qb_tensor_info *ti)
{
    int64_t r = 1;
    uint32_t i;
    if (ti->n_dims < 2)
        return 1;
    for (i = 0; i + 1 < ti->n_dims; i++)
        r *= ti->dims[i];
    return r;
}
static inline int64_t qb_tensor_cols(const qb_tensor_info *ti)
{
    return ti->n_dims == 0 ? 1 : ti->dims[ti->n_dims - 1];
}

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_TENSOR_H */
