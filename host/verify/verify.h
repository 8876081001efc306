/*
 * quantbridge verify (host/verify, qbh_verify) — compares a converted model
 * with its source, tensor by tensor, through their readers, and runs the
 * model check over the forward pass (the interface host/cli's `verify`
 * and `convert --verify` use, and the tests).
 *
 *   metrics.c         streaming error accumulators and the W·x probe
 *   baseline.c        the plain rules a tensor is judged against
 *   baseline_model.c  the baseline model of the model verdict
 *   declared.c        what the writer declared (the plugins' word)
 *   engine.c          open both sides, match names, stream row blocks on
 *                     the host thread pool, apply the thresholds
 *   report.c, report_sections.c  text table, summary, JSON, HTML
 *   model_check.c     the model check: KL, top-1, logits cosine
 *   verdict.c         the model verdict
 *
 * Metric definitions (a = source value, b = converted value, float32 read
 * through the readers, accumulated in double):
 *   exact     every element bit-equal (float32 bits; NaN payloads too)
 *   max_abs   max |b - a|
 *   rel_rmse  ||b - a|| / ||a||   (as the W4A16 writer records it, w4a16-format.md)
 *   cosine    <a, b> / (||a|| ||b||)
 *   snr_db    10 log10(||a||^2 / ||b - a||^2), +inf when exact
 *   wx_cosine for a 2-D weight of a decoder layer: the cosine between W_a x
 *             and W_b x over the output rows of a few fixed pseudo-random
 *             activation vectors x (uniform in [-1, 1), seeded
 *             deterministically), pooled over the vectors
 */
#ifndef QBH_VERIFY_ENGINE_H
#define QBH_VERIFY_ENGINE_H

#include "pipeline.h" /* qbh_plan: convert --verify falls back on the writer's plan */

#include <glib.h>

#include <quantbridge/qb_linear_backend.h>

/* The pass/fail rule (baseline.c): a tensor its writer declares exact
 * (declared.c) fails on any difference; a requantized or rounded one fails
 * when it is worse than the plain rule of its converted encoding on the
 * same source values, a grid group by more than this relative RMSE margin
 * (the writer never does worse than that rule, so only float summation
 * order separates the two: 1 % is ~1e10 times that, and far below what a
 * wrong scale, code or row order costs). rel RMSE and cosine are reported,
 * and judged only when the user gives --max-rel-rmse / --min-cosine. */
#define QBH_VERIFY_BASELINE_MARGIN 0.01
#define QBH_VERIFY_N_VECTORS 4
#define QBH_VERIFY_SEED UINT64_C(0x5eed0f0a11ce5eed)

/* ---- metrics.c -------------------------------------------------------------- */

/* Element-wise accumulator of one tensor pair. Plain data: zero it with
 * qbh_vm_acc_init; one accumulator per thread (no locking inside). */
typedef struct qbh_vm_acc {
    uint64_t n;          /* elements seen */
    uint64_t n_diff;     /* elements whose float32 bits differ (zeros of either sign equal) */
    uint64_t n_bad_nonfinite; /* a NaN/Inf on one side not matched bit for bit */
    double max_abs;
    double ss_err, ss_a, ss_b, dot;
} qbh_vm_acc;

void qbh_vm_acc_init(qbh_vm_acc *acc);
/* Adds n element pairs. Pairs where either value is not finite enter no
 * sum: bit-equal ones count as equal, others as n_bad_nonfinite. */
void qbh_vm_acc_add(qbh_vm_acc *acc, const float *a, const float *b, size_t n);
/* rel_rmse, cosine and snr_db of the accumulated pairs. Conventions for
 * degenerate input: ||a|| = 0 gives rel_rmse 0 when ||b - a|| = 0, else
 * +inf; cosine is 1 when both norms are 0, 0 when exactly one is; snr_db
 * is +inf when ||b - a|| = 0. Pure. */
void qbh_vm_acc_metrics(const qbh_vm_acc *acc, double *rel_rmse, double *cosine, double *snr_db);
/* Cosine with the conventions above, from the three sums. Pure. */
double qbh_vm_cosine(double dot, double ss_a, double ss_b);

