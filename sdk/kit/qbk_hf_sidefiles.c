/* HF side files: the tokenizer list and the config clean-up rule. See
 * qbk_hf_sidefiles.h and docs/architecture.md, "HF side files". */
#include "qbk_hf_sidefiles.h"

#include <string.h>

const char *const qbk_hf_tokenizer_files[] = {
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.tiktoken",
    "chat_template.jinja",
    "chat_template.json",
    NULL,
};

const char *const qbk_hf_quant_config_keys[] = {"quantization_config", "compression_config", NULL};

int qbk_hf_is_tokenizer_file(const char *name)
{
    size_t k;
    for (k = 0; qbk_hf_tokenizer_files[k]; k++)
        if (strcmp(qbk_hf_tokenizer_files[k], name) == 0)
            return 1;
    return 0;
}

void qbk_hf_config_strip_quant(cJSON *cfg)
{
    size_t k;
    if (!cJSON_IsObject(cfg))
        return;
    for (k = 0; qbk_hf_quant_config_keys[k]; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, qbk_hf_quant_config_keys[k]);
}
