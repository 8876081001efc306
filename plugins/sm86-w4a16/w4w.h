/*
 * sm86-w4a16 plugin — internal declarations shared by its files.
 *
 * The plugin writes and reads the native layered W4A16 checkpoint
 * defined in docs/w4a16-format.md, version 1. Files:
 *   plugin.c      entry point, descriptor, options
 *   arch.c        tensor roles per architecture (data, role paths)
 *   layout.c      per-layer role instances from config.json (experts, MoE layers)
 *   repack.c      whether a source integer grid maps exactly into int4
 *   plan.c        classification of the source tensors and the file layout
 *   quantize.c    per-group int4 rules (absmax/7, scale search, auto)
 *   st_out.c      plan files as safetensors (kit qbk_st_writer)
 *   config_out.c  config.json, generation_config.json, tokenizer files
 *   manifest.c    manifest.json
 *   writer.c      the qb_writer_vtable (begin / write_tensor / finish / abort)
 *   manifest_in.c reading and checking manifest.json
 *   reader.c      the qb_reader_vtable (the format read back as canonical tensors)
 *
 * Every symbol here is hidden (the build exports only qb_plugin_entry_v1).
 */
#ifndef W4W_H
#define W4W_H

#include <quantbridge/quantbridge.h>
#include <stddef.h>
#include <stdint.h>

#include "qbk_st_writer.h"

#define W4W_PLUGIN_NAME "sm86-w4a16"
#define W4W_PLUGIN_VERSION "0.1.0"
#define W4W_FORMAT_VERSION 1

/* ---- plugin context ------------------------------------------------------ */

/* What the entry point keeps: the host table. Passed as `ctx` to every
 * vtable call; tests build one around a fake host. */
typedef struct w4w_ctx {
    const qb_host *host;
} w4w_ctx;

extern const qb_writer_vtable w4w_writer_vtable;
extern const qb_option_decl *const w4w_option_decls[];

/* ---- architectures (arch.c) ---------------------------------------------- */

typedef enum w4w_role_kind {
    W4W_ROLE_LINEAR = 1, /* 2-D [out, in] weight: packed + scales */
    W4W_ROLE_NORM = 2,   /* 1-D weight kept F16 */
    W4W_ROLE_ROUTER = 3, /* 2-D MoE router weight kept F16 (w4a16-format.md) */
    W4W_ROLE_PARAM = 4,  /* 1-D parameter named `<path>` itself (no .weight), kept F16 */
    W4W_ROLE_F32 = 5,    /* 1-D tensor kept F32 under its full path, no ".weight"
                            (DeepSeek-V3's mlp.gate.e_score_correction_bias) */
    W4W_ROLE_CONV = 6    /* depthwise convolution weight [channels, 1, kernel] kept
                            F16 as `<path>.weight` (Qwen3-Next's linear_attn.conv1d) */
} w4w_role_kind;

typedef enum w4w_bias_rule {
    W4W_BIAS_NONE = 0,     /* a bias tensor here is an unknown tensor */
    W4W_BIAS_OPTIONAL = 1, /* kept F16 when the source has one */
    W4W_BIAS_REQUIRED = 2  /* the architecture always has one */
} w4w_bias_rule;

/* Where a role's widths come from in config.json (the reader needs the
 * input width: a packed row of ceil(in/2) bytes cannot tell 2k-1 from 2k). */
