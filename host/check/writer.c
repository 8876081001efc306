/*
 * quantbridge plugin-check — one conversion through the writer.
 *
 * The generated model (model.c) goes through the writer by the pipeline
 * `convert` runs (host/pipeline, qbh_convert: supports, begin,
 * write_tensor in begin's order, finish; abort after a failed begin's
 * successor calls) into the host's sink over a scratch directory, watched
 * through its hooks. The parent runs it once undisturbed, then
 * with the sink failing after a byte budget (qbh_testhook_write_limit) and
 * with the host allocator refusing from the k-th allocation on
 * (qbh_alloc_fail_after), each in its own child. Whatever fails, the
 * writer must say so with a message and end the handle having released
 * everything: no host allocation live that was not live before begin, no
 * sink file open (qb_writer.h: abort frees the handle; finish frees it
 * whatever it returns, and no abort follows a failed finish).
 */
#include "plugin_check.h"
#include "pipeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

/* The writer's declared architectures, when they leave llama out. */
static const char *caps_without_llama(const qb_plugin *d, char *buf, size_t cap)
{
    const qb_writer_caps *c;
    size_t i, used = 0;
    if (!QB_HAS_FIELD(d, qb_plugin, writer_caps) || !d->writer_caps)
        return NULL;
    c = d->writer_caps;
    if (!QB_HAS_FIELD(c, qb_writer_caps, architectures) || !c->architectures)
        return NULL;
    buf[0] = '\0';
    for (i = 0; c->architectures[i]; i++) {
        if (strcmp(c->architectures[i], "llama") == 0)
            return NULL;
        if (used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "",
                                     c->architectures[i]);
    }
    return buf;
}

/* What a writer run watches through the pipeline's hooks. */
typedef struct pc_watch {
    const qbh_pc_writer_run *run;
    char stage[600];      /* the last writer call started */
    long made0, refused0; /* host allocations at begin */
    long made, refused;   /* ... made and refused from begin to the writer's end */
} pc_watch;

/* supports(): a score outside 1..100 ends the check (FAIL). */
static void pc_supported(void *ctx, int score, const char *why)
{
    (void)ctx;
    if (score <= 0 || score > 100)
        qbh_pc_result(QBH_PC_FAIL, "supports() answers %d for the generated llama model%s%s", score,
                      why[0] ? ": " : "", why);
}

/* The sink is open, begin is next: count from here, arm the disturbance. */
static void pc_before_begin(void *ctx)
{
    pc_watch *w = ctx;
    w->made0 = qbh_alloc_made();
    w->refused0 = qbh_alloc_refused();
    if (w->run->write_limit >= 0)
        qbh_testhook_write_limit(w->run->write_limit);
    if (w->run->fail_after >= 0)
        qbh_alloc_fail_after(w->run->fail_after);
}

/* Each writer call: the child's context line (the parent names it when
 * the child dies). */
static void pc_stage(void *ctx, const char *stage, size_t i, size_t n)
{
    pc_watch *w = ctx;
    if (strcmp(stage, "abort") == 0) {
        qbh_pc_ctx("abort after a failed %s", w->stage);
        return;
    }
    snprintf(w->stage, sizeof w->stage, "%s", stage);
    if (n)
        qbh_pc_ctx("%s (%zu of %zu)", stage, i, n);
    else
        qbh_pc_ctx("%s", stage);
}

/* The writer's part is over: disarm, and count what it allocated. */
static void pc_writer_done(void *ctx)
{
    pc_watch *w = ctx;
    qbh_alloc_fail_after(-1);
    qbh_testhook_write_limit(-1);
    w->made = qbh_alloc_made() - w->made0;
    w->refused = qbh_alloc_refused() - w->refused0;
}

