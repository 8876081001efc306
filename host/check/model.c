/*
 * quantbridge plugin-check — the generated model a writer converts.
 *
 * A writer is checked without any reader or file: this qb_model_src
 * computes a small llama (one decoder layer, hidden 128, 4 heads of 32,
 * 2 KV heads, intermediate 256, vocab 256, untied lm_head) from a hash of
 * (tensor, row, column). The linear weights also serve a 4-bit symmetric
 * grid in groups of 128 columns, and their dense rows keep qb_tensor.h's
 * promise, (float)(code - zero) * scale bit for bit. Every value has at
 * most 8 significant bits, so a writer that stores bf16 or f16 stores it
 * exactly. The model info carries every qb_model_facts field, so a writer
 * that requires facts (qb_writer_caps.required_facts) gets them all.
 */
#include "plugin_check.h"

#include <stdlib.h>
#include <string.h>

#define PCM_HIDDEN 128
#define PCM_INTER 256
#define PCM_VOCAB 256
#define PCM_HEADS 4
#define PCM_KV_HEADS 2
#define PCM_HEAD_DIM 32
#define PCM_GROUP 128
#define PCM_BITS 4
#define PCM_ZERO 8 /* 2^(bits-1): symmetric */

typedef enum pcm_kind { PCM_DENSE, PCM_NORM, PCM_GRID } pcm_kind;

static const struct {
    const char *name;
    int64_t rows, cols; /* rows 0: a vector */
    pcm_kind kind;
} pcm_tensors[] = {
    {"model.embed_tokens.weight", PCM_VOCAB, PCM_HIDDEN, PCM_DENSE},
    {"model.layers.0.input_layernorm.weight", 0, PCM_HIDDEN, PCM_NORM},
    {"model.layers.0.self_attn.q_proj.weight", PCM_HEADS * PCM_HEAD_DIM, PCM_HIDDEN, PCM_GRID},
    {"model.layers.0.self_attn.k_proj.weight", PCM_KV_HEADS * PCM_HEAD_DIM, PCM_HIDDEN, PCM_GRID},
    {"model.layers.0.self_attn.v_proj.weight", PCM_KV_HEADS * PCM_HEAD_DIM, PCM_HIDDEN, PCM_GRID},
    {"model.layers.0.self_attn.o_proj.weight", PCM_HIDDEN, PCM_HEADS * PCM_HEAD_DIM, PCM_GRID},
    {"model.layers.0.post_attention_layernorm.weight", 0, PCM_HIDDEN, PCM_NORM},
    {"model.layers.0.mlp.gate_proj.weight", PCM_INTER, PCM_HIDDEN, PCM_GRID},
    {"model.layers.0.mlp.up_proj.weight", PCM_INTER, PCM_HIDDEN, PCM_GRID},
    {"model.layers.0.mlp.down_proj.weight", PCM_HIDDEN, PCM_INTER, PCM_GRID},
    {"model.norm.weight", 0, PCM_HIDDEN, PCM_NORM},
    {"lm_head.weight", PCM_VOCAB, PCM_HIDDEN, PCM_DENSE},
};
#define PCM_N (sizeof pcm_tensors / sizeof pcm_tensors[0])

/* transformers' LlamaConfig attribute names, the sizes above */
static const char pcm_config[] =
    "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
    "  \"hidden_size\": 128,\n  \"intermediate_size\": 256,\n  \"num_hidden_layers\": 1,\n"
    "  \"num_attention_heads\": 4,\n  \"num_key_value_heads\": 2,\n  \"head_dim\": 32,\n"
    "  \"hidden_act\": \"silu\",\n  \"rms_norm_eps\": 1e-05,\n  \"rope_theta\": 500000.0,\n"
    "  \"max_position_embeddings\": 2048,\n  \"vocab_size\": 256,\n"
    "  \"tie_word_embeddings\": false,\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n"
    "  \"attention_bias\": false,\n  \"mlp_bias\": false,\n  \"torch_dtype\": \"bfloat16\"\n}\n";
static const char pcm_generation[] =
    "{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n  \"do_sample\": false\n}\n";
static const char pcm_template[] =
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}";

struct qbh_pc_model {
    qb_model_src src;
    qb_model_info info;
    qb_model_facts facts;
    qb_tensor_info tensors[PCM_N];
};

