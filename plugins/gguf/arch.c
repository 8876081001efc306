/*
 * Per-architecture rules and hyper-parameters (see gguf_arch.h).
 */
#include "gguf_arch.h"

#include "gguf_kv.h"
#include "qbk_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* permute_qk: only arch "llama" among these is written by LlamaModel with
 * undo_permute (NORM rope); qwen*, gemma*, phi3 use NEOX rope and are not
 * permuted (llama_model_rope_type; docs/formats/gguf.md "Q/K permutation").
 * norm_plus_one: GemmaModel/Gemma2Model modify_tensors and
 * Gemma3Model.norm_shift add 1 to every tensor ending in "norm.weight". */
static const gguf_arch arch_table[] = {
    {"llama", GGUF_A_LLAMA, 1, 0, "llama mistral mixtral"},
    {"qwen2", GGUF_A_QWEN2, 0, 0, "qwen2"},
    {"qwen3", GGUF_A_QWEN3, 0, 0, "qwen3"},
    {"qwen2moe", GGUF_A_QWEN2MOE, 0, 0, "qwen2_moe"},
    {"qwen3moe", GGUF_A_QWEN3MOE, 0, 0, "qwen3_moe"},
    {"gemma", GGUF_A_GEMMA, 0, 1, "gemma"},
    {"gemma2", GGUF_A_GEMMA2, 0, 1, "gemma2"},
    {"gemma3", GGUF_A_GEMMA3, 0, 1, "gemma3_text"},
    {"phi3", GGUF_A_PHI3, 0, 0, "phi3"},
    /* deepseek2: DeepseekV2Model does not permute; llama.cpp ropes it NORM
     * (adjacent pairs), which is what transformers' DeepSeek attention does
     * too (rope_interleave), so q_pe/k_pe rows are stored as in HF.
     * gpt-oss: GptOssModel does not permute; NEOX rope like HF's halves. */
    {"deepseek2", GGUF_A_DEEPSEEK2, 0, 0, "deepseek_v2 deepseek_v3"},
    {"gpt-oss", GGUF_A_GPTOSS, 0, 0, "gpt_oss"},
    /* issue 31: smollm3, llama4, gemma4. Read only (hf_types NULL): the
     * writer does not write their NoPE, chunking and expert keys yet. */
    /* smollm3: SmolLM3Model is a LlamaModel (permuted q/k, NORM rope in
     * llama_model_rope_type) with llama's tensor names; only the config
     * differs (gguf_hfconfig.c). */
    {"smollm3", GGUF_A_LLAMA, 1, 0, NULL},
    /* llama4: Llama4Model sets undo_permute = False; llama.cpp ropes it NORM
     * (neighbour pairs), as transformers' apply_rotary_emb does. */
    {"llama4", GGUF_A_LLAMA4, 0, 0, NULL},
    /* issue 31, read only: qwen3next, qwen35, qwen35moe, glm4moe,
     * minimax-m2, deepseek32 (docs/formats/gguf.md, "Qwen3-Next, Qwen3.5,
     * GLM-4.5, MiniMax-M2, DeepSeek-V3.2 (issue 31)"). None is permuted
     * (NEOX rope, or DeepSeek's as stored). Qwen3NextModel.modify_tensors
     * adds 1 to every "norm.weight" except linear_attn.norm.weight (names.c
     * takes that one out). */
    {"qwen3next", GGUF_A_QWEN3NEXT, 0, 1, NULL},
    {"qwen35", GGUF_A_QWEN3NEXT, 0, 1, NULL},
    {"qwen35moe", GGUF_A_QWEN3NEXT, 0, 1, NULL},
    {"glm4moe", GGUF_A_GLM4MOE, 0, 0, NULL},
    {"minimax-m2", GGUF_A_MINIMAXM2, 0, 0, NULL},
    {"deepseek32", GGUF_A_DEEPSEEK2, 0, 0, NULL},
    /* issue 31, read only: gemma4. Gemma4Model.norm_shift is 0 (Gemma 4's
     * RMSNorm multiplies by the weight itself): nothing to undo; NEOX rope,
     * not permuted. */
    {"gemma4", GGUF_A_GEMMA4, 0, 0, NULL},
};

const gguf_arch *gguf_arch_find(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++)
        if (strcmp(arch_table[i].gguf_name, name) == 0)
            return &arch_table[i];
    return NULL;
}