typedef enum w4w_in_dim {
    W4W_IN_NONE = 0,
    W4W_IN_HIDDEN = 1,       /* hidden_size */
    W4W_IN_INTER = 2,        /* intermediate_size */
    W4W_IN_HEADS = 3,        /* num_attention_heads * head_dim */
    W4W_IN_MOE_INTER = 4,    /* moe_intermediate_size */
    W4W_IN_SHARED_INTER = 5, /* shared_expert_intermediate_size */
    W4W_IN_EXPERTS = 6,      /* the expert count (a router's rows) */
    W4W_IN_ONE = 7,          /* 1 (shared_expert_gate's single row) */
    W4W_IN_KV_HEADS = 8,     /* num_key_value_heads * head_dim */
    /* DeepSeek MLA (DeepseekV3Attention) and its shared experts */
    W4W_IN_Q_LORA = 9,       /* q_lora_rank (null: no q LoRA, q_proj instead) */
    W4W_IN_KV_LORA = 10,     /* kv_lora_rank */
    W4W_IN_MLA_Q = 11,       /* num_attention_heads * (qk_nope_head_dim + qk_rope_head_dim) */
    W4W_IN_MLA_KV_A = 12,    /* kv_lora_rank + qk_rope_head_dim */
    W4W_IN_MLA_KV_B = 13,    /* num_attention_heads * (qk_nope_head_dim + v_head_dim) */
    W4W_IN_MLA_V = 14,       /* num_attention_heads * v_head_dim */
    W4W_IN_DS_SHARED = 15,   /* moe_intermediate_size * n_shared_experts */
    /* GLM-4.5 (Glm4MoeAttention) and DeepSeek-V3.2's indexer (DeepseekV32Indexer) */
    W4W_IN_QK_NORM = 16,     /* head_dim when use_qk_norm is true, else unset (a `when` gate) */
    W4W_IN_IDX_Q = 17,       /* index_n_heads * index_head_dim */
    W4W_IN_IDX_HD = 18,      /* index_head_dim */
    W4W_IN_IDX_HEADS = 19,   /* index_n_heads */
    /* issue 31: smollm3, llama4, gemma4 */
    W4W_IN_L4_MLP = 20,      /* intermediate_size_mlp (llama4's dense layers) */
    /* Qwen3-Next gated DeltaNet (Qwen3NextGatedDeltaNet), nk/nv key/value
     * heads of dk/dv: */
    W4W_IN_LIN_QKVZ = 21,    /* 2 nk dk + 2 nv dv (in_proj_qkvz rows) */
    W4W_IN_LIN_BA = 22,      /* 2 nv (in_proj_ba rows) */
    W4W_IN_LIN_V = 23,       /* nv dv (out_proj input) */
    W4W_IN_LIN_NV = 24,      /* nv (A_log, dt_bias) */
    W4W_IN_LIN_CONV = 25,    /* 2 nk dk + nv dv (conv1d channels) */
    W4W_IN_LIN_KERNEL = 26,  /* linear_conv_kernel_dim */
    /* issue 31: gemma4's per-layer inputs (Gemma4TextModel), unset (a
     * `when` gate) when hidden_size_per_layer_input is 0 */
    W4W_IN_G4_PLE = 27,      /* hidden_size_per_layer_input */
    W4W_IN_G4_LP = 28,       /* num_hidden_layers * hidden_size_per_layer_input */
    W4W_IN_G4_VOCAB = 29     /* vocab_size_per_layer_input */
} w4w_in_dim;

#define W4W_N_WIDTHS 30

/* Which decoder layers hold a role. */
typedef enum w4w_layers {
    W4W_LAYERS_ALL = 0,
    W4W_LAYERS_DENSE = 1, /* layers with a dense MLP only */
    W4W_LAYERS_SPARSE = 2, /* MoE layers only */
    W4W_LAYERS_LINEAR = 3, /* hybrids: linear-attention layers only */
    W4W_LAYERS_FULL = 4    /* hybrids: full-attention layers only */
} w4w_layers;

/* One tensor role inside a decoder layer, by its Hugging Face module path
 * relative to `model.layers.N.` (without ".weight"). A path holding "%d"
 * is one tensor per expert, %d the expert index 0 .. n_experts-1. */
typedef struct w4w_role {
    const char *path;
    w4w_role_kind kind;
    w4w_bias_rule bias;
    int hidden_sized; /* NORM: its length must equal hidden_size */
    w4w_in_dim in;    /* LINEAR/ROUTER: input width source */
    w4w_in_dim out;   /* LINEAR/ROUTER: rows source; W4W_IN_NONE: not checked by the plan */
    w4w_layers layers;
    /* 0: always present; +d: only when config width d is set; -d: only when
     * it is not (DeepSeek: q_a_proj/q_b_proj with q_lora_rank, else q_proj) */
    int when;
} w4w_role;

