/*
 * Test fixtures: tiny llama-shaped compressed-tensors checkpoints
 * (gen_ct.c) and FP8 (`quant_method: fp8`) checkpoints (gen_fp8.c) written
 * from known integer codes / known FP8 bytes and known scales (the ground
 * truth), with packers that mirror the upstream ones (cited in the .c
 * files). Tests only; never linked into the tool.
 *
 * Model: llama, hidden 64, intermediate 128, 2 layers, 4 heads (2 KV, head
 * dim 16), vocab 96. The seven linears of each layer are quantized;
 * embed_tokens, the norms and lm_head are BF16 dense (lm_head is in the
 * compressed-tensors ignore list / the fp8 modules_to_not_convert list).
 *
 * Functions return 0 on success, -1 on failure (message on stderr).
 */
#ifndef QBT_GEN_CT_H
#define QBT_GEN_CT_H

#include <stddef.h>
#include <stdint.h>

#include "qbt_st_writer.h"

enum { QBT_CQ_DENSE = 0, QBT_CQ_INT = 1, QBT_CQ_FP8 = 2 };
enum { QBT_CQ_TENSOR = 0, QBT_CQ_CHANNEL = 1, QBT_CQ_GROUP = 2, QBT_CQ_BLOCK = 3 };

/* Ground truth of one linear (or, for QBT_CQ_DENSE, a BF16 tensor). */
typedef struct qbt_cq_lin {
    char name[128];      /* tensor name: "<module>.weight" or the dense name */
    int n_dims;
    int64_t N, K;        /* rows, cols (1-D dense: N = 1) */
    int quant;           /* QBT_CQ_* */
    int bits, sym, strategy;
    int64_t gs, bh, bw;  /* group size; block rows/cols */
    int64_t SR, G;       /* scale grid: rows, cols */
    int8_t *q;           /* [N*K] signed codes (INT) */
    uint8_t *f8;         /* [N*K] FP8 bytes (FP8) */
    int e5m2;            /* FP8 bytes are E5M2 */
    float *scale;        /* [SR*G], values exact in the stored scale dtype */
    int8_t *zq;          /* [SR*G] signed zero points, NULL when symmetric */
    int32_t *g_idx;      /* [K] or NULL */
    uint16_t *bf16;      /* [N*K] BF16 bits (DENSE) */
} qbt_cq_lin;

typedef struct qbt_cq_model {
    qbt_cq_lin t[32];
    size_t n;
} qbt_cq_model;

void qbt_cq_model_free(qbt_cq_model *m);

/* Ground-truth float32 value at (n, k): (float)(q - zq) * scale,
 * (float)fp8 * scale (one float32 product) or the BF16 value. */
float qbt_cq_value(const qbt_cq_lin *l, int64_t n, int64_t k);

/* Value of an FP8 byte from the bit definition (double, via ldexp):
 * E4M3FN (e5m2 == 0) or E5M2. NaN for NaN codes, +-inf for E5M2 inf. */
double qbt_fp8_value(uint8_t b, int e5m2);

/* Entry of `name` (a tensor name) or NULL. */
const qbt_cq_lin *qbt_cq_find(const qbt_cq_model *m, const char *name);

enum {
    QBT_CT_OK = 0,
    QBT_CT_BROKEN_MISSING_SCALE,   /* layer 0 q_proj has no weight_scale */
    QBT_CT_BROKEN_LEFTOVER_PACKED, /* lm_head.weight_packed although lm_head is ignored */
    QBT_CT_BROKEN_LEFTOVER_ZP,     /* weight_zero_point in a symmetric scheme */
    QBT_CT_BROKEN_UNKNOWN_FORMAT,  /* format "marlin-24" */
    QBT_CT_BROKEN_MISSING_SHARD,   /* index maps a scale to a shard not written */
    QBT_CT_BROKEN_SHAPE,           /* weight_shape disagrees with weight_packed */
    QBT_CT_BROKEN_SPARSE           /* format "sparse-24-bitmask" */
};

typedef struct qbt_ct_spec {
    const char *format; /* "pack-quantized", "int-quantized", "naive-quantized", "float-quantized" */
    int fp8;            /* float weights (FP8 E4M3) */
    int bits;           /* int: 4 or 8 */
    int sym;
    int strategy;       /* QBT_CQ_* */
    int64_t gs;         /* group size */
    int64_t bh, bw;     /* block */
    int act_order;      /* actorder "group" with weight_g_idx */
    int zp_i8;          /* asym pack: older unpacked I8 [N, G] zero points */
    int shape_i32;      /* weight_shape as I32 (declared) instead of I64 (written) */
    int mixed;          /* two config_groups: attention int4 g32 sym, MLP int8 channel;
                           layer 1 down_proj in ignore (dense) */
    int act_quant;      /* input_activations set (W8A8-like) */
    int shards;         /* 1, or N > 1 with index */
    int broken;         /* QBT_CT_* */
    uint64_t seed;
    int zero_zp;        /* asymmetric scheme whose zero points are all 0 (signed) */
} qbt_ct_spec;

/* Writes a compressed-tensors checkpoint into `dir` (created); *truth (when
 * not NULL) receives the ground truth (qbt_cq_model_free). */
int qbt_ct_write(const char *dir, const qbt_ct_spec *spec, qbt_cq_model **truth);