const gguf_arch *gguf_arch_for_model_type(const char *model_type)
{
    size_t i, n = model_type ? strlen(model_type) : 0;
    for (i = 0; n && i < sizeof(arch_table) / sizeof(arch_table[0]); i++) {
        const char *p = arch_table[i].hf_types;
        while (p && *p) {
            size_t l = strcspn(p, " ");
            if (l == n && strncmp(p, model_type, n) == 0)
                return &arch_table[i];
            p += l;
            p += *p == ' ';
        }
    }
    return NULL;
}

int gguf_arch_layer_linear(const gguf_hparams *hp, int64_t l)
{
    if (hp->lin_flags)
        return hp->lin_flags[l] != 0;
    return (l + 1) % hp->lin_interval != 0;
}

void gguf_arch_key(const gguf_hparams *hp, const char *suffix, char *buf, size_t n)
{
    snprintf(buf, n, "%s.%s", hp->arch->gguf_name, suffix);
}

/* Reads {arch}.<suffix>; absent leaves *v = -1 unless `required`. */
static qb_status get(const qb_host *h, const gguf_file *f, const gguf_hparams *hp, const char *suffix, int required,
                     int64_t *v)
{
    char key[128];
    qb_status st;
    gguf_arch_key(hp, suffix, key, sizeof(key));
    *v = -1;
    st = gguf_kv_int_uniform(h, f, key, v);
    if (st == QB_E_NOT_FOUND) {
        *v = -1;
        if (required)
            return h->set_error(h, QB_E_FORMAT, "%s: required metadata '%s' is missing", f->path, key);
        return QB_OK;
    }
    if (st == QB_OK && *v < 0)
        return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' is negative (%lld)", f->path, key, (long long)*v);
    return st;
}

/* deepseek2: the MLA widths and routing keys, and the HF model_type they
 * imply (docs/formats/gguf.md "deepseek2"). Called after the common keys. */
static qb_status deepseek2_hparams(const qb_host *h, const gguf_file *f, gguf_hparams *hp)
{
    gguf_mla *a = &hp->mla;
    int64_t klen_mla, vlen_mla, qk;
    qb_status st;

    if ((st = get(h, f, hp, "attention.q_lora_rank", 0, &a->q_lora)) ||
        (st = get(h, f, hp, "attention.kv_lora_rank", 1, &a->kv_lora)) ||
        (st = get(h, f, hp, "attention.key_length_mla", 0, &klen_mla)) ||
        (st = get(h, f, hp, "attention.value_length_mla", 0, &vlen_mla)) ||
        (st = get(h, f, hp, "rope.dimension_count", 1, &a->qk_rope)) ||
        (st = get(h, f, hp, "leading_dense_block_count", 0, &a->n_dense)) ||
        (st = get(h, f, hp, "expert_shared_count", 0, &a->n_shared)) ||
        (st = get(h, f, hp, "expert_gating_func", 0, &a->gating)) ||
        (st = get(h, f, hp, "expert_group_count", 0, &a->n_group)) ||
        (st = get(h, f, hp, "expert_group_used_count", 0, &a->n_group_used)))
        return st;
    /* A q_lora_rank of 0 selects attn_q in llama.cpp's loader, as absent does. */
    if (a->q_lora == 0)
        a->q_lora = -1;
    /* Files converted since llama.cpp's MLA change (attn_k_b/attn_v_b)
     * store the absorbed MQA view in key_length/value_length and the HF
     * per-head widths in the _mla keys; older files (attn_kv_b) store the
     * HF widths in key_length/value_length and have no _mla keys. */
    if (klen_mla >= 0 || vlen_mla >= 0) {
        if (klen_mla < 0 || vlen_mla < 0)
            return h->set_error(h, QB_E_FORMAT, "%s: only one of %s.attention.key_length_mla/value_length_mla is present",
                                f->path, hp->arch->gguf_name);
        qk = klen_mla;
        a->v_head = vlen_mla;
    } else {
        if (hp->value_dim < 0)
            return h->set_error(h, QB_E_FORMAT, "%s: deepseek2 without attention.value_length or value_length_mla",
                                f->path);
        qk = hp->head_dim;
        a->v_head = hp->value_dim;
    }
    a->qk_nope = qk - a->qk_rope;
    if (a->kv_lora < 1 || a->qk_rope < 1 || a->qk_nope < 1 || a->v_head < 1)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: deepseek2 widths do not fit: kv_lora_rank %lld, key length %lld, rope dimension %lld, value length %lld",
                            f->path, (long long)a->kv_lora, (long long)qk, (long long)a->qk_rope, (long long)a->v_head);
    if (a->n_dense < 0)
        a->n_dense = 0;
    if (a->n_shared < 0)
        a->n_shared = 0;
    /* llama.cpp load_hparams (LLM_ARCH_DEEPSEEK2): files without
     * expert_gating_func are DeepSeek-V2/V2.5 conversions and route by
     * softmax. */
    if (a->gating < 0)
        a->gating = strcmp(hp->arch->gguf_name, "deepseek32") == 0 ? 2 : 1;
    if (hp->n_expert < 1 || hp->n_expert_used < 1 || hp->n_ff_exp < 1)
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: deepseek2 without expert_count, expert_used_count and expert_feed_forward_length (dense-only deepseek2 files are not supported)",
                            f->path);
    if (a->n_dense > hp->n_layer)
        return h->set_error(h, QB_E_FORMAT, "%s: leading_dense_block_count %lld exceeds block_count %lld", f->path,
                            (long long)a->n_dense, (long long)hp->n_layer);
    if (a->n_dense > 0 && hp->n_ff < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: dense deepseek2 blocks without feed_forward_length", f->path);
    /* transformers: DeepseekV3 routes by sigmoid with
     * e_score_correction_bias, DeepseekV2 by softmax; q_lora_rank is
     * optional in both. Nothing else maps. */
    if (a->gating == 2 && strcmp(hp->arch->gguf_name, "deepseek32") == 0) {
        hp->model_type = "deepseek_v32"; /* issue 31 */
        hp->hf_class = "DeepseekV32ForCausalLM";
    } else if (a->gating == 2) {
        hp->model_type = "deepseek_v3";
        hp->hf_class = "DeepseekV3ForCausalLM";
    } else if (a->gating == 1) {
        hp->model_type = "deepseek_v2";
        hp->hf_class = "DeepseekV2ForCausalLM";
    } else {
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s.expert_gating_func %lld has no transformers DeepSeek equivalent",
                            f->path, hp->arch->gguf_name, (long long)a->gating);
    }
    /* HF's num_key_value_heads is num_attention_heads (the file's 1 is the
     * absorbed MQA view); its head_dim is qk_rope_head_dim. */
    hp->n_head_kv = hp->n_head;
    hp->head_dim = a->qk_rope;
    hp->value_dim = a->v_head;
    hp->rope_dim = a->qk_rope;
    return QB_OK;
}

