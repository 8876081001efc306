/*
 * Quantized-linear reader core shared by the GPTQ and AWQ readers, kept
 * beside them (plugins/qlinear, the static library qlinear_core of hidden
 * symbols, never ABI): each of the two plugins links its own copy, so
 * nothing here is visible to the host. Prefix qlinear_.
 *
 * A model is a table of canonical tensors. A tensor is either DENSE (one
 * F16/BF16/F32 safetensors tensor passed through) or QUANT (one quantized
 * linear: codes, per-group scales and zero points that a format-specific
 * decoder turns into rows). The core implements the reader data calls for
 * both kinds once, so the promise of qb_tensor.h — dense rows equal
 * (float)((int32_t)code - zero) * scale in float32 — holds by construction.
 *
 * THREADING: after qlinear_finish() a model is immutable; the data
 * functions (qlinear_read_rows, qlinear_read_grid) may run concurrently.
 */
#ifndef QLINEAR_H
#define QLINEAR_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_reader.h>
#include <quantbridge/qb_safetensors.h>
#include <quantbridge/qb_tensor.h>

#include <quantbridge/base/qb_stdir.h>

#include "qbk_hf_sidefiles.h" /* qbk_read_text */

typedef struct qlinear_tensor qlinear_tensor;

/* Format-specific decoding of one quantized linear (N rows = out features,
 * K cols = in features, G groups). Both functions are pure reads of mapped
 * data validated at open, so they cannot fail. */
typedef struct qlinear_decoder {
    /* codes[r * K + k] for rows [n0, n0 + nr): unsigned codes 0..2^bits-1 */
    void (*codes)(const qlinear_tensor *t, int64_t n0, int64_t nr, uint8_t *codes);
    /* scales[r * G + g] (float32 of the stored scale) and the REAL zero
     * point zeros[r * G + g] (convention offsets already undone) */
    void (*params)(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales, int32_t *zeros);
} qlinear_decoder;

enum { QLINEAR_DENSE = 1, QLINEAR_QUANT = 2 };

struct qlinear_tensor {
    char *name;            /* canonical HF name, owned */
    int kind;              /* QLINEAR_DENSE or QLINEAR_QUANT */
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    qb_dtype source_dtype;
    char *encoding;        /* owned */

    /* QLINEAR_DENSE */
    const qb_st_tensor *st;

    /* QLINEAR_QUANT */
    int64_t N, K;          /* out, in */
    uint32_t bits;
    uint32_t G;            /* groups per row */
    int64_t gs;            /* contiguous group size (K for per-channel) */
    int per_channel;       /* config said group_size -1 */
    int32_t *g_idx;        /* [K] group of each input column, owned; NULL = k / gs */
    int symmetric;         /* every real zero equals 2^(bits-1) */
    qb_dtype scale_dtype;
    const qb_st_tensor *qweight, *qzeros, *scales;
    uint32_t word_bits;    /* bits of one packed storage word */
    int32_t zero_add;      /* added to a stored zero field before masking (GPTQ v1: 1) */
    int32_t implicit_zero; /* used when qzeros == NULL */
    const qlinear_decoder *dec;
};

typedef struct qlinear_model {
    const qb_host *host;
    qb_stdir *d;           /* the checkpoint directory (the reader base's, owned) */
    /* borrowed from d: */
    qb_st_set *set;        /* d->st once opened */
    const char *dir;       /* source directory */
    const char *config_json;            /* config.json text */
    const char *generation_config_json; /* or NULL */
    const char *architecture;           /* model_type */
    const char *tokenizer_dir;          /* dir when it holds tokenizer files, else NULL */
    qlinear_tensor *t;
    size_t n, cap;
    char *source_format;   /* static string */
    char *summary;         /* owned */
    size_t last_read;      /* 1 + index of the tensor read last, 0 none (qlinear.c:
                            * its mapped pages are dropped when another is read) */
} qlinear_model;

/* Releases everything the model owns, including its directory and set.
 * NULL is a no-op. Cannot fail. Not concurrent with any other use of m. */
void qlinear_free(qlinear_model *m);

/* Appends a zeroed tensor slot named `name` (copied) and returns it, or NULL
 * on allocation failure (message set). The pointer is valid until the next
 * append. */
qlinear_tensor *qlinear_append(qlinear_model *m, const char *name);

/* Appends the quantized linear `module`.weight: a copy of *proto (its
 * name ignored) made a QLINEAR_QUANT tensor of shape [proto->N,
 * proto->K] with source dtype QB_DT_QUANTIZED. Returns the slot (valid
 * until the next append; pointers in proto, such as g_idx, now belong to
 * the model) or NULL on allocation failure with the message set. */
qlinear_tensor *qlinear_append_quant(qlinear_model *m, const char *module,
                                            const qlinear_tensor *proto);

/* Appends safetensors tensor `st` as a dense pass-through under its own
 * name. F16, BF16 and F32 only; anything else is QB_E_UNSUPPORTED naming
 * the file and tensor (an unknown integer tensor is never guessed at). */