/* A fused source tensor the format stores split (w4a16-format.md): rows
 * of `path` are the parts' rows one after the other, each part's row count
 * from config.json (Phi3Attention.forward: q, k, v = qkv[..., :q_pos],
 * [q_pos : q_pos + kv], [q_pos + kv :]; Phi3MLP.forward: gate, up =
 * gate_up.chunk(2)). The parts are consecutive roles of the table. */
typedef struct w4w_fused {
    const char *path;
    const char *parts[3]; /* role paths in row order; unused ones NULL */
    w4w_in_dim rows[3];
} w4w_fused;

/* A fused per-layer expert tensor `<path>` [E, in, out] (gpt-oss
 * GptOssExperts) the format stores per expert: part q of expert e is
 * [e, :, q::n_parts] transposed to [out / n_parts, in]; `<path>_bias`
 * [E, out] splits the same way into the parts' biases. Parts are expert
 * roles (paths with %d) of the table. */
typedef struct w4w_xfused {
    const char *path;
    const char *parts[2]; /* role paths in interleave order; unused NULL */
    int n_parts;
    /* issue 31 (llama4's Llama4TextExperts): parts one after another along
     * out instead of interleaved: part q is [e, :, q * out / n_parts + r] */
    int concat;
    int no_bias; /* the source has no `<path>_bias` */
} w4w_xfused;

/* How an architecture places MoE blocks. */
typedef enum w4w_moe {
    W4W_MOE_NONE = 0,
    W4W_MOE_EVERY = 1, /* every layer (Mixtral) */
    W4W_MOE_STEP = 2,  /* layer l when (l + 1) % decoder_sparse_step == 0 and l is not in
                          mlp_only_layers (Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer) */
    W4W_MOE_FIRST_K = 3, /* layer l when l >= first_k_dense_replace (DeepseekV3DecoderLayer) */
    /* issue 31: smollm3, llama4, gemma4 */
    W4W_MOE_LIST = 4 /* layer l in moe_layers, else every interleave_moe_layer_step-th layer
                        from step - 1 (Llama4TextConfig) */
} w4w_moe;

/* One supported architecture. Adding one is adding a table entry. */
typedef struct w4w_arch {
    const char *model_type; /* Hugging Face config "model_type" */
    const char *hf_class;   /* "architectures" entry when the config lacks one */
    int tie_default;        /* transformers' default of tie_word_embeddings */
    const w4w_role *roles;  /* layer roles in output order */
    size_t n_roles;
    w4w_moe moe;
    const char *experts_key; /* config key of the expert count, MoE only */
    const w4w_fused *fused;  /* fused source tensors split into roles */
    size_t n_fused;
} w4w_arch;

/* The table entry for `model_type`, or NULL when unsupported. Pure. */
const w4w_arch *w4w_arch_find(const char *model_type);
/* The fused expert tensors of architecture a (*n of them; NULL, 0 when it
 * has none). Pure. */
const w4w_xfused *w4w_arch_xfused(const w4w_arch *a, size_t *n);
/* A model-level tensor other than the embeddings, final norm and head
 * (issue 31: gemma4's per-layer input embeddings, their projection and
 * norm), kept F16 in embed.safetensors under `out`: 2-D [d0, d1] or 1-D
 * [d0]; present exactly when config width `when` is set. */
typedef struct w4w_global {
    const char *name; /* canonical source name */
    const char *out;  /* tensor name in embed.safetensors */
    uint32_t n_dims;
    w4w_in_dim d0, d1;
    w4w_in_dim when;
} w4w_global;

/* The model-level tensors of architecture a beyond the embeddings, final
 * norm and head (*n of them; NULL, 0 when none). Pure. */
const w4w_global *w4w_arch_globals(const w4w_arch *a, size_t *n);

/* NULL-terminated model_type of every architecture w4w_arch_find knows,
 * in table order: the writer's declared architectures (qb_writer_caps). */
