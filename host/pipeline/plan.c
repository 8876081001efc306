/*
 * quantbridge host — the conversion plan: what the writer will do with
 * every source tensor, asked of the writer (qb_writer_vtable.plan, ABI
 * 1.2), never derived here: exact versus requantized is the target
 * format's knowledge (docs/plugin-design.md, "ABI history"). A writer
 * without the entry gets a plan whose actions are "unknown".
 *
 * Shown by `convert --dry-run` (text or --json) and used by `convert` for
 * the planned totals and the progress denominator.
 */
#include "pipeline.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const action_names[] = {"unknown", "exact", "requant", "convert", "copy",
                                           "omit"};

const char *qbh_plan_action_name(uint32_t a)
{
    return a < sizeof action_names / sizeof action_names[0] ? action_names[a] : "unknown";
}

static qb_status grow(qbh_plan *p)
{
    qbh_plan_item *n;
    size_t cap = p->cap ? p->cap * 2 : 64;
    if (p->n < p->cap)
        return QB_OK;
    n = qbh_alloc(cap * sizeof *n);
    if (!n)
        return qbh_error_set(QB_E_NOMEM, "out of memory planning");
    if (p->n)
        memcpy(n, p->items, p->n * sizeof *n);
    qbh_free(p->items);
    p->items = n;
    p->cap = cap;
    return QB_OK;
}

static qb_status on_tensor(void *handle, const qb_plan_entry *e)
{
    qbh_plan *p = handle;
    qbh_plan_item *it;
    if (!e || e->struct_size < QB_PLAN_ENTRY_SIZE_1_2 || e->tensor >= p->n_tensors)
        return qbh_error_set(QB_E_INVALID, "writer %s: plan entry %s", p->writer,
                             !e || e->struct_size < QB_PLAN_ENTRY_SIZE_1_2
                                 ? "too small for ABI 1.2"
                                 : "names a tensor index outside the source");
    if (grow(p) != QB_OK)
        return QB_E_NOMEM;
    it = &p->items[p->n];
    memset(it, 0, sizeof *it);
    it->tensor = e->tensor;
    /* an action this host does not know is shown as unknown, never guessed */
    it->action = e->action < sizeof action_names / sizeof action_names[0] ? e->action : 0;
    it->group_size = e->group_size;
    it->bytes_out = e->bytes_out;
    it->target = e->target ? qbh_strdup(e->target) : NULL;
    it->reason = qbh_strdup(e->reason ? e->reason : "");
    if ((e->target && !it->target) || !it->reason) {
        qbh_free(it->target);
        qbh_free(it->reason);
        return qbh_error_set(QB_E_NOMEM, "out of memory planning");
    }
    p->n++;
    return QB_OK;
}

static qb_status on_setting(void *handle, const char *key, const char *value, const char *reason)
{
    qbh_plan *p = handle;
    /* one setting the host shows today: the group size */
    if (key && strcmp(key, "group_size") == 0) {
        qbh_free(p->group_size);
        qbh_free(p->group_reason);
        p->group_size = qbh_strdup(value ? value : "");
        p->group_reason = qbh_strdup(reason ? reason : "");
        if (!p->group_size || !p->group_reason)
            return qbh_error_set(QB_E_NOMEM, "out of memory planning");
    }
    return QB_OK;
}

/* Bytes of the source on disk: the file, or a directory's regular files. */
static uint64_t source_bytes(const char *path)
{
    struct stat st;
    uint64_t n = 0;
    DIR *d;
    struct dirent *de;
    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return (uint64_t)st.st_size;
    d = opendir(path);
    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char buf[4096];
        if (de->d_name[0] == '.')
            continue;
        snprintf(buf, sizeof buf, "%s/%s", path, de->d_name);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
            n += (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}

static uint64_t weights_of(const qbh_source *s, size_t i)
{
    const qb_tensor_info *ti = &s->tensors[i];
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < ti->n_dims; d++)
        n *= (uint64_t)ti->dims[d];
    return n;
}

