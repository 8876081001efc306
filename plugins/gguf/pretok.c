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
 *
 * llama.cpp applies its regex_exprs one after the other, each splitting
 * every piece into matches and the text between them; HF's Split with
 * behavior Isolated does the same, so a list of regexes becomes one Split
 * per regex in the same order. Where llama.cpp rewrote a tokenizer.json
 * regex for its own engine (the "(?i:...)" groups spelled as "[sS]" etc.),
 * the table keeps the tokenizer.json spelling it quotes; the two match the
 * same text.
 */
#include "gguf_tokenizer.h"

#include <string.h>

/* GPT-2's split, built into HF ByteLevel (use_regex = true):
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#define BL_GPT2 {0, 1, 1}
/* ByteLevel after Split pre-tokenizers: the split is done already. */
#define BL_SPLIT {0, 1, 0}

/* llama-vocab.cpp LLAMA_VOCAB_PRE_TYPE_LLAMA3 ("llama3", "llama-v3",
 * "llama-bpe"); Meta-Llama-3 tokenizer.json pre_tokenizer Split. */
static const char *const RX_LLAMA3[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_QWEN2 ("qwen2", "deepseek-r1-qwen"): llama3's with
 * single digits (\p{N}); Qwen2/Qwen3 tokenizer.json, NFC normalizer. */
static const char *const RX_QWEN2[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_GPT4O ("gpt-4o"): tiktoken o200k_base's pattern,
 * the tokenizer.json form llama-vocab.cpp quotes. */
static const char *const RX_GPT4O[] = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_TEKKEN ("tekken", Mistral-Nemo-Base-2407): the
 * tokenizer.json regex llama-vocab.cpp quotes (o200k's without the
 * contractions, single digits). llama.cpp spells the letter classes with
 * lookaheads for its engine; this is the original. */
static const char *const RX_TEKKEN[] = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM ("deepseek-llm",
 * deepseek-llm-7b-base): six regexes, verbatim (the first holds a real CR
 * and LF, as upstream). */
static const char *const RX_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER ("deepseek-coder",
 * deepseek-coder-6.7b-base): five regexes, verbatim. */
static const char *const RX_DEEPSEEK_CODER[] = {
    "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}", NULL};

/* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM ("deepseek-v3", DeepSeek-V3): three
 * regexes, verbatim (real CR/LF in the third, as upstream). */
static const char *const RX_DEEPSEEK_V3[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const gguf_pretok table[] = {
    /* LLAMA_VOCAB_PRE_TYPE_GPT2: regex_exprs is GPT-2's own pattern, which
     * HF ByteLevel(use_regex) applies. "gpt-2" (openai-community/gpt2),
     * "phi-2" (microsoft/phi-2, GPT-2's tokenizer). llama.cpp knows no
     * pre "gpt2" (it throws "unknown pre-tokenizer type"). */
    {"gpt-2", NULL, 0, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"phi-2", NULL, 0, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    /* llama.cpp sets ignore_merges for the llama3 type; Meta's BPE model
     * has "ignore_merges": true. Flags as Meta-Llama-3's tokenizer.json. */
    {"llama-bpe", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"llama3", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"llama-v3", RX_LLAMA3, 0, 0, 1, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}},
    {"qwen2", RX_QWEN2, 0, 1, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {"deepseek-r1-qwen", RX_QWEN2, 0, 1, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    /* LLAMA_VOCAB_PRE_TYPE_SMOLLM, _COMMAND_R, _STARCODER, _REFACT share
     * regex_exprs "\p{N}" then GPT-2's: HF Digits(individual_digits) then
     * ByteLevel(use_regex), as SmolLM-135M, c4ai-command-r-v01 and
     * starcoder2 ship it (\p{N} and Digits both take one numeric char). */
    {"smollm", NULL, 1, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"command-r", NULL, 1, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"starcoder", NULL, 1, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"refact", NULL, 1, 0, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"gpt-4o", RX_GPT4O, 0, 0, 0, BL_SPLIT, BL_GPT2, BL_GPT2},
    /* llama.cpp sets ignore_merges for tekken. */
    {"tekken", RX_TEKKEN, 0, 0, 1, BL_SPLIT, BL_GPT2, BL_GPT2},
    {"deepseek-llm", RX_DEEPSEEK_LLM, 0, 0, 0, BL_SPLIT, BL_GPT2, BL_GPT2},
    {"deepseek-coder", RX_DEEPSEEK_CODER, 0, 0, 0, BL_SPLIT, BL_GPT2, BL_GPT2},
    {"deepseek-v3", RX_DEEPSEEK_V3, 0, 0, 0, BL_SPLIT, BL_GPT2, BL_GPT2},
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
    return "gpt-2, phi-2, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, smollm, command-r, starcoder, refact, "
           "gpt-4o, tekken, deepseek-llm, deepseek-coder, deepseek-v3";
}