extern const char *const w4w_arch_names[];
/* Number of architectures in the table. Pure. */
size_t w4w_arch_count(void);

/* The role of `a` whose path is `path` (exact), or NULL. Pure. */
const w4w_role *w4w_arch_role(const w4w_arch *a, const char *path);

/* 1 when the role is one tensor per expert (its path holds "%d"). Pure. */
int w4w_role_is_expert(const w4w_role *r);

/* Writes the role's path for expert e (e ignored for a non-expert role)
 * into buf. Returns 0, or -1 when it does not fit. Pure. */
int w4w_role_path(const w4w_role *r, int64_t e, char *buf, size_t len);

/* Matches `path` (a module path without ".weight"/".bias") against the
 * role's path; for an expert role sets *e to the decimal index written
 * without leading zeros. Returns 1 on a match, else 0. Pure. */
int w4w_role_match(const w4w_role *r, const char *path, size_t plen, int64_t *e);

/* ---- per-layer layout from config.json (layout.c) ------------------------ */

struct cJSON;

/* One role instance of a layer: role index and expert (-1: not an expert). */
typedef struct w4w_inst {
    size_t role;
    int64_t expert;
} w4w_inst;

/* What config.json says about the layers: widths (-1 when the key is
 * absent), experts, which layers are MoE, and the slot numbering shared
 * by plan.c and reader.c. */
typedef struct w4w_layout {
    const w4w_arch *arch;
    int64_t n_layers;
    int64_t width[W4W_N_WIDTHS]; /* indexed by w4w_in_dim; W4W_IN_ONE is 1 */
    int64_t n_experts; /* 0 for a dense architecture */
    uint8_t *sparse;   /* [n_layers]: 1 = MoE layer; owned */
    uint8_t *linear;   /* [n_layers]: 1 = linear-attention layer (hybrids); owned */
    size_t *role_off;  /* [n_roles]: first slot of each role in a layer; owned */
    size_t per_layer;  /* slots per layer: every role, every expert */
    /* issue 31 (gemma4): [n_layers] num_attention_heads * that layer's
     * head_dim (per_layer_config / global_head_dim on full-attention
     * layers); NULL when every layer has width[W4W_IN_HEADS]; owned */
    int64_t *heads_l;
} w4w_layout;

/* Reads the layout of `n_layers` layers of architecture `a` from `cfg`
 * (a parsed config.json object). hidden_size, intermediate_size,
 * num_attention_heads/head_dim, moe_intermediate_size,
 * shared_expert_intermediate_size are optional here (-1); a MoE
 * architecture needs its expert count (1 .. 4096) and, with
 * W4W_MOE_STEP, valid decoder_sparse_step / mlp_only_layers when present.
 * Errors are QB_E_FORMAT naming `where` and the key, or QB_E_NOMEM. On
 * failure *out holds nothing to free. Single-threaded. */
qb_status w4w_layout_init(const qb_host *h, const char *where, const w4w_arch *a,
                          const struct cJSON *cfg, int64_t n_layers, w4w_layout *out);

/* Frees what w4w_layout_init allocated. NULL or zeroed is a no-op. */
void w4w_layout_free(w4w_layout *lo);

/* 1 when role `r` has tensors in layer l. Pure. */
int w4w_layout_active(const w4w_layout *lo, int64_t l, size_t r);

/* Fills out[0 .. *n) with layer l's role instances in output order (table
 * order; a run of consecutive expert roles expert by expert). out must
 * hold lo->per_layer entries. Pure. */
void w4w_layout_order(const w4w_layout *lo, int64_t l, w4w_inst *out, size_t *n);

/* Width d of layer l: lo->width[d], except W4W_IN_HEADS where the
 * architecture gives layers their own head size (lo->heads_l). Pure. */
int64_t w4w_layout_width(const w4w_layout *lo, int64_t l, w4w_in_dim d);

/* The config key behind a width, for messages. Pure. */
const char *w4w_width_key(w4w_in_dim d);

