/*
 * Multi-token-prediction (MTP) layers in a Hugging Face checkpoint
 * (DeepSeek's, and the Qwen3-Next hybrids' `mtp.*`), shared by the
 * hf-dense and fp8 readers: the `mtp` reader
 * option (drop | keep, default drop) and which tensors belong to MTP.
 *
 * DeepSeek-V3 stores num_nextn_predict_layers MTP modules after the decoder
 * layers as model.layers.{num_hidden_layers + i}.* (enorm, hnorm, eh_proj,
 * shared_head.norm, shared_head.head, embed_tokens and a full decoder
 * layer; DeepSeek-V3's weights README, docs/formats/fp8.md). transformers'
 * DeepseekV3 ignores them on load (_keys_to_ignore_on_load_unexpected
 * `model\.layers\.61.*`), so dropping them is the default; see
 * docs/formats/fp8.md, "DeepSeek-V3 MTP layers".
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI).
 * Everything here is pure and thread-safe.
 */
#ifndef QBK_MTP_H
#define QBK_MTP_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_param.h>

/* The reader option `mtp` (STRING, "drop|keep", default "drop", reader
 * role). A plugin lists it in its option declarations. */
extern const qb_option_decl qbk_mtp_option;

/* Reads the `mtp` option from params (NULL: none given). Sets *drop to 1
 * for drop (also when unset), 0 for keep. Returns QB_OK, or QB_E_INVALID
 * with the message set through h for another value (the host checks the
 * choices first; this guards direct callers). */
qb_status qbk_mtp_mode(const qb_host *h, const qb_param *params, int *drop);

/* The first MTP layer index of a parsed config.json: num_hidden_layers when
 * num_nextn_predict_layers is a positive integer or model_type is one of
 * the Qwen3-Next hybrids (qwen3_next, qwen3_5_text, qwen3_5_moe_text, whose
 * MTP block is `mtp.*`), else -1 (no MTP layers). */
int64_t qbk_mtp_first_layer(const cJSON *config);

/* 1 when (first >= 0) `name` is a tensor of a layer at or past first,
 * "model.layers.N." with N >= first, or of the Qwen hybrids' MTP block,
 * "mtp.*". 0 otherwise or when first < 0. */
int qbk_mtp_is_mtp(const char *name, int64_t first);

#endif /* QBK_MTP_H */
