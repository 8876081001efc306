/*
 * quantbridge pipeline — one conversion (pipeline.h): the reader chosen and
 * opened, the writer checked and planned, the writer driven through the
 * sink into a temporary directory renamed into place; or, for
 * plugin-check, an open model driven through a writer into a directory.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The writer rq names (or its plugin). NULL with the message set. */
static qbh_plugin *pick_writer(const qbh_convert_request *rq, int *usage_err)
{
    const char *name = rq->writer;
    qbh_plugin *p;
    if (rq->writer_plugin)
        return rq->writer_plugin;
    p = qbh_registry_find(rq->reg, name ? name : rq->default_writer);
    if (!name && !p) {
        qbh_error_set(QB_E_NOT_FOUND,
                      "default writer %s is not configured (see `quantbridge "
                      "plugins`); name one with --writer",
                      rq->default_writer);
        return NULL;
    }
    if (!name)
        name = rq->default_writer;
    if (!p || (p->state == QBH_LOAD_OK && !p->desc->writer)) {
        *usage_err = 1;
        qbh_error_set(QB_E_NOT_FOUND,
                      "--writer %s: no writer plugin of that name (see "
                      "`quantbridge plugins`)",
                      name);
        return NULL;
    }
    if (p->state != QBH_LOAD_OK) {
        qbh_error_set(QB_E_UNSUPPORTED, "writer %s is %s: %s", name,
                      p->state == QBH_LOAD_DISABLED ? "disabled" : "not loaded",
                      p->error ? p->error : "enabled=false in its config");
        return NULL;
    }
    return p;
}

/* 1 when order[0..n) is a permutation of 0..n-1; seen: n bytes of scratch
 * (allocated before begin: nothing here may meet plugin-check's
 * allocation failures, which are the writer's to meet). */
static int is_permutation(const size_t *order, size_t n, unsigned char *seen)
{
    size_t i;
    memset(seen, 0, n ? n : 1);
    for (i = 0; i < n; i++) {
        if (order[i] >= n || seen[order[i]])
            return 0;
        seen[order[i]] = 1;
    }
    return 1;
}

/* Per source tensor: planned output bytes (units of progress) and weights. */
static uint64_t *plan_units(const qbh_plan *plan, const qbh_source *src, uint64_t *total)
{
    uint64_t *u = qbh_calloc(src->info.n_tensors ? src->info.n_tensors : 1, sizeof *u);
    size_t i;
    uint32_t d;
    *total = 0;
    if (!u)
        return NULL;
    for (i = 0; i < plan->n && plan->has_actions; i++)
        u[plan->items[i].tensor] += plan->items[i].bytes_out;
    for (i = 0; i < src->info.n_tensors && !plan->has_actions; i++)
        for (u[i] = 1, d = 0; d < src->tensors[i].n_dims; d++)
            u[i] *= (uint64_t)src->tensors[i].dims[d];
    for (i = 0; i < src->info.n_tensors; i++)
        *total += u[i];
    return u;
}

static uint64_t weights_of(const qb_tensor_info *ti)
{
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < ti->n_dims; d++)
        n *= (uint64_t)ti->dims[d];
    return n;
}

/* A writer call failed: keeps the writer's own message and stage, and
 * gives the failure a message of its own when the writer set none (output
 * mode; plugin-check judges the silence itself). */
static void writer_failed(const qbh_convert_request *rq, qbh_convert_outcome *out,
                          const char *stage, qb_status rc, const char *fmt, const char *a,
                          const char *b)
{
    snprintf(out->stage, sizeof out->stage, "%s", stage);
    snprintf(out->writer_msg, sizeof out->writer_msg, "%s", qbh_error_message());
    if (rq->output && !out->writer_msg[0])
        qbh_error_set(rc, fmt, a, b, qbh_status_name(rc));
}

static void stage(const qbh_convert_hooks *hk, const char *what, size_t i, size_t n)
{
    if (hk && hk->stage)
        hk->stage(hk->ctx, what, i, n);
}

/* Source mode up to the open source: reader, writer, options, paths,
 * tokenizer. *side: the writer's side-file capability. */
