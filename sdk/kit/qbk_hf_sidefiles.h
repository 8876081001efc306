/*
 * qbk_hf_sidefiles.h — the Hugging Face files around the weights, as every
 * writer of an HF-style directory treats them (internal kit; the hf-dense
 * and sm86-w4a16 writers). One list of tokenizer side files copied from
 * the source, one rule for cleaning the source config.json of its
 * quantization description. See docs/architecture.md, "HF side files".
 */
#ifndef QBK_HF_SIDEFILES_H
#define QBK_HF_SIDEFILES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_writer.h>

/* The list of tokenizer files, and the rule that a directory holding one
 * of them is a tokenizer directory, are the reader base library's
 * (qb_stdir_tokenizer_files, qb_stdir_has_tokenizer in
 * quantbridge/base/qb_stdir.h): readers and writers use that one list. */

/* NULL-terminated list of the top-level config.json keys that describe a
 * quantized checkpoint: "quantization_config" (transformers' quantizers)
 * and "compression_config" (older compressed-tensors checkpoints). A
 * writer's output is never quantized in transformers' sense (dense, or
 * the native W4A16 format described by its own manifest), and a leftover
 * key would make from_pretrained apply a quantizer to the written weights,
 * so every writer removes all of them. Static; thread-safe. */
extern const char *const qbk_hf_quant_config_keys[];

/* Removes every qbk_hf_quant_config_keys member from the config object
 * `cfg` (no-op for keys absent; cfg NULL or not an object: no-op). Cannot
 * fail. Not thread-safe on one object. */
void qbk_hf_config_strip_quant(cJSON *cfg);

/* The generation config transformers' GenerationConfig.from_model_config
 * derives when a checkpoint has no generation_config.json: a new object
 * {"_from_model_config": true} plus each of bos_token_id, eos_token_id,
 * pad_token_id and decoder_start_token_id that `cfg` states (not null),
 * copied as they are (an eos list stays a list). `cfg` NULL or not an
 * object gives the flag alone. Returns NULL when out of memory (cJSON's
 * allocator); the caller frees with cJSON_Delete. Thread-safe. One rule
 * for the host's side files and every writer that derives the file. */
cJSON *qbk_hf_generation_from_config(const cJSON *cfg);

/* Reads `dir`/`name` as text into a new host->alloc buffer (*out), or sets
 * *out = NULL and returns QB_OK when the file does not exist. Other
 * failures return the host's status with its message. */
qb_status qbk_read_text(const qb_host *h, const char *dir, const char *name, char **out);

/* Reads `dir`/`name` (at most max_bytes, through h->read_small_file) as
 * text into a new NUL-terminated host->alloc buffer *out (free with
 * h->free). When the file does not exist: with `missing` NULL, sets
 * *out = NULL and returns QB_OK; else QB_E_NOT_FOUND with the message
 * "<path>: <missing>". With reject_nul, a file holding a NUL byte is
 * QB_E_FORMAT "<path>: contains a NUL byte". Other failures return the
 * host's status with its message; on any failure *out is NULL.
 * qbk_read_text is this with 64 MiB, missing NULL and reject_nul 0.
 * Thread-safe as h->read_small_file is. */
qb_status qbk_read_side_text(const qb_host *h, const char *dir, const char *name, size_t max_bytes,
                             const char *missing, int reject_nul, char **out);

/* Writes the tokenizer side files of model `mi` through `sink`: the one
 * implementation behind the host's side files (QB_WRITER_SIDE_FILES_HOST,
 * any third-party writer) and the built-in hf-dense and sm86-w4a16
 * writers, so all produce the same bytes (docs/architecture.md, "HF side
 * files"). In this order:
 *  - each file of qb_stdir_tokenizer_files present in mi->tokenizer_dir
 *    (when not NULL), in list order, byte for byte; with a chat template,
 *    tokenizer_config.json and chat_template.* are not copied;
 *  - with mi->chat_template (read only when the struct has the field):
 *    tokenizer_config.json, the source's object (or "{}" when absent) with
 *    chat_template set by qbk_json_edit (other members' text kept byte for
 *    byte) plus a newline;
 *  - generation_config.json: mi->generation_config_json as given plus a
 *    newline, else qbk_hf_generation_from_config(config_json) printed plus
 *    a newline, else (config_json NULL or not an object) nothing.
 * Returns QB_OK or: QB_E_IO naming a tokenizer file that cannot be read or
 * is not a regular file; QB_E_FORMAT for a source tokenizer_config.json
 * that holds a NUL, is refused by the strict parser (qbk_json.h) or is not
 * an object (naming its path), a generation config refused or not an
 * object ("generation_config.json of the source: ..."), or a config_json
 * the strict parser refuses ("config.json of the source: ...");
 * QB_E_NOMEM; QB_E_INTERNAL (qbk_json_edit's self-check); or the
 * sink's status. Messages through h->set_error (the
 * sink sets its own). Every sink file it creates is closed again, success
 * or not; on failure files already written stay in the sink (the caller
 * discards the output). Reads files with stdio and h->read_small_file;
 * allocates with qbk_malloc and h->alloc. Thread-safe as the sink is for
 * distinct names. */
qb_status qbk_hf_write_tokenizer_files(const qb_host *h, const qb_sink *sink,
                                       const qb_model_info *mi);

#endif /* QBK_HF_SIDEFILES_H */