/* W·x probe of one [rows, cols] weight pair: k activation vectors of
 * length cols, and per vector the running <ya, yb>, ||ya||^2, ||yb||^2
 * over the rows added so far (y = W x, each row's product in double), so
 * memory is k * cols doubles whatever the number of rows. */
typedef struct qbh_vm_wx {
    int k;
    int64_t cols;
    double *x;        /* [k * cols] */
    double *sums;     /* [3 * k]: dot, ss_a, ss_b per vector */
} qbh_vm_wx;

/* Allocates the probe with k (1..16) vectors drawn from splitmix64 seeded
 * with `seed` and the vector index (so the vectors depend only on seed, k
 * and cols). Returns QB_OK or QB_E_NOMEM (message set). Free with
 * qbh_vm_wx_free (also on a zeroed struct). */
qb_status qbh_vm_wx_init(qbh_vm_wx *wx, int k, int64_t cols, uint64_t seed);
/* Adds n_rows consecutive rows of W_a (a) and W_b (b), row-major with
 * wx->cols columns. Non-finite weights enter neither product (the element
 * metrics report them). */
void qbh_vm_wx_add_rows(qbh_vm_wx *wx, const float *a, const float *b, int64_t n_rows);
/* Cosine of W_a x and W_b x pooled over all vectors and rows added
 * (qbh_vm_cosine conventions). */
double qbh_vm_wx_cosine(const qbh_vm_wx *wx);
void qbh_vm_wx_free(qbh_vm_wx *wx);

/* ---- baseline.c ------------------------------------------------------------- */

typedef enum qbh_vb_kind {
    QBH_VB_NONE = 0, /* no plain rule known for the converted encoding:
                        judged as EXACT unless the user gives thresholds */
    QBH_VB_EXACT,    /* the writer says exact: any difference fails */
    QBH_VB_GRID,     /* symmetric integer grid: absmax rule per group */
    QBH_VB_ROUND     /* float target: nearest-even rounding per element */
} qbh_vb_kind;

/* The rule of one converted tensor. Plain data; the three group_* arrays
 * (act-order grids only) are owned, freed by qbh_vb_rule_free. */
typedef struct qbh_vb_rule {
    qbh_vb_kind kind;
    qb_dtype round_dtype;   /* ROUND: F16, BF16 or F32 */
    int bits;               /* GRID: code width */
    qb_dtype scale_dtype;   /* GRID: scales are rounded to this */
    int64_t n_groups, group_size; /* GRID: contiguous when col_group NULL */
    const int32_t *col_group;     /* GRID: borrowed from the reader */
    int64_t *group_start, *group_len, *group_cols; /* col_group inverted */
    double margin;          /* GRID: relative RMSE margin per group */
    int64_t expert_rows;    /* GRID of a fused expert tensor [E, expert_rows,
                               cols] (declared: quantbridge.expert_grid): each column
                               of an expert is one linear row whose groups of
                               group_size run down the rows; 0 otherwise */
} qbh_vb_rule;

/* Outcome of qbh_vb_rows, summed over calls (zero it first). */
typedef struct qbh_vb_stats {
    uint64_t n_units;  /* groups (GRID) or elements (ROUND) judged */
    uint64_t n_worse;  /* of them worse than the baseline (beyond margin) */
    double worst;      /* GRID: largest error ratio (RMSE / baseline RMSE);
                          ROUND: largest |err| - |baseline err| */
    double ss_base;    /* squared error of the baseline over the units */
} qbh_vb_stats;

/* "exact", "absmax", "nearest" or "none". Pure. */
const char *qbh_vb_kind_name(qbh_vb_kind k);
/* v rounded to nearest even in dt (F16, BF16; other dtypes: v). Pure. */
float qbh_vb_round(qb_dtype dt, float v);
/* Makes rl a GRID rule from the converted tensor's grid (cols columns);
 * an asymmetric or odd grid gives kind NONE. QB_OK or QB_E_NOMEM (message
 * set, rl freed). rl->margin is left to the caller. */
