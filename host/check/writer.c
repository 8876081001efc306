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
 * whatever it returns, and no abort follows a failed finish), no
 * host-service object (JSON tree, directory listing) live, named by the
 * call that made it (host/objects.c). The same holds when one sink call
 * (create, write, close) or one other host service call fails
 * (qbh_testhook_fault).
 *
 * Two more runs hold the writer to what it says and to what it wrote: the
 * plan (qb_writer_vtable.plan, ABI 1.2) against the conversion -- the
 * same acceptance, an entry for every tensor begin's order writes, the
 * planned bytes against the bytes the sink received; and the output read
 * back through the writer's declared verify reader and judged by verify's
 * rules (host/verify, qbh_verify_sources; docs/verify.md, "The rule"), so
 * a writer that stores wrong values fails.
 */
#include "plugin_check.h"
#include "pipeline.h"
#include "verify.h"

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
    long calls[QBH_FAULT_FAMILIES]; /* fallible sink and service calls from begin on */
    char hit[128];        /* the call made to fail, "" when none was reached */
    size_t objects;       /* host-service objects live when the writer's part ended */
    char leaks[1024];     /* ... described */
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
    int f;
    w->made0 = qbh_alloc_made();
    w->refused0 = qbh_alloc_refused();
    if (w->run->write_limit >= 0)
        qbh_testhook_write_limit(w->run->write_limit);
    if (w->run->fail_after >= 0)
        qbh_alloc_fail_after(w->run->fail_after);
    for (f = 0; f < QBH_FAULT_FAMILIES; f++)
        qbh_testhook_fault_arm((qbh_fault_family)f,
                               w->run->fault_family == f ? w->run->fault_at : -1);
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
    qbh_objects_set_call(stage);
    if (n)
        qbh_pc_ctx("%s (%zu of %zu)", stage, i, n);
    else
        qbh_pc_ctx("%s", stage);
}

/* The writer's part is over: disarm, and count what it allocated. */
static void pc_writer_done(void *ctx)
{
    pc_watch *w = ctx;
    int f;
    qbh_alloc_fail_after(-1);
    qbh_testhook_write_limit(-1);
    w->made = qbh_alloc_made() - w->made0;
    w->refused = qbh_alloc_refused() - w->refused0;
    for (f = 0; f < QBH_FAULT_FAMILIES; f++) {
        const char *hit = qbh_testhook_fault_hit((qbh_fault_family)f);
        w->calls[f] = qbh_testhook_fault_calls((qbh_fault_family)f);
        if (hit)
            snprintf(w->hit, sizeof w->hit, "%s", hit);
        qbh_testhook_fault_arm((qbh_fault_family)f, -1);
    }
    w->objects = qbh_objects_describe(w->leaks, sizeof w->leaks);
    qbh_objects_set_call(NULL);
}

/* The writer's part left host-service objects live: FAIL naming them. */
static void objects_left(const pc_watch *w, const char *after)
{
    if (w->objects)
        qbh_pc_result(QBH_PC_FAIL, "%s%zu host-service object(s) left live (never freed): %s",
                      after, w->objects, w->leaks);
}

/* The reader the writer names for its output (qb_writer_caps.verify_reader):
 * p when that is p's own reader, else NULL with *named set to the name (NULL
 * when it names none). */
static qbh_plugin *verify_reader(qbh_plugin *p, const char **named)
{
    const qb_plugin *d = p->desc;
    const char *vr = NULL;
    if (QB_HAS_FIELD(d, qb_plugin, writer_caps) && d->writer_caps &&
        QB_HAS_FIELD(d->writer_caps, qb_writer_caps, verify_reader))
        vr = d->writer_caps->verify_reader;
    *named = vr;
    if (vr && strcmp(vr, d->name) == 0 && d->reader)
        return p;
    return NULL;
}

/* writer-readback: the output in dir through the writer's verify reader,
 * compared with the generated model under verify's rules. */
