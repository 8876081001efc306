/*
 * sm86-w4a16 plugin — internal declarations shared by its files.
 *
 * The plugin writes and reads the native layered W4A16 checkpoint
 * defined in shared/docs/w4a16-format.md, version 1. Files:
 *   plugin.c      entry point, descriptor, options
 *   arch.c        tensor roles per architecture (data only)
 *   plan.c        classification of the source tensors and the file layout
 *   quantize.c    per-group int4 rules (absmax/7, scale search, auto)
 *   pack.c        nibble packing and decoding of the format
 *   st_out.c      safetensors files written through the host sink
 *   config_out.c  config.json, generation_config.json, tokenizer files
 *   manifest.c    manifest.json
 *   writer.c      the qb_writer_vtable (begin / write_tensor / finish / abort)
 *   sha256.c      SHA-256 for the reader's digest checks
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
    W4W_ROLE_NORM = 2    /* 1-D weight kept F16 */
} w4w_role_kind;

typedef enum w4w_bias_rule {
    W4W_BIAS_NONE = 0,     /* a bias tensor here is an unknown tensor */
    W4W_BIAS_OPTIONAL = 1, /* kept F16 when the source has one */
    W4W_BIAS_REQUIRED = 2  /* the architecture always has one */
} w4w_bias_rule;

/* Where a role's input width comes from in config.json (the reader needs
 * it: a packed row of ceil(in/2) bytes cannot tell 2k-1 from 2k). */
typedef enum w4w_in_dim {
    W4W_IN_NONE = 0,
    W4W_IN_HIDDEN = 1, /* hidden_size */
    W4W_IN_INTER = 2,  /* intermediate_size */
    W4W_IN_HEADS = 3   /* num_attention_heads * head_dim */
} w4w_in_dim;

/* One tensor role inside a decoder layer, by its Hugging Face module path
 * relative to `model.layers.N.` (without ".weight"). */
typedef struct w4w_role {
    const char *path;
    w4w_role_kind kind;
    w4w_bias_rule bias;
    int hidden_sized; /* NORM: its length must equal hidden_size */
    w4w_in_dim in;    /* LINEAR: input width source */
} w4w_role;

/* One supported architecture. Adding one is adding a table entry. */
typedef struct w4w_arch {
    const char *model_type; /* Hugging Face config "model_type" */
    const char *hf_class;   /* "architectures" entry when the config lacks one */
    int tie_default;        /* transformers' default of tie_word_embeddings */
    const w4w_role *roles;  /* layer roles in output order */
    size_t n_roles;
} w4w_arch;

/* The table entry for `model_type`, or NULL when unsupported. Pure. */
const w4w_arch *w4w_arch_find(const char *model_type);

/* The role of `a` whose path is `path` (exact), or NULL. Pure. */
const w4w_role *w4w_arch_role(const w4w_arch *a, const char *path);

/* ---- SHA-256 (sha256.c) -------------------------------------------------- */

typedef struct w4w_sha256_ctx {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t n;
} w4w_sha256_ctx;

/* Streaming SHA-256 (FIPS 180-4). Pure, no allocation; one context per
 * thread. */
void w4w_sha256_init(w4w_sha256_ctx *c);
void w4w_sha256_update(w4w_sha256_ctx *c, const void *data, size_t len);
void w4w_sha256_final(w4w_sha256_ctx *c, uint8_t out[32]);

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

/* Reads DIR/manifest.json and checks it against format version 1: format
 * name and version (QB_E_UNSUPPORTED for another version), the fixed
 * encoding fields, features (an unknown one is QB_E_UNSUPPORTED), and
 * every listed file's size and SHA-256 recomputed from disk (QB_E_MISMATCH
 * naming the file); every safetensors file the layout needs and
 * config.json must be listed. Messages name the file. Single-threaded. */
qb_status w4w_manifest_read(const qb_host *h, const char *dir, w4w_manifest_in *out);

/* ---- quantization (quantize.c) ------------------------------------------- */

typedef enum w4w_rule {
    W4W_RULE_AUTO = 0,   /* per group the better of ABSMAX and SEARCH */
    W4W_RULE_ABSMAX = 1, /* scale = absmax / 7 */
    W4W_RULE_SEARCH = 2  /* grid of candidate scales, least squared error */
} w4w_rule;

#define W4W_EQUANT_NONFINITE (-1) /* NaN or infinity in the input */
#define W4W_EQUANT_OVERFLOW (-2)  /* the scale does not fit in fp16 */

