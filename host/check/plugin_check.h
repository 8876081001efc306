/*
 * quantbridge plugin-check — `quantbridge plugin-check LIB`, the conformance kit
 * (docs/plugin-design.md, "Conformance: plugin-check"): host/check
 * (qbh_check), used by host/cli's cmd_plugin_check.c.
 *
 * Every check runs in a forked child (plugin_check_child.c): the child
 * loads the library itself, runs one check and reports one result down a
 * pipe; the parent, which never loads the library, survives a crash or a
 * hang and names the check and what the child was doing. The children
 * talk a line protocol:
 *   "C <text>"        what the child does now (and a heartbeat: each line
 *                      restarts the parent's timeout)
 *   "V <key> <value>" a value for the parent (counts, the plugin's name)
 *   "R <PASS|FAIL|SKIP> <text>"  the result; the child exits after it
 */
#ifndef QBH_PLUGIN_CHECK_H
#define QBH_PLUGIN_CHECK_H

#include "qbh.h"

/* Oldest ABI the host serves (plugin_load.c offers the same range). */
#define QBH_PC_ABI_MIN QB_MAKE_ABI(QB_ABI_MAJOR, 0)

typedef enum qbh_pc_verdict {
    QBH_PC_PASS = 0,
    QBH_PC_FAIL = 1,
    QBH_PC_SKIP = 2,
} qbh_pc_verdict;

/* What one run of plugin-check works with. Filled by the parent before any
 * child starts; children read it. */
typedef struct qbh_pc_session {
    char *lib;          /* canonical path of the library */
    char *sample;       /* --sample as given, or NULL */
    double timeout_s;   /* per child, restarted by each "C" line */
    char *tmp;          /* scratch directory, removed at the end */
    char *tokenizer;    /* tmp/tokenizer: side files for the writer runs */
    char *keep_output;  /* --keep-output DIR (created empty by the parent), or NULL */
    int verbose;
} qbh_pc_session;

/* ---- plugin_check_child.c: running one check in a child ------------------ */

#define QBH_PC_MSG 2048
#define QBH_PC_MAX_VALUES 16

/* What the parent learnt from one child. */
typedef struct qbh_pc_outcome {
    qbh_pc_verdict verdict;
    char msg[QBH_PC_MSG];
    char ctx[512];                 /* the last "C" line */
    size_t n_values;
    char keys[QBH_PC_MAX_VALUES][32];
    char values[QBH_PC_MAX_VALUES][256];
} qbh_pc_outcome;

/* A check body, run in the child. It reports through qbh_pc_ctx /
 * qbh_pc_value / qbh_pc_result; returning without a result is a FAIL. */
typedef void (*qbh_pc_child_fn)(const qbh_pc_session *s, void *arg);

/* Forks, runs fn(s, arg) in the child (stdout goes to stderr there, the
 * default action for crash signals is restored, the child _exits) and
 * waits for its result: at most s->timeout_s between two lines, then the
 * child is killed. A crash, a timeout or an exit without a result is a
 * FAIL whose message says so and names the child's last context. Returns
 * out->verdict. Main thread of a single-threaded process only (fork). */
qbh_pc_verdict qbh_pc_run(const qbh_pc_session *s, qbh_pc_child_fn fn, void *arg,
                          qbh_pc_outcome *out);
/* The value `key` of an outcome, or NULL. */
const char *qbh_pc_value_of(const qbh_pc_outcome *o, const char *key);

/* Child side: report what is being done now, a value, the result (which
 * ends the child: _exit(0)). Text is one line (newlines become spaces). */
