/*
 * The per-tensor record beside a writer's output. See qbk_tensor_report.h.
 */
#include "qbk_tensor_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qbk_sink_text.h"

void qbk_report_begin(qbk_tensor_report *r, const char *format, const char *source)
{
    memset(r, 0, sizeof *r);
    qbk_text_str(&r->t, "{\n  \"format\": ");
    qbk_text_json_str(&r->t, format);
    qbk_text_str(&r->t, ",\n  \"source\": ");
    qbk_text_json_str(&r->t, source);
    qbk_text_str(&r->t, ",\n  \"tensors\": [");
}

static void put_number(qbk_text *t, double v)
{
    char buf[40];
    /* %.9g round-trips a float32 figure; JSON has no NaN or infinity */
    if (isfinite(v))
        snprintf(buf, sizeof buf, "%.9g", v);
    else
        snprintf(buf, sizeof buf, "null");
    qbk_text_str(t, buf);
}

void qbk_report_add(qbk_tensor_report *r, const char *name, const char *action, const char *why,
                    double err2, double ref2, double max_abs)
{
    qbk_text_str(&r->t, r->n ? ",\n    {\"name\": " : "\n    {\"name\": ");
    qbk_text_json_str(&r->t, name);
    qbk_text_str(&r->t, ", \"action\": ");
    qbk_text_json_str(&r->t, action);
    if (why && *why) {
        qbk_text_str(&r->t, ", \"why\": ");
        qbk_text_json_str(&r->t, why);
    }
    qbk_text_str(&r->t, ", \"rel_rmse\": ");
    put_number(&r->t, ref2 > 0 ? sqrt(err2 / ref2) : 0.0);
    qbk_text_str(&r->t, ", \"max_abs_error\": ");
    put_number(&r->t, max_abs);
    qbk_text_str(&r->t, "}");
    r->n++;
}

qb_status qbk_report_write(qbk_tensor_report *r, const qb_host *h, const qb_sink *sink,
                           const char *file)
{
    qb_status st;
    qbk_text_str(&r->t, r->n ? "\n  ]\n}" : "]\n}");
    if (r->t.oom)
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", file);
    else
        st = qbk_sink_write_text(sink, file, r->t.p);
    qbk_report_free(r);
    return st;
}

void qbk_report_free(qbk_tensor_report *r)
{
    qbk_text_free(&r->t);
    r->n = 0;
}
