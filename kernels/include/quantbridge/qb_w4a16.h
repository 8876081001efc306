/*
 * quantbridge W4A16 runtime library (libquantbridge-w4a16): what a runtime
 * calls to execute the native "sm86-w4a16" format (docs: w4a16-format.md).
 *
 *   - qb_w4a16_gemm_cpu: the CPU reference product y = x . W^T;
 *   - qb_w4a16_open & co.: open a converted directory, validate its
 *     manifest, map its safetensors files and hand out tensors by name, so
 *     a runtime needs no JSON or safetensors code of its own.
 *
 * Encoding (format contract): packed U8 [N, ceil(K/2)], column c of row r in
 * the low nibble of packed[r][c/2] when c is even, high nibble when odd; a
 * nibble holds q + 8 with q in [-8, 7]; scales F16 [N, ceil(K/g)];
 * w[r][c] = q * scales[r][c/g] in fp32. Scales may be negative or zero.
 * Any g >= K means one group (one scale) per row: every such value gives
 * the same product, and the CPU GEMM, the CUDA kernels and
 * qb_w4a16_linear_get all treat it as g = K.
 *
 * Status codes are the SDK's (qb_abi.h): 0 success, negative failure.
 * Pure C99; fp16 values travel as their IEEE binary16 bits in uint16_t.
 */
#ifndef QUANTBRIDGE_QB_W4A16_H
#define QUANTBRIDGE_QB_W4A16_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- CPU GEMM */

/* Which CPU code path qb_w4a16_gemm_cpu uses. */
#define QB_W4A16_CPU_AUTO 0  /* AVX2+FMA when the CPU has them, else plain C */
#define QB_W4A16_CPU_PLAIN 1 /* portable C */
#define QB_W4A16_CPU_AVX2 2  /* AVX2+FMA; QB_E_UNSUPPORTED if the CPU lacks them */

/* Nonzero when this build and CPU can run QB_W4A16_CPU_AVX2. Thread-safe. */
int qb_w4a16_cpu_has_avx2(void);

/* y[m][n] = sum_c x[m][perm ? perm[c] : c] * w[n][c], for m < M, n < N,
 * c < K, with w decoded from (packed, scales, group_size) as above.
 *
 *   x       fp16 [M][K], row-major, contiguous.
 *   y       fp16 [M][N], written (round to nearest even; overflow -> inf).
 *   packed  [N][ceil(K/2)] bytes; scales fp16 [N][ceil(K/group_size)].
 *   group_size >= 1; any value >= K (up to INT64_MAX) is clamped to K.
 *   perm    NULL, or int32 [K]: a permutation of 0..K-1 (input_permutation).
 *   threads number of threads to split the N rows over (0 or 1: caller's
 *           thread only). The result does not depend on it.
 *   path    QB_W4A16_CPU_*.
 *
 * Numerics: products q*x are exact in fp32; each group's sum of q*x runs in
 * fp32, is multiplied by its fp32 scale once and added to an fp32
 * accumulator; only the final value is rounded to fp16. The plain and AVX2
 * paths differ only by fp32 summation order (and FMA contraction).
 *
 * Returns 0; QB_E_INVALID for M, N, K or group_size < 1, NULL pointers, an
 * unknown path or a perm that is not a permutation (nothing written);
 * QB_E_UNSUPPORTED for QB_W4A16_CPU_AVX2 without AVX2; QB_E_NOMEM; QB_E_IO
 * when a thread cannot be started. Reentrant; inputs are only read.
 */
qb_status qb_w4a16_gemm_cpu(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                            const uint16_t *scales, const int32_t *perm, int64_t M, int64_t N,
                            int64_t K, int64_t group_size, int threads, int path);

/* ----------------------------------------------------------------- loader */

typedef struct qb_w4a16_model qb_w4a16_model; /* opaque: one opened directory */

/* qb_w4a16_open flags. */
#define QB_W4A16_OPEN_VERIFY_SHA256 1u /* hash every file against the manifest (reads all bytes) */

/* Element types of qb_w4a16_tensor.dtype (only those the format uses). */
#define QB_W4A16_DT_U8 1
#define QB_W4A16_DT_F16 2
#define QB_W4A16_DT_I32 3
#define QB_W4A16_DT_F32 4 /* DeepSeek-V3's mlp.gate.e_score_correction_bias */

/* A tensor inside a mapped file. Pointers stay valid until close. */
typedef struct qb_w4a16_tensor {
    const void *data;  /* aligned to the element size: the mapped bytes, or a copy
                        * owned by the model when the file's offset is unaligned */
    uint64_t n_bytes;
    int dtype;         /* QB_W4A16_DT_* */
    int n_dims;        /* 1 or 2 */
    int64_t dims[2];
} qb_w4a16_tensor;

/* One quantized linear: everything qb_w4a16_gemm_cpu / _cuda need. */
typedef struct qb_w4a16_linear {
    const uint8_t *packed;   /* [n][ceil(k/2)] */
    const uint16_t *scales;  /* fp16 [n][ceil(k/group_size)] */
    const int32_t *perm;     /* int32 [k] when the file has <path>.perm, else NULL */
    const uint16_t *bias;    /* fp16 [n] when the file has <path>.bias, else NULL */
    int64_t n, k, group_size; /* group_size: the manifest's clamped to k */
} qb_w4a16_linear;

