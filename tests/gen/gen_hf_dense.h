/*
 * Test fixtures: a tiny Hugging Face dense checkpoint (llama, mistral,
 * qwen2, qwen3, gemma2) from known deterministic weights.
 *
 * Every tensor's values depend only on (seed, tensor name), never on the
 * order of writing or on sharding, so a test can recompute exactly what a
 * reader must return: qbt_hfd_fill() then qbt_hfd_round() for the dtype.
 * Not thread-safe per spec object; the functions keep no global state.
 */
#ifndef GEN_HF_DENSE_H
#define GEN_HF_DENSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct qbt_hfd_spec {
    const char *arch;  /* "llama", "mistral", "qwen2", "qwen3", "gemma2" */
    const char *dtype; /* "bf16", "f16", "f32" */
    int layers, hidden, intermediate, vocab;
    int heads, kv_heads, head_dim; /* 0: derived from hidden */
    int tied;                      /* tie_word_embeddings: no lm_head.weight */
    int shards;                    /* 1: model.safetensors; N > 1: index + N files */
    uint64_t seed;   /* with QBT_HFD_HEAVY set: outlier-heavy weights */
} qbt_hfd_spec;

/* Seed flag: linears and embeddings become outlier-heavy (qbt_hfd_fill).
 * A flag bit rather than a field so positional spec initialisers stay
 * valid. */
#define QBT_HFD_HEAVY (UINT64_C(1) << 63)

typedef enum qbt_hfd_kind {
    QBT_HFD_LINEAR = 0, /* [out, in] projection: normal * 0.02, outlier columns x5;
                           QBT_HFD_HEAVY: Student-t (3 dof) * 0.02, 1 column in 128 x16 */
    QBT_HFD_EMBED = 1,  /* [vocab, hidden]: normal * 0.02, outlier columns x5 */
    QBT_HFD_NORM = 2,   /* [n]: 1 + 0.1 * normal (gemma2: 0.1 * normal, used as 1 + w) */
    QBT_HFD_BIAS = 3    /* [n]: 0.02 * normal */
} qbt_hfd_kind;

typedef struct qbt_hfd_tensor {
    char name[96];
    int n_dims; /* 1 or 2 */
    int64_t dims[2];
    qbt_hfd_kind kind;
} qbt_hfd_tensor;

/* Fills in derived fields (heads, kv_heads, head_dim) and checks the spec.
 * Returns 0, or -1 with a message on stderr. */
int qbt_hfd_spec_check(qbt_hfd_spec *s);

/* The tensor list of the checkpoint in writing order (embedding, layers,
 * final norm, head). *out is malloc'd. Returns 0 or -1. */
int qbt_hfd_tensors(const qbt_hfd_spec *s, qbt_hfd_tensor **out, size_t *n);

/* Number of elements of t. */
size_t qbt_hfd_numel(const qbt_hfd_tensor *t);

/* The exact float32 values (before storage rounding) of t, qbt_hfd_numel
 * of them, row-major. Deterministic in (s->seed, t->name, s->arch). */
void qbt_hfd_fill(const qbt_hfd_spec *s, const qbt_hfd_tensor *t, float *out);

/* The value a reader returns for v stored as dtype ("bf16", "f16",
 * "f32"): round to nearest even, then back to float32. */
float qbt_hfd_round(const char *dtype, float v);

/* Writes the checkpoint into dir (created if missing): config.json,
 * generation_config.json, tokenizer_config.json, safetensors file(s) and,
 * when sharded, model.safetensors.index.json. Returns 0 or -1. */
int qbt_hfd_write(const qbt_hfd_spec *s, const char *dir);

#endif /* GEN_HF_DENSE_H */
