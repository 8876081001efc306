/*
 * quantbridge host — plugin-check: one conversion through the writer.
 *
 * The generated model (plugin_check_model.c) goes through the writer the
 * way `convert` drives it (supports, begin, write_tensor in begin's order,
 * finish; abort after a failed begin's successor calls) into the host's
 * sink over a scratch directory. The parent runs it once undisturbed, then
 * with the sink failing after a byte budget (qbh_testhook_write_limit) and
 * with the host allocator refusing from the k-th allocation on
 * (qbh_alloc_fail_after), each in its own child. Whatever fails, the
 * writer must say so with a message and end the handle having released
 * everything: no host allocation live that was not live before begin, no
 * sink file open (qb_writer.h: abort frees the handle; finish frees it
 * whatever it returns, and no abort follows a failed finish).
 */
#include "plugin_check.h"

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

/* 1 when order[0..n) is a permutation of 0..n-1. */
static int is_permutation(const size_t *order, size_t n)
{
    unsigned char *seen = calloc(n ? n : 1, 1);
    size_t i;
    int ok = seen != NULL;
    for (i = 0; ok && i < n; i++) {
        ok = order[i] < n && !seen[order[i]];
        if (ok)
            seen[order[i]] = 1;
    }
    free(seen);
    return ok;
}

