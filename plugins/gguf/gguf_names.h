/*
 * GGUF reader — llama.cpp tensor names to Hugging Face tensors. Each
 * canonical tensor is a row range of one GGUF tensor (whole tensor, one
 * part of a fused phi3 tensor, one expert of a 3-D MoE tensor), possibly
 * with the Q/K rope permutation and Gemma's +1 to undo.
 *
 * Facts: llama.cpp gguf-py/gguf/constants.py (TENSOR_NAMES),
 * tensor_mapping.py, convert_hf_to_gguf.py; docs/formats/gguf.md "Tensor names".
 * Internal to the gguf plugin.
 */
#ifndef GGUF_NAMES_H
#define GGUF_NAMES_H

#include "gguf_arch.h"

typedef struct gguf_ctensor {
    char *name;              /* HF name, owned */
    uint32_t n_dims;         /* 1..3 (3: gpt-oss fused experts) */
    int64_t dims[3];         /* HF order */
    const gguf_tinfo *src;
    int64_t row0;            /* first ggml row of src (rows over ne[1..3]) */
    int64_t n_rows;          /* HF rows (1 for a 1-D tensor) */
    int64_t cols;            /* elements per row (= src->ne[0]) */
    uint32_t perm_heads;     /* 0, or H: undo LlamaModel.permute with H heads
                                over rows (2-D) or elements (1-D) */
    int minus_one;           /* subtract 1 (Gemma norm) */
    int has_grid;            /* Q4_0 integer grid offered */
    char encoding[32];       /* "gguf Q4_0" */
    /* "quantbridge.scale_block:NAME" when the reader declares the source's
     * scale granularity for this tensor (gguf_names_declare), else NULL;
     * owned */
    char *block_key;
    uint32_t block_cols;     /* that granularity: columns per source scale */
    /* deepseek2 kv_b_proj rebuilt from attn_k_b (src, ne {nope, rank, H},
     * each head's [nope, rank] block stored transposed) and attn_v_b (kv_v,
     * ne {rank, v, H}); NULL otherwise (docs/formats/gguf.md "deepseek2"). */
    const gguf_tinfo *kv_v;
    int64_t kv_nope, kv_vdim;
    /* gpt-oss experts (docs/formats/gguf.md "gpt-oss"). GGUF_OSS_COLUMNS:
     * HF [E, K, m*N] whose row (e, k) is column k of expert e's stored
     * [N, K] block (src ne {K, N, E}), and with oss_up (m = 2) gate and up
     * interleaved (gate at even places). GGUF_OSS_ROWS: HF [E, 2N] whose row
     * e interleaves row e of src and of oss_up. */
    int oss;
    const gguf_tinfo *oss_up;
    int64_t oss_n;
    int oss_concat; /* llama4: gate then up along the output (gate_up.chunk(2)),
                       not interleaved */
    /* issue 31: Qwen3-Next / Qwen3.5 linear attention (docs/formats/gguf.md,
     * "Qwen3-Next and Qwen3.5"). vt_nk > 0: the converter moved value heads
     * from grouped order (vt_r per key head, vt_nk key heads) to tiled order;
     * HF rows from vt_row0 on in heads of vt_rhd rows (0: rows as stored),
     * HF columns (or a vector's elements) in heads of vt_chd (0: as stored). */
    int64_t vt_nk, vt_r, vt_row0, vt_rhd, vt_chd;
    int neg_log;              /* HF value = log(-stored): A_log stored as -exp(A_log) */
    /* Qwen3-Next in_proj_qkvz, per key head [q, k, v, z] rows: q/k/v from
     * src (attn_qkv, all q then all k then all v), z from qkvz_z
     * (attn_gate); NULL otherwise. */
    const gguf_tinfo *qkvz_z;
    int64_t qkvz_dk, qkvz_vg;  /* key head width, value rows per key head */
} gguf_ctensor;

enum { GGUF_OSS_COLUMNS = 1, GGUF_OSS_ROWS = 2 };

/* Tensors consumed into config.json instead of emitted (docs/formats/gguf.md, "Metadata to config.json"). */
typedef struct gguf_special {
    const gguf_tinfo *rope_freqs;        /* llama3 rope factors */
    const gguf_tinfo *rope_long, *rope_short; /* phi3 longrope factors */
    int tied;                            /* no output.weight */
    const gguf_tinfo *g4_rope_freqs;     /* issue 31: gemma4 full layers' rope factors */
} gguf_special;