/* ---- reader (reader.c, manifest_in.c) ------------------------------------ */

extern const qb_reader_vtable w4w_reader_vtable;

/* What the reader takes from a validated manifest.json. */
typedef struct w4w_manifest_in {
    const w4w_arch *arch;
    int64_t group_size;
    int64_t n_layers;
    int tied;
    int quantized_head;
    int input_perm; /* feature input_permutation: linears may have .perm */
    char source_format[64];
} w4w_manifest_in;

/* Reads DIR/manifest.json and checks it with w4a16_manifest_parse
 * (format version 1, strict reading: QB_E_FORMAT, QB_E_UNSUPPORTED for
 * another version or an unknown feature), the architecture against the
 * table (QB_E_UNSUPPORTED), and every listed file's size and SHA-256
 * recomputed from disk (QB_E_MISMATCH naming the file). Messages name the
 * file. Single-threaded. */
qb_status w4w_manifest_read(const qb_host *h, const char *dir, w4w_manifest_in *out);

/* ---- the reader's metadata view (reader_meta.c) -------------------------- */

/* One metadata entry the reader serves (qb_meta_entry). */
typedef struct w4w_meta {
    char *key;        /* owned */
    const char *type; /* static */
    char value[64];
} w4w_meta;

/* The declarations verify reads (docs/plugin-design.md, "Declarations for
 * verify") for the tensors the reader serves: "quantbridge.exact:NAME" of
 * each packed linear named in linears (bool, dir/manifest.json's "exact"
 * flag; none when the manifest lists no flag for it), with
 * "quantbridge.quant_rule:NAME" (string, the rule word of its "quant_rule",
 * for a linear not exact) and
 * "quantbridge.expert_grid:NAME" of each fused expert tensor named in
 * experts (grid, "bits=4 group_size=G scale_dtype=F16"). manifest.json is
 * read through h's strict JSON parser. *out (w4w_meta_free) may be empty.
 * Errors name the file: QB_E_IO, QB_E_FORMAT, QB_E_NOMEM. */
qb_status w4w_meta_build(const qb_host *h, const char *dir, int64_t group_size,
                         const char *const *linears, size_t n_linears, const char *const *experts,
                         size_t n_experts, w4w_meta **out, size_t *n_out);
void w4w_meta_free(w4w_meta *m, size_t n);
/* Entry `index` of m[0..n) into *out (key and type point into m; the
 * value cut to out->value_cap). QB_E_RANGE past the last. */
qb_status w4w_meta_entry(const w4w_meta *m, size_t n, size_t index, qb_meta_entry *out);

/* ---- exact repack decision (repack.c) ----------------------------------- */

/* The zero point a grid must have for its codes to carry over into int4
 * (code - zero in [-8, 7]): 2^(bits-1) for a symmetric grid of 1..4 bits.
 * Returns 0 when the grid cannot be repacked exactly (why says why; a
 * grid's rows are still checked element by element by the writer). Pure. */
int w4w_repack_zero(const qb_grid_info *gi, char *why, size_t why_len);

/* ---- quantization (quantize.c) ------------------------------------------- */

typedef enum w4w_rule {
    W4W_RULE_AUTO = 0,   /* per group the better of ABSMAX and SEARCH */
    W4W_RULE_ABSMAX = 1, /* scale = absmax / 7 */
    W4W_RULE_SEARCH = 2, /* grid of candidate scales, least squared error */
    W4W_RULE_WEIGHTED = 3, /* least importance-weighted error (w4w_quant_group_weighted);
                             needs activation statistics (qb_stats.h) */
    W4W_RULE_KEEP = 4,    /* the better of absmax/7 and +-absmax/8 (the extreme on code
                             -8): scales that keep the group's largest weight */
    W4W_RULE_GPTQ = 5     /* GPTQ error compensation (gptq.c); needs the Hessian
                             (qb_stats_api.hessian, --calibration) */
} w4w_rule;

