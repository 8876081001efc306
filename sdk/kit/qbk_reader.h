/*
 * Reader vtable glue shared by reader plugins: the tensor-index range check
 * with its one error message, and the qb_model_info / qb_tensor_info fills
 * that every Hugging-Face-directory reader does the same way.
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI): each
 * plugin links its own copy. No function here allocates or keeps a pointer
 * to its arguments; all are thread-safe (they only touch their arguments
 * and report through the host's thread-local error slot).
 */
#ifndef QBK_READER_H
#define QBK_READER_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_reader.h>

#include "qbk_hfdir.h"

/* Checks a reader call's tensor index against a table of n tensors.
 * Returns QB_OK when index < n; otherwise QB_E_RANGE with the message
 * "<where>: tensor index <index> outside [0, <n>)" set through h. */
qb_status qbk_reader_check_index(const qb_host *h, const char *where, size_t index, size_t n);

/* Number of elements of a safetensors tensor: the product of its dims, 1
 * for a scalar. The parser bounds each tensor's byte size, so the product
 * cannot overflow. Pure. */
int64_t qbk_reader_numel(const qb_st_tensor *t);

/* Fills out->n_dims and out->dims from a safetensors shape: a 0-d shape
 * (a scalar) is reported as one dimension of extent 1, unused dims are 0.
 * Cannot fail. */
void qbk_reader_set_dims(qb_tensor_info *out, uint32_t n_dims, const int64_t *dims);

/* Fills out (get_model_info of qb_reader.h) for a model read from the
 * Hugging Face directory d: architecture = d->model_type, config and
 * generation config texts, tokenizer_dir = d->dir when it holds a
 * tokenizer, no chat template. `format` and `summary` are borrowed like
 * d's strings: they must live as long as the reader handle. Cannot fail. */
void qbk_reader_hfdir_info(const qbk_hfdir *d, size_t n_tensors, const char *format,
                           const char *summary, qb_model_info *out);

/* Probe score (qb_reader.h probe) from config.json text alone: 90 when
 * quantization_config.quant_method equals `quant_method` exactly, else 0
 * (also for NULL text or text the strict parser, qbk_json.h, refuses).
 * The tensors are checked at open. */
int qbk_reader_probe_quant_method(const char *config_json, const char *quant_method);

#endif /* QBK_READER_H */
