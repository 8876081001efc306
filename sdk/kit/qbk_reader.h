/*
 * What the in-tree readers on the reader base library (qb_streader.h,
 * sdk/base) add for themselves: their formats read quantization configs as
 * cJSON trees of the kit's strict parser, and they probe from config.json
 * text without a host.
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI): each
 * plugin links its own copy. All functions are thread-safe.
 */
#ifndef QBK_READER_H
#define QBK_READER_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include <quantbridge/base/qb_stdir.h>
#include <quantbridge/base/qb_streader.h>
#include <quantbridge/qb_safetensors.h>

/* The start of every in-tree format's model on the reader base: the
 * directory and config.json as the kit's tree. A format's model struct
 * has it as its first member, so the base's r->model is both. */
typedef struct qbk_reader_model {
    const qb_stdir *d;  /* the reader base's directory (borrowed) */
    cJSON *config;      /* config.json as the kit's tree (qbk_reader_config) */
    const cJSON *qcfg;  /* its quantization_config object, or NULL */
} qbk_reader_model;

/* For a format's klass->open: allocates its model, `size` zeroed bytes
 * whose start is a qbk_reader_model (qbk_calloc), stores it in r->model
 * (so klass->close frees it, also after a failure here) and fills the
 * qbk_reader_model from r->dir (qbk_reader_config). Returns QB_OK with
 * *model = r->model, or QB_E_NOMEM / qbk_reader_config's status with the
 * message set (r->model may then be set, *model too). */
qb_status qbk_reader_model_new(qb_streader *r, size_t size, void **model);

/* For a format's klass->close, last: frees the config tree and the model
 * (r->model; NULL is a no-op) and sets r->model NULL. The format frees
 * what it hung on the model first. */
void qbk_reader_model_free(qb_streader *r);

/* config.json of the opened directory d as the kit's tree: d->config_text
 * parsed again by the one strict parser (qbk_json.h; the base parsed it
 * through host->json, the same rules, so only memory can fail). *config is
 * the caller's (cJSON_Delete); *qcfg its quantization_config object or
 * NULL, borrowed from it. QB_OK or QB_E_NOMEM / QB_E_FORMAT with the
 * message set through d->host, *config NULL. */
qb_status qbk_reader_config(const qb_stdir *d, cJSON **config, const cJSON **qcfg);

/* Number of elements of a safetensors tensor: the product of its dims, 1
 * for a scalar. The parser bounds each tensor's byte size, so the product
 * cannot overflow. Pure. */
int64_t qbk_reader_numel(const qb_st_tensor *t);

/* Probe score (qb_reader.h probe) from config.json text alone: 90 when
 * quantization_config.quant_method equals `quant_method` exactly, else 0
 * (also for NULL text or text the strict parser, qbk_json.h, refuses).
 * *has_qcfg (may be NULL) is set to 1 when the parsed config has a
 * quantization_config member, 0 when it has none, -1 when there is no
 * parsed config. The tensors are checked at open. */
int qbk_reader_probe_quant_method(const char *config_json, const char *quant_method,
                                  int *has_qcfg);

#endif /* QBK_READER_H */