static void add_totals(qbh_plan *p, const qbh_source *s)
{
    size_t i;
    p->bytes_in = source_bytes(s->path);
    for (i = 0; i < p->n; i++) {
        const qbh_plan_item *it = &p->items[i];
        p->count[it->action]++;
        p->bytes_out += it->bytes_out;
        if (it->action == QB_PLAN_EXACT || it->action == QB_PLAN_REQUANT) {
            /* a split tensor's parts share its weights: count them once per part's
             * share of the output bytes would need the rows; the parts of one
             * tensor have one action in practice, so count the tensor once */
            if (i == 0 || p->items[i - 1].tensor != it->tensor) {
                p->quant_weights += weights_of(s, it->tensor);
                if (it->action == QB_PLAN_EXACT)
                    p->exact_weights += weights_of(s, it->tensor);
            }
        }
    }
    for (i = 0; i < p->n_tensors; i++)
        p->weights += weights_of(s, i);
}

qb_status qbh_plan_make(const qbh_plugin *writer, const qbh_source *src, const qb_param *params,
                        qbh_plan *out)
{
    const qb_writer_vtable *wv = writer->desc->writer;
    qb_plan_sink sink;
    qb_status rc = QB_OK;
    size_t i;

    memset(out, 0, sizeof *out);
    out->writer = writer->name;
    out->n_tensors = src->info.n_tensors;
    if (QB_HAS_FIELD(wv, qb_writer_vtable, plan) && wv->plan) {
        out->has_actions = 1;
        memset(&sink, 0, sizeof sink);
        sink.struct_size = sizeof sink;
        sink.handle = out;
        sink.tensor = on_tensor;
        sink.setting = on_setting;
        qbh_error_clear();
        QBH_CALL(writer, "plan", src->path,
                 rc = wv->plan(writer->desc->ctx, &src->src, params, &sink));
        if (rc != QB_OK) {
            if (!qbh_error_message()[0])
                qbh_error_set(rc, "%s: writer %s: plan failed (%s)", src->path, writer->name,
                              qbh_status_name(rc));
            qbh_plan_free(out);
            return rc;
        }
    } else {
        /* no plan entry: every tensor, in source order, without an action */
        for (i = 0; i < src->info.n_tensors && rc == QB_OK; i++) {
            qb_plan_entry e;
            memset(&e, 0, sizeof e);
            e.struct_size = sizeof e;
            e.tensor = i;
            e.reason = "the writer states no plan (no ABI 1.2 plan entry)";
            rc = on_tensor(out, &e);
        }
        if (rc != QB_OK) {
            qbh_plan_free(out);
            return rc;
        }
    }
    add_totals(out, src);
    return QB_OK;
}

void qbh_plan_free(qbh_plan *p)
{
    size_t i;
    for (i = 0; i < p->n; i++) {
        qbh_free(p->items[i].target);
        qbh_free(p->items[i].reason);
    }
    qbh_free(p->items);
    qbh_free(p->group_size);
    qbh_free(p->group_reason);
    memset(p, 0, sizeof *p);
}

double qbh_plan_exact_share(const qbh_plan *p)
{
    return p->quant_weights ? (double)p->exact_weights / (double)p->quant_weights : 0.0;
}

void qbh_plan_print(const qbh_plan *p, const qbh_source *src, FILE *f)
{
    size_t i, ew = strlen("encoding");
    char hb[32], hi[32];
    fprintf(f, "plan: %s (%s) -> writer %s; nothing written\n", src->path,
            src->info.source_format ? src->info.source_format : "?", p->writer);
    if (p->group_size)
        fprintf(f, "group size: %s (%s)\n", p->group_size, p->group_reason);
    /* The encoding column is as wide as its longest entry ("gptq int4 g32
     * sym v1 act-order" would break a fixed width). */
    for (i = 0; i < p->n; i++)
        if (strlen(src->tensors[p->items[i].tensor].source_encoding) > ew)
            ew = strlen(src->tensors[p->items[i].tensor].source_encoding);
    fprintf(f, "%-8s %-*s %6s %10s  %s\n", "action", (int)ew, "encoding", "group", "bytes",
            "tensor: reason");
    for (i = 0; i < p->n; i++) {
        const qbh_plan_item *it = &p->items[i];
        char g[24] = "-";
        if (it->group_size > 0)
            snprintf(g, sizeof g, "%lld", (long long)it->group_size);
        qbh_human_bytes(it->bytes_out, hb, sizeof hb);
        fprintf(f, "%-8s %-*s %6s %10s  %s%s%s%s: %s\n", qbh_plan_action_name(it->action),
                (int)ew, src->tensors[it->tensor].source_encoding, g, p->has_actions ? hb : "?",
                src->tensors[it->tensor].name, it->target ? " -> " : "",
                it->target ? it->target : "", "", it->reason);
    }
    qbh_human_bytes(p->bytes_in, hi, sizeof hi);
    qbh_human_bytes(p->bytes_out, hb, sizeof hb);
    fprintf(f, "totals: %zu tensors: %zu exact, %zu requant, %zu convert, %zu copy, %zu omit",
            p->n_tensors, p->count[QB_PLAN_EXACT], p->count[QB_PLAN_REQUANT],
            p->count[QB_PLAN_CONVERT], p->count[QB_PLAN_COPY], p->count[QB_PLAN_OMIT]);
    if (p->count[0])
        fprintf(f, ", %zu unknown", p->count[0]);
    fprintf(f, "; %.1f %% of quantized weights exact; bytes in %s, out %s%s\n",
            100.0 * qbh_plan_exact_share(p), hi, hb,
            p->has_actions ? " (tensor data)" : " (unknown: no plan)");
}

