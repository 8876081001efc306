/*
 * quantbridge pipeline (host/pipeline, qbh_pipeline) — one conversion,
 * driven the one way every caller needs it: `convert` (host/cli),
 * plugin-check's writer checks (host/check) and the tests.
 *
 *   reader (format or probe) -> options routed -> output path checked ->
 *   open + model info -> tokenizer stated -> writer's declared
 *   architectures -> supports -> required facts -> plan -> temp dir +
 *   sink -> begin -> write_tensor in begin's order -> finish -> side files
 *   (writers that ask the host) -> sync -> rename into place
 *
 * Any failure: writer abort (never after finish, which releases the writer
 * whatever it returns: qb_writer.h), temp dir removed, final path untouched,
 * the message naming the file and tensor in the calling thread's error
 * slot. A signal (SIGINT/SIGTERM, qbh_signals_install) cancels the same way.
 * The pipeline prints nothing: what a command shows comes from the outcome
 * and the hooks.
 */
#ifndef QBH_PIPELINE_H
#define QBH_PIPELINE_H

#include "qbh.h"

/* ---- plan.c: the writer's plan of a conversion (convert --dry-run) ---- */

/* One planned output of a source tensor (qb_plan_entry, copied). */
typedef struct qbh_plan_item {
    size_t tensor;
    uint32_t action;   /* qb_plan_action; 0: unknown */
    char *target;      /* or NULL */
    char *reason;
    int64_t group_size;
    uint64_t bytes_out;
} qbh_plan_item;

/* What the writer says it will do, with totals. */
typedef struct qbh_plan {
    const char *writer;  /* the writer plugin's name (not owned) */
    int has_actions;     /* the writer has the ABI 1.2 plan entry */
    size_t n_tensors;    /* source tensors */
    qbh_plan_item *items;
    size_t n, cap;
    char *group_size, *group_reason; /* the writer's group_size setting, or NULL */
    size_t count[6];     /* items per action (index: qb_plan_action, 0 unknown) */
    uint64_t weights;        /* elements of every source tensor */
    uint64_t quant_weights;  /* elements of exact + requant tensors */
    uint64_t exact_weights;  /* elements of exact tensors */
    uint64_t bytes_in;       /* the source's bytes on disk (file, or a directory's files) */
    uint64_t bytes_out;      /* planned tensor bytes of the output */
} qbh_plan;

/* Asks `writer` for its plan of the open source `src` with its options
 * `params` (writer role): the writer's plan entry when it has one (ABI
 * 1.2), else every tensor with action unknown. Reads no tensor data and
 * writes nothing. Errors: what the writer's plan returns (its message, or
 * one naming the writer), QB_E_INVALID for a malformed entry, QB_E_NOMEM.
 * On failure *out is empty. Free with qbh_plan_free. Main thread. */
qb_status qbh_plan_make(const qbh_plugin *writer, const qbh_source *src, const qb_param *params,
                        qbh_plan *out);
void qbh_plan_free(qbh_plan *p);
/* "exact", "requant", "convert", "copy", "omit", or "unknown". Pure. */
const char *qbh_plan_action_name(uint32_t action);
/* exact_weights / quant_weights, 0 when nothing is quantized. Pure. */
double qbh_plan_exact_share(const qbh_plan *p);
/* The plan as text (one line per tensor, then totals) on f. */
void qbh_plan_print(const qbh_plan *p, const qbh_source *src, FILE *f);
/* The plan as a JSON document {"tensors": [...], "totals": {...}, ...};
 * malloc'd text (free), NULL with QB_E_NOMEM set. */
char *qbh_plan_json(const qbh_plan *p, const qbh_source *src);