static qb_status open_source(const qbh_convert_request *rq, qbh_convert_outcome *out,
                             uint32_t *side)
{
    qbh_probe_score *scores = NULL;
    size_t n_scores = 0, i;
    qb_status rc;

    rc = qbh_select_reader(rq->reg, rq->source, rq->format, &out->reader, &scores, &n_scores,
                           &out->usage);
    if (rc) {
        for (i = 0; i < n_scores; i++)
            qbh_log(QB_LOG_INFO, NULL, "probe %s: %d", scores[i].plugin->name, scores[i].score);
        goto out;
    }
    out->writer = pick_writer(rq, &out->usage);
    if (!out->writer) {
        rc = qbh_error_code();
        goto out;
    }
    *side = qbh_writer_side_files(out->writer->desc);
    if (rq->tokenizer && !*side) {
        out->usage = 1;
        rc = qbh_error_set(QB_E_UNSUPPORTED,
                           "--tokenizer %s: writer %s does not carry "
                           "tokenizer files (it declares no side-file capability; see "
                           "`quantbridge plugins`)",
                           rq->tokenizer, out->writer->name);
        goto out;
    }
    /* Every option is validated before anything is opened or written. */
    rc = qbh_params_route(out->reader, out->writer, rq->cli, rq->n_cli, &out->rp, &out->wp,
                          &out->usage);
    if (rc)
        goto out;
    if (rq->output) {
        rc = qbh_outdir_check(rq->source, rq->output, rq->overwrite);
        if (rc == QB_OK)
            rc = qbh_outdir_check_parent(rq->output, "--output");
        if (rc)
            goto out;
    }
    /* A run killed earlier (SIGKILL) may have left its temp dir here
     * (a dry run removes nothing either). */
    if (!rq->dry_run)
        qbh_outdir_reap_stale(rq->output);
    if (rq->tokenizer) {
        struct stat st;
        if (stat(rq->tokenizer, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rc = qbh_error_set(QB_E_NOT_FOUND, "--tokenizer %s: not a directory", rq->tokenizer);
            goto out;
        }
    }
    qbh_log(QB_LOG_INFO, NULL, "reader %s, writer %s", out->reader->name, out->writer->name);

    rc = qbh_source_open(out->reader, rq->source, out->rp.items, &out->src);
    if (rc)
        goto out;
    /* A tokenizer the reader refused stops a conversion whose writer
     * carries tokenizer files, unless --tokenizer gives them; one it
     * skipped at the user's request is said once, here, when nothing
     * replaces it. */
    if (*side && !rq->tokenizer && out->src.info.tokenizer_state == QB_TOKENIZER_REFUSED) {
        rc = qbh_source_tokenizer_refused(&out->src);
        goto out;
    }
    if (*side && !rq->tokenizer && out->src.info.tokenizer_state == QB_TOKENIZER_SKIPPED)
        qbh_log(QB_LOG_WARN, NULL, "%s: %s: the output gets no tokenizer.json", rq->source,
                out->src.info.tokenizer_note);
    if (rq->tokenizer)
        out->src.info.tokenizer_dir = rq->tokenizer;
    if (!*side && (out->src.info.tokenizer_dir || out->src.info.chat_template))
        qbh_log(QB_LOG_WARN, NULL,
                "writer %s does not carry side files: the source's %s%s%s "
                "will not be in %s",
                out->writer->name, out->src.info.tokenizer_dir ? "tokenizer files" : "",
                out->src.info.tokenizer_dir && out->src.info.chat_template ? " and " : "",
                out->src.info.chat_template ? "chat template" : "", rq->output);
out:
    qbh_free(scores);
    return rc;
}

/* The writer's checks of the model before anything is written: declared
 * architectures, supports(), required facts. */
static qb_status writer_checks(const qbh_convert_request *rq, const qbh_convert_hooks *hk,
                               const qb_model_src *model, qbh_convert_outcome *out)
{
    const char *source = model->source_path;
    const qb_model_info *mi = model->info;
    char why[1024];
    qb_status rc = qbh_writer_check_arch(out->writer, mi, source);
    if (rc)
        return rc;
    qbh_error_clear();
    QBH_CALL(out->writer, "supports", source,
             out->score = out->writer->desc->writer->supports(out->writer->desc->ctx, mi));
    snprintf(why, sizeof why, "%s", qbh_error_message());
    if (hk && hk->supported)
        hk->supported(hk->ctx, out->score, why);
    if (out->score <= 0) {
        snprintf(out->stage, sizeof out->stage, "supports");
        snprintf(out->writer_msg, sizeof out->writer_msg, "%s", why);
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: writer %s cannot write this %s model: %s",
                             rq->source ? rq->source : source, out->writer->name, mi->architecture,
                             why[0] ? why : "no reason given");
    }
    return qbh_writer_check_facts(out->writer, mi, source);
}