static void readback(const qbh_pc_session *s, qbh_plugin *p, qbh_pc_model *m, const char *dir,
                     const qbh_plan *plan)
{
    const char *named = NULL;
    qbh_plugin *rp = verify_reader(p, &named);
    qbh_source gen, conv;
    qbh_params pp;
    qbh_verify_opts o;
    qbh_verify_result *res = NULL;
    char why[2048] = "";
    size_t i;
    (void)s;
    if (!rp && !named)
        qbh_pc_result(QBH_PC_SKIP, "the writer names no verify reader (qb_writer_caps."
                      "verify_reader, ABI 1.1): its output cannot be read back");
    if (!rp)
        qbh_pc_result(QBH_PC_SKIP, "the writer's verify reader is %s, another plugin: "
                      "plugin-check reads the output back only through the library's own "
                      "reader", named);
    qbh_pc_model_source(m, &gen);
    qbh_pc_default_params(rp, QB_OPTION_ROLE_READER, &pp);
    memset(&conv, 0, sizeof conv);
    qbh_pc_ctx("open of the output by reader %s", rp->name);
    qbh_objects_set_call("open (the verify reader, on the output)");
    if (qbh_source_open(rp, dir, pp.items, &conv) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "the writer's verify reader %s cannot open what the writer "
                      "wrote: %s", rp->name, qbh_error_message());
    qbh_verify_opts_default(&o);
    o.plan = plan && plan->has_actions ? plan : NULL;
    qbh_pc_ctx("verify of the output read back through %s", rp->name);
    /* A failure is reported after close: the check child ends in _exit, so
     * what the reader made at open (a temporary directory) goes only
     * through close. */
    if (qbh_verify_sources(&gen, &conv, &o, &res) != QB_OK)
        snprintf(why, sizeof why, "reading the output back through %s failed: %s", rp->name,
                 qbh_error_message());
    else /* no model check here: an activation-aware rule's tensor cannot be judged */
        qbh_verify_settle_output(res, 0, "but plugin-check runs no model check (run "
                                 "quantbridge verify on the kept output)");
    for (i = 0; res && !why[0] && i < res->n; i++) {
        const qbh_verify_tensor *t = &res->t[i];
        if (t->state != QBH_VT_OK)
            snprintf(why, sizeof why, "read back through %s, %s is %s: %s (verify's rules, "
                     "docs/verify.md)", rp->name, t->name,
                     t->state == QBH_VT_FAIL      ? "wrong"
                     : t->state == QBH_VT_MISSING ? "missing"
                     : t->state == QBH_VT_EXTRA   ? "extra"
                                                  : "of another shape",
                     t->reason[0] ? t->reason : "values differ");
    }
    qbh_pc_ctx("close of the output's reader");
    qbh_source_close(&conv);
    qbh_params_free(&pp);
    if (why[0])
        qbh_pc_result(QBH_PC_FAIL, "%s", why);
    qbh_pc_result(QBH_PC_PASS, "%zu tensors read back through reader %s pass verify's rules "
                  "(%zu exact)%s%s", res->n_compared, rp->name, res->n_exact,
                  s->keep_output ? "; output kept in " : "",
                  s->keep_output ? s->keep_output : "");
}