qb_status qbh_vb_rule_grid(qbh_vb_rule *rl, const qb_grid_info *gi, int64_t cols);
void qbh_vb_rule_free(qbh_vb_rule *rl);
/* Judges n_rows rows of source a and converted b ([n_rows, cols]) under rl
 * (GRID or ROUND; other kinds add nothing) into st. Pairs with a
 * non-finite value are skipped (the element metrics fail them). With
 * rl->expert_rows the block must start at a group boundary of one expert
 * (a multiple of group_size rows into it) and not cross into the next
 * (engine.c's blocking asserts it). Pure. */
void qbh_vb_rows(const qbh_vb_rule *rl, const float *a, const float *b, int64_t n_rows,
                 int64_t cols, qbh_vb_stats *st);

/* Rewrites n_rows rows [n_rows, cols] in place to what rl's plain rule
 * makes of them: GRID, each group (rl's contiguous groups or column map;
 * not a fused expert rule) encoded by the absmax rule and decoded in fp32
 * as above; ROUND, each element rounded to nearest even in round_dtype;
 * other kinds leave them. Returns how many groups the rule cannot store
 * (a scale beyond the scale dtype's range, a non-finite value: those are
 * left as they were), 0 normally. Pure; thread-safe on disjoint rows. */
int64_t qbh_vb_apply_rows(const qbh_vb_rule *rl, float *rows, int64_t n_rows, int64_t cols);

/* ---- baseline_model.c ------------------------------------------------------- */

/* The baseline model of a converted model (docs/verify.md, "Model
 * verdict"): its structure with the values the plain rules make of the
 * SOURCE's: a tensor the converted model holds on a symmetric integer
 * grid (its reader's get_grid_info) gets the absmax rule in that grid's
 * own grouping, a float tensor (F16, BF16, F32) nearest rounding to that
 * dtype. Run as a filter of the source's forward pass (model.h,
 * qbh_fwd_model.filter). Opaque; built on the main thread, then read-only. */
typedef struct qbh_vb_model qbh_vb_model;

/* Builds the rules of every tensor of the open converted model conv (kept
 * open while the model lives: the column maps are the reader's). A tensor
 * the baseline cannot form (quantized without a grid view, an asymmetric
 * grid, another dtype) gets no rule but a reason, given when the pass
 * reads it. QB_OK with *out (qbh_vb_model_free), or QB_E_NOMEM. Main
 * thread (get_grid_info is instance class). */
qb_status qbh_vb_model_new(qbh_source *conv, qbh_vb_model **out);
void qbh_vb_model_free(qbh_vb_model *m);

/* Tensors with a grid rule, and their common code width and group size
 * (0 when they differ; an act-order grid counts cols / n_groups). Pure. */
size_t qbh_vb_model_grids(const qbh_vb_model *m, int *bits, int64_t *group_size);

/* The filter fn of model.h's qbh_fwd_filter, ctx a qbh_vb_model: the
 * rows of source tensor t, standing for `as`, rewritten by the rule of
 * the converted tensor named `as` (else t's own name). QB_E_UNSUPPORTED
 * naming the tensor and why when the converted model has no such tensor
 * or of another shape, or it has no rule (the reason), or the rule cannot
 * store a group. Thread-safe. */
qb_status qbh_vb_model_filter(void *ctx, const char *as, const qb_tensor_info *t, int64_t row0,
                              int64_t n_rows, float *rows);

/* ---- declared.c ------------------------------------------------------------ */

/* What the writer declared of the converted model's tensors
 * (docs/plugin-design.md, "Declarations for verify"). */
typedef struct qbh_verify_decl {
    GHashTable *exact;  /* canonical names declared exact (g_strdup'd keys) */
    GHashTable *expert; /* canonical name -> qbh_vb_rule (GRID: bits, group_size,
                           scale_dtype) of a fused expert tensor [E, in, out] */
    GHashTable *aware;  /* canonical name -> rule name (g_strdup'd) of a tensor
                           whose writer declares an activation-aware rule
                           (quantbridge.quant_rule: weighted, gptq): judged
                           at the model's output */
    int declares;       /* the reader declared exactness (some quantbridge.exact: entry) */
    int from_plan;      /* the exact set came from the writer's plan */
} qbh_verify_decl;

