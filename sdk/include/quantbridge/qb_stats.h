/*
 * quantbridge SDK — the host's source statistics service (ABI 1.3): what
 * the host knows about the source of a conversion beyond its tensors, so
 * that a writer that requantizes can do better than weight error alone:
 *
 *   - the scale granularity the source's reader declared for a tensor
 *     (docs/plugin-design.md, "Declarations of the source"): a writer
 *     choosing a group size keeps at least the source's resolution;
 *   - activation statistics of the run (`convert --calibration`,
 *     `--imatrix`): per linear, the mean square of each input column over
 *     the calibration tokens, llama.cpp's "importance".
 *
 * STABILITY: stable (append-only; added in ABI 1.3).
 *
 * Reach it as host->stats after checking QB_HAS_FIELD(host, qb_host, stats)
 * (a 1.0 to 1.2 host has no such field) and that it is not NULL.
 *
 * `src` is the qb_model_src the host passed to the writer's begin/plan; for
 * a model the host did not open itself (plugin-check's generated one) both
 * functions answer QB_E_NOT_FOUND: nothing is declared or measured. `tensor` is a canonical tensor index of
 * that source, [0, src->info->n_tensors).
 *
 * THREADING: every function may be called from any thread, concurrently,
 * while src is valid (until finish/abort).
 */
#ifndef QUANTBRIDGE_QB_STATS_H
#define QUANTBRIDGE_QB_STATS_H

#include "qb_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct qb_host;
struct qb_model_src;

/* Where a tensor's activation statistics came from, filled by importance.
 * The caller sets struct_size; pointers are the host's, valid until the
 * writer's finish/abort. */
typedef struct qb_stats_info {
    uint32_t struct_size;
    uint64_t n_tokens;  /* tokens the means are over (for an imatrix file: its
                           own count of the rows it saw for this tensor) */
    const char *origin; /* one line: "calibration FILE" / "calibration builtin" /
                           "imatrix FILE"; never NULL after QB_OK */
} qb_stats_info;
/* Introduced in ABI 1.3; its first size is QB_STATS_INFO_SIZE_1_3. */
QB_ABI_ALIGN_HELPER(qb_stats_info);
#define QB_STATS_INFO_SIZE_1_3 QB_ABI_SIZE_THROUGH(qb_stats_info, origin)
QB_ABI_STATIC_ASSERT(QB_STATS_INFO_SIZE_1_3 == sizeof(qb_stats_info), qb_stats_info_size_1_3);

typedef struct qb_stats_api {
    uint32_t struct_size;

    /* Columns of a row that share one scale in the source of `tensor`, as
     * its reader declared ("quantbridge.scale_block:NAME" in the reader's
     * metadata view), into *cols (>= 1). QB_E_NOT_FOUND (no message) when
     * the reader declares none for it; QB_E_FORMAT naming the reader and
     * the key when its declaration is not a positive integer or names no
     * tensor of the source; QB_E_INVALID (cols NULL), QB_E_RANGE (index).
     * The host reads the declarations once per source. */
    qb_status (*scale_block)(const struct qb_host *h, const struct qb_model_src *src,
                             size_t tensor, int64_t *cols);

    /* The importance of each input column of linear `tensor` (a 2-D
     * weight [out, in]): out[j] = the mean over the statistics' tokens of
     * x_j^2, x the input row the linear multiplies, for j < n; n must be
     * the tensor's column count (QB_E_MISMATCH naming it otherwise). A
     * fused source tensor (several linears stacked over rows) has one
     * input, so one vector. *info (may be NULL) says where they come from.
     * QB_E_NOT_FOUND (no message) when the run has no statistics for it
     * (no --calibration / --imatrix, or a tensor they do not cover);
     * QB_E_INVALID (out NULL), QB_E_RANGE (index). Memory: none
     * allocated; the host holds one vector per covered linear. */
    qb_status (*importance)(const struct qb_host *h, const struct qb_model_src *src,
                            size_t tensor, float *out, int64_t n, qb_stats_info *info);

    /* ---- ABI 1.4 (QB_STATS_API_SIZE_1_4) ----
     * Reach it after checking QB_HAS_FIELD(h->stats, qb_stats_api, hessian).
     *
     * The input covariance of linear `tensor` (a 2-D weight [out, in]):
     * out[a * n + b] = the mean over the calibration tokens of x_a x_b, x
     * the input row the linear multiplies (H = X^T X / tokens, symmetric,
     * row-major, n * n floats; GPTQ's Hessian up to its factor 2), n the
     * tensor's column count (QB_E_MISMATCH naming it otherwise). Linears
     * that multiply one input (q/k/v, gate/up; a fused tensor) get the
     * same matrix; its diagonal is importance's vector. *info (may be
     * NULL) as importance's.
     * Returns QB_OK; QB_E_NOT_FOUND (no message) when the run has no
     * token-level statistics for it: no --calibration (an --imatrix file
     * holds only the diagonal), or a tensor the pass does not cover;
     * QB_E_UNSUPPORTED (message naming the tensor, its n and the budget)
     * when n * n floats exceed the host's Hessian memory budget (`convert
     * --hessian-budget`); the pass's own errors (QB_E_NOMEM, QB_E_IO of
     * the spill file, the forward pass's), then every later call returns
     * the same failure; QB_E_INVALID (out NULL), QB_E_RANGE (index).
     * Cost: the first call runs the calibration forward pass again,
     * collecting every covered linear's matrix within the budget (more
     * passes when they do not fit at once), and keeps them in a temporary
     * file; each call then reads one matrix (n * n * 4 bytes) into out.
     * Memory: out is the caller's; the host holds at most the budget
     * during the pass, nothing of the matrices after it.
     * THREADING: may be called from any thread, but not from inside a
     * host->parallel_for work item (the first call's pass uses the pool);
     * concurrent first calls wait for one pass. */
    qb_status (*hessian)(const struct qb_host *h, const struct qb_model_src *src,
                         size_t tensor, float *out, int64_t n, qb_stats_info *info);
} qb_stats_api;
/* Introduced in ABI 1.3; its first size is QB_STATS_API_SIZE_1_3. */
QB_ABI_ALIGN_HELPER(qb_stats_api);
#define QB_STATS_API_SIZE_1_3 QB_ABI_SIZE_THROUGH(qb_stats_api, importance)
#define QB_STATS_API_SIZE_1_4 QB_ABI_SIZE_THROUGH(qb_stats_api, hessian)
QB_ABI_STATIC_ASSERT(QB_STATS_API_SIZE_1_4 == sizeof(qb_stats_api), qb_stats_api_size_1_4);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_STATS_H */
