/*
 * quantbridge SDK — the writer interface: canonical tensors in, one target
 * format out, through a host-provided sink (never raw paths).
 *
 * STABILITY: stable.
 *
 * Sequence: supports -> begin -> write_tensor for every tensor, in the order
 * begin chose -> finish (commit) | abort (discard). Exactly one of finish
 * and abort ends a handle that begin returned, and after it the handle is
 * gone: the host never calls abort after finish, whatever finish returned
 * (see finish). The host writes into a temporary directory and renames it
 * into place only after finish succeeds, so a writer never needs to clean
 * up files: abort only frees memory.
 *
 * THREADING: supports is discovery class; begin/write_tensor/finish/abort are
 * never concurrent on one handle. Inside write_tensor the writer may use
 * host->parallel_for and call qb_model_src functions from its workers
 * (those are always thread-safe).
 */
#ifndef QUANTBRIDGE_QB_WRITER_H
#define QUANTBRIDGE_QB_WRITER_H

#include "qb_abi.h"
#include "qb_param.h"
#include "qb_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- output sink --------------------------------------------------------- */

typedef struct qb_sink_file qb_sink_file; /* opaque: one output file being written */

/* Output directory seen by a writer. Owned by the host, valid until
 * finish/abort returns. All functions are thread-safe for different files. */
typedef struct qb_sink {
    uint32_t struct_size;
    void *handle;

    /* Creates file `name` in the output directory. `name` is a plain file
     * name: no '/', not "." or "..", not starting with '.'; creating the
     * same name twice is QB_E_INVALID. Errors: QB_E_INVALID, QB_E_IO, QB_E_NOMEM. */
    qb_status (*create)(void *handle, const char *name, qb_sink_file **out);

    /* Appends len bytes. Buffered by the host. Errors: QB_E_IO, QB_E_NOSPACE
     * (disk full / file size limit), QB_E_CANCELLED. After an error the file
     * is unusable except for close. */
    qb_status (*write)(qb_sink_file *f, const void *buf, size_t len);

    /* Flushes and closes; reports the byte count and the SHA-256 of all
     * bytes written (computed while writing, no re-read). Either out
     * pointer may be NULL. Always releases f, even on error. */
    qb_status (*close)(qb_sink_file *f, uint64_t *bytes, uint8_t sha256[32]);
} qb_sink;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_sink, <first new field>) >= QB_SINK_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_sink);
#define QB_SINK_SIZE_1_0 QB_ABI_SIZE_1_0(qb_sink, close)
QB_ABI_STATIC_ASSERT(QB_SINK_SIZE_1_0 == sizeof(qb_sink), qb_sink_size_1_0);

/* ---- the model, as the writer sees it ------------------------------------ */

/* Host-implemented view of the opened source, forwarding to the reader
 * with thread-safety and error context added. Valid until finish/abort.
 * Every function may be called concurrently from parallel_for workers. */
typedef struct qb_model_src {
    uint32_t struct_size;
    void *handle;
    const qb_model_info *info;
    const char *source_path;    /* path the user gave, as given */
    const char *reader_name;    /* plugin that reads the source */
    const char *reader_version;
    const char *host_version;   /* quantbridge version, for manifests */

    /* Tensor `index` in [0, info->n_tensors); *out valid until finish/abort. */
    qb_status (*tensor_info)(void *handle, size_t index, const qb_tensor_info **out);
    /* Index of the tensor named `name`; QB_E_NOT_FOUND when absent. */
    qb_status (*find)(void *handle, const char *name, size_t *index);
    /* Dense float32 rows (see qb_reader_vtable.read_rows). */
    qb_status (*read_rows)(void *handle, size_t index, int64_t row0, int64_t n_rows, float *dst);
    /* Integer grid; QB_E_UNSUPPORTED when the tensor has none. */
    qb_status (*get_grid_info)(void *handle, size_t index, qb_grid_info *out);
    qb_status (*read_grid)(void *handle, size_t index, int64_t row0, int64_t n_rows,
                           qb_grid_rows *out);
} qb_model_src;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_model_src, <first new field>) >= QB_MODEL_SRC_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_model_src);
#define QB_MODEL_SRC_SIZE_1_0 QB_ABI_SIZE_1_0(qb_model_src, read_grid)
QB_ABI_STATIC_ASSERT(QB_MODEL_SRC_SIZE_1_0 == sizeof(qb_model_src), qb_model_src_size_1_0);

/* ---- the plan (ABI 1.2) --------------------------------------------------- */

