/*
 * GGUF reader — Hugging Face config.json and generation_config.json built
 * from GGUF metadata. Key names: llama.cpp gguf-py/gguf/constants.py
 * (class Keys); HF fields: transformers integrations/ggml.py
 * GGUF_CONFIG_MAPPING; docs/formats/gguf.md "Metadata to config.json". Internal to the gguf plugin.
 */
#ifndef GGUF_HFCONFIG_H
#define GGUF_HFCONFIG_H

#include "gguf_names.h"

/* Builds both JSON texts (malloc'd, owned by the caller; *gen_json may be
 * NULL when the metadata has no token ids). `embd` is token_embd.weight
 * (its row count is the vocabulary size of last resort). Failure:
 * QB_E_UNSUPPORTED when metadata cannot be expressed without guessing
 * (e.g. llama3 rope factors matching no known parameter set), QB_E_FORMAT
 * for wrongly typed keys, QB_E_NOMEM; nothing returned. */
qb_status gguf_hfconfig_build(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, const gguf_special *sp,
                              char **config_json, char **gen_json);

/* HF vocab_size: {arch}.vocab_size, else the length of
 * tokenizer.ggml.tokens, else the rows of token_embd.weight. */
qb_status gguf_hfconfig_vocab_size(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, int64_t *out);

#endif /* GGUF_HFCONFIG_H */
