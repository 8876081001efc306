/*
 * Test fixtures: small llama-shaped GPTQ and AWQ checkpoints written from
 * known integer codes, fp16 scales and zero points (the ground truth), with
 * packers that mirror the upstream quantizers' pack functions (cited in
 * gen_gptq.c / gen_awq.c). Tests only; never linked into the tool.
 *
 * Model: llama, hidden 128, intermediate 256, 2 layers, vocab 64; the seven
 * linears of each layer are quantized (q/k/v/o_proj, gate/up/down_proj),
 * q_proj carries an F16 bias; embed_tokens / lm_head F16, norms F32.
 *
 * Functions return 0 on success, -1 on failure (message on stderr).
 */
#ifndef QBT_GEN_GPTQ_H
#define QBT_GEN_GPTQ_H

#include <stddef.h>
#include <stdint.h>

/* Ground truth of one linear. Quantized: codes/scales/zeros/g_idx are the
 * truth; dense (excluded by a rule): dense holds its F16 weight. */
typedef struct qbt_qlin {
    char name[128]; /* module path, e.g. "model.layers.0.self_attn.q_proj" */
    int64_t N, K;   /* out, in */
    int quantized;
    int bits;
    int64_t gs;     /* effective group size (K for per-channel) */
    uint32_t G;
    uint8_t *codes;   /* [N*K], HF orientation */
    uint16_t *scales; /* [N*G] fp16 bits */
    int32_t *zeros;   /* [N*G] real zero points */
    int32_t *g_idx;   /* [K] group of each input column */
    uint16_t *dense;  /* [N*K] fp16 bits, when !quantized */
} qbt_qlin;

/* A dense tensor of the fixture (embeddings, norms, lm_head, biases). */
typedef struct qbt_qdense {
    char name[128];
    int n_dims;
    int64_t dims[2];
    const char *dtype; /* "F16" or "F32" */
    void *data;
    size_t n_bytes;
} qbt_qdense;

typedef struct qbt_qmodel {
    qbt_qlin lin[16];
    size_t n_lin;
    qbt_qdense dense[16];
    size_t n_dense;
} qbt_qmodel;

void qbt_qmodel_free(qbt_qmodel *m);

/* Ground-truth dense value of linear l at (n, k): the fp32 product
 * (float)(code - zero) * scale the readers promise, or the F16 weight. */
float qbt_qlin_value(const qbt_qlin *l, int64_t n, int64_t k);

/* Index of the linear or dense tensor named `name` (a tensor name such as
 * "...q_proj.weight"), -1 when absent. */
int qbt_qmodel_find_lin(const qbt_qmodel *m, const char *tensor_name);
int qbt_qmodel_find_dense(const qbt_qmodel *m, const char *tensor_name);

enum {
    QBT_BROKEN_NONE = 0,
    QBT_BROKEN_DESC_ACT_NO_GIDX,   /* desc_act true, act-order codes, no g_idx tensors */
    QBT_BROKEN_QWEIGHT_BITS,       /* config bits 4, tensors packed at 8 bits */
    QBT_BROKEN_SCALE_MISSING_SHARD,/* index maps one .scales to a shard that does not exist */
    QBT_BROKEN_MISMATCHED_SHARDS,  /* index maps a tensor to the wrong shard */
    QBT_BROKEN_MISSING_QZEROS,     /* one module lacks qzeros */
    QBT_BROKEN_BAD_GIDX,           /* one g_idx value out of range */
    QBT_BROKEN_GIDX_COUNTS         /* one column moved to another group: counts != group size */
};

typedef struct qbt_gptq_spec {
    int bits;           /* 2, 3, 4, 8 */
    int64_t group_size; /* > 0 or -1 */
    int sym;
    int v2;             /* zeros stored as is (gptq_v2) instead of zero - 1 */
    int act_order;      /* desc_act with a real permuted g_idx */
    int label;          /* write checkpoint_format (0: omit it) */
    int wrong_label;    /* label says the other convention */
    int n_shards;       /* 1 or 2 (2: every .scales in the other shard) */
    int dynamic;        /* GPTQModel dynamic: layer 1 8-bit g32, layer 0 down_proj excluded */
    int side_file;      /* also write quantize_config.json */
    int broken;         /* QBT_BROKEN_* */
    uint64_t seed;
    int word_bits;      /* GPTQModel pack_dtype: 8, 16, 32 (0 = 32) or 64; bits 2/4/8 only */
    int v1_zero0;       /* asym v1 with real zeros of 0: packed as upstream does (uint32 -1
                           ORed in, all-ones above it in that word); the truth becomes what
                           the reference kernels read back, ((field + 1) & mask) */
} qbt_gptq_spec;

/* Writes a GPTQ checkpoint into existing directory `dir`; *truth (when not
 * NULL) receives the ground truth (free with qbt_qmodel_free). */
int qbt_gptq_write(const char *dir, const qbt_gptq_spec *spec, qbt_qmodel **truth);

typedef struct qbt_awq_spec {
    int gemv;            /* 0: version gemm, 1: gemv */
    int zero_point;      /* 0: symmetric (all zeros 8) */
    int omit_qzeros;     /* with zero_point 0: write no qzeros tensors */
    int64_t group_size;  /* gemm: any divisor of K or -1; gemv: 32, 64, >= 128 */
    const char *version; /* written version string; NULL = from gemv */
    int n_shards;
    uint64_t seed;
    const char *skip;    /* modules_to_not_convert entry; matching linears written dense F16 */
} qbt_awq_spec;

/* Writes an AWQ checkpoint into existing directory `dir` (see gen_awq.c). */
int qbt_awq_write(const char *dir, const qbt_awq_spec *spec, qbt_qmodel **truth);

/* Shared by the two generators: builds the llama-shaped truth. bits/group
 * size apply to every linear; zeros: sym -> 2^(bits-1), else uniform in
 * [zmin, 2^bits-1]; act_order -> g_idx from a random permutation. */
qbt_qmodel *qbt_qmodel_build(uint64_t seed, int bits, int64_t group_size, int sym, int zmin,
                             int act_order);

/* Rebuilds linear l with new bits / group size (same seed stream). */
int qbt_qlin_fill(qbt_qlin *l, uint64_t seed, int bits, int64_t group_size, int sym, int zmin,
                  int act_order);

/* Writes config.json with `qc_json` (a JSON object text) as
 * quantization_config, plus the safetensors files of `files` tensors split
 * into n_shards with model.safetensors.index.json when n_shards > 1. */
int qbt_write_llama_config(const char *dir, const char *qc_json);

#endif /* QBT_GEN_GPTQ_H */