qb_status qlinear_add_dense(qlinear_model *m, const qb_st_tensor *st);

/* A format's config loader for qlinear_open: reads the format's
 * quantization config of checkpoint directory `dir` (config_json is its
 * config.json text, NULL-safe) into `cfg`. Returns QB_OK or a negative
 * status with the message set through h. */
typedef qb_status (*qlinear_config_fn)(const qb_host *h, const char *dir, const char *config_json,
                                           void *cfg);

/* Opens checkpoint `path` with the reader base (qb_stdir_open with
 * QB_STDIR_FILE_OK: a path ending in ".safetensors" names one file whose
 * directory holds the side files; config.json strict, with a model_type,
 * generation config, tokenizer files), then load_config(h, m->dir,
 * m->config_json, cfg), then the safetensors set (qb_stdir_open_set): the
 * opening every quantized-linear reader shares, with the format's config
 * checked before any shard is opened.
 * Returns QB_OK with *out owned by the caller (qlinear_free); otherwise
 * the first failing step's status (message set) with *out NULL and the
 * model freed; cfg keeps whatever load_config put there (the caller frees
 * it). Not thread-safe on one output. */
qb_status qlinear_open(const qb_host *h, const char *path, qlinear_config_fn load_config, void *cfg,
                       qlinear_model **out);

/* The tensor `module` + `suffix` of set, or NULL when there is none (or
 * the joined name is longer than 1023 bytes). Borrowed from the set.
 * Thread-safe as h->safetensors->find is. */
const qb_st_tensor *qlinear_find(const qb_host *h, const qb_st_set *set, const char *module,
                                     const char *suffix);

/* What qlinear_each hands the format for one tensor tt of the set:
 *   module == NULL (which -1): a dense tensor, already appended with
 *     qlinear_add_dense;
 *   which == 0: the quantized weight (suffixes[0]) of `module`;
 *   which > 0: another part of `module` (suffixes[which]) whose quantized
 *     weight exists in no shard, a leftover; parts that have theirs are
 *     consumed by it and not handed out.
 * `module` is borrowed for the call. Returns QB_OK to go on or a negative
 * status with the message set; for a leftover, QB_OK asks the driver for
 * its generic error. */
typedef qb_status (*qlinear_part_fn)(void *ctx, qlinear_model *m, const qb_st_tensor *tt,
                                         const char *module, int which);

/* The tensor loop every quantized-linear reader shares: for each tensor of
 * m->set in order, splits its name at the first of the n_suffixes
 * suffixes that matches (suffixes[0] is the quantized weight, e.g.
 * ".qweight") and calls fn as described above. Returns QB_OK when every
 * tensor was handed out; else the first failure: fn's status,
 * qlinear_add_dense's, QB_E_NOMEM "<tensor>: out of memory", or
 * QB_E_FORMAT "<file>: <tensor>: quantized part without <module><suffix0>
 * in any shard" for a leftover fn did not refuse itself. Message set
 * through m->host. Not thread-safe (open time only). */
qb_status qlinear_each(qlinear_model *m, const char *const *suffixes, size_t n_suffixes,
                           qlinear_part_fn fn, void *ctx);

/* Zero point of group g, row n of t when t->qzeros is set (a format's
 * stored-zero decoding for qlinear_params_rows). Pure. */
typedef int32_t (*qlinear_zero_fn)(const qlinear_tensor *t, uint32_t g, uint64_t n);

/* The decoder `params` loop for scales stored [G][N]: for rows
 * [n0, n0 + nr), scales[r * G + g] = float of t->scales at g * N + n and
 * zeros[r * G + g] = zero_of(t, g, n) when t->qzeros is set, else
 * t->implicit_zero. static inline so that a constant zero_of is inlined
 * in the hot loop. Cannot fail; thread-safe on a finished model. */
static inline void qlinear_params_rows(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales,
                                           int32_t *zeros, qlinear_zero_fn zero_of);

/* Fill the SDK structs (get_model_info / get_tensor_info of qb_reader.h)
 * with pointers borrowed from m (valid until qlinear_free). QB_OK, or
 * QB_E_RANGE for a bad tensor index and QB_E_ABI for a struct_size too
 * small, message set through m->host. Thread-safe on a finished model. */
qb_status qlinear_model_info(const qlinear_model *m, qb_model_info *out);
qb_status qlinear_tensor_info(const qlinear_model *m, size_t i, qb_tensor_info *out);

/* Data calls (see qb_reader.h). QB_E_RANGE for a bad index or row range,
 * QB_E_NOMEM when scratch memory is short, QB_E_UNSUPPORTED from
 * qlinear_grid_info for a dense tensor. Thread-safe on a finished model. */
qb_status qlinear_read_rows(const qlinear_model *m, size_t i, int64_t row0, int64_t n_rows, float *dst);
qb_status qlinear_grid_info(const qlinear_model *m, size_t i, qb_grid_info *out);
qb_status qlinear_read_grid(const qlinear_model *m, size_t i, int64_t row0, int64_t n_rows,
                        qb_grid_rows *out);

