/*
 * quantbridge host — the end of a conversion as the user reads it: the
 * summary lines (counts per action from the writer's plan, bytes in and
 * out, time, peak memory) and `convert --json`'s document on stdout.
 */
#include "cli.h"
#include "convert_summary.h"

#include <cjson/cJSON.h>
#include <string.h>

void qbh_convert_summary_print(const qbh_convert_result *r, FILE *f)
{
    char hi[32], ho[32], hr[32];
    const qbh_plan *p = r->plan;
    qbh_human_bytes(r->bytes_in, hi, sizeof hi);
    qbh_human_bytes(r->bytes_out, ho, sizeof ho);
    qbh_human_bytes(r->peak_rss, hr, sizeof hr);
    if (p && p->has_actions)
        fprintf(f, "quantbridge: tensors: %zu exact, %zu requantized, %zu converted, %zu copied, "
                "%zu omitted (%.1f %% of quantized weights exact)\n",
                p->count[QB_PLAN_EXACT], p->count[QB_PLAN_REQUANT], p->count[QB_PLAN_CONVERT],
                p->count[QB_PLAN_COPY], p->count[QB_PLAN_OMIT], 100.0 * qbh_plan_exact_share(p));
    fprintf(f, "quantbridge: %s in, %s out in %.1f s; peak memory %s\n", hi, ho, r->seconds, hr);
}

char *qbh_convert_summary_json(const qbh_convert_result *r)
{
    cJSON *j = cJSON_CreateObject(), *o;
    const qbh_plan *p = r->plan;
    char *text = NULL;
    int ok = j != NULL;
#define ADD(x) ok = ok && (x) != NULL
    ADD(cJSON_AddStringToObject(j, "output", r->output));
    ADD(cJSON_AddStringToObject(j, "source", r->source));
    ADD(cJSON_AddStringToObject(j, "source_format", r->source_format ? r->source_format : ""));
    ADD(cJSON_AddStringToObject(j, "reader", r->reader));
    ADD(cJSON_AddStringToObject(j, "writer", r->writer));
    if (p && p->group_size)
        ADD(cJSON_AddStringToObject(j, "group_size", p->group_size));
    else
        ADD(cJSON_AddNullToObject(j, "group_size"));
    ADD(o = cJSON_AddObjectToObject(j, "tensors"));
    ADD(cJSON_AddNumberToObject(o, "total", (double)r->n_tensors));
    if (p && p->has_actions) {
        ADD(cJSON_AddNumberToObject(o, "exact", (double)p->count[QB_PLAN_EXACT]));
        ADD(cJSON_AddNumberToObject(o, "requant", (double)p->count[QB_PLAN_REQUANT]));
        ADD(cJSON_AddNumberToObject(o, "convert", (double)p->count[QB_PLAN_CONVERT]));
        ADD(cJSON_AddNumberToObject(o, "copy", (double)p->count[QB_PLAN_COPY]));
        ADD(cJSON_AddNumberToObject(o, "omit", (double)p->count[QB_PLAN_OMIT]));
        ADD(cJSON_AddNumberToObject(o, "exact_share", qbh_plan_exact_share(p)));
    }
    ADD(cJSON_AddNumberToObject(j, "files", (double)r->n_files));
    ADD(cJSON_AddNumberToObject(j, "bytes_in", (double)r->bytes_in));
    ADD(cJSON_AddNumberToObject(j, "bytes_out", (double)r->bytes_out));
    ADD(cJSON_AddNumberToObject(j, "seconds", r->seconds));
    ADD(cJSON_AddNumberToObject(j, "peak_rss_bytes", (double)r->peak_rss));
    if (r->verify_ran) {
        ADD(o = cJSON_AddObjectToObject(j, "verify"));
        ADD(cJSON_AddBoolToObject(o, "passed", r->verify_rc == QB_OK));
        if (r->verify_rc != QB_OK)
            ADD(cJSON_AddStringToObject(o, "message", r->verify_msg ? r->verify_msg : ""));
    } else {
        ADD(cJSON_AddNullToObject(j, "verify"));
    }
#undef ADD
    if (ok)
        text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        qbh_error_set(QB_E_NOMEM, "out of memory writing the summary");
    return text;
}