/* Reads the declarations of the open converted model conv from its
 * reader's metadata view; when it declares no exactness and a plan of the
 * conversion is given (plan->has_actions; src its source), a source
 * tensor all of whose planned outputs are QB_PLAN_EXACT is declared exact
 * under its name. QB_OK with *d (qbh_verify_decl_free); QB_E_FORMAT
 * naming the reader and the entry when a declaration is malformed, the
 * view's failure. Main thread (get_metadata is instance class). */
qb_status qbh_verify_declared(const qbh_source *conv, const qbh_source *src, const qbh_plan *plan,
                              qbh_verify_decl *d);
void qbh_verify_decl_free(qbh_verify_decl *d);

/* ---- engine.c --------------------------------------------------------------- */

typedef struct qbh_verify_opts {
    double max_rel_rmse; /* user threshold: fail above this (NaN: none) */
    double min_cosine;   /* user threshold: fail when cosine or wx_cosine
                            is below (NaN: none) */
    double margin;       /* baseline margin (QBH_VERIFY_BASELINE_MARGIN) */
    int n_vectors;       /* W·x probe vectors (1..16) */
    uint64_t seed;
    const qbh_plan *plan; /* the conversion's plan (convert --verify), or NULL:
                             exactness its converted reader does not declare
                             is taken from it (qbh_verify_declared) */
} qbh_verify_opts;

/* Fills the defaults above. */
void qbh_verify_opts_default(qbh_verify_opts *o);

typedef enum qbh_verify_state {
    QBH_VT_OK = 0,      /* compared, within the thresholds */
    QBH_VT_FAIL,        /* compared, outside a threshold (reason says which) */
    QBH_VT_MISSING,     /* in the source, not in the converted model */
    QBH_VT_EXTRA,       /* in the converted model, not in the source */
    QBH_VT_SHAPE        /* present on both sides with different shapes */
} qbh_verify_state;

typedef struct qbh_verify_tensor {
    char *name;            /* source name (converted name for EXTRA) */
    char *compared_with;   /* what `name` was compared with when not the
                              same name on the other side (a tied head:
                              "converted model.embed_tokens.weight (tied
                              head)" or "source ..."), or NULL */
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    char *encoding;        /* source encoding ("" for EXTRA) */
    char *conv_encoding;   /* converted encoding ("" for MISSING) */
    int layer;             /* decoder layer index, -1 outside layers */
    qbh_verify_state state;
    char reason[256];      /* why FAIL/MISSING/EXTRA/SHAPE, "" when OK */
    /* metrics, valid for OK and FAIL */
    int exact;
    uint64_t n, n_diff, n_bad_nonfinite;
    double max_abs, rel_rmse, cosine, snr_db;
    double ss_a, ss_err;   /* for per-layer aggregate SNR */
    int has_wx;
    double wx_cosine;
    int conv_quantized;    /* the converted side is stored quantized
                              (its tensor info's source_dtype) */
    qbh_vb_kind rule;      /* how it was judged */
    double base_rel_rmse;  /* the baseline's rel RMSE (GRID, ROUND), else NaN */
    uint64_t n_units, n_worse; /* groups/elements judged, worse than baseline */
    double worst;          /* qbh_vb_stats.worst */
    char quant_rule[32];   /* the activation-aware rule its writer declares
                              (quantbridge.quant_rule:), "" none */
    int at_output;         /* GRID rule, worse than absmax by plain error, but
                              quant_rule trades that by design: not failed
                              here, judged at the model's output
                              (qbh_verify_settle_output) */
} qbh_verify_tensor;

typedef struct qbh_verify_result {
    char *source_path, *converted_path;
    char *source_format, *converted_format;   /* readers' format names */
    char *source_reader, *converted_reader;   /* plugin names */
    char *source_summary;
    const char *source_reader_version, *converted_reader_version; /* the
                              readers' qb_plugin.version ("" when none);
                              borrowed: plugins are never unloaded */
    qbh_verify_opts opts;
    qbh_verify_tensor *t;  /* source order, then EXTRA ones */
    size_t n;
    size_t n_compared, n_exact, n_failed, n_missing, n_extra, n_shape;
    size_t n_at_output;    /* tensors with at_output set */
    int pass;              /* no FAIL, MISSING, EXTRA or SHAPE */
    const struct qbh_model_check *model_check; /* the caller's model
                              check (not freed here), or NULL; written into
                              the JSON and the HTML report */
} qbh_verify_result;

