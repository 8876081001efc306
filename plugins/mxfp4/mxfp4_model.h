/*
 * mxfp4 reader — the model: the `quant_method: mxfp4` configuration, every
 * `<p>_blocks` paired with its `<p>_scales`, and the canonical tensor list.
 *
 * Layout read (facts in docs/formats/mxfp4.md, checked against transformers
 * integrations/mxfp4.py and models/gpt_oss):
 *   <p>_blocks U8 [E, R, G, 16]: per expert, R output rows of G blocks of
 *              32 E2M1 elements, two per byte (element 2i low nibble);
 *   <p>_scales U8 [E, R, G]: one E8M0 exponent per block;
 * presented as the BF16 gpt-oss checkpoint holds the tensor: `<p>` F32
 * [E, G*32, R] (input features first: element [e, k, j] is block element
 * k of row j), value E2M1 * 2^(scale - 127), exact in float32.
 * Every other tensor is a float dense tensor passed through.
 */
#ifndef MXFP4_MODEL_H
#define MXFP4_MODEL_H

#include <stdint.h>

#include <quantbridge/base/qb_streader.h>
#include <quantbridge/qb_host.h>
#include <quantbridge/qb_tensor.h>

#include "qbk_reader.h"

typedef enum mx_kind {
    MX_K_DENSE = 0,  /* float tensor passed through */
    MX_K_EXPERTS = 1 /* MXFP4 blocks + scales, presented transposed */
} mx_kind;

typedef struct mx_tensor {
    char *name;                /* canonical name of an expert tensor (owned); NULL for dense */
    mx_kind kind;
    const qb_st_tensor *w;     /* dense tensor, or <p>_blocks */
    const qb_st_tensor *scale; /* <p>_scales; NULL for dense */
    uint32_t n_dims;           /* presented shape */
    int64_t dims[4];
    int64_t rows, cols;        /* matrix view: rows = product of all but the last dim */
    int64_t E, R, G;           /* MX_K_EXPERTS: experts, stored rows, blocks per row */
} mx_tensor;

typedef struct mx_model {
    qbk_reader_model b;        /* directory and config (kit qbk_reader.h): first */
    mx_tensor *t;
    size_t n;
    size_t n_quant;
} mx_model;

/* The mxfp4 format for the reader base (qb_streader.h). open validates the
 * configuration (quant_method "mxfp4"), every `_blocks` (U8, 4-D, last
 * dimension 16) with its `_scales` (U8, [E, R, G] equal to the blocks'
 * leading dimensions), the gpt-oss expert widths against hidden_size /
 * intermediate_size when the config has them, a `<p>_bias` beside them of
 * shape [E, R], no leftover `_scales`, every other tensor a float dense
 * tensor; messages name the file and tensor. Scale bytes are checked when
 * read: read_rows gives QB_E_FORMAT naming the tensor and block for an
 * E8M0 scale of 255 (NaN). The data calls are thread-safe (the model is
 * immutable after open). */
extern const qb_streader_class mx_class;

/* The stored-rows view (ABI 1.4, qb_reader.h; mxfp4_stored.c) of an expert
 * tensor: encoding "ocp:mxfp4", QB_STORED_TRANSPOSED (stored row (e, j) =
 * output row j of expert e); QB_E_UNSUPPORTED for a dense tensor. The
 * handle is the reader base's (qb_streader). read_stored refuses an E8M0
 * scale of 255 as read_rows does. Thread-safe. */
qb_status mx_vt_stored_info(qb_reader_handle h, size_t i, qb_stored_rows_info *out);
qb_status mx_vt_read_stored(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows, void *dst);

/* Confidence that a config.json text describes an MXFP4 checkpoint
 * (quantization_config.quant_method == "mxfp4"). Pure; never crashes. */
int mx_config_probe(const char *config_json);

#endif /* MXFP4_MODEL_H */