char *qbh_plan_json(const qbh_plan *p, const qbh_source *src)
{
    cJSON *j = cJSON_CreateObject(), *a, *o, *t;
    char *text = NULL;
    size_t i;
    int ok = j != NULL;
#define ADD(x) ok = ok && (x) != NULL
    ADD(cJSON_AddStringToObject(j, "source", src->path));
    ADD(cJSON_AddStringToObject(j, "source_format",
                                src->info.source_format ? src->info.source_format : ""));
    ADD(cJSON_AddStringToObject(j, "reader", src->reader->name));
    ADD(cJSON_AddStringToObject(j, "writer", p->writer));
    ADD(cJSON_AddBoolToObject(j, "writer_states_actions", p->has_actions));
    ADD(o = cJSON_AddObjectToObject(j, "settings"));
    if (ok && p->group_size) {
        ADD(t = cJSON_AddObjectToObject(o, "group_size"));
        ADD(cJSON_AddStringToObject(t, "value", p->group_size));
        ADD(cJSON_AddStringToObject(t, "reason", p->group_reason));
    }
    ADD(a = cJSON_AddArrayToObject(j, "tensors"));
    for (i = 0; ok && i < p->n; i++) {
        const qbh_plan_item *it = &p->items[i];
        o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(a, o);
        ADD(cJSON_AddStringToObject(o, "name", src->tensors[it->tensor].name));
        ADD(cJSON_AddStringToObject(o, "action", qbh_plan_action_name(it->action)));
        ADD(cJSON_AddStringToObject(o, "reason", it->reason));
        ADD(cJSON_AddStringToObject(o, "source_encoding",
                                    src->tensors[it->tensor].source_encoding));
        if (it->group_size > 0)
            ADD(cJSON_AddNumberToObject(o, "group_size", (double)it->group_size));
        else
            ADD(cJSON_AddNullToObject(o, "group_size"));
        if (it->target)
            ADD(cJSON_AddStringToObject(o, "target", it->target));
        else
            ADD(cJSON_AddNullToObject(o, "target"));
        ADD(cJSON_AddNumberToObject(o, "weights", (double)weights_of(src, it->tensor)));
        ADD(cJSON_AddNumberToObject(o, "bytes_out", (double)it->bytes_out));
    }
    ADD(o = cJSON_AddObjectToObject(j, "totals"));
    ADD(cJSON_AddNumberToObject(o, "tensors", (double)p->n_tensors));
    for (i = 0; ok && i < sizeof action_names / sizeof action_names[0]; i++)
        ADD(cJSON_AddNumberToObject(o, action_names[i], (double)p->count[i]));
    ADD(cJSON_AddNumberToObject(o, "weights", (double)p->weights));
    ADD(cJSON_AddNumberToObject(o, "quantized_weights", (double)p->quant_weights));
    ADD(cJSON_AddNumberToObject(o, "exact_weights", (double)p->exact_weights));
    ADD(cJSON_AddNumberToObject(o, "exact_share", qbh_plan_exact_share(p)));
    ADD(cJSON_AddNumberToObject(o, "bytes_in", (double)p->bytes_in));
    ADD(cJSON_AddNumberToObject(o, "bytes_out", (double)p->bytes_out));
#undef ADD
    if (ok)
        text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        qbh_error_set(QB_E_NOMEM, "out of memory writing the plan");
    return text;
}