/* begin, write_tensor in begin's order, finish (abort after a failure
 * before finish): the drive loop `convert` and plugin-check share.
 * order and seen: n entries each, allocated by the caller before the sink
 * opened. */
static qb_status drive(const qbh_convert_request *rq, const qbh_convert_hooks *hk,
                       const qb_model_src *model, const qb_param *wparams, qbh_sink *sink,
                       size_t *order, unsigned char *seen, qbh_convert_outcome *out)
{
    const qb_writer_vtable *wv = out->writer->desc->writer;
    const char *wname = out->writer->name;
    size_t i, n = model->info->n_tensors;
    uint64_t *units = NULL, units_total = 0, units_done = 0, weights_total = 0, weights_done = 0;
    qb_writer_handle wh = NULL;
    char what[600];
    qb_status rc = QB_OK;
    int progress = rq->output && !rq->model;

    if (progress) {
        units = plan_units(&out->plan, &out->src, &units_total);
        if (!units)
            return qbh_error_set(QB_E_NOMEM, "out of memory");
        for (i = 0; i < n; i++)
            weights_total += weights_of(&out->src.tensors[i]);
        qbh_progress_start(units_total, weights_total);
    }
    if (hk && hk->before_begin)
        hk->before_begin(hk->ctx);
    stage(hk, "begin", 0, 0);
    qbh_error_clear();
    QBH_CALL(out->writer, "begin", NULL,
             rc = wv->begin(out->writer->desc->ctx, qbh_sink_table(sink), model, wparams, order,
                            &wh));
    if (rc) {
        out->begin_set_handle = wh != NULL;
        wh = NULL;
        writer_failed(rq, out, "begin", rc, "%s: writer %s: begin failed (%s)",
                      rq->source ? rq->source : model->source_path, wname);
        goto done;
    }
    if (!is_permutation(order, n, seen)) {
        out->bad_order = 1;
        snprintf(out->stage, sizeof out->stage, "begin");
        rc = qbh_error_set(QB_E_INTERNAL,
                           "writer %s: begin returned an order that is not a "
                           "permutation of the %zu tensors",
                           wname, n);
        goto done;
    }
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti = NULL;
        model->tensor_info(model->handle, order[i], &ti);
        snprintf(what, sizeof what, "write_tensor %s", ti ? ti->name : "?");
        if (qbh_cancel_requested()) {
            rc = qbh_error_set(QB_E_CANCELLED, "cancelled by signal before tensor %s",
                               ti ? ti->name : "?");
            goto done;
        }
        stage(hk, what, i + 1, n);
        qbh_error_clear();
        QBH_CALL(out->writer, "write_tensor", ti ? ti->name : "?",
                 rc = wv->write_tensor(wh, order[i]));
        if (rc) {
            writer_failed(rq, out, what, rc, "%s: writer %s: write_tensor failed (%s)",
                          ti ? ti->name : "?", wname);
            goto done;
        }
        if (progress) {
            units_done += units[order[i]];
            weights_done += weights_of(&out->src.tensors[order[i]]);
            qbh_progress_tensor(i + 1, n, ti->name, qbh_sink_bytes(sink), units_done, weights_done);
        }
        qbh_testhook_tensor_done(i + 1);
    }
    stage(hk, "finish", 0, 0);
    qbh_error_clear();
    QBH_CALL(out->writer, "finish", NULL, rc = wv->finish(wh));
    wh = NULL; /* finish frees the handle, success or not: no abort after it */
    if (rc)
        writer_failed(rq, out, "finish", rc, "%s: writer %s: finish failed (%s)",
                      rq->output ? rq->output : rq->sink_dir, wname);
done:
    if (wh) {
        /* abort may call host services that overwrite this thread's
         * message; keep the one that explains the failure. */
        char keep[2048];
        qb_status code = qbh_error_code();
        snprintf(keep, sizeof keep, "%s", qbh_error_message());
        stage(hk, "abort", 0, 0);
        QBH_CALL(out->writer, "abort", NULL, wv->abort(wh));
        qbh_error_set(code, "%s", keep);
    }
    if (hk && hk->writer_done)
        hk->writer_done(hk->ctx);
    qbh_free(units);
    return rc;
}