/* the kit's (qbk_int4_rules.h), which w4w_quant_group returns as they are */
#define W4W_EQUANT_NONFINITE (-1) /* NaN or infinity in the input */
#define W4W_EQUANT_OVERFLOW (-2)  /* the scale does not fit in fp16 */

/* Quantizes one group w[0..n) to codes q[0..n) in [-8, 7] with one fp16
 * scale under `rule`; decoded values are (float)q * f16_to_f32(*scale).
 * *err receives the group's squared reconstruction error (double).
 * Returns 0, W4W_EQUANT_NONFINITE or W4W_EQUANT_OVERFLOW (then q and
 * *scale are unspecified). Pure, thread-safe. */
int w4w_quant_group(const float *w, size_t n, w4w_rule rule, int8_t *q, uint16_t *scale,
                    double *err);

/* Quantizes one group like w4w_quant_group, choosing the scale by the
 * error weighted by imp[0..n) (each column's importance, >= 0: the mean
 * x^2 of its input, qb_stats_api.importance): sum imp_i (w_i - q_i s)^2
 * over absmax/7 and candidates around absmax/7 and +-absmax/8 (factors
 * 0.70 .. 1.20), each refitted by weighted least squares; ABSMAX unless a
 * candidate is strictly better, so the weighted error never exceeds
 * ABSMAX's. *err is the plain (unweighted) squared error of the codes
 * written, as w4w_quant_group's. Returns as w4w_quant_group. Pure,
 * thread-safe. */
int w4w_quant_group_weighted(const float *w, const float *imp, size_t n, int8_t *q,
                             uint16_t *scale, double *err);

/* ---- GPTQ (gptq.c) ------------------------------------------------------- */

#define W4W_GPTQ_BLOCK 128     /* lazy-batch columns (the paper's B) */
#define W4W_GPTQ_PERCDAMP 0.01 /* dampening: this fraction of mean(diag H) */
#define W4W_GPTQ_NOT_PD (-3)   /* H + damp is not positive definite */
#define W4W_GPTQ_NOMEM (-4)

/* Columns per lazy batch for group size gs: W4W_GPTQ_BLOCK rounded down to
 * a multiple of gs (gs itself when larger), so no group straddles a
 * batch. Pure. */
int64_t w4w_gptq_block(int64_t gs);

/* From the Hessian H[n*n] (row-major, symmetric; changed: a dead column's
 * diagonal 0 becomes 1) computes U[n*n], the upper Cholesky factor of
 * (H + percdamp * mean(diag H) * I)^-1, and dead[n] (1: H_jj was 0),
 * *n_dead their count. Returns 0, W4W_EQUANT_NONFINITE (a diagonal NaN or
 * infinity), W4W_GPTQ_NOT_PD, W4W_GPTQ_NOMEM. Memory: 2 n^2 doubles.
 * Pure, thread-safe. */
int w4w_gptq_prepare(float *H, int64_t n, double percdamp, float *U, uint8_t *dead,
                     int64_t *n_dead);

/* GPTQ of rows W[rows][cols] (changed: the updated weights) with U from
 * w4w_gptq_prepare over the same column order, groups of gs contiguous
 * columns: codes q[rows][cols] in [-8, 7], fp16 scales[rows][ceil(cols /
 * gs)] (absmax / 7 of the group's updated weights, or with imp[cols] (the
 * Hessian's diagonal) w4w_quant_group_weighted's scale for them), err[rows *
 * w4w_gptq_block(gs)] scratch. Returns 0, W4W_EQUANT_NONFINITE or
 * W4W_EQUANT_OVERFLOW. Pure, thread-safe. */
int w4w_gptq_rows(float *W, int64_t rows, int64_t cols, const float *U, const uint8_t *dead,
                  int64_t gs, const float *imp, int8_t *q, uint16_t *scales, float *err);

/* ---- packing ----------------------------------------------------------- */

/* The int4 code layout (W4A16_INT4_QMIN/QMAX, packing, group counts) is the
 * kit's: callers use w4a16_int4_* directly. */
#include "w4a16_int4.h"

/* ---- safetensors output (kit writer) -------------------------------------- */

