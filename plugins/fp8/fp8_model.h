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

#include <quantbridge/base/qb_streader.h>
#include <quantbridge/qb_host.h>
#include <quantbridge/qb_tensor.h>

#include "qbk_reader.h"

typedef enum fp8_kind {
    FP8_K_DENSE = 0,  /* float tensor passed through */
    FP8_K_TENSOR = 1, /* FP8 weight, one scale */
    FP8_K_CHANNEL = 2,/* FP8 weight, one scale per output row */
    FP8_K_BLOCK = 3   /* FP8 weight, one scale per [bn, bk] block */
} fp8_kind;

typedef struct fp8_tensor {
    const char *name;         /* canonical name: the stored weight's */
    fp8_kind kind;
    const qb_st_tensor *w;    /* dense tensor or the FP8 weight */
    const qb_st_tensor *scale;/* NULL for dense */
    int64_t rows, cols;       /* matrix view */
    int64_t bn, bk, sc_cols;  /* block geometry (FP8_K_BLOCK) */
} fp8_tensor;

typedef struct fp8_model {
    qbk_reader_model b;        /* directory and config (kit qbk_reader.h): first */
    fp8_tensor *t;
    size_t n;
    size_t n_quant;
    size_t n_mtp_dropped; /* DeepSeek MTP tensors not presented (mtp=drop) */
    qb_dtype fmt;       /* QB_DT_F8_E4M3 or QB_DT_F8_E5M2 */
    int64_t bn, bk;     /* 0, 0 without weight_block_size */
    char enc[4][64];    /* source_encoding text of each fp8_kind (dense: unused) */
    size_t last_read;   /* 1 + index of the tensor read last, 0 before any (atomic) */
} fp8_model;

/* The fp8 format for the reader base (qb_streader.h): open builds the
 * model from the opened directory r->dir and validates everything: the
 * configuration, every FP8 weight's scale (name, dtype, shape), no
 * leftover scale without its weight, every other tensor a float dense
 * tensor. The option mtp=drop (kit qbk_mtp.h) leaves DeepSeek MTP layers,
 * validated like the rest, out of the tensor list. Messages name the file
 * and tensor. read_rows gives the rows of tensor i as float32, then drops
 * the whole pages of those rows from this process's mapping (the page
 * cache keeps them), and the previous tensor's when another one is read
 * (an atomic exchange on last_read; a concurrent reader of the dropped
 * tensor only faults its pages in again). The data calls are thread-safe
 * (the model is immutable after open). */
extern const qb_streader_class fp8_class;

/* Confidence that a config.json text describes an FP8 checkpoint
 * (quantization_config.quant_method == "fp8"). Pure; never crashes. */
int fp8_config_probe(const char *config_json);

#endif /* FP8_MODEL_H */
