/*
 * Test fixtures: tiny gpt-oss MXFP4 checkpoints (`quant_method: mxfp4`) from
 * deterministic bytes, in the layout of openai/gpt-oss-20b as transformers
 * reads it (docs/formats/mxfp4.md): experts as `*_blocks` U8 [E, R, G, 16]
 * and `*_scales` U8 [E, R, G], everything else BF16.
 * Not thread-safe per spec object; no global state.
 */
#ifndef GEN_MXFP4_H
#define GEN_MXFP4_H

#include <stdint.h>

/* Malformed variants (bad-input tests): each breaks one fact the reader
 * checks, in the first layer's gate_up_proj. */
typedef enum qbt_mx_bad {
    QBT_MX_OK = 0,
    QBT_MX_BAD_SCALES_SHAPE = 1, /* _scales has one block column fewer */
    QBT_MX_BAD_E8M0 = 2,         /* one scale byte is 255 (E8M0 NaN) */
    QBT_MX_BAD_BLOCK_BYTES = 3,  /* _blocks' last dimension is 8, not 16 */
    QBT_MX_NO_BIAS = 4           /* gate_up_proj_bias absent (readable; no gpt-oss layer) */
} qbt_mx_bad;

typedef struct qbt_mx_spec {
    int layers, hidden, inter, experts, heads, kv_heads, head_dim, vocab; /* 0: defaults */
    uint64_t seed;
    qbt_mx_bad bad;
} qbt_mx_spec;

/* Fills the zero fields of s with the defaults (2 layers, hidden 64,
 * intermediate 96, 4 experts, 4 heads of 16, 2 kv heads, vocab 128). */
void qbt_mx_spec_defaults(qbt_mx_spec *s);

/* Writes config.json and model.safetensors of the checkpoint into `dir`
 * (created when missing). Returns 0, or -1 with a message on stderr. */
int qbt_mx_write(const char *dir, const qbt_mx_spec *s);

#endif /* GEN_MXFP4_H */