void qbh_pc_check_writer(const qbh_pc_session *s, void *arg)
{
    const qbh_pc_writer_run *run = arg;
    const int disturbed = run->fail_after >= 0 || run->write_limit >= 0;
    const qb_model_src *src;
    qbh_pc_model *m = NULL;
    qbh_convert_request rq;
    qbh_convert_hooks hooks;
    qbh_convert_outcome o;
    qbh_params pp;
    qbh_plugin p;
    pc_watch w;
    size_t n;
    long live0, made, refused, leaked;
    char stage[600], msg[QBH_PC_MSG], archs[512], *dir;
    qb_status rc;

    qbh_pc_child_load(s, &p);
    if (caps_without_llama(p.desc, archs, sizeof archs))
        qbh_pc_result(QBH_PC_FAIL, "the writer declares the architectures %s; plugin-check "
                      "converts a generated llama model and cannot check this writer", archs);
    if (qbh_pc_model_new(s->tokenizer, &m) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "%s", qbh_error_message());
    src = qbh_pc_model_src(m);
    n = src->info->n_tensors;
    qbh_pc_default_params(&p, QB_OPTION_ROLE_WRITER, &pp);
    dir = g_strdup_printf("%s/writer-XXXXXX", s->tmp);
    if (!g_mkdtemp(dir))
        qbh_pc_result(QBH_PC_FAIL, "cannot create %s: %s", dir, strerror(errno));
    qbh_pc_value("dir", "%s", dir); /* the parent removes it, whatever happens here */

    /* The conversion `convert` runs (host/pipeline), on the generated
     * model, into the scratch directory, watched through the hooks. */
    memset(&rq, 0, sizeof rq);
    memset(&hooks, 0, sizeof hooks);
    memset(&w, 0, sizeof w);
    w.run = run;
    snprintf(w.stage, sizeof w.stage, "supports");
    rq.model = src;
    rq.writer_plugin = &p;
    rq.writer_params = pp.items;
    rq.sink_dir = dir;
    hooks.ctx = &w;
    hooks.supported = pc_supported;
    hooks.before_begin = pc_before_begin;
    hooks.stage = pc_stage;
    hooks.writer_done = pc_writer_done;
    qbh_pc_ctx("supports");
    live0 = qbh_alloc_live();
    rc = qbh_convert(&rq, &hooks, &o);
    leaked = qbh_alloc_live() - live0;
    qbh_params_free(&pp);
    made = w.made;
    refused = w.refused;
    snprintf(stage, sizeof stage, "%s", o.stage[0] ? o.stage : w.stage);
    snprintf(msg, sizeof msg, "%s", o.stage[0] ? o.writer_msg : qbh_error_message());
    if (o.begin_set_handle)
        qbh_pc_result(QBH_PC_FAIL, "begin failed (%s) but set its handle (qb_writer.h: *out is "
                      "NULL on failure)", qbh_status_name(rc));
    if (o.bad_order)
        qbh_pc_result(QBH_PC_FAIL,
                      "begin returned an order that is not a permutation of the "
                      "%zu tensors",
                      n);

    if (!disturbed) {
        if (rc != QB_OK)
            qbh_pc_result(QBH_PC_FAIL, "%s failed (%s): %s", stage, qbh_status_name(rc),
                          msg[0] ? msg : "(no message set)");
        if (o.open_files)
            qbh_pc_result(QBH_PC_FAIL, "finish returned with %zu sink file(s) still open",
                          o.open_files);
        if (leaked)
            qbh_pc_result(QBH_PC_FAIL, "finish left %ld host allocation(s) live (qb_writer.h: "
                          "finish releases everything the handle owns)", leaked);
        if (o.n_files == 0)
            qbh_pc_result(QBH_PC_FAIL, "finish succeeded but the writer wrote no file");
        qbh_pc_value("allocs", "%ld", made);
        qbh_pc_value("bytes", "%llu", (unsigned long long)o.bytes);
        qbh_pc_result(QBH_PC_PASS,
                      "supports() %d; begin, %zu write_tensor, finish: %zu files, "
                      "%llu bytes, %ld host allocations, all released",
                      o.score, n, o.n_files, (unsigned long long)o.bytes, made);
    }
    qbh_pc_value("stage", "%s", rc == QB_OK ? "none" : stage);
    if (rc == QB_OK) {
        if (run->fail_after >= 0 && refused > 0)
            qbh_pc_result(QBH_PC_FAIL, "the conversion succeeded although host allocation %ld "
                          "was refused", run->fail_after + 1);
        if (run->write_limit >= 0 && (long long)o.bytes < run->clean_bytes)
            qbh_pc_result(QBH_PC_FAIL,
                          "the conversion succeeded although the sink failed: %llu "
                          "bytes written, %lld without the limit",
                          (unsigned long long)o.bytes, run->clean_bytes);
    } else {
        if (!msg[0])
            qbh_pc_result(QBH_PC_FAIL, "%s failed (%s) without a message (host->set_error)",
                          stage, qbh_status_name(rc));
    }
    if (o.open_files)
        qbh_pc_result(QBH_PC_FAIL, "after a failed %s, %s left %zu sink file(s) open", stage,
                      strcmp(stage, "finish") == 0  ? "finish"
                      : strcmp(stage, "begin") == 0 ? "begin"
                                                    : "abort",
                      o.open_files);
    if (leaked)
        qbh_pc_result(QBH_PC_FAIL, "after a failed %s, %s left %ld host allocation(s) live%s", stage,
                      strcmp(stage, "finish") == 0 ? "finish" : strcmp(stage, "begin") == 0
                                                                     ? "begin" : "abort",
                      leaked,
                      strcmp(stage, "finish") == 0 ? " (qb_writer.h: a failed finish releases "
                                                     "everything; no abort follows it)" : "");
    if (rc == QB_OK)
        qbh_pc_result(QBH_PC_PASS, "succeeded (nothing refused)");
    qbh_pc_result(QBH_PC_PASS, "%s failed (%s): %s; everything released", stage,
                  qbh_status_name(rc), msg);
}