/* Selects the reader of `path` (`format` NULL or "auto": probe), builds its
 * parameters from `cli` (n_cli entries; a key it does not declare is a
 * usage error) and opens it into *s; *params must stay alive until
 * qbh_source_close(s), then be freed with qbh_params_free. On failure
 * nothing is left open, *usage tells a usage error, message set. Main
 * thread only. */
qb_status qbh_verify_open(const qbh_registry *reg, const char *path, const char *format,
                          qbh_opt *cli, size_t n_cli, qbh_source *s, qbh_params *params,
                          int *usage);

/* Compares every tensor of `src` with `conv` (both open) by canonical name
 * under `o`: reads both sides in row blocks of at most 1 Mi elements, one
 * tensor pair per item of the host thread pool (memory: two blocks and
 * the probe vectors per thread). A tensor that fails a threshold, is
 * missing, extra or of another shape is recorded, not an error. Returns
 * QB_OK with *out (free with qbh_verify_result_free), or an error (a read
 * failure, QB_E_CANCELLED, QB_E_NOMEM) with the message set and *out
 * NULL. Main thread; uses the pool. */
qb_status qbh_verify_sources(qbh_source *src, qbh_source *conv, const qbh_verify_opts *o,
                             qbh_verify_result **out);
void qbh_verify_result_free(qbh_verify_result *r);

/* 1 when the converted model of r holds at least one quantized tensor and
 * every one of them was judged by the exact rule (its writer declares it
 * exact) and passed: the model check's "exact codes" verdict
 * (below). Pure. */
int qbh_verify_exact_codes(const qbh_verify_result *r);

/* The model check's word on the tensors judged at the model's output
 * (at_output): judged 1 when the check ran and placed the converted model
 * against its baseline (a verdict other than QBH_MCV_NONE; its defect
 * band fails the verification on its own). Otherwise each such tensor
 * fails with why_not (what kept the check from judging and the option
 * that turns it on) and r->pass drops. Counts are redone. Pure. */
void qbh_verify_settle_output(qbh_verify_result *r, int judged, const char *why_not);

/* The reader for a model written by plugin `name`, as --converted-format
 * takes it: `name` itself when it is not a loaded writer-only plugin, else
 * the verify_reader its writer capabilities declare (or `name` when it
 * declares none, so the caller's "not a reader" message names it). The
 * string lives as long as the registry. Pure. */
const char *qbh_verify_reader_for(const qbh_registry *reg, const char *name);

/* `convert --verify`: opens the just written `output` with the reader
 * `writer`'s capabilities name (verify_reader, when that plugin is loaded;
 * otherwise, with a warning when one was named, the reader found by
 * probing), compares it with the still open `src` under the default rule
 * (exactness the output's reader does not declare taken from the writer's
 * `plan` of the conversion, when given) and prints the summary on stdout, then the model check (its passes'
 * linears through `linears`, as qbh_mc_opts says). Returns QB_OK when it passes;
 * otherwise QB_E_MISMATCH with *failed = 1 and a message naming the first
 * failing tensor and saying the output was kept (the caller exits
 * QBH_EXIT_VERIFY), or the error that stopped the comparison (*failed 0). */
qb_status qbh_verify_after_convert(const qbh_registry *reg, qbh_source *src, const char *output,
                                   const qbh_plugin *writer, const qbh_plan *plan,
                                   qb_linear_backend_open_fn linears, int *failed);

/* ---- report.c --------------------------------------------------------------- */

/* Writes s to f with the five HTML special characters escaped. */
void qbh_html_esc(FILE *f, const char *s);