/* writer-plan: the plan held against the conversion that followed. */
static void plan_verdict(const qbh_plan *plan, qb_status prc, const char *pmsg,
                         long plan_left, qb_status rc, const char *stage, const char *msg,
                         const qbh_convert_outcome *o, const qb_model_src *src)
{
    size_t i, n = src->info->n_tensors;
    unsigned char *seen;
    if (plan_left)
        qbh_pc_result(QBH_PC_FAIL, "plan left %ld host allocation(s) live", plan_left);
    if (prc != QB_OK && rc == QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "plan refused the generated model (%s) but begin, "
                      "write_tensor and finish converted it", pmsg);
    if (prc == QB_OK && rc != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "plan accepted the generated model but %s refused it: %s",
                      stage, msg[0] ? msg : "(no message)");
    if (prc != QB_OK)
        qbh_pc_result(QBH_PC_PASS, "plan and the conversion both refuse the generated model");
    seen = calloc(n ? n : 1, 1);
    if (!seen)
        qbh_pc_result(QBH_PC_FAIL, "plugin-check: out of memory");
    for (i = 0; i < plan->n; i++)
        seen[plan->items[i].tensor] = 1;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti = NULL;
        src->tensor_info(src->handle, i, &ti);
        if (!seen[i])
            qbh_pc_result(QBH_PC_FAIL, "plan has no entry for %s, which begin's order writes "
                          "(qb_writer.h: an entry per source tensor, omit included)",
                          ti ? ti->name : "?");
    }
    free(seen);
    if (plan->bytes_out > o->bytes)
        qbh_pc_result(QBH_PC_FAIL, "plan promises %llu bytes of tensor data but the sink "
                      "received %llu bytes in all", (unsigned long long)plan->bytes_out,
                      (unsigned long long)o->bytes);
    /* Beyond the tensor data a writer writes headers, an index, a
     * manifest: small next to the data of any model, and never more than
     * the data itself plus 1 MiB on the generated one. */
    if (o->bytes - plan->bytes_out > plan->bytes_out + ((uint64_t)1 << 20))
        qbh_pc_result(QBH_PC_FAIL, "plan promises %llu bytes of tensor data but the sink "
                      "received %llu: more than the planned data again plus 1 MiB is not "
                      "accounted for", (unsigned long long)plan->bytes_out,
                      (unsigned long long)o->bytes);
    qbh_pc_result(QBH_PC_PASS, "plan accepts what the conversion accepts; %zu entries for the %zu "
                  "tensors; %llu planned bytes of tensor data, %llu received by the sink",
                  plan->n, n, (unsigned long long)plan->bytes_out, (unsigned long long)o->bytes);
}