/* Quantizes one group w[0..n) to codes q[0..n) in [-8, 7] with one fp16
 * scale under `rule`; decoded values are (float)q * f16_to_f32(*scale).
 * *err receives the group's squared reconstruction error (double).
 * Returns 0, W4W_EQUANT_NONFINITE or W4W_EQUANT_OVERFLOW (then q and
 * *scale are unspecified). Pure, thread-safe. */
int w4w_quant_group(const float *w, size_t n, w4w_rule rule, int8_t *q, uint16_t *scale,
                    double *err);

/* Codes of w[0..n) against the float scale s (q = clamp(round(w/s), -8, 7),
 * all zero when s == 0) and their squared error. Pure, thread-safe. */
double w4w_quant_codes(const float *w, size_t n, float s, int8_t *q);

/* ---- packing (pack.c) ---------------------------------------------------- */

/* Bytes of one packed row: ceil(cols / 2). */
static inline int64_t w4w_packed_cols(int64_t cols)
{
    return (cols + 1) / 2;
}
/* Groups of one row: ceil(cols / group_size). */
static inline int64_t w4w_n_groups(int64_t cols, int64_t group_size)
{
    return (cols + group_size - 1) / group_size;
}

/* Packs codes q[0..cols) (each in [-8, 7]) into out[0..ceil(cols/2)):
 * column c in the low nibble when c is even, nibble = q + 8; for odd cols
 * the last high nibble is 8. Pure. */
void w4w_pack_row(const int8_t *q, int64_t cols, uint8_t *out);

/* Inverse of w4w_pack_row: q[c] = nibble - 8. Pure. */
void w4w_unpack_row(const uint8_t *in, int64_t cols, int8_t *q);

/* Decodes one packed row: out[c] = (float)q[c] * f16(scales[c / group_size]),
 * in fp32 as the format defines. Pure. */
void w4w_decode_row(const uint8_t *packed, const uint16_t *scales, int64_t cols, int64_t group_size,
                    float *out);

/* ---- safetensors output (st_out.c) --------------------------------------- */

typedef struct w4w_st_tensor {
    char *name;        /* owned */
    const char *dtype; /* "U8" or "F16" (static) */
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    uint64_t n_bytes;
} w4w_st_tensor;

typedef struct w4w_st_file w4w_st_file;

/* Creates `name` through the sink and writes the complete safetensors
 * header for tensors[0..n) (data laid out in that order, no holes). The
 * array must outlive the file. Returns QB_OK, or the sink's error / QB_E_NOMEM
 * with the message set; *out NULL on failure. Not thread-safe per file. */
qb_status w4w_st_open(const qb_host *h, const qb_sink *sink, const char *name,
                      const w4w_st_tensor *tensors, size_t n, w4w_st_file **out);

/* Appends data bytes. Writing past the declared total is QB_E_INTERNAL.
 * Sink errors pass through with the message naming the file. */
qb_status w4w_st_write(w4w_st_file *f, const void *buf, size_t len);

/* Data bytes still owed before the file is complete. */
uint64_t w4w_st_remaining(const w4w_st_file *f);

/* Closes the sink file and frees f (always). Returns QB_E_INTERNAL when data
 * is missing (the file is short), else the sink's status; bytes/sha256 as
 * qb_sink.close. f may be NULL (no-op, QB_OK). */
qb_status w4w_st_close(w4w_st_file *f, uint64_t *bytes, uint8_t sha256[32]);

/* Closes and frees f after a failure, setting no message (the first
 * failure's message must survive). NULL is a no-op. */
void w4w_st_discard(w4w_st_file *f);

/* ---- plan (plan.c) ------------------------------------------------------- */

typedef enum w4w_item_kind {
    W4W_ITEM_LINEAR = 1, /* packed + scales */
    W4W_ITEM_F16 = 2,    /* dense F16 copy */
    W4W_ITEM_TIED = 3    /* lm_head of a tied model: checked equal, not written */
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
    /* LINEAR with act_order=permute over an act-order grid: stored column
     * c is source column perm[c] (input_permutation); owned, else NULL */
    int32_t *perm;
} w4w_item;

typedef struct w4w_options {
    int64_t group_size;
    w4w_rule rule;
    int act_order_permute;
    int quantized_head;
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

/* Writes config.json, generation_config.json and the tokenizer files (see
 * config_out.c). Errors name the file. */
qb_status w4w_config_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                           const w4w_plan *plan, w4w_written_list *list);

/* Writes manifest.json listing `list` and every planned tensor's result. */
qb_status w4w_manifest_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                             const w4w_plan *plan, const w4w_written_list *list);

#endif /* W4W_H */
