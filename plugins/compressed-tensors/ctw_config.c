/*
 * compressed-tensors writer — config.json's quantization_config, laid out
 * as compressed-tensors 0.20 writes it (ModelCompressor.update_config;
 * docs/formats/compressed-tensors.md, "Writing"): one config_groups entry
 * per scheme, "Linear" as the target when every quantized linear shares
 * one scheme, else the exact module names of each; `ignore` lists lm_head
 * and every linear kept dense.
 */
#include <stdio.h>
#include <string.h>

#include "ctw.h"
#include "qbk_alloc.h"
#include "qbk_text.h"

static int same_scheme(const ctw_scheme *a, const ctw_scheme *b)
{
    return a->bits == b->bits && a->symmetric == b->symmetric &&
           a->group_size == b->group_size && a->act_group == b->act_group;
}

/* Module name of a linear's weight (without ".weight") as a JSON string. */
static void module_str(qbk_text *b, const char *name)
{
    char buf[512];
    size_t n = strlen(name);
    n = n >= 7 ? n - 7 : n;
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, name, n);
    buf[n] = 0;
    qbk_text_json_str(b, buf);
}

static void weights_obj(qbk_text *b, const ctw_scheme *s)
{
    char num[64];
    qbk_text_str(b, "{");
    if (s->act_group)
        qbk_text_str(b, "\"actorder\": \"group\", ");
    qbk_text_str(b, "\"dynamic\": false, ");
    if (s->group_size > 0) {
        snprintf(num, sizeof num, "\"group_size\": %lld, ", (long long)s->group_size);
        qbk_text_str(b, num);
    }
    snprintf(num, sizeof num, "\"num_bits\": %d, ", s->bits);
    qbk_text_str(b, num);
    qbk_text_str(b, s->group_size > 0 ? "\"strategy\": \"group\", "
                                      : "\"strategy\": \"channel\", ");
    qbk_text_str(b, s->symmetric ? "\"symmetric\": true, " : "\"symmetric\": false, ");
    qbk_text_str(b, "\"type\": \"int\"}");
}

qb_status ctw_quant_config(const qb_host *h, const qb_model_src *src, const ctw_plan *p,
                           char **out)
{
    ctw_scheme sch[64];
    size_t n_sch = 0, i, k, n_ign = 0;
    qbk_text b = {0};
    char key[32];

    *out = NULL;
    for (i = 0; i < p->n; i++) {
        const ctw_item *it = &p->it[i];
        if (it->kind == CTW_DENSE)
            continue;
        for (k = 0; k < n_sch && !same_scheme(&sch[k], &it->sc); k++)
            ;
        if (k == n_sch) {
            if (n_sch == sizeof sch / sizeof sch[0])
                return h->set_error(h, QB_E_UNSUPPORTED,
                                    "%s: more than %zu quantization schemes", src->source_path,
                                    n_sch);
            sch[n_sch++] = it->sc;
        }
    }
    qbk_text_str(&b, "{\"config_groups\": {");
    for (k = 0; k < n_sch; k++) {
        int first = 1;
        snprintf(key, sizeof key, "group_%zu", k);
        qbk_text_str(&b, k ? ", " : "");
        qbk_text_json_str(&b, key);
        qbk_text_str(&b, ": {\"format\": \"pack-quantized\", \"input_activations\": null, "
                         "\"output_activations\": null, \"targets\": [");
        if (n_sch == 1) {
            qbk_text_str(&b, "\"Linear\"");
        } else {
            for (i = 0; i < p->n; i++) {
                if (p->it[i].kind == CTW_DENSE || !same_scheme(&p->it[i].sc, &sch[k]))
                    continue;
                qbk_text_str(&b, first ? "" : ", ");
                module_str(&b, p->it[i].name);
                first = 0;
            }
        }
        qbk_text_str(&b, "], \"weights\": ");
        weights_obj(&b, &sch[k]);
        qbk_text_str(&b, "}");
    }
    qbk_text_str(&b, "}, \"format\": \"pack-quantized\", \"global_compression_ratio\": null, "
                     "\"ignore\": [\"lm_head\"");
    for (i = 0; i < p->n; i++) {
        const ctw_item *it = &p->it[i];
        size_t nl = strlen(it->name);
        /* a dense linear: 2-D <m>.weight that the plan left dense although
         * a "Linear" target would match it */
        if (it->kind != CTW_DENSE || strstr(it->name, "embed") ||
            strcmp(it->name, "lm_head.weight") == 0 || nl < 7 ||
            strcmp(it->name + nl - 7, ".weight") != 0 || p->out[it->out0].n_dims != 2)
            continue;
        qbk_text_str(&b, ", ");
        module_str(&b, it->name);
        n_ign++;
    }
    (void)n_ign;
    qbk_text_str(&b, "], \"kv_cache_scheme\": null, \"quant_method\": \"compressed-tensors\", "
                     "\"quantization_status\": \"compressed\", \"sparsity_config\": {}, "
                     "\"transform_config\": {}, \"version\": \"0.20.1\"}");
    if (b.oom) {
        qbk_text_free(&b);
        return h->set_error(h, QB_E_NOMEM, "config.json: out of memory");
    }
    *out = b.p;
    return QB_OK;
}
