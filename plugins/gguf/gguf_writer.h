/*
 * GGUF writer — internals shared by writer.c (the vtable and the streaming
 * of tensor data), wplan.c (which GGUF tensor each canonical tensor goes
 * to, in which ggml type, exact or quantized and why), wmeta.c (the
 * metadata: general.*, {arch}.* from config.json, tokenizer.ggml.* from
 * tokenizer.json) and wrope.c (rope factor tensors from config.json).
 * Layout facts: docs/formats/gguf.md "Container layout",
 * "Tensor names", "Writing GGUF". Internal to the gguf plugin.
 */
#ifndef GGUF_WRITER_H
#define GGUF_WRITER_H

#include "gguf_names.h"

#include <cjson/cJSON.h>
#include <quantbridge/qb_writer.h>

/* Alignment of tensor data (GGUF_DEFAULT_ALIGNMENT; general.alignment is not written). */
#define GGW_ALIGN 32

/* A growable byte buffer (the header is built in memory before any data). */
typedef struct ggw_buf {
    uint8_t *p;
    size_t n, cap;
    int oom; /* an append failed: the buffer is incomplete */
} ggw_buf;

void ggw_put(ggw_buf *b, const void *data, size_t n);
void ggw_u32(ggw_buf *b, uint32_t v);
void ggw_u64(ggw_buf *b, uint64_t v);
void ggw_str(ggw_buf *b, const char *s); /* u64 length + bytes */
void ggw_buf_free(ggw_buf *b);

/* Metadata key/values: ggw_kv_* append one (key, type, value) and count it. */
typedef struct ggw_kv {
    ggw_buf b;
    uint64_t n;
} ggw_kv;
void ggw_kv_u32(ggw_kv *kv, const char *key, uint32_t v);
void ggw_kv_u16(ggw_kv *kv, const char *key, uint16_t v);
void ggw_kv_i32(ggw_kv *kv, const char *key, int32_t v);
void ggw_kv_f32(ggw_kv *kv, const char *key, float v);
void ggw_kv_bool(ggw_kv *kv, const char *key, int v);
void ggw_kv_str(ggw_kv *kv, const char *key, const char *v);

/* How an output tensor's bytes are made. */
enum {
    GGW_FLOAT = 0, /* from the reader's float32 rows, by gguf_ggml_quantize_row */
    GGW_GRID_Q4_0, /* from a symmetric 4-bit grid: codes and fp16 scales carried over */
    GGW_GRID_Q8_0, /* from a symmetric 8-bit grid */
    GGW_GEN        /* no source tensor: values made from config.json (ggw_tensor.gen) */
};

/* deepseek2's kv_b_proj, written as llama.cpp's converter splits it
 * (ggw_tensor.kv): the attn_k_b tensor streams both halves, the attn_v_b
 * one has no parts of its own. */
enum { GGW_KV_NONE = 0, GGW_KV_K = 1, GGW_KV_V = 2 };

/* One GGUF tensor: the concatenation by rows of n_parts source tensors. */
typedef struct ggw_tensor {
    char name[GGUF_MAX_NAME];
    uint32_t n_dims;
    int64_t ne[3];
    uint32_t type;       /* ggml type id */
    uint64_t nbytes, offset;
    size_t *part;        /* source tensor indices in row order, owned */
    size_t n_parts;
    uint32_t perm_heads; /* rows permuted (LlamaModel.permute) with this many heads, or 0 */
    int plus_one;        /* Gemma norm: w + 1 */
    int how;             /* GGW_* */
    int action;          /* qb_plan_action */
    char why[400];
    /* issue 28 (deepseek2, rope factors, split files) */
    int kv;              /* GGW_KV_* */
    size_t kv_other;     /* GGW_KV_K: index of its attn_v_b tensor */
    int64_t kv_heads, kv_nope, kv_vdim; /* kv_b_proj [heads * (nope + vdim), rank] */
    float *gen;          /* GGW_GEN: ne[0] float32 values, owned */
    uint32_t shard;      /* split file (0-based) */
} ggw_tensor;