/* Layer aggregate: tensors of decoder layer `layer` that were compared. */
typedef struct qbh_verify_layer {
    int layer;
    size_t n;                 /* compared tensors */
    size_t n_failed;
    double mean_rel_rmse, max_rel_rmse, mean_cosine;
    double snr_db;            /* 10 log10(sum ||a||^2 / sum ||b - a||^2), +inf if exact */
    double min_wx_cosine;     /* NaN when no 2-D weight in the layer */
} qbh_verify_layer;

/* Per-layer aggregates of r, in layer order, as a qbh_alloc'd array
 * (*n entries; NULL with *n = 0 when r has no layer tensors). Returns
 * QB_OK or QB_E_NOMEM. */
qb_status qbh_verify_layers(const qbh_verify_result *r, qbh_verify_layer **out, size_t *n);

/* Indexes of the (up to) k compared tensors with the largest rel_rmse,
 * worst first, into idx[k]; returns how many. */
size_t qbh_verify_worst(const qbh_verify_result *r, size_t *idx, size_t k);

/* Writes the per-tensor table then the summary (text). */
void qbh_verify_print_table(FILE *f, const qbh_verify_result *r);
/* Writes the summary only: problems, worst tensors, per-layer means and
 * the verdict line. */
void qbh_verify_print_summary(FILE *f, const qbh_verify_result *r);
/* The result as a JSON document (NUL-terminated, free with cJSON_free), or
 * NULL on OOM. Non-finite numbers are written as null. */
char *qbh_verify_json(const qbh_verify_result *r);
/* Writes the self-contained HTML report to `path` atomically: a temporary
 * file in the same directory, fsync, rename. No network references; the
 * charts are inline SVG and the sortable table uses a small inline
 * script. QB_E_IO naming the path on failure (nothing left behind). */
qb_status qbh_verify_write_html(const qbh_verify_result *r, const char *path);

/* ---- report_sections.c ------------------------------------------------------ */

/* HTML sections of the report, each self-contained (report.c lays
 * them out): the conversion settings (the converted directory's
 * manifest.json, when it has one), the versions of quantbridge and both
 * readers, and the date the report was made. Writes to f; a missing or
 * unreadable manifest is said on the page, never an error. Main thread. */
void qbh_verify_html_settings(FILE *f, const qbh_verify_result *r);

/* A summary per projection type (q k v o gate up down experts other), a
 * histogram of per-tensor relative RMSE on a log axis fitted to the data,
 * and the tensors split into exact (its writer declares it, or
 * bit-equal) and requantized or rounded ones with the rule each was
 * judged by (both lists folded). Writes to f. Main thread. */
void qbh_verify_html_classes(FILE *f, const qbh_verify_result *r);

/* The projection type of a canonical tensor name: "q", "k", "v", "o",
 * "gate", "up", "down", "experts" (any tensor of a routed expert) or
 * "other". Static string. Pure. */
const char *qbh_verify_proj_group(const char *name);

/* ---- model_check.c ---------------------------------------------------------- */

/* The model verdict (docs/verify.md, "Model verdict"): the converted
 * model's KL mean against the source, KL_c, placed against the baseline
 * model's, KL_b (the plain absmax rule at the converted model's own
 * grids, qbh_vb_model above). */
typedef enum qbh_mc_verdict {
    QBH_MCV_NONE = 0,  /* no verdict: the baseline was not computed (why) */
    QBH_MCV_EXACT,     /* every grid tensor declared exact and passing */
    QBH_MCV_BETTER,    /* KL_c < 0.9 KL_b */
    QBH_MCV_EXPECTED,  /* KL_c <= 1.1 KL_b + 1e-3 */
    QBH_MCV_WORSE,     /* above that, up to the defect band */
    QBH_MCV_DEFECT     /* KL_c > 1.5 KL_b + 0.01 + 2 defect_se: fails the
                          verification */
} qbh_mc_verdict;

/* The bands (docs/verify.md, "Model verdict" says why these). */
#define QBH_MCV_BETTER_FACTOR 0.9
#define QBH_MCV_EXPECTED_FACTOR 1.1
#define QBH_MCV_EXPECTED_SLACK 1e-3
#define QBH_MCV_DEFECT_FACTOR 1.5
#define QBH_MCV_DEFECT_SLACK 0.01
#define QBH_MCV_DEFECT_SIGMAS 2.0 /* standard errors beyond the band */