void qbh_pc_check_writer(const qbh_pc_session *s, void *arg)
{
    const qbh_pc_writer_run *run = arg;
    const int disturbed =
        run->fail_after >= 0 || run->write_limit >= 0 || run->fault_family >= 0;
    const qb_model_src *src;
    qbh_pc_model *m = NULL;
    qbh_convert_request rq;
    qbh_convert_hooks hooks;
    qbh_convert_outcome o;
    qbh_params pp;
    qbh_plugin p;
    qbh_plan plan;
    qbh_source gen;
    pc_watch w;
    size_t n;
    long live0, made, refused, leaked, plan_left = 0;
    char stage[600], msg[QBH_PC_MSG], pmsg[QBH_PC_MSG] = "", archs[512], *dir;
    qb_status rc, prc = QB_OK;

    qbh_objects_track(1);
    qbh_pc_child_load(s, &p);
    if (caps_without_llama(p.desc, archs, sizeof archs))
        qbh_pc_result(QBH_PC_FAIL, "the writer declares the architectures %s; plugin-check "
                      "converts a generated llama model and cannot check this writer", archs);
    if (qbh_pc_model_new(s->tokenizer, &m) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "%s", qbh_error_message());
    src = qbh_pc_model_src(m);
    n = src->info->n_tensors;
    qbh_pc_default_params(&p, QB_OPTION_ROLE_WRITER, &pp);
    if (run->mode == QBH_PC_READBACK && s->keep_output) {
        dir = s->keep_output;
    } else {
        dir = g_strdup_printf("%s/writer-XXXXXX", s->tmp);
        if (!g_mkdtemp(dir))
            qbh_pc_result(QBH_PC_FAIL, "cannot create %s: %s", dir, strerror(errno));
        qbh_pc_value("dir", "%s", dir); /* the parent removes it, whatever happens here */
    }

    /* The plan first, as `convert` asks for it before anything is written. */
    memset(&plan, 0, sizeof plan);
    if (run->mode != QBH_PC_CONVERT) {
        const qb_writer_vtable *wv = p.desc->writer;
        if (run->mode == QBH_PC_PLAN && !(QB_HAS_FIELD(wv, qb_writer_vtable, plan) && wv->plan))
            qbh_pc_result(QBH_PC_SKIP, "the writer has no plan entry (qb_writer_vtable.plan, "
                          "ABI 1.2)");
        qbh_pc_model_source(m, &gen);
        qbh_pc_ctx("plan");
        qbh_objects_set_call("plan");
        live0 = qbh_alloc_live();
        prc = qbh_plan_make(&p, &gen, pp.items, &plan);
        snprintf(pmsg, sizeof pmsg, "%s", prc ? qbh_error_message() : "");
        if (run->mode == QBH_PC_PLAN) {
            /* what the plan itself kept, apart from the host's record of it */
            qbh_plan p2 = plan;
            qbh_plan_free(&p2);
            plan_left = qbh_alloc_live() - live0;
            memset(&plan, 0, sizeof plan);
            live0 = qbh_alloc_live();
            if (prc == QB_OK)
                prc = qbh_plan_make(&p, &gen, pp.items, &plan);
        }
        qbh_objects_set_call(NULL);
    }

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
    if (run->mode == QBH_PC_PLAN)
        plan_verdict(&plan, prc, pmsg, plan_left, rc, stage, msg, &o, src);
    if (run->mode == QBH_PC_READBACK) {
        if (rc != QB_OK)
            qbh_pc_result(QBH_PC_FAIL, "the conversion failed in %s: %s", stage, msg);
        readback(s, &p, m, dir, &plan);
    }

    if (!disturbed) {
        if (rc != QB_OK)
            qbh_pc_result(QBH_PC_FAIL, "%s failed (%s): %s", stage, qbh_status_name(rc),
                          msg[0] ? msg : "(no message set)");
        if (o.open_files)
            qbh_pc_result(QBH_PC_FAIL, "finish returned with %zu sink file(s) still open",
                          o.open_files);
        /* first: a leaked tree or listing is host allocations too, and
         * its maker is the better name */
        objects_left(&w, "finish returned with ");
        if (leaked)
            qbh_pc_result(QBH_PC_FAIL, "finish left %ld host allocation(s) live (qb_writer.h: "
                          "finish releases everything the handle owns)", leaked);
        if (o.n_files == 0)
            qbh_pc_result(QBH_PC_FAIL, "finish succeeded but the writer wrote no file");
        qbh_pc_value("allocs", "%ld", made);
        qbh_pc_value("bytes", "%llu", (unsigned long long)o.bytes);
        qbh_pc_value("create_calls", "%ld", w.calls[QBH_FAULT_CREATE]);
        qbh_pc_value("write_calls", "%ld", w.calls[QBH_FAULT_WRITE]);
        qbh_pc_value("close_calls", "%ld", w.calls[QBH_FAULT_CLOSE]);
        qbh_pc_value("service_calls", "%ld", w.calls[QBH_FAULT_SERVICE]);
        qbh_pc_result(QBH_PC_PASS,
                      "supports() %d; begin, %zu write_tensor, finish: %zu files, "
                      "%llu bytes, %ld host allocations, all released",
                      o.score, n, o.n_files, (unsigned long long)o.bytes, made);
    }
    qbh_pc_value("stage", "%s", rc == QB_OK ? "none" : stage);
    qbh_pc_value("hit", "%s", w.hit[0] ? w.hit : "none");
    if (rc == QB_OK) {
        if (run->fail_after >= 0 && refused > 0)
            qbh_pc_result(QBH_PC_FAIL, "the conversion succeeded although host allocation %ld "
                          "was refused", run->fail_after + 1);
        if (run->write_limit >= 0 && (long long)o.bytes < run->clean_bytes)
            qbh_pc_result(QBH_PC_FAIL,
                          "the conversion succeeded although the sink failed: %llu "
                          "bytes written, %lld without the limit",
                          (unsigned long long)o.bytes, run->clean_bytes);
        /* A file that cannot be read may be an optional one the writer
         * does without; every other failed call leaves the output short. */
        if (w.hit[0] && strcmp(w.hit, "read_small_file") != 0 && strcmp(w.hit, "list_dir") != 0)
            qbh_pc_result(QBH_PC_FAIL, "the conversion succeeded although %s failed (its "
                          "failure was ignored)", w.hit);
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
    if (rc != QB_OK) {
        char after[700];
        snprintf(after, sizeof after, "after a failed %s, ", stage);
        objects_left(&w, after);
    } else {
        objects_left(&w, "finish returned with ");
    }
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
