/*
 * qbk_tensor_report.h — the per-tensor record a writer leaves beside its
 * output (internal kit): for each source tensor what it became (carried
 * over exactly, requantized, kept dense), why, and the error measured
 * against the reader's floats while writing, so "measured when not
 * lossless" holds for output formats that have no manifest of their own
 * (compressed-tensors, MLX). The file is JSON:
 *   {"format": F, "source": S, "tensors": [{"name", "action", "why",
 *    "rel_rmse", "max_abs_error"}, ...]}
 * rel_rmse = sqrt(sum err^2 / sum ref^2) (0 for exact and for an all-zero
 * tensor); max_abs_error the largest |decoded - source|. Loaders ignore the
 * file (neither transformers, vLLM nor mlx-lm reads unknown JSON files).
 * THREADING: a report is filled and written by one thread.
 */
#ifndef QBK_TENSOR_REPORT_H
#define QBK_TENSOR_REPORT_H

#include <quantbridge/quantbridge.h>

#include "qbk_text.h"

typedef struct qbk_tensor_report {
    qbk_text t;  /* the JSON being built; owned */
    size_t n;    /* tensors added */
} qbk_tensor_report;

/* Starts the report for an output of `format` made from `source`
 * (both NUL-terminated, copied). Never fails; see qbk_text's oom rule. */
void qbk_report_begin(qbk_tensor_report *r, const char *format, const char *source);

/* Adds one tensor. action: "exact", "quantized" or "dense"; why may be
 * NULL; err2/ref2 the sums of squared errors and squared source values,
 * max_abs the largest absolute error (all 0 for an exact tensor). */
void qbk_report_add(qbk_tensor_report *r, const char *name, const char *action, const char *why,
                    double err2, double ref2, double max_abs);

/* Closes the JSON and writes it as `file` through sink (qbk_sink_text.h);
 * frees the report on every path. Returns the sink's failure, or
 * QB_E_NOMEM (message set through h, naming file) when building the text
 * ran out of memory. */
qb_status qbk_report_write(qbk_tensor_report *r, const qb_host *h, const qb_sink *sink,
                           const char *file);

/* Frees a report that will not be written. Safe on a zeroed report. */
void qbk_report_free(qbk_tensor_report *r);

#endif /* QBK_TENSOR_REPORT_H */