/* What a writer will do with one source tensor (qb_plan_entry.action).
 * Values are never reused; a host shows an unknown one as "unknown". */
typedef enum qb_plan_action {
    QB_PLAN_EXACT = 1,   /* stored in the target encoding without loss (integer codes
                            carried over; the writer checks it bit for bit while writing) */
    QB_PLAN_REQUANT = 2, /* quantized anew: values change */
    QB_PLAN_CONVERT = 3, /* kept dense, converted to another type (may round) */
    QB_PLAN_COPY = 4,    /* kept dense in its own type: values unchanged */
    QB_PLAN_OMIT = 5,    /* not stored (e.g. a tied head checked equal to the embeddings) */
    QB_PLAN_ACTION_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not an action */
} qb_plan_action;
QB_ABI_STATIC_ASSERT(sizeof(qb_plan_action) == 4, qb_plan_action_is_32_bits);

/* One planned output of a source tensor, handed to qb_plan_sink.tensor.
 * Filled by the writer on its stack; every pointer is valid only during
 * the call (the host copies what it keeps). */
typedef struct qb_plan_entry {
    uint32_t struct_size;
    uint32_t action;      /* qb_plan_action */
    size_t tensor;        /* source tensor index, [0, n_tensors) */
    const char *target;   /* where it goes, in the writer's words (for sm86-w4a16 the
                             manifest key "layer_00.safetensors:self_attn.q_proj"), or NULL */
    const char *reason;   /* why this action, one line; never NULL */
    int64_t group_size;   /* target columns per scale; 0 when not quantized */
    uint64_t bytes_out;   /* bytes the tensor takes in the output (0 for OMIT) */
} qb_plan_entry;
/* Introduced in ABI 1.2; its first size is QB_PLAN_ENTRY_SIZE_1_2. */
QB_ABI_ALIGN_HELPER(qb_plan_entry);
#define QB_PLAN_ENTRY_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_plan_entry, bytes_out)
QB_ABI_STATIC_ASSERT(QB_PLAN_ENTRY_SIZE_1_2 == sizeof(qb_plan_entry), qb_plan_entry_size_1_2);

/* Where a writer's plan goes; owned by the host, valid during the plan
 * call. Both functions return QB_OK or a failure (QB_E_NOMEM) that the
 * writer returns at once. Called from the thread that called plan. */
typedef struct qb_plan_sink {
    uint32_t struct_size;
    void *handle;
    /* One entry per output of a source tensor; a tensor the writer splits
     * (a fused projection) gives one entry per part, each with its target. */
    qb_status (*tensor)(void *handle, const qb_plan_entry *e);
    /* A run-wide choice the writer made, with the reason:
     * ("group_size", "32", "every linear's 4-bit grid ... exact at 32"). */
    qb_status (*setting)(void *handle, const char *key, const char *value, const char *reason);
} qb_plan_sink;
/* Introduced in ABI 1.2; its first size is QB_PLAN_SINK_SIZE_1_2. */
QB_ABI_ALIGN_HELPER(qb_plan_sink);
#define QB_PLAN_SINK_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_plan_sink, setting)
QB_ABI_STATIC_ASSERT(QB_PLAN_SINK_SIZE_1_2 == sizeof(qb_plan_sink), qb_plan_sink_size_1_2);

/* ---- writer vtable ------------------------------------------------------- */

typedef void *qb_writer_handle;

typedef struct qb_writer_vtable {
    uint32_t struct_size;

    /* Score 0..100 for writing this model; 0 = cannot (architecture or
     * tensor set unknown). May set a message saying why. Pure. */
    int (*supports)(void *ctx, const qb_model_info *mi);

    /* Plans the whole output before any byte is written: checks every
     * tensor of `src` (an unknown tensor is an error naming it, never
     * dropped), and fills order[0 .. n_tensors) with the order in which the
     * host must call write_tensor (a permutation of the indices).
     * On failure *out is NULL and nothing was written. */
    qb_status (*begin)(void *ctx, const qb_sink *sink, const qb_model_src *src,
                       const qb_param *params, size_t *order, qb_writer_handle *out);

    /* Converts and writes tensor `index`, pulling its rows from src.
     * Memory used must be bounded by a row block, not the tensor. */
    qb_status (*write_tensor)(qb_writer_handle w, size_t index);

    /* Writes what remains (manifest, configs), closes every sink file and
     * frees the handle. The output is complete when this returns QB_OK.
     * OWNERSHIP, success or failure: finish releases everything the handle
     * owns (memory, open sink files) before it returns, and the handle is
     * gone. On failure (message set) the host discards the output and does
     * NOT call abort: a 1.0 host never did, and a writer that freed in
     * finish would be freed twice. `quantbridge plugin-check` fails a
     * writer whose failed finish leaves host memory allocated. */
    qb_status (*finish)(qb_writer_handle w);

    /* Frees the handle after a failure or cancellation; the host discards
     * the output. Open sink files are closed by the writer here. */
    void (*abort)(qb_writer_handle w);
    /* ABI 1.2, optional (NULL: the host shows the tensors without
     * actions). Says what begin with the same src and params would do,
     * without a sink and without writing or reading tensor data beyond
     * grid descriptions: every tensor's action, reason, target group size
     * and output bytes through out->tensor (write order), every run-wide
     * choice (a group size chosen automatically) through out->setting.
     * Fails exactly where begin would (same message). The host may call it
     * before begin in the same run. Same threading as begin. */
    qb_status (*plan)(void *ctx, const qb_model_src *src, const qb_param *params,
                      const qb_plan_sink *out);
} qb_writer_vtable;