/* Opens the converted directory `dir`:
 *   - manifest.json must say format "sm86-w4a16", format_version 1, bits 4,
 *     symmetric true, code_offset 8, nibble_order "low-even", an integer
 *     group_size in [1, INT32_MAX], num_layers >= 1, features a list of known features
 *     ("input_permutation", "quantized_lm_head"), and what w4a16-format.md
 *     "Strict reading" settles (lowercase digests, no duplicate keys, no
 *     file name starting with '.', config/embed/norm/lm_head listed as the
 *     layout needs); anything else is refused;
 *   - every "files" entry must be a plain name in `dir` whose size equals
 *     "bytes" (and, with QB_W4A16_OPEN_VERIFY_SHA256, whose SHA-256 equals
 *     "sha256"); every layer_NN.safetensors for 0..num_layers-1 must be
 *     listed; every listed *.safetensors file is mapped and parsed strictly.
 * Returns 0 and *out; else a negative status, *out NULL and a message
 * naming the file (and field) in err (when err_len > 0):
 * QB_E_NOT_FOUND (missing file), QB_E_IO, QB_E_FORMAT (malformed or a value
 * other than the above), QB_E_UNSUPPORTED (unknown format_version or
 * feature), QB_E_MISMATCH (size or sha256 differs), QB_E_NOMEM,
 * QB_E_INVALID (NULL arguments). Thread-safe (no shared state).
 */
qb_status qb_w4a16_open(const char *dir, unsigned flags, qb_w4a16_model **out, char *err,
                        size_t err_len);

/* Unmaps and frees. NULL is a no-op. No tensor pointer outlives it. */
void qb_w4a16_close(qb_w4a16_model *model);

/* Manifest values. The model is immutable after open: every query below
 * may run concurrently. group_size is the manifest's, in [1, INT32_MAX]
 * (open refuses others); per linear use qb_w4a16_linear.group_size. */
int64_t qb_w4a16_group_size(const qb_w4a16_model *model);
int64_t qb_w4a16_num_layers(const qb_w4a16_model *model);
const char *qb_w4a16_architecture(const qb_w4a16_model *model); /* "" when absent */
/* 1 when `name` is listed in the manifest's features, else 0. */
int qb_w4a16_has_feature(const qb_w4a16_model *model, const char *name);
/* Message of the calling thread's last failing tensor query (or open) of
 * this library ("" if none); valid until that thread's next call. */
const char *qb_w4a16_error(const qb_w4a16_model *model);

/* Looks up tensor `name` in file `file` ("embed.safetensors",
 * "layer_03.safetensors", ...). Returns 0 and *out; QB_E_NOT_FOUND when the
 * file or tensor does not exist; QB_E_UNSUPPORTED when its dtype is not
 * U8/F16/I32 or it has more than 2 dims; QB_E_NOMEM. Data at an unaligned
 * file offset is copied (once per tensor, on first use) into memory the
 * model frees on close. Message in qb_w4a16_error(). */
qb_status qb_w4a16_tensor_get(qb_w4a16_model *model, const char *file, const char *name,
                              qb_w4a16_tensor *out);

/* Name of layer `layer`'s file as the format numbers it (the digits of
 * num_layers - 1, at least two: w4a16-format.md "Directory"). Returns 0, QB_E_RANGE (layer outside
 * [0, num_layers)) or QB_E_INVALID (buffer too small). */
qb_status qb_w4a16_layer_file(const qb_w4a16_model *model, int64_t layer, char *buf, size_t len);

/* The quantized linear `path` ("self_attn.q_proj") of layer `layer`, or of
 * lm_head.safetensors when layer is -1 (path "lm_head"). `k` is the
 * caller's in_features (from config.json): the packed shape alone cannot
 * tell an odd K from K+1; k == 0 means "even, 2 * packed columns".
 * Checks dtypes (packed U8, scales F16, perm I32, bias F16) and shapes
 * packed [n, ceil(k/2)], scales [n, ceil(k/g)], perm [k], bias [n], with
 * k >= 1 (a linear without input columns is QB_E_FORMAT); out->group_size
 * is the manifest's clamped to k (a manifest group_size >= k means one
 * group per row: w4a16-format.md "Strict reading"), so it is always in
 * [1, k] and fits the kernels' int arguments; a perm
 * that is not a permutation of 0..k-1, or a .perm without the
 * input_permutation feature, is QB_E_FORMAT. Returns 0 and *out,
 * QB_E_NOT_FOUND, QB_E_RANGE (layer), QB_E_INVALID (k < 0), QB_E_FORMAT,
 * QB_E_UNSUPPORTED (dtype) or QB_E_MISMATCH (shapes disagree); message in
 * qb_w4a16_error(). */
qb_status qb_w4a16_linear_get(qb_w4a16_model *model, int64_t layer, const char *path, int64_t k,
                              qb_w4a16_linear *out);

/* ---------------------------------------------------------------- backend */

/* The format's linear backend on the CPU (qb_linear_backend.h, the
 * signature of qb_linear_backend_open_fn): over a model its reader names
 * the format (qb_model_info.source_format "sm86-w4a16"), src->source_path
 * is opened with qb_w4a16_open and every packed linear runs through
 * qb_w4a16_gemm_cpu on the mapped codes and scales, one row block per item
 * of h->parallel_for (the input rounded to fp16, the output widened from
 * fp16: this GEMM's numerics); the backend answers QB_E_NOT_FOUND for the
 * rest (an F16 head, a dense router). Opened over another model: *out
 * NULL, QB_OK (QB_E_UNSUPPORTED with QB_LINEAR_BACKEND_REQUIRED). Errors
 * (through h): the loader's message (naming the file), QB_E_NOMEM. The
 * struct types only are named, so this header needs none of the SDK's
 * headers. Main thread. */
struct qb_host;
struct qb_model_src;
struct qb_linear_backend;
qb_status qb_w4a16_backend_open(const struct qb_host *h, const struct qb_model_src *src,
                                unsigned flags, struct qb_linear_backend **out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_W4A16_H */
