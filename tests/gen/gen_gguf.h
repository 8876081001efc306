/*
 * Test fixtures: a GGUF v3 writer and a synthetic-model builder (tests
 * only; never linked into the tool).
 *
 * The writer follows the GGUF layout (docs/formats/gguf.md; ggml src/
 * gguf.cpp): header, metadata, tensor infos, zero padding to the
 * alignment, data with each tensor padded to the alignment.
 *
 * The model builder makes known Hugging Face weights for an architecture
 * and writes them the way llama.cpp's convert_hf_to_gguf.py would: names
 * mapped, dims reversed, Q/K rows permuted (LlamaModel.permute) for arch
 * llama, +1 on Gemma norms, phi3 q/k/v and gate/up fused, MoE experts
 * stacked into 3-D tensors. Quantized weights are built from chosen integer
 * codes and fp16 scales, so the expected HF values are known exactly.
 *
 * Functions return 0 on success, -1 on failure (message on stderr).
 */
#ifndef QBT_GEN_GGUF_H
#define QBT_GEN_GGUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct qbt_gguf qbt_gguf;

qbt_gguf *qbt_gguf_new(void);
void qbt_gguf_free(qbt_gguf *g);

/* Metadata. `raw` adds a value of GGUF type `type` whose encoded bytes
 * (everything after the type field) are given verbatim. */
int qbt_gguf_kv_u32(qbt_gguf *g, const char *key, uint32_t v);
int qbt_gguf_kv_u16(qbt_gguf *g, const char *key, uint16_t v);
int qbt_gguf_kv_i32(qbt_gguf *g, const char *key, int32_t v);
int qbt_gguf_kv_f32(qbt_gguf *g, const char *key, float v);
int qbt_gguf_kv_bool(qbt_gguf *g, const char *key, int v);
int qbt_gguf_kv_str(qbt_gguf *g, const char *key, const char *v);
int qbt_gguf_kv_arr_str(qbt_gguf *g, const char *key, size_t n, const char *const *v);
int qbt_gguf_kv_arr_i32(qbt_gguf *g, const char *key, size_t n, const int32_t *v);
int qbt_gguf_kv_raw(qbt_gguf *g, const char *key, uint32_t type, const void *bytes, size_t n);
/* Removes every entry named `key` (none: no-op), e.g. to set general.name anew. */
void qbt_gguf_kv_remove(qbt_gguf *g, const char *key);

/* Adds a tensor; ne in ggml order (ne[0] contiguous); data copied. */
int qbt_gguf_add_tensor(qbt_gguf *g, const char *name, int n_dims, const int64_t *ne, uint32_t type,
                        const void *data, size_t nbytes);

/* File layout options. */
typedef struct qbt_gguf_opts {
    uint32_t version;   /* 0 = 3 */
    uint32_t alignment; /* 0 = 32 (written as general.alignment only when != 32) */
} qbt_gguf_opts;

/* Section boundaries of a serialized image (for truncation tests). */
typedef struct qbt_gguf_layout {
    size_t kv_start, tinfo_start, data_start, size;
    size_t first_offset_field; /* file offset of tensor 0's u64 data offset */
    size_t first_type_field;   /* file offset of tensor 0's u32 type */
} qbt_gguf_layout;

/* Serializes to a new malloc'd buffer. */
uint8_t *qbt_gguf_serialize(const qbt_gguf *g, const qbt_gguf_opts *o, qbt_gguf_layout *lay);
int qbt_gguf_save(const qbt_gguf *g, const qbt_gguf_opts *o, const char *path);

/* Writes `n_shards` files <prefix>-0000k-of-0000N.gguf: tensors split in
 * order, all metadata in shard 1, split.no/count/tensors.count in each. */
int qbt_gguf_save_split(const qbt_gguf *g, const char *prefix, int n_shards);

/* ---- synthetic models ---- */

typedef struct qbt_gguf_spec {
    const char *arch;  /* llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma, gemma2, gemma3, phi3, deepseek2,
                          gpt-oss (float wtype; n_ff = expert width; the fused experts' reference is
                          their row view [E*in, out]) */
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim; /* head_dim 0: n_embd/n_head, no key_length */
    int n_vocab;
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp; /* MoE (llama with experts = mixtral) */
    int sliding_window;                                /* > 0: written as attention.sliding_window */
    int tied;                                          /* no output.weight */
    uint32_t wtype;   /* ggml type of 2-D weights: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16 built
                         from codes; any type qbt_ggml_quantize_row makes when
                         qbt_gguf_can_quantize() (then vals = decoded blocks) */
    int legacy_experts;    /* mixtral: one 2-D blk.N.ffn_{gate,up,down}.E tensor per expert (early GGUFs) */
    int fuse_gate_up_exps; /* MoE: one ffn_gate_up_exps tensor (convert --fuse-gate-up-exps) */
    int qk_bias;      /* llama only: q/k/v biases (q/k permuted like the weights) */
    int llama3_rope;  /* llama only: rope_freqs.weight of Llama 3.1 (factor 8, low 1, high 4, ctx 8192);
                         2 = factors matching no known set */
    int no_tokenizer; /* no tokenizer.* keys (the caller adds them, e.g. qbt_gguf_add_hf_tokenizer) */
    /* deepseek2 (DeepseekV2Model): MLA widths (head_dim/n_head_kv unused),
     * q_lora 0 = q_proj; n_ff = dense width of the first n_dense blocks,
     * n_ff_exp the expert width, n_shared shared experts. sigmoid: a
     * DeepSeek-V3 file (expert_gating_func 2, exp_probs_b, 2 expert groups,
     * yarn rope); else a V2 one without the gating key. sigmoid 2: the V3
     * tensors with expert_gating_func 1 (softmax), a defect. split_kv_b: kv_b
     * written as attn_k_b (transposed per head) + attn_v_b with the _mla
     * keys, as llama.cpp converts since its MLA change (F32/F16/BF16 only:
     * the transpose of quantized rows would need requantizing). */
    int q_lora, kv_lora, qk_nope, qk_rope, v_head, n_dense, n_shared, sigmoid, split_kv_b;
    uint64_t seed;
} qbt_gguf_spec;

/* One expected Hugging Face tensor. vals are the exact values a correct
 * reader returns; for Q4_0, codes/scales the expected grid. */
typedef struct qbt_hf_tensor {
    char *name;
    int n_dims;
    int64_t dims[2];
    float *vals;
    float *orig;     /* quantized via qbt_ggml_quantize_row: the float weights before
                        quantization (vals are their decoded blocks); else NULL */
    uint8_t *codes;  /* Q4_0 only: [rows*cols] */
    float *scales;   /* Q4_0 only: [rows*cols/32] */
} qbt_hf_tensor;

typedef struct qbt_hf_model {
    qbt_hf_tensor *t;
    size_t n;
} qbt_hf_model;

/* 1 when the fixture library can write `type` through qbt_ggml_quant
 * (built with it), else 0. */
int qbt_gguf_can_quantize(uint32_t type);

/* Builds the GGUF (*out, metadata included) and the expected HF tensors
 * (*ref) for spec. */
int qbt_gguf_build_model(const qbt_gguf_spec *spec, qbt_gguf **out, qbt_hf_model *ref);
void qbt_hf_model_free(qbt_hf_model *m);
/* Expected tensor by name, or NULL. */
const qbt_hf_tensor *qbt_hf_model_find(const qbt_hf_model *m, const char *name);

#endif /* QBT_GEN_GGUF_H */
