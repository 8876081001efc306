/*
 * qbk_json_edit.h — editing the top level of a JSON object's text while
 * keeping every other member's text byte for byte (internal kit; the
 * hf-dense writer's config.json and every writer's tokenizer_config.json,
 * qbk_hf_sidefiles.h). Numbers stay as written: a parse-and-print round
 * trip would turn "rope_theta": 500000.0 into 500000 and a tokenizer's
 * 31-digit model_max_length into 1e+30.
 */
#ifndef QBK_JSON_EDIT_H
#define QBK_JSON_EDIT_H

#include <quantbridge/qb_host.h>

/* Rewrites JSON object text `text`: drops the top-level members named in
 * `drop`, gives the members named in `keys` the JSON value texts `values`
 * (appended when absent; at most 16 keys), keeps every other member's text
 * byte for byte (numbers stay as written). Both lists NULL-terminated or
 * NULL. *out is qbk_malloc'd (free with qbk_free); NULL on failure. The
 * result is re-parsed and compared with the input before it is returned.
 * The text is read by the strict parser (qbk_json.h). Errors (message
 * through h->set_error, naming `what`): QB_E_FORMAT (qbk_json_parse's
 * refusal, or "<what>: not a JSON object"), QB_E_NOMEM, QB_E_INTERNAL.
 * Thread-safe. */
qb_status qbk_json_edit(const qb_host *h, const char *what, const char *text,
                        const char *const *drop, const char *const *keys,
                        const char *const *values, char **out);

#endif /* QBK_JSON_EDIT_H */
