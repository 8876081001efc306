/*
 * hf-dense plugin internals: plain Hugging Face checkpoints (config.json +
 * safetensors with F32/F16/BF16 tensors, no quantization). reader.c is the
 * reading side; a writer.c can sit next to it and share this header.
 * Every symbol here is hidden (the plugin exports only its entry).
 */
#ifndef HFD_H
#define HFD_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <quantbridge/base/qb_streader.h>
#include <quantbridge/quantbridge.h>

/* The host table given at entry; set once before any other call. */
extern const qb_host *hfd_host;

/* The reader function table (reader.c). */
extern const qb_reader_vtable hfd_reader_vtable;

/* Why config.json text does not describe a dense checkpoint. */
typedef enum hfd_config_kind {
    HFD_CONFIG_DENSE = 0,      /* no quantization_config: ours */
    HFD_CONFIG_QUANTIZED = 1,  /* quantization_config / compression_config present */
    HFD_CONFIG_INVALID = 2,    /* a JSON object without a model_type string */
    HFD_CONFIG_BROKEN = 3      /* refused by the strict parser (qbk_json.h) or not an object */
} hfd_config_kind;

/* Classifies config.json text without reporting anything (for probe).
 * Pure, thread-safe. */
hfd_config_kind hfd_config_classify(const char *text);

/* Checks the parsed config.json `root` of `path` (the reader base checked
 * it is an object with a model_type) for open: no quantization settings
 * (quantization_config, compression_config), else QB_E_UNSUPPORTED naming
 * `path` and the quant_method. Thread-safe. */
qb_status hfd_config_check(const qb_host *h, const char *path, const cJSON *root);

/* Checks config.json (`path`, parsed as `root`, accepted by
 * hfd_config_check) against the tensors of `set`, with no per-architecture
 * table:
 *   - decoder layers "model.layers.N.*" are 0..K-1 without a gap, and K is
 *     num_hidden_layers (plus num_nextn_predict_layers, whose MTP layers
 *     follow the decoder layers) when the config has it;
 *   - a module with gate_proj.weight and down_proj.weight (a gated HF MLP)
 *     has up_proj.weight;
 *   - the size fields (num_hidden_layers, hidden_size, vocab_size,
 *     intermediate_size, num_attention_heads, num_key_value_heads,
 *     head_dim), when numbers, are non-negative integers in int64_t;
 *   - model.embed_tokens.weight has hidden_size columns and at most
 *     vocab_size rows (when those are in the config).
 * Returns QB_OK, QB_E_FORMAT (message names the file and tensor or
 * config.json) or QB_E_NOMEM. Layers are not compared with each other: an
 * incomplete layer is served, for the consumer to name in its own terms
 * (writer plans, `quantbridge verify`). Reads only; thread-safe. */
qb_status hfd_config_check_tensors(const qb_host *h, const char *path, const cJSON *root,
                                   const qb_st_set *set);

#endif /* HFD_H */
