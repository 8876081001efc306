/*
 * fp8 reader — the model: the `quant_method: fp8` configuration, every
 * FP8 weight paired with its scale, and the canonical tensor list.
 *
 * Variants read (facts in docs/formats/fp8.md, checked against
 * upstream; see fp8_model.c for the functions each comes from):
 *   block:   `weight_block_size: [bn, bk]`, <m>.weight F8 [N, K] and
 *            <m>.weight_scale_inv [ceil(N/bn), ceil(K/bk)] (multiplied);
 *   tensor:  no block size, <m>.weight_scale with one element;
 *   channel: no block size, <m>.weight_scale [N] or [N, 1].
 * Dense value = (float)fp8 * scale, one float32 multiplication.
 */
#ifndef FP8_MODEL_H
#define FP8_MODEL_H

#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_tensor.h>

#include "qbk_hfdir.h"

typedef enum fp8_kind {
    FP8_K_DENSE = 0,  /* float tensor passed through */
    FP8_K_TENSOR = 1, /* FP8 weight, one scale */
    FP8_K_CHANNEL = 2,/* FP8 weight, one scale per output row */
    FP8_K_BLOCK = 3   /* FP8 weight, one scale per [bn, bk] block */
} fp8_kind;

typedef struct fp8_tensor {
    char *name;               /* canonical name (owned) */
    fp8_kind kind;
    const qb_st_tensor *w;    /* dense tensor or the FP8 weight */
    const qb_st_tensor *scale;/* NULL for dense */
    int64_t rows, cols;       /* matrix view */
    int64_t bn, bk, sc_cols;  /* block geometry (FP8_K_BLOCK) */
    char *encoding;           /* source_encoding text (owned) */
} fp8_tensor;

typedef struct fp8_model {
    qbk_hfdir *d;
    fp8_tensor *t;
    size_t n;
    size_t n_quant;
    size_t n_mtp_dropped; /* DeepSeek MTP tensors not presented (mtp=drop) */
    qb_dtype fmt;       /* QB_DT_F8_E4M3 or QB_DT_F8_E5M2 */
    int64_t bn, bk;     /* 0, 0 without weight_block_size */
    char *summary;
    size_t last_read;   /* 1 + index of the tensor read last, 0 before any (atomic) */
} fp8_model;

/* Opens the checkpoint directory `path` and validates everything: the
 * configuration, every FP8 weight's scale (name, dtype, shape), no
 * leftover scale without its weight, every other tensor a float dense
 * tensor. mtp_drop: DeepSeek MTP layers (kit qbk_mtp.h), validated like
 * the rest, are then left out of the tensor list. Returns QB_OK with *out
 * owned by the caller (fp8_model_close), or a negative status (message via
 * h naming file and tensor), *out NULL. */
qb_status fp8_model_open(const qb_host *h, const char *path, int mtp_drop, fp8_model **out);

void fp8_model_close(const qb_host *h, fp8_model *m);

/* Rows [row0, row0+n_rows) of tensor t as float32 into dst, then the
 * whole pages of those rows are dropped from this process's mapping (the
 * page cache keeps them). Thread-safe for concurrent calls (the model is
 * immutable after open). Returns QB_OK, QB_E_RANGE for a bad range or
 * QB_E_NOMEM. */
qb_status fp8_tensor_read_rows(const qb_host *h, const fp8_tensor *t, int64_t row0,
                               int64_t n_rows, float *dst);

/* Notes a read of tensor `index` of m; when the previous read was of
 * another tensor, drops that tensor's mapped pages (weight and scale) from
 * this process. Call before fp8_tensor_read_rows. Thread-safe (an atomic
 * exchange on m->last_read); a concurrent reader of the dropped tensor only
 * faults its pages in again. */
void fp8_model_note_read(fp8_model *m, size_t index);

/* Confidence that a config.json text describes an FP8 checkpoint
 * (quantization_config.quant_method == "fp8"). Pure; never crashes. */
int fp8_config_probe(const char *config_json);

#endif /* FP8_MODEL_H */