static uint32_t mix(uint32_t t, uint32_t r, uint32_t c, uint32_t salt)
{
    uint32_t h = t * 0x9E3779B1u ^ r * 0x85EBCA77u ^ c * 0xC2B2AE3Du ^ salt * 0x27D4EB2Fu;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return h;
}

static uint8_t grid_code(size_t t, int64_t r, int64_t c)
{
    return (uint8_t)(mix((uint32_t)t, (uint32_t)r, (uint32_t)c, 1) & ((1u << PCM_BITS) - 1));
}

/* (1 + k/8) / 256: three significant bits */
static float grid_scale(size_t t, int64_t r, int64_t g)
{
    return (1.0f + (float)(mix((uint32_t)t, (uint32_t)r, (uint32_t)g, 2) % 8) / 8.0f) / 256.0f;
}

static float value(size_t t, int64_t r, int64_t c)
{
    switch (pcm_tensors[t].kind) {
    case PCM_NORM:
        return 1.0f + (float)(mix((uint32_t)t, 0, (uint32_t)c, 3) % 16) / 64.0f;
    case PCM_GRID:
        /* the qb_tensor.h promise, in float32 */
        return (float)((int32_t)grid_code(t, r, c) - PCM_ZERO) * grid_scale(t, r, c / PCM_GROUP);
    case PCM_DENSE:
    default:
        return (float)((int32_t)(mix((uint32_t)t, (uint32_t)r, (uint32_t)c, 4) % 255) - 127) /
               1024.0f;
    }
}

static qbh_pc_model *M(void *h)
{
    return h;
}

static qb_status m_tensor_info(void *h, size_t index, const qb_tensor_info **out)
{
    *out = NULL;
    if (index >= PCM_N)
        return qbh_error_set(QB_E_RANGE, "plugin-check model: tensor index %zu outside [0, %zu)",
                             index, PCM_N);
    *out = &M(h)->tensors[index];
    return QB_OK;
}

static qb_status m_find(void *h, const char *name, size_t *index)
{
    size_t i;
    (void)h;
    for (i = 0; name && i < PCM_N; i++)
        if (strcmp(pcm_tensors[i].name, name) == 0) {
            *index = i;
            return QB_OK;
        }
    return qbh_error_set(QB_E_NOT_FOUND, "plugin-check model: no tensor named %s",
                         name ? name : "(null)");
}

static qb_status check_rows(qbh_pc_model *m, size_t index, int64_t row0, int64_t n_rows)
{
    int64_t rows;
    if (index >= PCM_N)
        return qbh_error_set(QB_E_RANGE, "plugin-check model: tensor index %zu outside [0, %zu)",
                             index, PCM_N);
    rows = qb_tensor_rows(&m->tensors[index]);
    if (row0 < 0 || n_rows < 0 || row0 > rows || n_rows > rows - row0)
        return qbh_error_set(QB_E_RANGE, "plugin-check model: %s: rows [%lld, +%lld) outside "
                             "[0, %lld)", pcm_tensors[index].name, (long long)row0,
                             (long long)n_rows, (long long)rows);
    return QB_OK;
}

static qb_status m_read_rows(void *h, size_t index, int64_t row0, int64_t n_rows, float *dst)
{
    qb_status rc = check_rows(M(h), index, row0, n_rows);
    int64_t r, c, cols;
    if (rc)
        return rc;
    cols = pcm_tensors[index].cols;
    for (r = 0; r < n_rows; r++)
        for (c = 0; c < cols; c++)
            dst[r * cols + c] = value(index, row0 + r, c);
    return QB_OK;
}

static qb_status m_get_grid_info(void *h, size_t index, qb_grid_info *out)
{
    (void)h;
    if (index >= PCM_N || pcm_tensors[index].kind != PCM_GRID)
        return qbh_error_set(QB_E_UNSUPPORTED, "plugin-check model: tensor %zu has no grid",
                             index);
    out->bits = PCM_BITS;
    out->n_groups = (uint32_t)((pcm_tensors[index].cols + PCM_GROUP - 1) / PCM_GROUP);
    out->group_size = PCM_GROUP;
    out->col_group = NULL;
    out->symmetric = 1;
    out->scale_dtype = QB_DT_F16;
    return QB_OK;
}