enum {
    QBT_FP8_OK = 0,
    QBT_FP8_BROKEN_MISSING_SCALE,  /* layer 0 q_proj has no scale */
    QBT_FP8_BROKEN_MISSING_SHARD,  /* a scale mapped to a shard not written */
    QBT_FP8_BROKEN_SCALE_SHAPE,    /* block scale grid one column short */
    QBT_FP8_BROKEN_LEFTOVER_SCALE  /* lm_head.weight_scale_inv for the BF16 lm_head */
};

typedef struct qbt_fp8_spec {
    int strategy;   /* QBT_CQ_BLOCK (weight_scale_inv), TENSOR or CHANNEL (weight_scale) */
    int64_t bh, bw; /* weight_block_size */
    int e5m2;       /* fmt e5m2 */
    int input_scale;/* static activation scheme: <m>.input_scale tensors */
    int shards;
    int broken;     /* QBT_FP8_* */
    uint64_t seed;
} qbt_fp8_spec;

/* Writes an FP8 checkpoint into `dir` (created); *truth as above. */
int qbt_fp8_write(const char *dir, const qbt_fp8_spec *spec, qbt_cq_model **truth);

/* DeepSeek-V3 FP8 checkpoints (gen_fp8.c), on the deepseek tensors and
 * values of the hf-dense generator (gen_hf_dense.h; spec->arch
 * "deepseek_v3", or "deepseek_v2" for the same layout on V2 names, MTP
 * layers included when spec->mtp_layers > 0). As the
 * released DeepSeek-V3 weights (docs/formats/fp8.md,
 * "DeepSeek-V3 checkpoints"): every linear F8_E4M3 with <m>.weight_scale_inv F32
 * [ceil(N/128), ceil(K/128)], partial edge blocks scaled on their own
 * elements; BF16 exceptions (qbt_fp8_ds_is_fp8 == 0): norms, the router
 * mlp.gate.weight, embeddings, lm_head and the MTP shared_head.head, plus
 * e_score_correction_bias kept F32; quantization_config {quant_method
 * fp8, fmt e4m3, activation_scheme dynamic, weight_block_size [128, 128]}.
 * One safetensors file. Returns 0 or -1. */
struct qbt_hfd_spec;
struct qbt_hfd_tensor;
int qbt_fp8_ds_write(const char *dir, const struct qbt_hfd_spec *spec);

/* 1 when qbt_fp8_ds_write stores t as FP8 (a linear that is not an
 * exception above). Pure. */
int qbt_fp8_ds_is_fp8(const struct qbt_hfd_tensor *t);

/* The float32 values the fp8 reader must return for t (qbt_hfd_numel of
 * them): (float)e4m3(code) * scale_inv, one float32 product, for FP8
 * tensors; the storage rounding of the generator value otherwise. Returns
 * 0, or -1 when out of memory. */
int qbt_fp8_ds_values(const struct qbt_hfd_spec *spec, const struct qbt_hfd_tensor *t, float *out);

/* Shared by both generators: the llama model skeleton. */
typedef struct qbt_cq_writer qbt_cq_writer;
/* Starts a checkpoint with `shards` files. */
qbt_cq_writer *qbt_cq_writer_new(int shards);
/* Releases an unfinished writer; NULL is a no-op. */
void qbt_cq_writer_free(qbt_cq_writer *w);
/* Adds a tensor (copied); goes to shard (tensor count % shards). */
int qbt_cq_add(qbt_cq_writer *w, const char *name, const char *dtype, int n_dims,
               const int64_t *dims, const void *data, size_t n_bytes);
/* Writes the files into dir (created), config.json with `qc_json` as
 * quantization_config, generation_config.json and tokenizer_config.json;
 * skip_shard >= 0 leaves that shard's file unwritten (index still names it).
 * Frees w. */
int qbt_cq_finish(qbt_cq_writer *w, const char *dir, const char *qc_json, int skip_shard);
/* Index of the shard holding tensor `name` in w, or -1. */
int qbt_cq_shard_of(const qbt_cq_writer *w, const char *name);

/* The linear modules of the model in writing order and their shapes. */
typedef struct qbt_cq_module {
    char name[96];
    int64_t N, K;
} qbt_cq_module;
size_t qbt_cq_modules(qbt_cq_module *out, size_t cap);

/* Adds the dense BF16 tensors (embed, norms, lm_head) to w and to truth. */
int qbt_cq_add_dense(qbt_cq_writer *w, qbt_cq_model *truth, uint64_t seed);

/* out = a + b, truncated to cap - 1 characters. */
void qbt_cq_join(char *out, size_t cap, const char *a, const char *b);

/* Appends an entry named `name` to m (NULL when full). */
qbt_cq_lin *qbt_cq_new(qbt_cq_model *m, const char *name);

/* Fills the truth of quantized linear l (N, K set): random signed codes
 * (INT) or FP8 bytes nearest to normal values (FP8), scales in
 * [0.004, 0.008) (rounded to BF16 when scale_bf16), random zero points when
 * !sym, a permuted g_idx when act_order. */
int qbt_cq_fill(qbt_cq_lin *l, qbt_rng *rng, int quant, int bits, int sym, int strategy,
                int64_t gs, int64_t bh, int64_t bw, int act_order, int e5m2, int scale_bf16);

#endif /* QBT_GEN_CT_H */