/* issue 31: gemma4 (Gemma4Model.set_gguf_parameters; docs/formats/gguf.md,
 * "Gemma 4 (issue 31)"). key_length is the full layers' head width,
 * key_length_swa the sliding layers'; sliding_window_pattern says which
 * layer slides. What the CPU forward pass and this mapping do not take is
 * refused by name: KV sharing, experts, a partial rotation on sliding layers. */
static qb_status gemma4_hparams(const qb_host *h, const gguf_file *f, gguf_hparams *hp)
{
    int64_t shared, vlen_swa, rot_swa;
    char key[128];
    const gguf_kv *kv;
    qb_status st;
    if ((st = get(h, f, hp, "attention.key_length_swa", 1, &hp->g4_hd_swa)) ||
        (st = get(h, f, hp, "attention.value_length_swa", 0, &vlen_swa)) ||
        (st = get(h, f, hp, "rope.dimension_count_swa", 0, &rot_swa)) ||
        (st = get(h, f, hp, "embedding_length_per_layer_input", 0, &hp->g4_ple)) ||
        (st = get(h, f, hp, "attention.shared_kv_layers", 0, &shared)))
        return st;
    if (hp->g4_ple < 0)
        hp->g4_ple = 0;
    if (shared > 0 || hp->n_expert > 0)
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: gemma4 with attention.shared_kv_layers %lld or expert_count %lld: KV sharing and "
                            "the MoE block are not read (the CPU forward pass has neither)",
                            f->path, (long long)shared, (long long)hp->n_expert);
    if (hp->g4_hd_swa < 2 || hp->g4_hd_swa % 2 || (vlen_swa >= 0 && vlen_swa != hp->g4_hd_swa) ||
        hp->head_dim % 2)
        return h->set_error(h, QB_E_FORMAT, "%s: gemma4 head widths do not fit: key_length %lld, key_length_swa %lld, "
                            "value_length_swa %lld", f->path, (long long)hp->head_dim, (long long)hp->g4_hd_swa,
                            (long long)vlen_swa);
    if (rot_swa >= 0 && rot_swa != hp->g4_hd_swa)
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: gemma4.rope.dimension_count_swa %lld differs from key_length_swa %lld: a partial "
                            "rotation on sliding layers is not read",
                            f->path, (long long)rot_swa, (long long)hp->g4_hd_swa);
    if (hp->rope_dim >= 0 && hp->rope_dim != hp->head_dim)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: gemma4.rope.dimension_count %lld differs from key_length %lld (the converter "
                            "writes the full width and marks unrotated pairs in rope_freqs)",
                            f->path, (long long)hp->rope_dim, (long long)hp->head_dim);
    gguf_arch_key(hp, "attention.sliding_window_pattern", key, sizeof(key));
    kv = gguf_kv_find(f, key);
    if (!kv || kv->type != GGUF_VT_ARRAY || kv->arr_type != GGUF_VT_BOOL || kv->arr_n != (uint64_t)hp->n_layer)
        return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' is missing or not one BOOL per block", f->path, key);
    hp->g4_swa = kv->val;
    hp->model_type = "gemma4_text";
    hp->hf_class = "Gemma4ForCausalLM";
    return QB_OK;
}