/* An output tensor of the plan: a header entry of the kit's safetensors
 * writer (qbk_st_writer.h). name is malloc'd and owned by the plan;
 * dtype is "U8" or "F16" (static). */
typedef qbk_st_out_tensor w4w_st_tensor;

/* ---- plan (plan.c) ------------------------------------------------------- */

typedef enum w4w_item_kind {
    W4W_ITEM_LINEAR = 1, /* packed + scales */
    W4W_ITEM_F16 = 2,    /* dense F16 copy */
    W4W_ITEM_TIED = 3,   /* lm_head of a tied model: checked equal, not written */
    W4W_ITEM_F32 = 4     /* dense F32 copy (W4W_ROLE_F32) */
} w4w_item_kind;

/* One output file. Its tensors are outs[first_out .. first_out + n_out). */
typedef struct w4w_file {
    char name[40];
    size_t first_out, n_out;
    uint64_t bytes;
    uint8_t sha256[32];
    int closed;
} w4w_file;

/* One source tensor and what becomes of it. */
typedef struct w4w_item {
    size_t src; /* source tensor index */
    w4w_item_kind kind;
    int32_t file;     /* index in plan files; -1 for W4W_ITEM_TIED */
    size_t out;       /* LINEAR: packed (scales is out + 1); F16: the tensor */
    size_t peer;      /* TIED: source index of the embeddings */
    char *key;        /* LINEAR: manifest key "file:path"; owned */
    const char *name; /* source name (the reader's) */
    const char *source_encoding;
    int64_t rows, cols;
    /* results of write_tensor */
    int written;
    int exact;
    double rel_rmse;
    char rule[256];   /* LINEAR, requantized: the rule used and why (manifest) */
    /* LINEAR with act_order=permute over an act-order grid: stored column
     * c is source column perm[c] (input_permutation); owned, else NULL */
    int32_t *perm;
    /* perm is GPTQ's act order (act_order=permute with quant_rule=gptq on a
     * linear requantized anyway): columns by descending importance, the
     * Hessian's diagonal; no grid is repacked through it */
    int perm_gptq;
    /* first source row: a part of a fused source tensor (w4w_fused) starts
     * past the earlier parts; the parts of one source are consecutive
     * items */
    int64_t row0;
    /* a part of a fused expert source (w4w_xfused): item element [r][c] is
     * source element [vexp, c, r * vstride + voff] (a weight, vtrans) or
     * [vexp, c * vstride + voff] (its bias, one row); else view = 0 */
    int view, vtrans;
    int64_t vexp, vstride, voff;
} w4w_item;

typedef struct w4w_options {
    int64_t group_size;
    w4w_rule rule;
    int rule_explicit;      /* quant_rule given: used even with activation statistics */
    int act_order_permute;
    int gptq_weighted;      /* gptq_scale=weighted */
    int quantized_head;
    int group_auto;         /* group_size "auto" (the default): chosen by w4w_group_choose */
    char group_reason[1024];/* why group_size (plan setting, manifest); "" before the choice */
} w4w_options;

typedef struct w4w_plan {
    const w4w_arch *arch;
    int64_t n_layers;
    int tied;
    w4w_options opt;
    w4w_file *files;
    size_t n_files;
    w4w_st_tensor *outs;
    size_t n_outs;
    w4w_item *items; /* in write order */
    size_t n_items;
    size_t *item_of_src; /* [n_tensors] source index -> item index */
    int has_perm;        /* some item has a perm: feature input_permutation */
} w4w_plan;

/* Builds the plan for `src` (see qb_writer_vtable.begin): classifies every
 * tensor by canonical name, checks shapes against each other and the
 * config, lays out files and their tensors. Errors name the tensor:
 * QB_E_FORMAT (unknown tensor, bad shape, bad config), QB_E_NOT_FOUND
 * (missing tensor), QB_E_MISMATCH, QB_E_UNSUPPORTED (architecture),
 * QB_E_NOMEM. On success *out is a new plan (free with w4w_plan_free). */
