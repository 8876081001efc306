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

/* LLAMA_VOCAB_PRE_TYPE_QWEN35 ("qwen35", Qwen3.5): qwen2's with combining
 * marks (\p{M}) kept in letter runs and out of the punctuation run, the
 * tokenizer.json form llama-vocab.cpp quotes. No normalizer: llama.cpp's
 * test vectors (made by the HF tokenizer) keep a decomposed "e" + U+0301 as
 * two pieces, which NFC would join. */
static const char *const RX_QWEN35[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_FALCON ("falcon", falcon-7b): three regexes,
 * verbatim and in llama.cpp's order -- runs of punctuation (Unicode P and
 * the ASCII symbols $+<=>^~|`, what tokenizers' Punctuation pre-tokenizer
 * takes), GPT-2's split (without its last "|\s+": text no alternative
 * matches is a piece of its own anyway), then every three ASCII digits.
 * The order matters: the three-digit split runs on GPT-2's pieces
 * ("  123" -> " ", " 123" -> " ", " ", "123"), so it cannot move before
 * it, nor become a Digits pre-tokenizer. */
static const char *const RX_FALCON[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
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
 * and LF, as upstream). Non-ASCII characters are written as universal
 * character names: a copy through an editor or terminal that applies NFC
 * would silently change range ends (U+1FDB becomes U+038A, an empty range
 * Oniguruma refuses). */
static const char *const RX_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
    "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
    "\\s+$",
    "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+",
    "\\p{N}+",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER ("deepseek-coder",
 * deepseek-coder-6.7b-base): five regexes, verbatim. */
static const char *const RX_DEEPSEEK_CODER[] = {
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+",
    "\\p{N}",
    NULL};

/* LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM ("deepseek-v3", DeepSeek-V3): three
 * regexes, verbatim (real CR/LF in the third, as upstream; UCNs as above). */
static const char *const RX_DEEPSEEK_V3[] = {
    "\\p{N}{1,3}",
    "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
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
    {"qwen35", RX_QWEN35, 0, 0, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    /* LLAMA_VOCAB_PRE_TYPE_MPT ("mpt", mpt-7b): GPT-2's regex_exprs; MPT
     * ships gpt-neox-20b's tokenizer.json, ByteLevel behind an NFC
     * normalizer (llama.cpp normalizes nothing: the two part only on text
     * that is not in NFC). */
    {"mpt", NULL, 0, 1, 0, BL_GPT2, BL_GPT2, BL_GPT2},
    {"falcon", RX_FALCON, 0, 0, 0, BL_SPLIT, BL_GPT2, BL_GPT2},
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
    return "gpt-2, phi-2, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, qwen35, mpt, falcon, smollm, command-r, "
           "starcoder, refact, gpt-4o, tekken, deepseek-llm, deepseek-coder, deepseek-v3";
}