/* ABI 1.0 size (qb_abi.h); plan was appended in 1.2 (QB_WRITER_VTABLE_SIZE_1_2):
 * read it only under QB_HAS_FIELD. */
QB_ABI_ALIGN_HELPER(qb_writer_vtable);
#define QB_WRITER_VTABLE_SIZE_1_0 QB_ABI_SIZE_1_0(qb_writer_vtable, abort)
#define QB_WRITER_VTABLE_SIZE_1_2 QB_ABI_SIZE_THROUGH(qb_writer_vtable, plan)
QB_ABI_STATIC_ASSERT(offsetof(qb_writer_vtable, plan) >= QB_WRITER_VTABLE_SIZE_1_0,
                     qb_writer_vtable_size_1_0);
QB_ABI_STATIC_ASSERT(QB_WRITER_VTABLE_SIZE_1_2 == sizeof(qb_writer_vtable), qb_writer_vtable_size_1_2);

/* ---- writer capabilities (ABI 1.1) -------------------------------------- */

/* qb_writer_caps.flags: who writes the side files of a Hugging Face model
 * directory -- the tokenizer files of qb_model_info.tokenizer_dir (or of
 * --tokenizer DIR), the chat template, generation_config.json.
 *   SIDE_FILES_SELF  the writer copies them itself, from
 *                    qb_model_info.tokenizer_dir / chat_template /
 *                    generation_config_json;
 *   SIDE_FILES_HOST  the host copies them into the output after a
 *                    successful finish (the writer must not create those
 *                    names: the host then fails the conversion naming the
 *                    file). The list of names is the host's
 *                    (docs/architecture.md, "HF side files").
 * Neither (or no caps, as every 1.0 writer): the output gets no side files;
 * the host refuses --tokenizer for such a writer (usage error) and warns
 * once when the source had a tokenizer that is not carried over. Both bits
 * set: the host refuses the descriptor. */
#define QB_WRITER_SIDE_FILES_SELF (1u << 0)
#define QB_WRITER_SIDE_FILES_HOST (1u << 1)

/* What a writer declares about itself, so the host can refuse early and
 * `quantbridge plugins` can tell users. Lives in the plugin's static data;
 * referenced from qb_plugin.writer_caps. */
typedef struct qb_writer_caps {
    uint32_t struct_size;
    uint32_t flags;                    /* QB_WRITER_SIDE_FILES_*; other bits refused */
    /* NULL-terminated Hugging Face model_type values this writer can write
     * ("llama", "qwen2"), or NULL: any (supports() decides). With a list,
     * the host refuses a model whose architecture is not in it before
     * calling supports, naming the list. */
    const char *const *architectures;
    /* QB_FACT_* bits the writer relies on (qb_model_info.facts). The host
     * refuses, before begin, a model whose facts lack one, naming it; so a
     * writer may read those facts without checking `known`. */
    uint32_t required_facts;
    /* Name of the plugin whose reader reads this writer's output back
     * (used by convert --verify and shown by `plugins`), or NULL: the host
     * probes the output as it would any input. */
    const char *verify_reader;
} qb_writer_caps;

/* Introduced in ABI 1.1; its first size is QB_WRITER_CAPS_SIZE_1_1. */
QB_ABI_ALIGN_HELPER(qb_writer_caps);
#define QB_WRITER_CAPS_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_writer_caps, verify_reader)
QB_ABI_STATIC_ASSERT(QB_WRITER_CAPS_SIZE_1_1 == sizeof(qb_writer_caps), qb_writer_caps_size_1_1);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_WRITER_H */
