/*
 * quantbridge host — activation statistics for `convert` (calibrate.c,
 * calib_text.c, imatrix.c): computed by the forward pass over calibration
 * text, or read from llama.cpp's importance matrix, and attached to the
 * source for writers (qb_stats.h, qbh_source.act).
 */
#ifndef QBH_CALIBRATE_H
#define QBH_CALIBRATE_H

#include "qbh.h"
#include "model.h"

/* Statistics of source s over the token ids[0..n_ids) (calibrate.c):
 * sequences of 256 tokens, each led by ids[0], through the CPU forward
 * pass without the head; per observed linear the mean x_j^2 of each input
 * column. origin names them (qbh_actstats.origin). Errors: the forward
 * pass's (architecture, reader), QB_E_INVALID (fewer than 2 ids),
 * QB_E_NOMEM; *out NULL then. Main thread; uses the pool. */
qb_status qbh_calibrate_ids(qbh_source *s, const int64_t *ids, size_t n_ids, const char *origin,
                            qbh_actstats **out);

/* Tokens per calibration sequence: attention costs grow with its square,
 * and llama.cpp's imatrix tool defaults to chunks of 512. */
#define QBH_CALIB_SEQ 256

/* The Hessian budget without `convert --hessian-budget`: 1 GiB of float32
 * matrices at once (Gemma 3 270M needs 0.5 GiB in one pass). */
#define QBH_HESS_BUDGET_DEFAULT ((uint64_t)1 << 30)

/* One calibration pass: ids[0..n_ids) cut into sequences of QBH_CALIB_SEQ
 * tokens, each led by ids[0], through the CPU forward pass without the head,
 * every linear's input shown to ob. Errors: the forward pass's, QB_E_NOMEM.
 * Main thread; uses the pool. */
qb_status qbh_calibrate_run(qbh_source *s, const int64_t *ids, size_t n_ids,
                            const qbh_fwd_observer *ob);

/* qbh_hess.pass (hessian.c): the Hessian of every linear covered by s's
 * statistics, by as many calibration passes as the budget needs, spilled
 * to a temporary file. docs/fidelity.md, "GPTQ". */
qb_status qbh_hessian_pass(qbh_source *s, qbh_hess *hs);

/* `--calibration what`: "builtin" (qbh_calib_builtin_text) or a UTF-8
 * text file (at most 64 MiB), encoded with tokenizer_dir's tokenizer.json
 * (NULL: the source's), then qbh_calibrate_ids. Errors: QB_E_NOT_FOUND
 * when there is no tokenizer (naming --tokenizer) or no file, the
 * tokenizer's, qbh_calibrate_ids's. Main thread. */
qb_status qbh_calibrate(qbh_source *s, const char *tokenizer_dir, const char *what,
                        qbh_actstats **out);

/* The built-in calibration text (calib_text.c): prose in several
 * languages, code and numbers, written for this project. Static. */
const char *qbh_calib_builtin_text(void);

/* `--imatrix FILE` (imatrix.c): llama.cpp's importance matrix, in its GGUF
 * form (keys "<tensor>.in_sum2" and "<tensor>.counts", F32) or the legacy
 * binary .dat, its tensor names ("blk.N.attn_q.weight") mapped to the
 * source's canonical names; per tensor the mean x_j^2 = sum / count.
 * docs/fidelity.md, "Importance from llama.cpp". Errors name the file and
 * entry: QB_E_FORMAT (truncated or malformed, a column count that does not
 * match the tensor), QB_E_NOT_FOUND (no file; a name that maps to no tensor
 * of the source), QB_E_NOMEM. Main thread. */
qb_status qbh_imatrix_load(const qbh_source *s, const char *path, qbh_actstats **out);

/* Writes a's statistics to `path` as llama.cpp's legacy imatrix (.dat,
 * the layout qbh_imatrix_load reads: ncall = the token count, values =
 * mean * ncall), each tensor under its stored name in s's raw view when it
 * has exactly one, else its canonical name; so `--imatrix` reads it back
 * and llama-quantize can use it for a GGUF source. Errors: QB_E_IO naming
 * the file, QB_E_NOMEM. Main thread. */
qb_status qbh_imatrix_save(const qbh_source *s, const qbh_actstats *a, const char *path);

#endif /* QBH_CALIBRATE_H */
