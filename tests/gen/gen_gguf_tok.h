/*
 * Test fixtures: GGUF tokenizer.ggml.* metadata made from a Hugging Face
 * tokenizer.json + tokenizer_config.json the way llama.cpp's
 * convert_hf_to_gguf.py does (docs/formats/gguf.md "Tokenizer"). Tests only.
 */
#ifndef QBT_GEN_GGUF_TOK_H
#define QBT_GEN_GGUF_TOK_H

#include "gen_gguf.h"

/* Adds tokenizer.ggml.{model,pre,tokens,token_type,scores,merges,
 * bos/eos/unknown/padding_token_id,add_bos_token,add_eos_token} and
 * tokenizer.chat_template to g.
 * - byte-level BPE (model.byte_fallback false): model "gpt2", pre `pre`;
 *   tokens by id over vocab and added tokens, missing ids "[PADn]" UNUSED
 *   (get_vocab_base); an added token CONTROL when special or looking
 *   special (does_token_look_special: "<|...|>", "<｜...｜>"), else
 *   USER_DEFINED; the rest NORMAL; merges as "left right".
 * - SentencePiece BPE (byte_fallback true): model "llama", no merges;
 *   the unk token UNKNOWN, added special tokens CONTROL, other added
 *   tokens USER_DEFINED with U+2581 written as a space and score -1000
 *   (_create_vocab_sentencepiece), "<0xNN>" BYTE; scores as the .model
 *   file orders pieces: minus the index of the first merge producing the
 *   piece, 0 for unknown/control/byte, below every merge for pieces no
 *   merge produces; add_space_prefix false when the normalizer has no
 *   Prepend (Gemma's converter states it).
 * Ids from tokenizer_config.json's bos/eos/unk/pad tokens, add_bos/eos
 * when present there. Returns the vocabulary size (> 0), or -1 with a
 * message on stderr. */
long qbt_gguf_add_hf_tokenizer(qbt_gguf *g, const char *tokenizer_json, const char *tokenizer_config_json,
                               const char *pre);

/* Reads a whole file into a malloc'd NUL-terminated buffer; a path ending
 * in ".xz" is decompressed through `xz -dc`. NULL on failure. */
char *qbt_read_maybe_xz(const char *path);

#endif /* QBT_GEN_GGUF_TOK_H */