/* The reader vtable entries (qb_reader.h) for a handle that is a
 * qlinear_model: a plugin whose open returns such a model puts these
 * straight into its qb_reader_vtable. Same contracts as the functions
 * above (close = qlinear_free); the data calls are thread-safe on a
 * finished model. */
void qlinear_vt_close(qb_reader_handle r);
qb_status qlinear_vt_model_info(qb_reader_handle r, qb_model_info *out);
qb_status qlinear_vt_tensor_info(qb_reader_handle r, size_t i, qb_tensor_info *out);
qb_status qlinear_vt_read_rows(qb_reader_handle r, size_t i, int64_t row0, int64_t n, float *dst);
qb_status qlinear_vt_grid_info(qb_reader_handle r, size_t i, qb_grid_info *out);
qb_status qlinear_vt_read_grid(qb_reader_handle r, size_t i, int64_t row0, int64_t n,
                                   qb_grid_rows *out);
/* ABI 1.2 view: stored tensor i of m's safetensors set (file order) with
 * the canonical tensor it feeds: a dense tensor itself, a quantized
 * linear through its qweight/qzeros/scales, and any other
 * "<module>.<part>" (g_idx) through "<module>.weight" when that is a
 * quantized linear. QB_E_RANGE (no message) past the last. Thread-safe
 * on a finished model. */
qb_status qlinear_vt_raw_tensor(qb_reader_handle r, size_t i, qb_raw_tensor_info *out);

/* The designated initializers of those entries, for a plugin's
 * qb_reader_vtable after its own .struct_size, .probe and .open. */
#define QLINEAR_VT_ENTRIES                                                     \
    .close = qlinear_vt_close, .get_model_info = qlinear_vt_model_info,   \
    .get_tensor_info = qlinear_vt_tensor_info,                                \
    .read_rows = qlinear_vt_read_rows, .get_grid_info = qlinear_vt_grid_info, \
    .read_grid = qlinear_vt_read_grid, .get_raw_tensor_info = qlinear_vt_raw_tensor

/* Unsigned storage word `idx` of a packed integer tensor (I8/U8/I16/U16/
 * I32/U32/I64/U64 reinterpreted as unsigned, little-endian, unaligned-safe).
 * The caller guarantees idx is inside the tensor. Pure, thread-safe. */
uint64_t qlinear_word(const qb_st_tensor *st, uint64_t idx);

/* Bits per storage word of an integer dtype, or 0 when not an integer
 * type. Pure, thread-safe. */
uint32_t qlinear_word_bits(qb_dtype dt);

/* Field `j` of width `bits` of a little-endian bit stream of words
 * stream(w) = qlinear_word(st, base + w * stride): bits [j*bits, j*bits+bits).
 * A field may straddle two words (GPTQ 3-bit). */
uint32_t qlinear_field(const qb_st_tensor *st, uint64_t base, uint64_t stride, uint32_t word_bits,
                   uint32_t bits, uint64_t j);

/* Unmaps the whole pages of st's mapped bytes from this process (the page
 * cache keeps them; a later access maps them again). NULL is a no-op. Used
 * after scanning a tensor at open so that open's memory does not grow
 * with the number of tensors. */
void qlinear_drop_pages(const qb_st_tensor *st);

/* Float value of element `idx` of an F16/BF16/F32 tensor (any
 * other dtype is read as F32). The caller guarantees idx is inside the tensor. Pure,
 * thread-safe. */
float qlinear_float_at(const qb_st_tensor *st, uint64_t idx);

/* Sets t->symmetric by scanning every real zero (t->dec->params). QB_OK,
 * or QB_E_NOMEM (message set through h) when scratch memory is short, t
 * unchanged. Not concurrent with reads of t (open-time only). */
qb_status qlinear_compute_symmetric(const qb_host *h, qlinear_tensor *t);

/* Validates `g` as a group map of K columns into G groups of size gs (each
 * group id in [0, G), group j holding exactly gs columns, the last group
 * K - (G-1)*gs). Returns 1 when valid; else 0 with a reason in why. */
int qlinear_gidx_valid(const int32_t *g, int64_t K, uint32_t G, int64_t gs, char *why, size_t why_len);

/* 1 when g[k] == k / gs for every k (the contiguous layout), else 0.
 * Pure, thread-safe. */
int qlinear_gidx_trivial(const int32_t *g, int64_t K, int64_t gs);

static inline void qlinear_params_rows(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales,
                                           int32_t *zeros, qlinear_zero_fn zero_of)
{
    int64_t r;
    uint32_t g;
    for (r = 0; r < nr; r++) {
        uint64_t n = (uint64_t)(n0 + r);
        for (g = 0; g < t->G; g++) {
            scales[r * t->G + g] = qlinear_float_at(t->scales, (uint64_t)g * (uint64_t)t->N + n);
            zeros[r * t->G + g] = t->qzeros ? zero_of(t, g, n) : t->implicit_zero;
        }
    }
}

#endif /* QLINEAR_H */