static qb_status m_read_grid(void *h, size_t index, int64_t row0, int64_t n_rows,
                             qb_grid_rows *out)
{
    qb_status rc = check_rows(M(h), index, row0, n_rows);
    int64_t r, c, g, cols, ng;
    if (rc)
        return rc;
    if (pcm_tensors[index].kind != PCM_GRID)
        return qbh_error_set(QB_E_UNSUPPORTED, "plugin-check model: %s has no grid",
                             pcm_tensors[index].name);
    cols = pcm_tensors[index].cols;
    ng = (cols + PCM_GROUP - 1) / PCM_GROUP;
    for (r = 0; r < n_rows; r++) {
        for (c = 0; c < cols; c++)
            out->codes[r * cols + c] = grid_code(index, row0 + r, c);
        for (g = 0; g < ng; g++) {
            out->scales[r * ng + g] = grid_scale(index, row0 + r, g);
            out->zeros[r * ng + g] = PCM_ZERO;
        }
    }
    return QB_OK;
}

qb_status qbh_pc_model_new(const char *tokenizer_dir, qbh_pc_model **out)
{
    qbh_pc_model *m = calloc(1, sizeof *m);
    size_t i;
    *out = NULL;
    if (!m)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (i = 0; i < PCM_N; i++) {
        qb_tensor_info *t = &m->tensors[i];
        t->struct_size = sizeof *t;
        t->name = pcm_tensors[i].name;
        t->n_dims = pcm_tensors[i].rows ? 2 : 1;
        t->dims[0] = pcm_tensors[i].rows ? pcm_tensors[i].rows : pcm_tensors[i].cols;
        t->dims[1] = pcm_tensors[i].rows ? pcm_tensors[i].cols : 0;
        t->has_grid = pcm_tensors[i].kind == PCM_GRID;
        t->source_dtype = t->has_grid ? QB_DT_QUANTIZED : QB_DT_BF16;
        t->source_encoding = t->has_grid ? "plugin-check int4 g128 sym" : "bf16";
    }
    m->facts.struct_size = sizeof m->facts;
    m->facts.known = QB_FACT_ALL;
    m->facts.n_layers = 1;
    m->facts.hidden_size = PCM_HIDDEN;
    m->facts.vocab_size = PCM_VOCAB;
    m->facts.n_heads = PCM_HEADS;
    m->facts.n_kv_heads = PCM_KV_HEADS;
    m->facts.head_dim = PCM_HEAD_DIM;
    m->facts.intermediate_size = PCM_INTER;
    m->facts.tied_embeddings = 0;
    m->info.struct_size = sizeof m->info;
    m->info.architecture = "llama";
    m->info.config_json = pcm_config;
    m->info.generation_config_json = pcm_generation;
    m->info.n_tensors = PCM_N;
    m->info.source_format = "plugin-check";
    m->info.source_summary = "generated llama (plugin-check): 1 layer, hidden 128, int4 g128 grids";
    m->info.tokenizer_dir = tokenizer_dir;
    m->info.chat_template = pcm_template;
    m->info.facts = &m->facts;
    m->src.struct_size = sizeof m->src;
    m->src.handle = m;
    m->src.info = &m->info;
    m->src.source_path = "plugin-check-model";
    m->src.reader_name = "plugin-check";
    m->src.reader_version = QBH_VERSION_STRING;
    m->src.host_version = QBH_VERSION_STRING;
    m->src.tensor_info = m_tensor_info;
    m->src.find = m_find;
    m->src.read_rows = m_read_rows;
    m->src.get_grid_info = m_get_grid_info;
    m->src.read_grid = m_read_grid;
    *out = m;
    return QB_OK;
}

const qb_model_src *qbh_pc_model_src(const qbh_pc_model *m)
{
    return &m->src;
}

void qbh_pc_model_free(qbh_pc_model *m)
{
    free(m);
}

/* The reader verify names as the generated model's: plugin-check itself. */
static char pcm_reader_name[] = "plugin-check";
static qbh_plugin pcm_reader = {.name = pcm_reader_name};

void qbh_pc_model_source(qbh_pc_model *m, qbh_source *out)
{
    memset(out, 0, sizeof *out);
    out->src = m->src;
    out->reader = &pcm_reader;
    out->info = m->info;
    out->facts = m->facts;
    out->info.facts = &out->facts;
    out->tensors = m->tensors;
    out->path = pcm_reader_name;
    pthread_mutex_init(&out->info_lock, NULL);
}