typedef struct ggw_plan {
    ggw_tensor *t;
    size_t n;
    size_t *out_of;  /* [n_src] output tensor of each source tensor */
    size_t n_src;
    const gguf_arch *arch;
    int64_t n_head, n_head_kv;
    uint32_t ftype;  /* general.file_type (llama_ftype) */
    uint32_t n_shards; /* files (ggw_tensor.shard < n_shards) */
    int split;         /* gguf-split's layout (model-0000i-of-0000n.gguf), else model.gguf */
} ggw_plan;

/* Writer options as parsed from the params. */
#define GGW_MAX_OVERRIDES 16

/* Presets (type=Q4_K_M / Q5_K_M): llama.cpp's per-tensor mix (wplan.c). */
enum { GGW_PRESET_NONE = 0, GGW_PRESET_Q4_K_M, GGW_PRESET_Q5_K_M };

typedef struct ggw_opts {
    int auto_type;       /* type=auto */
    int preset;          /* GGW_PRESET_* */
    uint32_t type;       /* ggml type for quantized weights (auto: Q8_0; a preset: its base type) */
    size_t n_over;       /* tensor_type overrides, applied in order, the first match wins */
    void *over_re[GGW_MAX_OVERRIDES]; /* regex_t, owned */
    uint32_t over_type[GGW_MAX_OVERRIDES];
    uint64_t split_max_size;    /* split_max_size: bytes of tensor data per file, 0 = no split */
    uint64_t split_max_tensors; /* split_max_tensors: tensors per file, 0 = no split */
} ggw_opts;

/* Parses the writer's params (type, tensor_type). QB_E_INVALID with a
 * message on a bad value; free with ggw_opts_free either way. */
qb_status ggw_opts_parse(const qb_host *h, const qb_param *params, ggw_opts *o);
void ggw_opts_free(ggw_opts *o);

/* Plans the output of src: every tensor named (an unknown one is an error
 * naming it), shapes checked, types chosen; order[] gets the write order
 * (the parts of each GGUF tensor in row order, tensors in file order).
 * QB_E_UNSUPPORTED / QB_E_FORMAT / QB_E_NOMEM with a message. */
qb_status ggw_plan_build(const qb_host *h, const qb_model_src *src, const cJSON *cfg, const ggw_opts *o,
                         size_t *order, ggw_plan *p);
void ggw_plan_free(ggw_plan *p);


/* config.json's rope scaling object: "rope_scaling", or transformers 5's
 * "rope_parameters" when it names a type; NULL when neither (wrope.c). */
const cJSON *ggw_rope_dict(const cJSON *cfg);

/* Rope factor tensors made from config.json (wrope.c): none, llama3's
 * rope_freqs.weight, or phi3 longrope's long and short factors. */
typedef struct ggw_rope_factors {
    size_t n;            /* tensors: 0, 1 or 2 */
    const char *name[2]; /* GGUF names (static) */
    float *v[2];         /* len values each, owned */
    int64_t len;
    const char *why;     /* for the manifest (static) */
} ggw_rope_factors;

/* Fills *f from cfg for architecture arch. QB_E_UNSUPPORTED naming the
 * type when llama3 / longrope scaling is on an architecture llama.cpp's
 * converter makes no factor tensor for, QB_E_FORMAT for factors of the
 * wrong length or a bad head dimension; *f is empty then. Free with
 * ggw_rope_factors_free. */
qb_status ggw_rope_factors_make(const qb_host *h, const char *source, const cJSON *cfg, const gguf_arch *arch,
                                ggw_rope_factors *f);
void ggw_rope_factors_free(ggw_rope_factors *f);

/* Appends general.*, {arch}.* and tokenizer.ggml.* to kv. cfg is the
 * source's config.json. QB_E_UNSUPPORTED / QB_E_FORMAT naming the file and
 * key when something cannot be written as llama.cpp expects it. */
qb_status ggw_meta_build(const qb_host *h, const qb_model_src *src, const cJSON *cfg, const ggw_plan *p,
                         ggw_kv *kv);

#endif /* GGUF_WRITER_H */
