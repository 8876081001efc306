/*
 * The model families quantbridge knows (qb_archs.h): one table that the
 * host's model library, the writers' tests and `quantbridge plugins` read.
 */
#include <quantbridge/base/qb_archs.h>

#include <string.h>

#define FW QB_ARCH_FORWARD
#define W4 QB_ARCH_W4A16

static const qb_arch_entry table[] = {
    {"llama", "LlamaForCausalLM", FW | W4},
    {"mistral", "MistralForCausalLM", FW | W4},
    {"qwen2", "Qwen2ForCausalLM", FW | W4},
    {"qwen3", "Qwen3ForCausalLM", FW | W4},
    {"gemma", "GemmaForCausalLM", FW | W4},
    {"gemma2", "Gemma2ForCausalLM", FW | W4},
    {"gemma3_text", "Gemma3ForCausalLM", FW | W4},
    {"phi3", "Phi3ForCausalLM", FW | W4},
    {"mixtral", "MixtralForCausalLM", FW | W4},
    {"qwen2_moe", "Qwen2MoeForCausalLM", FW | W4},
    {"qwen3_moe", "Qwen3MoeForCausalLM", FW | W4},
    {"deepseek_v2", "DeepseekV2ForCausalLM", FW | W4},
    {"deepseek_v3", "DeepseekV3ForCausalLM", FW | W4},
    {"gpt_oss", "GptOssForCausalLM", FW | W4},
    /* issue 31 */
    {"glm4_moe", "Glm4MoeForCausalLM", FW | W4},
    {"minimax_m2", "MiniMaxM2ForCausalLM", FW | W4},
    {"deepseek_v32", "DeepseekV32ForCausalLM", FW | W4},
    {"smollm3", "SmolLM3ForCausalLM", FW | W4},
    {"llama4_text", "Llama4ForCausalLM", FW | W4},
    {"gemma4_text", "Gemma4ForCausalLM", FW | W4},
    {"qwen3_next", "Qwen3NextForCausalLM", FW | W4},
    {"qwen3_5_text", "Qwen3_5ForCausalLM", FW | W4},
    {"qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", FW | W4},
};

const qb_arch_entry *qb_arch_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

const qb_arch_entry *qb_arch_find(const char *model_type)
{
    size_t i;
    for (i = 0; model_type && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].model_type, model_type) == 0)
            return &table[i];
    return NULL;
}

size_t qb_arch_list(uint32_t flags, char *buf, size_t len)
{
    size_t i, need = 0;
    buf[0] = '\0';
    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *s = table[i].model_type;
        size_t k;
        if ((table[i].flags & flags) != flags)
            continue;
        for (k = 0; k < (need ? 2u : 0u) + strlen(s); k++) {
            char c = need && k < 2 ? ", "[k] : s[k - (need ? 2 : 0)];
            if (need + k < len - 1) {
                buf[need + k] = c;
                buf[need + k + 1] = '\0';
            }
        }
        need += (need ? 2 : 0) + strlen(s);
    }
    return need;
}