/* What to convert and where. */
typedef struct qbh_convert_request {
    /* The source: a path, its reader chosen by `format` (NULL or "auto":
     * probe) among reg's and opened with the reader's options of `cli` ... */
    const char *source;
    const char *format;
    const qbh_registry *reg;
    /* ... or an open model (plugin-check's generated one), written as it
     * is: no reader, no side-file, tokenizer or plan steps. */
    const qb_model_src *model;
    /* The writer: a loaded plugin, or one of reg's by name (NULL: the
     * caller's default_writer, whose absence is said as such). */
    qbh_plugin *writer_plugin;
    const char *writer;
    const char *default_writer;
    /* User options: routed to the reader and the writer that declare them
     * (qbh_params_route); with a model, writer_params instead. */
    qbh_opt *cli;
    size_t n_cli;
    const qb_param *writer_params;
    /* Where: `output`, a new directory written through a temporary one
     * beside it and renamed into place (overwrite: replacing a non-empty
     * one at the end) ... */
    const char *output;
    int overwrite;
    /* ... or `sink_dir`, an existing directory written in place: no
     * rename, no sync, no side files, no progress (plugin-check). */
    const char *sink_dir;
    const char *tokenizer; /* tokenizer files to carry instead of the source's, or NULL */
    int dry_run;           /* stop after the plan (outcome.plan); write nothing */
} qbh_convert_request;

/* Where a caller looks in while the pipeline runs. Every member may be
 * NULL. Called on the calling thread. */
typedef struct qbh_convert_hooks {
    void *ctx;
    /* The writer's supports() answer and its own message ("" when none),
     * before the pipeline judges it (<= 0 stops the conversion). */
    void (*supported)(void *ctx, int score, const char *why);
    /* The plan is made and the writing is about to start (source mode,
     * not a dry run): `convert` prints the group size. */
    void (*planned)(void *ctx, const qbh_plan *plan);
    /* After planned (source mode, not a dry run), before the writer's
     * begin: `convert --calibration / --imatrix` computes the activation
     * statistics here and attaches them (src->act, qb_stats.h). A failure
     * (message set) stops the conversion. */
    qb_status (*prepare)(void *ctx, qbh_source *src);
    /* The sink is open; begin comes next: plugin-check starts counting
     * allocations and arms its failure injection here. */
    void (*before_begin)(void *ctx);
    /* A writer call starts: "begin", "write_tensor NAME" (i of n, from 1),
     * "finish", "abort" (i and n 0 but for write_tensor). */
    void (*stage)(void *ctx, const char *stage, size_t i, size_t n);
    /* The writer's part is over (finish or abort returned, or begin
     * failed), before anything is released: plugin-check disarms here. */
    void (*writer_done)(void *ctx);
} qbh_convert_hooks;

/* What happened. Zeroed by qbh_convert; free with qbh_convert_end. */
typedef struct qbh_convert_outcome {
    qbh_plugin *reader, *writer; /* as chosen (reader NULL with a model) */
    qbh_source src;              /* source mode: open after success, until qbh_convert_end */
    qbh_params rp, wp;           /* the parameters routed to reader and writer */
    qbh_plan plan;               /* source mode: the writer's plan */
    int usage;                   /* the failure is a usage error (exit 2) */
    int score;                   /* supports() */
    char stage[600];             /* the writer call that failed ("" when none did) */
    char writer_msg[2048];       /* the writer's own message of that failure ("" none) */
    int begin_set_handle;        /* begin failed and still set its handle */
    int bad_order;               /* begin's order was not a permutation */
    size_t n_tensors, n_files, open_files; /* the sink's closed and still open files */
    uint64_t bytes;              /* file data the sink took */
    double seconds;              /* since the progress clock started */
    uint64_t peak_rss;
} qbh_convert_outcome;

/* Runs the conversion rq describes, calling hooks (may be NULL) on the way.
 * QB_OK: the output is complete at rq->output (or rq->sink_dir), or, with
 * dry_run, out->plan holds the plan; in source mode out->src stays open
 * (for `convert --verify`) until qbh_convert_end. On failure everything
 * the pipeline opened is released (the source, the temporary directory,
 * the writer's handle) and the message names what failed; out->usage
 * says when it is a usage error, out->stage and out->writer_msg what the
 * writer said. Errors: every step's (the reader's, the writer's, the
 * sink's, QB_E_CANCELLED, QB_E_NOMEM), with a message of the pipeline's
 * when a writer failed without one (output mode). Main thread only. */
qb_status qbh_convert(const qbh_convert_request *rq, const qbh_convert_hooks *hooks,
                      qbh_convert_outcome *out);

/* Closes the source and frees the plan and parameters of out (a zeroed or
 * already ended outcome is a no-op). */
void qbh_convert_end(qbh_convert_outcome *out);

#endif /* QBH_PIPELINE_H */
