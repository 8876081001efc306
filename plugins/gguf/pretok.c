/*
 * The tokenizer.ggml.pre table: each pre type llama.cpp writes for a
 * byte-level BPE vocabulary, and the HF pre-tokenizer it stands for
 * (docs/formats/gguf.md "Tokenizer"). A value not in the table is refused:
 * a guessed pre-tokenizer splits text differently and yields other ids.
 *
 * Sources per entry: the name and its regex in llama.cpp
 * src/llama-vocab.cpp (llama_vocab::impl::load: name -> pre type;
 * llm_tokenizer_bpe: pre type -> regex_exprs) and convert_hf_to_gguf.py
 * (get_vocab_base_pre: which model writes the name); the HF form (Split
 * regex, flags) as the models' own tokenizer.json files hold it.
 */
#include "gguf_tokenizer.h"

#include <string.h>

/* GPT-2's split, built into HF ByteLevel (use_regex = true):
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#define BL_GPT2 {0, 1, 1}

/* llama-vocab.cpp LLAMA_VOCAB_PRE_TYPE_LLAMA3 ("llama3", "llama-v3",
 * "llama-bpe"); Meta-Llama-3 tokenizer.json pre_tokenizer Split. */
static const char RX_LLAMA3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* LLAMA_VOCAB_PRE_TYPE_QWEN2 ("qwen2", "deepseek-r1-qwen"): llama3's with
 * single digits (\p{N}); Qwen2/Qwen3 tokenizer.json, NFC normalizer. */
static const char RX_QWEN2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                               "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* LLAMA_VOCAB_PRE_TYPE_GPT4O ("gpt-4o"): tiktoken o200k_base's pattern. */
static const char RX_GPT4O[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const gguf_pretok table[] = {
    /* LLAMA_VOCAB_PRE_TYPE_GPT2 ("gpt2"): ByteLevel's own regex. */
    {"gpt2", NULL, 0, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    /* llama.cpp sets ignore_merges for the llama3 type; Meta's BPE model
     * has "ignore_merges": true. Flags as Meta-Llama-3's tokenizer.json. */
    {"llama-bpe", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"llama3", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"llama-v3", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"qwen2", RX_QWEN2, 0, 1, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {"deepseek-r1-qwen", RX_QWEN2, 0, 1, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    /* LLAMA_VOCAB_PRE_TYPE_SMOLLM ("smollm"): regex_exprs "\p{N}" then
     * GPT-2's: HF Digits(individual_digits) then ByteLevel(use_regex). */
    {"smollm", NULL, 1, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"gpt-4o", RX_GPT4O, 0, 0, 0, {0, 1, 0}, BL_GPT2, BL_GPT2},
};

const gguf_pretok *gguf_pretok_find(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

const char *gguf_pretok_names(void)
{
    return "gpt2, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, smollm, gpt-4o";
}