/* After finish (output mode): side files, durability, the rename. */
static qb_status complete(const qbh_convert_request *rq, qbh_convert_outcome *out, qbh_sink *sink,
                          uint32_t side, qbh_outdir *od)
{
    qb_status rc;
    if (qbh_sink_open_files(sink))
        return qbh_error_set(QB_E_INTERNAL,
                             "writer %s finished with %zu output file(s) still "
                             "open",
                             out->writer->name, qbh_sink_open_files(sink));
    if (side == QB_WRITER_SIDE_FILES_HOST && !rq->model &&
        (rc = qbh_side_files_write(sink, &out->src.info, out->writer->name)))
        return rc;
    if (qbh_cancel_requested())
        return qbh_error_set(QB_E_CANCELLED, "cancelled");
    if ((rc = qbh_sink_sync(sink)))
        return rc;
    /* Past here a SIGBUS must not remove anything: the rename may move the
     * directory to the final path. */
    qbh_fatal_arm(NULL);
    if ((rc = qbh_outdir_commit(od)))
        return rc;
    /* complete: a fault from here on (the source's close comes last)
     * keeps it, saying so */
    qbh_fatal_output_complete(od->final_path);
    qbh_progress_done();
    return QB_OK;
}

qb_status qbh_convert(const qbh_convert_request *rq, const qbh_convert_hooks *hk,
                      qbh_convert_outcome *out)
{
    const qb_model_src *model = rq->model;
    const qb_param *wparams = rq->writer_params;
    qbh_outdir od;
    qbh_sink *sink = NULL;
    size_t *order = NULL, n;
    unsigned char *seen = NULL;
    uint32_t side = 0;
    qb_status rc;

    memset(out, 0, sizeof *out);
    memset(&od, 0, sizeof od);
    if (model) {
        out->writer = pick_writer(rq, &out->usage);
        if (!out->writer)
            return qbh_error_code();
    } else {
        if ((rc = open_source(rq, out, &side)))
            goto out;
        model = &out->src.src;
        wparams = out->wp.items;
    }
    n = out->n_tensors = model->info->n_tensors;
    if ((rc = writer_checks(rq, hk, model, out)))
        goto out;
    /* The writer's plan: shown by --dry-run, the totals of progress and
     * summary otherwise (nothing written either way). */
    if (!rq->model) {
        if ((rc = qbh_plan_make(out->writer, &out->src, wparams, &out->plan)))
            goto out;
        if (rq->dry_run)
            goto out;
        if (hk && hk->planned)
            hk->planned(hk->ctx, &out->plan);
        /* activation statistics for the writer (qb_stats.h): the
         * caller's, attached to the source before begin */
        if (hk && hk->prepare && (rc = hk->prepare(hk->ctx, &out->src)))
            goto out;
    }
    order = qbh_calloc(n ? n : 1, sizeof *order);
    seen = qbh_calloc(n ? n : 1, 1);
    if (!order || !seen) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    if (qbh_cancel_requested()) {
        rc = qbh_error_set(QB_E_CANCELLED, "cancelled");
        goto out;
    }
    if (rq->output) {
        if ((rc = qbh_outdir_begin(rq->output, rq->overwrite, &od)))
            goto out;
        qbh_fatal_arm(od.tmp_path);
        if ((rc = qbh_sink_open(od.tmp_path, &sink)) ||
            (rc = qbh_sink_set_shown(sink, od.final_path)))
            goto out;
    } else if ((rc = qbh_sink_open(rq->sink_dir, &sink))) {
        goto out;
    }
    rc = drive(rq, hk, model, wparams, sink, order, seen, out);
    if (rc == QB_OK && rq->output)
        rc = complete(rq, out, sink, side, &od);
out:
    if (sink) {
        out->open_files = qbh_sink_open_files(sink);
        out->n_files = qbh_sink_closed_files(sink);
        out->bytes = qbh_sink_bytes(sink);
        qbh_sink_free(sink);
    }
    if (rq->output && !rq->model) {
        qbh_fatal_arm(NULL);
        qbh_outdir_abort(&od);
    }
    out->seconds = qbh_progress_elapsed();
    out->peak_rss = qbh_peak_rss();
    qbh_free(order);
    qbh_free(seen);
    if (rc)
        qbh_convert_end(out);
    return rc;
}

void qbh_convert_end(qbh_convert_outcome *out)
{
    qbh_source_close(&out->src);
    qbh_params_free(&out->rp);
    qbh_params_free(&out->wp);
    qbh_plan_free(&out->plan);
}
