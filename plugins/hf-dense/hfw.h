/*
 * hf-dense plugin, writing side: internals shared by writer.c (the vtable),
 * hfw_plan.c (which tensors go where), hfw_st.c (one safetensors file
 * through the sink), hfw_files.c (config.json, shard index) and the kit's
 * qbk_text (a growable text buffer), qbk_json_edit (top-level JSON member
 * edits that keep the rest as written) and qbk_hf_write_tokenizer_files
 * (tokenizer files and generation config, shared with every writer).
 * Every symbol here is hidden (the plugin exports only its entry).
 */
#ifndef HFW_H
#define HFW_H

#include "hfd.h"
#include "qbk_shards.h"
#include "qbk_st_writer.h"
#include "qbk_text.h"

/* The writer function table and the plugin's options (writer.c). */
extern const qb_writer_vtable hfd_writer_vtable;
extern const qb_option_decl *const hfd_option_decls[];

/* Output element types (option dtype). */
typedef enum hfw_dtype { HFW_F32 = 0, HFW_F16 = 1, HFW_BF16 = 2 } hfw_dtype;

/* Bytes per element, safetensors dtype name ("F32"...), transformers
 * torch_dtype text ("float32"...). Pure. */
size_t hfw_dtype_size(hfw_dtype dt);
const char *hfw_dtype_st_name(hfw_dtype dt);
const char *hfw_dtype_torch_name(hfw_dtype dt);

/* ---- the output plan (hfw_plan.c) ---------------------------------------- */

#define HFW_MAX_PARTS 3

/* One tensor of the output: the concatenation by rows of 1..3 source
 * tensors (3 for phi3 qkv_proj, 2 for gate_up_proj). */
typedef struct hfw_tensor {
    char *name;                  /* output name, malloc'd */
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    size_t part[HFW_MAX_PARTS];  /* source tensor indices, in row order */
    unsigned n_parts;
    uint64_t n_bytes;            /* in the output dtype */
    uint32_t shard;              /* 0-based file index */
} hfw_tensor;

typedef struct hfw_plan {
    hfw_tensor *t;       /* output tensors in file order (shard by shard) */
    size_t n;
    qbk_shards sh;       /* tensor index range of each shard (sh.n 1: model.safetensors,
                            no index); sh.total: index metadata.total_size */
    size_t *out_of;      /* [n_src]: output tensor of each source tensor, or
                            HFW_DROPPED */
    size_t n_src;
} hfw_plan;

#define HFW_DROPPED ((size_t)-1)

/* Plans the output of `src`: fuses phi3's split q/k/v and gate/up back
 * into qkv_proj / gate_up_proj when fuse_phi3 is set, drops source tensor
 * `drop` (HFW_DROPPED for none: the tied lm_head), checks that output
 * names are unique and that fused parts agree in shape, and cuts shards of
 * at most max_shard bytes (greedy in order; a larger tensor gets a shard of
 * its own). Fills order[0 .. n_src) with the write order: the parts of
 * every output tensor in file order, the dropped tensor last.
 * Returns QB_OK or QB_E_FORMAT / QB_E_MISMATCH / QB_E_NOMEM with a message
 * naming the tensor; on failure *p holds nothing. Not thread-safe. */
qb_status hfw_plan_build(const qb_host *h, const qb_model_src *src, hfw_dtype dt, int fuse_phi3,
                         size_t drop, uint64_t max_shard, size_t *order, hfw_plan *p);
void hfw_plan_free(hfw_plan *p);


/* ---- one safetensors shard (hfw_st.c) ----------------------------------- */

/* Opens shard file `name` through the kit writer with the header for
 * output tensors t[first .. last) in dtype dt; data follows in that order
 * through qbk_st_writer_write, then qbk_st_writer_close. Errors:
 * QB_E_NOMEM, sink errors (message names the file); *out NULL then.
 * Not thread-safe. */
qb_status hfw_st_open(const qb_host *h, const qb_sink *sink, const char *name, const hfw_plan *p,
                      size_t first, size_t last, hfw_dtype dt, qbk_st_writer **out);

/* ---- side files (hfw_files.c) -------------------------------------------- */

/* Builds config.json for the output from the source config text: drops
 * quantization_config / compression_config, sets torch_dtype (and dtype
 * when the source has that newer key), and sets tie_word_embeddings to
 * `tie` when tie >= 0. *out is malloc'd. Errors: QB_E_FORMAT (not a JSON
 * object; message names `what`), QB_E_NOMEM. Thread-safe. */
qb_status hfw_config_text(const qb_host *h, const char *what, const char *config_json,
                          hfw_dtype dt, int tie, char **out);

/* Reads `key` of the source config (`source` names it in messages): 1/0
 * for a JSON boolean, -1 when absent or null. *st: QB_OK, or (message set)
 * QB_E_FORMAT when the config is refused (qbk_json_parse_config) or the
 * key is present but not a boolean, QB_E_NOMEM. */
int hfw_config_bool(const qb_host *h, const char *source, const char *config_json,
                    const char *key, qb_status *st);

/* Writes a whole text through the sink as file `name`. */
qb_status hfw_write_text(const qb_host *h, const qb_sink *sink, const char *name, const char *text);

/* model.safetensors.index.json of a sharded plan. */
qb_status hfw_write_index(const qb_host *h, const qb_sink *sink, const hfw_plan *p);

#endif /* HFW_H */