/* One model's logits against the source's over the check's tokens. */
typedef struct qbh_mc_stats {
    double kl_mean, kl_p99, kl_max, top1_agreement, logits_cosine_min;
    double ppl, ppl_ratio;    /* from text: its perplexity and / the source's */
} qbh_mc_stats;

/* verify's model check: the forward pass of source and converted model
 * over one token sequence, and the baseline model's for the verdict. */
typedef struct qbh_model_check {
    int ran;                  /* 0: skipped (skipped says why) */
    char skipped[256];
    int64_t *tokens;          /* the ids used (qbh_alloc) */
    size_t n_tokens;
    double *kl;               /* per position KL(src || conv), nats */
    double *cosine;           /* per position logits cosine */
    double kl_mean, kl_p99, kl_max, top1_agreement, logits_cosine_min;
    double max_kl, min_top1;  /* the user's limits; NaN: none */
    int pass;                 /* 1 unless a user limit is exceeded or
                                 the verdict is QBH_MCV_DEFECT */
    char reason[384];         /* why not pass */
    /* Tokens from text (--text, --text-file or the built-in sample,
     * through --tokenizer's, the source's or the converted model's
     * tokenizer.json): perplexity exp(mean NLL of token t+1 at position
     * t, t = 0..n-2, natural log) of both models and converted / source.
     * from_text 0: ids (given or fixed), no perplexity. */
    int from_text;
    double ppl_src, ppl_conv, ppl_ratio;
    char tokenizer[1024];     /* the directory whose tokenizer.json gave
                                 the ids ("" for ids) */
    char tokens_note[1024];   /* why fixed ids although no --tokens was
                                 given (no or an unsupported tokenizer); "" */
    /* The verdict. */
    qbh_mc_verdict verdict;
    int base_ran;             /* the baseline pass ran: base holds it */
    qbh_mc_stats base;        /* the baseline model against the source */
    char base_note[512];      /* why no baseline ("" when it ran) */
    double defect_se;         /* standard error of the mean of the paired
                                 per-position KL_c - 1.5 KL_b (INFINITY
                                 below 2 positions) */
    int bits;                 /* the grids' common code width (0: mixed) */
    int64_t group_size;       /* their common group size (0: mixed) */
    size_t n_grid;            /* converted tensors on a grid */
    char words[1024];         /* the verdict in words */
} qbh_model_check;

/* What the model check runs on and how it judges. */
typedef struct qbh_mc_opts {
    const int64_t *tokens;    /* given ids (--tokens), or NULL */
    size_t n_tokens;
    const char *text;         /* given text (--text, --text-file's), or NULL */
    const char *text_what;    /* names it in messages ("--text", "--text-file F") */
    const char *tokenizer;    /* --tokenizer DIR, or NULL: the models' */
    double max_kl, min_top1;  /* the user's limits; NaN: none */
    int exact_codes;          /* every grid tensor of the converted model is
                                 declared exact and passed (qbh_verify_exact_codes):
                                 verdict QBH_MCV_EXACT, no baseline pass */
    qb_linear_backend_open_fn linears; /* opened over each model of the check
                                 (model.h: the linears a backend serves run
                                 through it), or NULL: dense rows only; the
                                 commands wire the kernels' CPU backend in */
} qbh_mc_opts;

/* Number of tokens and seed of the default sequence. */
#define QBH_MC_DEFAULT_TOKENS 32

/* No tokens, text or tokenizer given, no limits, exact_codes 0. */
void qbh_mc_opts_default(qbh_mc_opts *o);

/* Fills `ids` with the default fixed sequence for a vocabulary of `vocab`:
 * bos (when 0 <= bos < vocab) then splitmix64 ids, deterministic. */
void qbh_mc_default_tokens(int64_t vocab, int64_t bos, int64_t *ids, size_t n);

