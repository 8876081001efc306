/*
 * Multimodal wrapper checkpoints (Llama 4, Gemma 4, Qwen3.5 as published:
 * Llama4ForConditionalGeneration, Gemma4ForConditionalGeneration,
 * Qwen3_5ForConditionalGeneration ...), read as their text model: the
 * wrapper's config.json nests the text model's configuration under
 * `text_config`, and transformers 5.24's save_pretrained writes the text
 * model's tensors under `model.language_model.*` (Gemma 4, Qwen3.5) or
 * `language_model.model.*` with the head at `language_model.lm_head.*`
 * (Llama 4), beside the towers (`model.vision_tower.*`,
 * `model.embed_vision.*`, `model.audio_tower.*`, `model.visual.*`,
 * `vision_model.*`, `multi_modal_projector.*`). docs/formats/hf-dense.md,
 * "Multimodal wrappers". The reader option `towers` (refuse | drop,
 * default refuse) says whether the towers may be left out: never silently.
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI).
 */
#ifndef QBK_MM_H
#define QBK_MM_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_param.h>

/* The reader option `towers` (STRING, "refuse|drop", default "refuse",
 * reader role). A plugin lists it in its option declarations. */
extern const qb_option_decl qbk_towers_option;

/* Reads the `towers` option from params (NULL: none given): *drop 1 for
 * drop, 0 for refuse (also when unset). QB_E_INVALID (message set) for
 * another value. */
qb_status qbk_towers_mode(const qb_host *h, const qb_param *params, int *drop);

/* 1 when the parsed config.json is a wrapper's: it has a `text_config`
 * object with a non-empty `model_type` string. Pure. */
int qbk_mm_is_wrapper(const cJSON *config);

/* The text model's config.json text of wrapper config `text` (accepted by
 * the strict parser; `config` its parsed form, qbk_mm_is_wrapper true):
 * the `text_config` member's text byte for byte, with the wrapper's
 * `tie_word_embeddings` when the wrapper has a boolean one (the wrapper
 * class ties or unties the head). *out is qbk_malloc'd (qbk_free).
 * Errors (message naming `what`): QB_E_FORMAT, QB_E_NOMEM. Thread-safe. */
qb_status qbk_mm_text_config(const qb_host *h, const char *what, const char *text,
                             const cJSON *config, char **out);

/* The text model's name of a wrapper's stored tensor `name` into buf:
 * model.language_model.X and language_model.model.X -> model.X,
 * language_model.lm_head.X -> lm_head.X, lm_head.X and mtp.X (the text
 * model's MTP block) unchanged. Returns 1 then, 0 for a tower's tensor,
 * -1 when buf is too small. Pure. */
int qbk_mm_text_name(const char *name, char *buf, size_t len);

#endif /* QBK_MM_H */