/* issue 31: qwen3next / qwen35 / qwen35moe. The gated delta net's sizes
 * (Qwen3NextModel.set_gguf_parameters: ssm.conv_kernel =
 * linear_conv_kernel_dim, state_size = linear_key_head_dim, group_count =
 * linear_num_key_heads, time_step_rank = linear_num_value_heads,
 * inner_size = linear_value_head_dim x linear_num_value_heads). */
static qb_status qwen3next_hparams(const qb_host *h, const gguf_file *f, gguf_hparams *hp)
{
    const char *n = hp->arch->gguf_name;
    int64_t inner;
    qb_status st;
    if ((st = get(h, f, hp, "ssm.conv_kernel", 1, &hp->lin_conv)) ||
        (st = get(h, f, hp, "ssm.state_size", 1, &hp->lin_dk)) ||
        (st = get(h, f, hp, "ssm.group_count", 1, &hp->lin_nk)) ||
        (st = get(h, f, hp, "ssm.time_step_rank", 1, &hp->lin_nv)) ||
        (st = get(h, f, hp, "ssm.inner_size", 1, &inner)))
        return st;
    if (hp->lin_conv < 1 || hp->lin_dk < 1 || hp->lin_nk < 1 || hp->lin_nv < 1 || hp->lin_nv % hp->lin_nk != 0 ||
        inner < 1 || inner % hp->lin_nv != 0)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s.ssm.* do not fit: group_count %lld, time_step_rank %lld, inner_size %lld",
                            f->path, n, (long long)hp->lin_nk, (long long)hp->lin_nv, (long long)inner);
    hp->lin_dv = inner / hp->lin_nv;
    if ((st = get(h, f, hp, "full_attention_interval", 0, &hp->lin_interval)))
        return st;
    if (hp->lin_interval < 1)
        hp->lin_interval = 4;
    {
        char key[128];
        const gguf_kv *kv;
        gguf_arch_key(hp, "attention.recurrent_layers", key, sizeof(key));
        kv = gguf_kv_find(f, key);
        if (kv && (kv->type != GGUF_VT_ARRAY || kv->arr_type != GGUF_VT_BOOL ||
                   kv->arr_n != (uint64_t)(hp->n_layer + hp->n_nextn)))
            return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' is not one BOOL per block", f->path, key);
        hp->lin_flags = kv ? kv->val : NULL;
    }
    if (strcmp(n, "qwen35") == 0) {
        hp->model_type = "qwen3_5_text";
        hp->hf_class = "Qwen3_5ForCausalLM";
        if (hp->n_expert > 0)
            return h->set_error(h, QB_E_FORMAT, "%s: qwen35 with expert_count (the MoE model is qwen35moe)", f->path);
        return QB_OK;
    }
    if (hp->n_expert < 1 || hp->n_ff_exp < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: %s without expert_count and expert_feed_forward_length", f->path, n);
    if (strcmp(n, "qwen35moe") == 0) {
        hp->model_type = "qwen3_5_moe_text";
        hp->hf_class = "Qwen3_5MoeForCausalLM";
    } else {
        hp->model_type = "qwen3_next";
        hp->hf_class = "Qwen3NextForCausalLM";
    }
    return QB_OK;
}