void qbh_pc_ctx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void qbh_pc_value(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qbh_pc_result(qbh_pc_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Child side: fn(arg) runs after the result line is sent and before the
 * child exits (NULL: nothing), so that what a check opened is released
 * (a reader's temporary files). A crash in it cannot change the result
 * the parent already has. Replaces the previous hook. */
void qbh_pc_at_result(void (*fn)(void *), void *arg);

/* ---- plugin_check_load.c: the library, entry and descriptor -------------- */

/* Child side: opens the library (ELF check, dlopen as the host does,
 * entry symbol), calls the entry with the host range [1.0, host_max] and
 * validates the descriptor with qbh_plugin_validate; on success fills *p
 * as qbh_plugin_load would (state OK, desc, abi, services, read_lock),
 * with a config section of the plugin's own name and no options. Any
 * failure ends the child with a FAIL result. */
void qbh_pc_child_load(const qbh_pc_session *s, qbh_plugin *p);

/* Check bodies (arg: none, except negotiation: the minor, as uintptr_t). */
void qbh_pc_check_load(const qbh_pc_session *s, void *arg);
void qbh_pc_check_negotiation(const qbh_pc_session *s, void *arg);
void qbh_pc_check_descriptor(const qbh_pc_session *s, void *arg);
void qbh_pc_check_options(const qbh_pc_session *s, void *arg);

/* Child side: the parameter array of the plugin's `role`
 * (QB_OPTION_ROLE_READER or _WRITER) with every option declared for it at
 * its default (qbh_params_build, no config values, no command line).
 * Ends the child with a FAIL when it cannot be built. */
void qbh_pc_default_params(const qbh_plugin *p, uint32_t role, qbh_params *out);

/* ---- plugin_check_probe.c ------------------------------------------------ */

/* The probe checks, one body per input family; arg: const char * naming
 * it ("file", "dir", "empty", "missing", "random", "truncated", "sample"). */
void qbh_pc_check_probe(const qbh_pc_session *s, void *arg);

/* ---- plugin_check_reader.c ----------------------------------------------- */

/* The reader contract on --sample; arg: const char * naming the part
 * ("open", "rows", "grid", "concurrent", "close"). */
void qbh_pc_check_reader(const qbh_pc_session *s, void *arg);

/* ---- plugin_check_model.c: the generated model --------------------------- */

typedef struct qbh_pc_model qbh_pc_model;

/* A small llama-shaped model (one layer, hidden 128, vocab 256, untied,
 * the linear weights with a 4-bit symmetric grid) served as a qb_model_src
 * computed on the fly, with every qb_model_facts field known and
 * `tokenizer_dir` (may be NULL) as its tokenizer directory. QB_E_NOMEM.
 * Its memory is plain malloc, outside the host's allocation counts. */
qb_status qbh_pc_model_new(const char *tokenizer_dir, qbh_pc_model **out);
const qb_model_src *qbh_pc_model_src(const qbh_pc_model *m);
void qbh_pc_model_free(qbh_pc_model *m);
/* The generated model as the host's open-source record, for the host code
 * that takes one (qbh_plan_make, qbh_verify_sources): reader "plugin-check",
 * path "plugin-check", no reader handle. Valid while m lives; never passed
 * to qbh_source_close. */
void qbh_pc_model_source(qbh_pc_model *m, qbh_source *out);

/* ---- plugin_check_writer.c ----------------------------------------------- */

/* What a writer run checks besides the conversion. */
typedef enum qbh_pc_writer_mode {
    QBH_PC_CONVERT = 0, /* the conversion, disturbed or not */
    QBH_PC_PLAN,        /* writer-plan: plan held against the conversion */
    QBH_PC_READBACK,    /* writer-readback: the output read back and verified */
} qbh_pc_writer_mode;

/* How a writer run is disturbed. */
typedef struct qbh_pc_writer_run {
    long fail_after;      /* >= 0: qbh_alloc_fail_after(fail_after) from begin on */
    long long write_limit;/* >= 0: the sink takes this many bytes, then fails */
    long long clean_bytes;/* bytes of the undisturbed run (with write_limit) */
    int fault_family;     /* -1, or a qbh_fault_family whose call fault_at fails */
    long fault_at;
    qbh_pc_writer_mode mode;
} qbh_pc_writer_run;

/* One conversion of the generated model through the writer into a fresh
 * directory under s->tmp (readback: s->keep_output when given); arg:
 * const qbh_pc_writer_run *. Undisturbed, it reports the values "allocs"
 * (allocations from begin to the end of finish), "bytes" (file data the
 * sink took), "create_calls", "write_calls", "close_calls" and
 * "service_calls" (fallible sink and service calls from begin on). Every run also fails on a host-service object
 * (JSON tree, listing) the writer left live, named by the call that made
 * it. */
void qbh_pc_check_writer(const qbh_pc_session *s, void *arg);

#endif /* QBH_PLUGIN_CHECK_H */