/* Runs the check into *mc (zeroed first). o->tokens given: those ids.
 * o->text given: its ids through o->tokenizer's, else the source's, else
 * the converted model's tokenizer.json, an error (QB_E_NOT_FOUND,
 * QB_E_UNSUPPORTED naming the component, ...) when there is none or the
 * encoder refuses it. Neither: the built-in sample text
 * (qbh_tok_sample_text) the same way, falling back to the fixed sequence
 * (mc->tokens_note says why) when no tokenizer encodes it, unless
 * o->tokenizer was given (then an error). Then the verdict: exact codes
 * (o->exact_codes), or a third pass over the source through the
 * baseline model's filter (none, with the reason in base_note, when the
 * converted model has no grid or the baseline cannot be formed). An
 * architecture the forward pass cannot run is not an error: mc->ran = 0
 * with the reason. Errors (a read failure, QB_E_NOMEM, QB_E_CANCELLED)
 * are returned with the message set. Free with qbh_model_check_free. Main
 * thread; uses the pool. */
qb_status qbh_model_check_run(qbh_source *src, qbh_source *conv, const qbh_mc_opts *o,
                              qbh_model_check *mc);
void qbh_model_check_free(qbh_model_check *mc);
/* Short text block (or the skip line) on f, the verdict line last. */
void qbh_model_check_print(FILE *f, const qbh_model_check *mc);
/* The HTML report's section (report.c): a heading, the summary
 * line, the verdict, an inline SVG of KL and 1 - logits cosine per
 * position, using the report's chart classes. Writes nothing else; never
 * fails. */
void qbh_model_check_html(FILE *f, const qbh_model_check *mc);
/* Adds "model_check" and, when it ran, "model_verdict" to the cJSON
 * object `root` (a cJSON *, passed as void so this header needs no
 * cJSON). Returns 0, or -1 on OOM. */
int qbh_model_check_json(const qbh_model_check *mc, void *root);

/* `convert --verify`: runs the check with the default text (or fixed
 * ids), no limits and o's exact_codes on the open src and conv and prints
 * the block (or the skip line) on f. Returns an error of the run
 * (message set), else QB_OK with *pass 0 when the verdict is a defect
 * (mc reason printed); *judged and why_not as qbh_mc_judges says. */
qb_status qbh_model_check_report(FILE *f, qbh_source *src, qbh_source *conv, int exact_codes,
                                 qb_linear_backend_open_fn linears, int *pass, int *judged,
                                 char *why_not, size_t why_cap);

/* ---- verdict.c -------------------------------------------------------------- */

/* Places mc's converted KL mean against its baseline (mc->base_ran) or
 * takes the exact-codes verdict, and fills verdict, words, and for a
 * defect pass = 0 and reason. With neither, QBH_MCV_NONE and words from
 * base_note. Pure. */
void qbh_mc_verdict_decide(qbh_model_check *mc, int exact_codes);
/* "exact_codes", "better_than_baseline", "as_expected",
 * "worse_than_baseline", "defect", "no_baseline". Pure. */
const char *qbh_mc_verdict_name(qbh_mc_verdict v);
/* The verdict line ("model verdict: ...") on f. */
void qbh_mc_verdict_print(FILE *f, const qbh_model_check *mc);
/* A worse-than-baseline verdict as a warning on stderr (qbh_log), so it
 * is seen with --json too; other verdicts: nothing. */
void qbh_mc_verdict_warn(const qbh_model_check *mc);
/* 1 when mc judges a converted model at its output: it ran and placed it
 * against its baseline (a verdict other than QBH_MCV_NONE). Else 0 and
 * why (n bytes) says what kept it from judging: mc NULL, the check is off
 * (naming off_option, the option that turned it off), skipped or without
 * a baseline (their reasons). Pure. */
int qbh_mc_judges(const qbh_model_check *mc, const char *off_option, char *why, size_t n);
/* Adds "model_verdict" to the cJSON object root. 0, or -1 on OOM. */
int qbh_mc_verdict_json(const qbh_model_check *mc, void *root);
/* The verdict as an HTML paragraph and a small table. Never fails. */
void qbh_mc_verdict_html(FILE *f, const qbh_model_check *mc);

#endif /* QBH_VERIFY_ENGINE_H */
