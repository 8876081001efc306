/*
 * compressed-tensors writer — config.json's quantization_config, laid out
 * as compressed-tensors 0.20 writes it (ModelCompressor.update_config;
 * docs/formats/compressed-tensors.md, "Writing"): one config_groups entry
 * per scheme, "Linear" as the target when every quantized linear shares
 * one scheme, else the exact module names of each; `format` the groups'
 * one format (pack-quantized, naive-quantized) or mixed-precision; `ignore`
 * lists lm_head, every linear kept dense and the embeddings.
 */
#include <stdio.h>
#include <string.h>

#include "ctw.h"
#include "qbk_alloc.h"
#include "qbk_text.h"

static int same_scheme(const ctw_scheme *a, const ctw_scheme *b)
{
    return a->bits == b->bits && a->symmetric == b->symmetric &&
           a->group_size == b->group_size && a->act_group == b->act_group &&
           a->fp8 == b->fp8 && a->nvfp4 == b->nvfp4 && a->per_tensor == b->per_tensor && a->block_rows == b->block_rows;
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

/* The compression format of a scheme's modules, as the library infers it
 * (infer_module_format): weight-only FP8 is naive-quantized (its
 * float-quantized needs input_activations; both store the same tensors). */
static const char *scheme_format(const ctw_scheme *s)
{
    return s->nvfp4 ? "nvfp4-pack-quantized" : s->fp8 ? "naive-quantized" : "pack-quantized";
}

/* FP8 weights as QuantizationArgs serialises FP8_DYNAMIC's (channel),
 * FP8's (tensor) and FP8_BLOCK's (block, with block_structure). */
static void fp8_weights_obj(qbk_text *b, const ctw_scheme *s)
{
    char num[96];
    qbk_text_str(b, "{");
    if (s->block_rows > 0) {
        snprintf(num, sizeof num, "\"block_structure\": [%lld, %lld], ", (long long)s->block_rows,
                 (long long)s->group_size);
        qbk_text_str(b, num);
    }
    qbk_text_str(b, "\"dynamic\": false, \"num_bits\": 8, ");
    qbk_text_str(b, s->per_tensor ? "\"strategy\": \"tensor\", "
                    : s->block_rows > 0 ? "\"strategy\": \"block\", "
                                        : "\"strategy\": \"channel\", ");
    qbk_text_str(b, "\"symmetric\": true, \"type\": \"float\"}");
}

static void weights_obj(qbk_text *b, const ctw_scheme *s)
{
    char num[64];
    if (s->nvfp4) {
        /* NVFP4A16's weights as QuantizationArgs serialises them */
        qbk_text_str(b, "{\"dynamic\": false, \"group_size\": 16, \"num_bits\": 4, "
                        "\"scale_dtype\": \"torch.float8_e4m3fn\", \"strategy\": "
                        "\"tensor_group\", \"symmetric\": true, \"type\": \"float\"}");
        return;
    }
    if (s->fp8) {
        fp8_weights_obj(b, s);
        return;
    }
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
        qbk_text_str(&b, ": {\"format\": ");
        qbk_text_json_str(&b, scheme_format(&sch[k]));
        qbk_text_str(&b, ", \"input_activations\": null, \"output_activations\": null, "
                         "\"targets\": [");
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
    /* one format for the model, mixed-precision when the groups differ
     * (ModelCompressor's infer_model_format) */
    qbk_text_str(&b, "}, \"format\": ");
    for (k = 1; k < n_sch && strcmp(scheme_format(&sch[k]), scheme_format(&sch[0])) == 0; k++)
        ;
    qbk_text_json_str(&b, k < n_sch ? "mixed-precision" : scheme_format(&sch[0]));
    qbk_text_str(&b, ", \"global_compression_ratio\": null, \"ignore\": [\"lm_head\"");
    for (i = 0; i < p->n; i++) {
        const ctw_item *it = &p->it[i];
        size_t nl = strlen(it->name);
        /* a dense 2-D <m>.weight: a linear the plan left dense although a
         * "Linear" target would match it, or an embedding, which the
         * library's model-free tools (they match names, not module classes:
         * match_quantizable_tensors) would take for a target otherwise, as
         * llm-compressor's model-free examples list model.embed_tokens */
        if (it->kind != CTW_DENSE || strcmp(it->name, "lm_head.weight") == 0 || nl < 7 ||
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