qb_status w4w_plan_build(const qb_host *h, const qb_model_src *src, const w4w_options *opt,
                         w4w_plan **out);

/* Frees a plan. NULL is a no-op. */
void w4w_plan_free(w4w_plan *p);

/* ---- finishing files (config_out.c, manifest.c) -------------------------- */

/* A file written through the sink, as the manifest lists it. */
typedef struct w4w_written {
    char name[256];
    uint64_t bytes;
    uint8_t sha256[32];
} w4w_written;

typedef struct w4w_written_list {
    w4w_written *v;
    size_t n, cap;
} w4w_written_list;

/* Writes a whole small file through the sink and records it in `list`.
 * Returns QB_OK or the sink's error / QB_E_NOMEM (message set). */
qb_status w4w_write_whole(const qb_host *h, const qb_sink *sink, const char *name, const void *data,
                          size_t len, w4w_written_list *list);

/* Appends one record to list. QB_E_NOMEM on failure (message set). */
qb_status w4w_written_add(const qb_host *h, w4w_written_list *list, const char *name,
                          uint64_t bytes, const uint8_t sha256[32]);

/* Writes config.json, then the tokenizer files and generation_config.json
 * through the kit's shared qbk_hf_write_tokenizer_files, recording each
 * file in `list` (see config_out.c). Errors name the file. */
qb_status w4w_config_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                           const w4w_plan *plan, w4w_written_list *list);

/* Writes manifest.json listing `list` and every planned tensor's result. */
qb_status w4w_manifest_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                             const w4w_plan *plan, const w4w_written_list *list);

/* ---- exactness and the group size (decide.c) ---------------------------- */

/* Whether grid `gi` of a linear with `cols` input columns can be repacked
 * into int4 without loss, and at which target group sizes. permute: an
 * act-order column-to-group map may be stored in group order
 * (act_order=permute); else only contiguous groups qualify. Returns 1 and
 * sets *bound to the gcd of the source group boundaries inside a row
 * (0: one group per row, any target group size works); a target group
 * size g is exact iff w4w_bound_fits(*bound, g). Returns 0 with the
 * reason in why otherwise, -1 when memory for an act-order map ran out
 * (only with permute). Thread-safe. */
int w4w_grid_bound(const qb_grid_info *gi, int64_t cols, int permute, int64_t *bound, char *why,
                   size_t why_len);

/* 1 when target group size gs places no group across a source group
 * boundary of a grid with this bound (w4w_grid_bound). Pure. */
int w4w_bound_fits(int64_t bound, int64_t gs);

/* Decides opt->group_size for plan `p` (built with the group size it now
 * holds) and writes the reason into opt->group_reason: with
 * opt->group_auto, the largest group size at which every linear whose
 * grid repacks exactly stays exact, when the kernels' mma path supports
 * it (a multiple of 32), else 128; an explicit size is kept. Logs a
 * warning (h->log) when `warn` and an explicit size requantizes linears
 * that another size keeps exact, or when act_order=permute would keep
 * act-order linears exact. Errors of get_grid_info are returned. Single
 * thread (begin / plan). */
qb_status w4w_group_choose(const qb_host *h, const qb_model_src *src, const w4w_plan *p,
                           w4w_options *opt, int warn);

/* Sends plan `p` to `out` (qb_writer_vtable.plan): the group-size
 * setting, then one entry per item in write order with its action
 * (exact, requant, convert, copy, omit), reason, group size and bytes.
 * Returns what out's functions return, or a get_grid_info error. */
qb_status w4w_plan_emit(const qb_host *h, const qb_model_src *src, const w4w_plan *p,
                        const qb_plan_sink *out);

/* The action (QB_PLAN_EXACT / QB_PLAN_REQUANT) of linear item `it` under
 * plan p and why (plan_emit.c). Returns QB_OK or a get_grid_info /
 * tensor_info error. Single thread. */
qb_status w4w_linear_action(const w4w_plan *p, const qb_model_src *src, const w4w_item *it,
                            uint32_t *action, char *why, size_t wn);

#endif /* W4W_H */