qb_status gguf_arch_hparams(const qb_host *h, const gguf_model *m, gguf_hparams *hp)
{
    const gguf_file *f = gguf_model_meta(m);
    char *name = NULL;
    qb_status st;
    unsigned b;

    memset(hp, 0, sizeof(*hp));
    st = gguf_kv_string(h, f, "general.architecture", &name);
    if (st == QB_E_NOT_FOUND)
        return h->set_error(h, QB_E_FORMAT, "%s: metadata 'general.architecture' is missing", f->path);
    if (st)
        return st;
    hp->arch = gguf_arch_find(name);
    if (!hp->arch) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: unknown GGUF architecture '%s'", f->path, name);
        qbk_free(name);
        return st;
    }
    qbk_free(name);
    b = hp->arch->bit;
    if ((st = get(h, f, hp, "block_count", 1, &hp->n_layer)) ||
        (st = get(h, f, hp, "embedding_length", 1, &hp->n_embd)) ||
        (st = get(h, f, hp, "feed_forward_length",
                   !(b & (GGUF_A_QWEN2MOE | GGUF_A_QWEN3MOE | GGUF_A_DEEPSEEK2 | GGUF_A_GPTOSS |
                         GGUF_A_QWEN3NEXT)), &hp->n_ff)) ||
        (st = get(h, f, hp, "interleave_moe_layer_step", 0, &hp->moe_step)) ||
        (st = get(h, f, hp, "attention.head_count", 1, &hp->n_head)) ||
        (st = get(h, f, hp, "attention.head_count_kv", 0, &hp->n_head_kv)) ||
        (st = get(h, f, hp, "attention.key_length", 0, &hp->head_dim)) ||
        (st = get(h, f, hp, "attention.value_length", 0, &hp->value_dim)) ||
        (st = get(h, f, hp, "expert_count", 0, &hp->n_expert)) ||
        (st = get(h, f, hp, "expert_used_count", 0, &hp->n_expert_used)) ||
        (st = get(h, f, hp, "expert_feed_forward_length", 0, &hp->n_ff_exp)) ||
        (st = get(h, f, hp, "expert_shared_feed_forward_length", 0, &hp->n_ff_shexp)) ||
        (st = get(h, f, hp, "context_length", 0, &hp->n_ctx)) ||
        (st = get(h, f, hp, "attention.sliding_window", 0, &hp->sliding_window)) ||
        (st = get(h, f, hp, "rope.dimension_count", 0, &hp->rope_dim)) ||
        (st = get(h, f, hp, "nextn_predict_layers", 0, &hp->n_nextn)))
        return st;
    /* issue 31: the MTP blocks follow the decoder's (block_count counts
     * both; llama.cpp's n_layer_dense_lead / nextn_predict_layers). */
    if (hp->n_nextn < 0)
        hp->n_nextn = 0;
    if (hp->n_nextn >= hp->n_layer)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.nextn_predict_layers %lld leaves no decoder block of %lld",
                            f->path, hp->arch->gguf_name, (long long)hp->n_nextn, (long long)hp->n_layer);
    hp->n_layer -= hp->n_nextn;
    if (hp->n_layer < 1 || hp->n_embd < 1 || hp->n_head < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: block_count, embedding_length and head_count must be positive", f->path);
    if (b == GGUF_A_DEEPSEEK2)
        return deepseek2_hparams(h, f, hp);
    if (hp->n_head_kv < 0)
        hp->n_head_kv = hp->n_head; /* llama.cpp load_hparams default */
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv != 0)
        return h->set_error(h, QB_E_FORMAT, "%s: head_count %lld is not a multiple of head_count_kv %lld", f->path,
                            (long long)hp->n_head, (long long)hp->n_head_kv);
    if (hp->head_dim < 0) {
        /* llama.cpp load_hparams: n_embd_head_k defaults to n_embd / n_head. */
        if (hp->n_embd % hp->n_head != 0)
            return h->set_error(h, QB_E_FORMAT, "%s: no attention.key_length and embedding_length %lld is not a multiple of head_count %lld",
                                f->path, (long long)hp->n_embd, (long long)hp->n_head);
        hp->head_dim = hp->n_embd / hp->n_head;
    }
    if (hp->value_dim >= 0 && hp->value_dim != hp->head_dim)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: attention.value_length %lld differs from key_length %lld",
                            f->path, (long long)hp->value_dim, (long long)hp->head_dim);

    switch (b) {
    case GGUF_A_LLAMA:
        /* Mistral and Mixtral are written as "llama" (docs/formats/gguf.md, "Tensor names"). */
        if (strcmp(hp->arch->gguf_name, "smollm3") == 0) { /* issue 31 */
            if (hp->n_expert > 0 || hp->sliding_window > 0)
                return h->set_error(h, QB_E_UNSUPPORTED,
                                    "%s: smollm3 with experts or a sliding window: llama.cpp's smollm3 has neither",
                                    f->path);
            hp->model_type = "smollm3";
            hp->hf_class = "SmolLM3ForCausalLM";
        } else if (hp->n_expert > 0) {
            hp->model_type = "mixtral";
            hp->hf_class = "MixtralForCausalLM";
        } else if (hp->sliding_window > 0) {
            hp->model_type = "mistral";
            hp->hf_class = "MistralForCausalLM";
        } else {
            hp->model_type = "llama";
            hp->hf_class = "LlamaForCausalLM";
        }
        break;
    case GGUF_A_QWEN2:
        hp->model_type = "qwen2";
        hp->hf_class = "Qwen2ForCausalLM";
        break;
    case GGUF_A_QWEN3:
        hp->model_type = "qwen3";
        hp->hf_class = "Qwen3ForCausalLM";
        break;
    case GGUF_A_QWEN2MOE:
        hp->model_type = "qwen2_moe";
        hp->hf_class = "Qwen2MoeForCausalLM";
        break;
    case GGUF_A_QWEN3MOE:
        hp->model_type = "qwen3_moe";
        hp->hf_class = "Qwen3MoeForCausalLM";
        break;
    case GGUF_A_GEMMA:
        hp->model_type = "gemma";
        hp->hf_class = "GemmaForCausalLM";
        break;
    case GGUF_A_GEMMA2:
        hp->model_type = "gemma2";
        hp->hf_class = "Gemma2ForCausalLM";
        break;
    case GGUF_A_GEMMA3:
        hp->model_type = "gemma3_text";
        hp->hf_class = "Gemma3ForCausalLM";
        break;
    case GGUF_A_GPTOSS:
        hp->model_type = "gpt_oss";
        hp->hf_class = "GptOssForCausalLM";
        break;
    case GGUF_A_LLAMA4: /* issue 31: the text model (Llama4ForCausalLM) */
        if (hp->n_expert < 1 || hp->n_ff_exp < 1 || hp->moe_step < 1)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: llama4 without expert_count, expert_feed_forward_length and "
                                "interleave_moe_layer_step (llama_model_llama4 needs all three)",
                                f->path);
        hp->model_type = "llama4_text";
        hp->hf_class = "Llama4ForCausalLM";
        break;
    case GGUF_A_QWEN3NEXT: /* issue 31 */
        if ((st = qwen3next_hparams(h, f, hp)))
            return st;
        break;
    case GGUF_A_GLM4MOE: /* issue 31 */
        if (hp->n_expert < 1 || hp->n_ff_exp < 1)
            return h->set_error(h, QB_E_FORMAT, "%s: glm4moe without expert_count and expert_feed_forward_length",
                                f->path);
        hp->model_type = "glm4_moe";
        hp->hf_class = "Glm4MoeForCausalLM";
        break;
    case GGUF_A_GEMMA4: /* issue 31 */
        if ((st = gemma4_hparams(h, f, hp)))
            return st;
        break;
    case GGUF_A_MINIMAXM2: /* issue 31 */
        if (hp->n_expert < 1 || hp->n_ff_exp < 1)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: minimax-m2 without expert_count and expert_feed_forward_length", f->path);
        {
            /* MiniMaxM2TopKRouter is sigmoid; the converter writes no gating key */
            int64_t g;
            if ((st = get(h, f, hp, "expert_gating_func", 0, &g)))
                return st;
            if (g >= 0 && g != 2)
                return h->set_error(h, QB_E_UNSUPPORTED,
                                    "%s: minimax-m2.expert_gating_func %lld: transformers' MiniMax-M2 routes by sigmoid (2) only",
                                    f->path, (long long)g);
        }
        hp->model_type = "minimax_m2";
        hp->hf_class = "MiniMaxM2ForCausalLM";
        break;
    default:
        hp->model_type = "phi3";
        hp->hf_class = "Phi3ForCausalLM";
        break;
    }
    if ((b & (GGUF_A_QWEN2MOE | GGUF_A_QWEN3MOE | GGUF_A_GPTOSS)) && hp->n_expert < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: %s model without %s.expert_count", f->path, hp->arch->gguf_name,
                            hp->arch->gguf_name);
    return QB_OK;
}