void qbh_pc_check_writer(const qbh_pc_session *s, void *arg)
{
    const qbh_pc_writer_run *run = arg;
    const int disturbed = run->fail_after >= 0 || run->write_limit >= 0;
    const qb_writer_vtable *wv;
    const qb_model_src *src;
    qbh_pc_model *m = NULL;
    qbh_sink *sink = NULL;
    qb_writer_handle wh = NULL;
    qbh_params pp;
    qbh_plugin p;
    size_t *order, i, n, open_files, files;
    long live0, made0, refused0, made, refused, leaked;
    uint64_t bytes;
    char stage[600] = "begin", msg[QBH_PC_MSG], archs[512], *dir;
    qb_status rc;
    int score;

    qbh_pc_child_load(s, &p);
    wv = p.desc->writer;
    if (caps_without_llama(p.desc, archs, sizeof archs))
        qbh_pc_result(QBH_PC_FAIL, "the writer declares the architectures %s; plugin-check "
                      "converts a generated llama model and cannot check this writer", archs);
    if (qbh_pc_model_new(s->tokenizer, &m) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "%s", qbh_error_message());
    src = qbh_pc_model_src(m);
    n = src->info->n_tensors;
    qbh_pc_default_params(&p, QB_OPTION_ROLE_WRITER, &pp);
    dir = g_strdup_printf("%s/writer-XXXXXX", s->tmp);
    order = calloc(n, sizeof *order);
    if (!g_mkdtemp(dir) || !order)
        qbh_pc_result(QBH_PC_FAIL, "cannot create %s: %s", dir, strerror(errno));
    qbh_pc_value("dir", "%s", dir); /* the parent removes it, whatever happens here */

    qbh_pc_ctx("supports");
    qbh_error_clear();
    score = wv->supports(p.desc->ctx, src->info);
    if (score <= 0 || score > 100)
        qbh_pc_result(QBH_PC_FAIL, "supports() answers %d for the generated llama model%s%s", score,
                      qbh_error_message()[0] ? ": " : "", qbh_error_message());

    live0 = qbh_alloc_live();
    if (qbh_sink_open(dir, &sink) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "%s", qbh_error_message());
    made0 = qbh_alloc_made();
    refused0 = qbh_alloc_refused();
    if (run->write_limit >= 0)
        qbh_testhook_write_limit(run->write_limit);
    if (run->fail_after >= 0)
        qbh_alloc_fail_after(run->fail_after);

    qbh_pc_ctx("begin");
    qbh_error_clear();
    rc = wv->begin(p.desc->ctx, qbh_sink_table(sink), src, pp.items, order, &wh);
    if (rc != QB_OK && wh) {
        qbh_alloc_fail_after(-1);
        qbh_pc_result(QBH_PC_FAIL, "begin failed (%s) but set its handle (qb_writer.h: *out is "
                      "NULL on failure)", qbh_status_name(rc));
    }
    if (rc == QB_OK && !is_permutation(order, n)) {
        qbh_alloc_fail_after(-1);
        qbh_pc_result(QBH_PC_FAIL, "begin returned an order that is not a permutation of the "
                      "%zu tensors", n);
    }
    for (i = 0; rc == QB_OK && i < n; i++) {
        const qb_tensor_info *ti = NULL;
        src->tensor_info(src->handle, order[i], &ti);
        snprintf(stage, sizeof stage, "write_tensor %s", ti ? ti->name : "?");
        qbh_pc_ctx("%s (%zu of %zu)", stage, i + 1, n);
        qbh_error_clear();
        rc = wv->write_tensor(wh, order[i]);
    }
    if (rc == QB_OK) {
        snprintf(stage, sizeof stage, "finish");
        qbh_pc_ctx("finish");
        qbh_error_clear();
        rc = wv->finish(wh);
        wh = NULL; /* gone, whatever finish returned */
    }
    snprintf(msg, sizeof msg, "%s", qbh_error_message());
    if (wh) {
        qbh_pc_ctx("abort after a failed %s", stage);
        wv->abort(wh);
        wh = NULL;
    }
    qbh_alloc_fail_after(-1);
    qbh_testhook_write_limit(-1);
    made = qbh_alloc_made() - made0;
    refused = qbh_alloc_refused() - refused0;
    open_files = qbh_sink_open_files(sink);
    files = qbh_sink_closed_files(sink);
    bytes = qbh_sink_bytes(sink);
    qbh_sink_free(sink);
    leaked = qbh_alloc_live() - live0;
    qbh_params_free(&pp);

    if (!disturbed) {
        if (rc != QB_OK)
            qbh_pc_result(QBH_PC_FAIL, "%s failed (%s): %s", stage, qbh_status_name(rc),
                          msg[0] ? msg : "(no message set)");
        if (open_files)
            qbh_pc_result(QBH_PC_FAIL, "finish returned with %zu sink file(s) still open", open_files);
        if (leaked)
            qbh_pc_result(QBH_PC_FAIL, "finish left %ld host allocation(s) live (qb_writer.h: "
                          "finish releases everything the handle owns)", leaked);
        if (files == 0)
            qbh_pc_result(QBH_PC_FAIL, "finish succeeded but the writer wrote no file");
        qbh_pc_value("allocs", "%ld", made);
        qbh_pc_value("bytes", "%llu", (unsigned long long)bytes);
        qbh_pc_result(QBH_PC_PASS, "supports() %d; begin, %zu write_tensor, finish: %zu files, "
                      "%llu bytes, %ld host allocations, all released", score, n, files,
                      (unsigned long long)bytes, made);
    }
    qbh_pc_value("stage", "%s", rc == QB_OK ? "none" : stage);
    if (rc == QB_OK) {
        if (run->fail_after >= 0 && refused > 0)
            qbh_pc_result(QBH_PC_FAIL, "the conversion succeeded although host allocation %ld "
                          "was refused", run->fail_after + 1);
        if (run->write_limit >= 0 && (long long)bytes < run->clean_bytes)
            qbh_pc_result(QBH_PC_FAIL, "the conversion succeeded although the sink failed: %llu "
                          "bytes written, %lld without the limit", (unsigned long long)bytes,
                          run->clean_bytes);
    } else {
        if (!msg[0])
            qbh_pc_result(QBH_PC_FAIL, "%s failed (%s) without a message (host->set_error)",
                          stage, qbh_status_name(rc));
    }
    if (open_files)
        qbh_pc_result(QBH_PC_FAIL, "after a failed %s, %s left %zu sink file(s) open", stage,
                      strcmp(stage, "finish") == 0 ? "finish" : strcmp(stage, "begin") == 0
                                                                     ? "begin" : "abort",
                      open_files);
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