/* Maps every tensor of the model to canonical HF tensors (array *out of
 * *n_out, owned by the caller; free with gguf_names_free). Checks every
 * shape against the hyper-parameters, and that each ggml type has a
 * decoder. Failure: QB_E_UNSUPPORTED for a tensor with no mapping in this
 * architecture or an undecodable type, QB_E_FORMAT for a shape that does not
 * fit; the message names the file and tensor; nothing is returned. */
qb_status gguf_names_map(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, gguf_ctensor **out,
                         size_t *n_out, gguf_special *sp);

void gguf_names_free(gguf_ctensor *t, size_t n);

/* The stored tensor (*t) and its row that hold HF row r of c (2-D, or 0
 * for a vector): the Q/K permutation, the Qwen3.5 value-head tiling and
 * the Qwen3-Next q/k/v/z regrouping undone. Pure. */
int64_t gguf_names_stored_row(const gguf_ctensor *c, int64_t r, const gguf_tinfo **t);

/* Position in stored order of element i of a run of nk x r heads of hd
 * elements given in grouped order (head k*r + j), the converter having
 * moved head (k, j) to j*nk + k (_LinearAttentionVReorderBase). Pure. */
int64_t gguf_names_vtile(int64_t i, int64_t nk, int64_t r, int64_t hd);

/* GGUF row index of HF row r (0 <= r < rows) under LlamaModel.permute
 * with `heads` heads: the inverse of
 * GGUF_row[h*D + 2i + j] = HF_row[h*D + j*(D/2) + i] (docs/formats/gguf.md, "Q/K permutation").
 * rows must be a multiple of 2*heads (checked by the mapper). */
int64_t gguf_unpermute_row(int64_t r, int64_t rows, uint32_t heads);

/* HF row of GGUF row g under LlamaModel.permute with `heads` heads (the
 * inverse of gguf_unpermute_row): what a writer puts at row g. */
int64_t gguf_permute_row(int64_t g, int64_t rows, uint32_t heads);

/* Where one Hugging Face tensor goes in a GGUF of architecture `arch`:
 * the writer's direction of the same table gguf_names_map reads
 * (docs/formats/gguf.md "Tensor names"). */
enum {
    GGUF_W_PLAIN = 0,  /* the whole GGUF tensor */
    GGUF_W_EXPERT = 1, /* expert `index` of a stacked 3-D tensor (ne {K, N, E}) */
    GGUF_W_FUSED = 2,  /* part `index` of a tensor fused by rows (phi3 attn_qkv: q, k, v;
                          ffn_up: gate, up) */
    GGUF_W_KV_B = 3,   /* deepseek2 kv_b_proj: `name` is attn_k_b, attn_v_b the other half
                          (docs/formats/gguf.md "deepseek2", kv_b split) */
    /* gpt-oss (issue 28): HF experts [E, in, out] stored per expert as [out, in]
     * (ne {in, out, E}); index 2: gate_up_proj, whose even outputs go to `name`
     * (ffn_gate_exps) and odd ones to `name2` (ffn_up_exps); index 1: one tensor */
    GGUF_W_OSS_EXPS = 4,
    /* gpt-oss gate_up_proj_bias [E, 2N]: even columns to `name`, odd to `name2` */
    GGUF_W_OSS_BIAS = 5
};
typedef struct gguf_wname {
    char name[GGUF_MAX_NAME]; /* GGUF tensor name, "blk.3.attn_q.weight" */
    int kind;                 /* GGUF_W_* */
    int index;                /* expert or part */
    int perm;                 /* 0, 1: rows (or a bias's elements) permuted with
                                 head_count, 2: with head_count_kv */
    int plus_one;             /* stored as w + 1 (Gemma norms) */
    int layer;                /* block index, -1 outside blocks */
    char name2[GGUF_MAX_NAME]; /* GGUF_W_OSS_*: the second tensor, or "" */
} gguf_wname;

/* Fills *out for HF tensor `hf` of architecture `arch`. Returns QB_OK,
 * QB_E_NOT_FOUND when the table has no entry for it (the caller names the
 * tensor), QB_E_UNSUPPORTED when the entry's layout is one the writer does
 * not build (llama4 fused experts). Pure; sets no message. */
qb_status gguf_names_to_gguf(const gguf_arch *arch, const char *hf, gguf_wname *out);

#endif /* GGUF_NAMES_H */
