/*
 * sm86-w4a16 — manifest.json (w4a16-format.md, "manifest.json") and the
 * record of every file written, which the manifest lists with its size and
 * SHA-256 as the sink computed them while writing.
 */
#include "w4w.h"

#include "qbk_sha256.h"
#include "w4a16_names.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

qb_status w4w_written_add(const qb_host *h, w4w_written_list *list, const char *name,
                          uint64_t bytes, const uint8_t sha256[32])
{
    w4w_written *e;
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 32;
        w4w_written *nv = qbk_realloc(list->v, cap * sizeof *nv);
        if (!nv)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
        list->v = nv;
        list->cap = cap;
    }
    e = &list->v[list->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->bytes = bytes;
    memcpy(e->sha256, sha256, 32);
    return QB_OK;
}

qb_status w4w_write_whole(const qb_host *h, const qb_sink *sink, const char *name, const void *data,
                          size_t len, w4w_written_list *list)
{
    qb_sink_file *f = NULL;
    uint8_t sha[32];
    qb_status rc;
    /* the host's whole-file write (qb_writer.h, write_file, ABI 1.3); a
     * sink built in front of the host's may have none (qb_writer.h) */
    if (QB_HAS_FIELD(sink, qb_sink, write_file) && sink->write_file) {
        rc = sink->write_file(sink->handle, name, data, len, sha);
    } else if ((rc = sink->create(sink->handle, name, &f)) == QB_OK) {
        rc = sink->write(f, data, len);
        if (rc != QB_OK)
            sink->close(f, NULL, NULL);
        else
            rc = sink->close(f, NULL, sha);
    }
    if (rc == QB_OK && list)
        rc = w4w_written_add(h, list, name, (uint64_t)len, sha);
    return rc;
}

static const char *basename_of(const char *p)
{
    const char *s, *last;
    size_t n;
    static const char dot[] = ".";
    if (!p || !*p)
        return dot;
    n = strlen(p);
    /* "dir/" names dir: skip trailing slashes */
    while (n > 1 && p[n - 1] == '/')
        n--;
    last = p;
    for (s = p; s < p + n; s++)
        if (*s == '/' && s + 1 < p + n)
            last = s + 1;
    return last;
}

qb_status w4w_manifest_write(const qb_host *h, const qb_sink *sink, const qb_model_src *src,
                             const w4w_plan *plan, const w4w_written_list *list)
{
    cJSON *m = cJSON_CreateObject(), *a, *o, *p;
    const w4w_xfused *xf;
    size_t nx;
    char *text = NULL, hex[65], base[1024];
    const char *bn;
    qb_status rc = QB_OK;
    size_t i, bl;
    int ok = m != NULL;

#define ADD(x) ok = ok && (x) != NULL
    ADD(cJSON_AddStringToObject(m, W4A16_K_FORMAT, W4A16_FORMAT));
    ADD(cJSON_AddNumberToObject(m, W4A16_K_VERSION, W4A16_FORMAT_VERSION));
    ADD(cJSON_AddNumberToObject(m, W4A16_K_BITS, W4A16_BITS));
    ADD(cJSON_AddBoolToObject(m, W4A16_K_SYMMETRIC, 1));
    ADD(cJSON_AddNumberToObject(m, W4A16_K_CODE_OFFSET, W4A16_CODE_OFFSET));
    ADD(cJSON_AddStringToObject(m, W4A16_K_NIBBLE_ORDER, W4A16_NIBBLE_ORDER));
    ADD(cJSON_AddNumberToObject(m, W4A16_K_GROUP_SIZE, (double)plan->opt.group_size));
    /* how the group size was chosen (not read back: informational) */
    ADD(o = cJSON_AddObjectToObject(m, "group_size_choice"));
    ADD(cJSON_AddStringToObject(o, "requested", plan->opt.group_auto ? "auto" : "explicit"));
    ADD(cJSON_AddStringToObject(o, "reason", plan->opt.group_reason));
    ADD(cJSON_AddStringToObject(m, W4A16_K_ARCH, plan->arch->model_type));
    ADD(cJSON_AddNumberToObject(m, W4A16_K_NUM_LAYERS, (double)plan->n_layers));
    ADD(cJSON_AddBoolToObject(m, W4A16_K_TIED, plan->tied));
    ADD(cJSON_AddStringToObject(m, W4A16_K_LM_HEAD,
                                  plan->opt.quantized_head ? W4A16_LM_HEAD_QUANTIZED : W4A16_LM_HEAD_F16));
    ADD(a = cJSON_AddArrayToObject(m, "features"));
    if (ok && plan->has_perm)
        ok = cJSON_AddItemToArray(a, cJSON_CreateString(W4A16_FEAT_PERM));
    if (ok && plan->opt.quantized_head)
        ok = cJSON_AddItemToArray(a, cJSON_CreateString(W4A16_FEAT_QHEAD));
    /* the fused expert tensors the reader serves back (w4w_xfused), so a
     * verifier can judge them in the parts' own [out, in] grouping */
    xf = w4w_arch_xfused(plan->arch, &nx);
    if (ok && nx)
        ADD(a = cJSON_AddArrayToObject(m, W4A16_K_FUSED_EXPERTS));
    for (i = 0; ok && i < nx; i++) {
        int q;
        ADD(o = cJSON_CreateObject());
        ok = ok && cJSON_AddItemToArray(a, o);
        ADD(cJSON_AddStringToObject(o, "tensor", xf[i].path));
        ADD(cJSON_AddStringToObject(o, "layout",
                                    xf[i].concat ? W4A16_FUSED_LAYOUT_CONCAT : W4A16_FUSED_LAYOUT));
        ADD(cJSON_AddNumberToObject(o, "n_parts", xf[i].n_parts));
        ADD(p = cJSON_AddArrayToObject(o, "parts"));
        for (q = 0; ok && q < xf[i].n_parts; q++) {
            /* the role path's "%d" (expert index) written as "*" */
            const char *pc = strstr(xf[i].parts[q], "%d");
            char pat[128];
            if (pc)
                snprintf(pat, sizeof pat, "%.*s*%s", (int)(pc - xf[i].parts[q]), xf[i].parts[q],
                         pc + 2);
            else
                snprintf(pat, sizeof pat, "%s", xf[i].parts[q]);
            ok = cJSON_AddItemToArray(p, cJSON_CreateString(pat));
        }
    }
    ADD(a = cJSON_AddArrayToObject(m, W4A16_K_FILES));
    for (i = 0; ok && i < list->n; i++) {
        qbk_sha256_hex(list->v[i].sha256, hex);
        o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(a, o);
        ADD(cJSON_AddStringToObject(o, W4A16_K_FILE_NAME, list->v[i].name));
        ADD(cJSON_AddNumberToObject(o, W4A16_K_FILE_BYTES, (double)list->v[i].bytes));
        ADD(cJSON_AddStringToObject(o, W4A16_K_FILE_SHA256, hex));
    }
    bn = basename_of(src->source_path);
    bl = strcspn(bn, "/");
    if (bl >= sizeof base)
        bl = sizeof base - 1;
    memcpy(base, bn, bl);
    base[bl] = '\0';
    ADD(o = cJSON_AddObjectToObject(m, W4A16_K_SOURCE));
    ADD(cJSON_AddStringToObject(o, "format",
                                src->info->source_format ? src->info->source_format : ""));
    ADD(cJSON_AddStringToObject(o, "path", base));
    ADD(cJSON_AddStringToObject(o, "reader", src->reader_name ? src->reader_name : ""));
    ADD(cJSON_AddStringToObject(o, "reader_version",
                                src->reader_version ? src->reader_version : ""));
    ADD(o = cJSON_AddObjectToObject(m, "converter"));
    ADD(cJSON_AddStringToObject(o, "name", "quantbridge"));
    ADD(cJSON_AddStringToObject(o, "version", src->host_version ? src->host_version : ""));
    ADD(cJSON_AddStringToObject(o, "writer", W4W_PLUGIN_NAME));
    ADD(cJSON_AddStringToObject(o, "writer_version", W4W_PLUGIN_VERSION));
    ADD(a = cJSON_AddObjectToObject(m, W4A16_K_TENSORS));
    for (i = 0; ok && i < plan->n_items; i++) {
        const w4w_item *it = &plan->items[i];
        if (it->kind != W4W_ITEM_LINEAR)
            continue;
        ADD(o = cJSON_AddObjectToObject(a, it->key));
        ADD(cJSON_AddStringToObject(o, "source_encoding", it->source_encoding));
        ADD(cJSON_AddBoolToObject(o, "exact", it->exact));
        ADD(cJSON_AddNumberToObject(o, "rel_rmse", it->rel_rmse));
        /* informational: how a requantized linear's scales were chosen */
        if (!it->exact && it->rule[0])
            ADD(cJSON_AddStringToObject(o, "quant_rule", it->rule));
    }
#undef ADD
    if (!ok || !(text = cJSON_Print(m))) {
        rc = h->set_error(h, QB_E_NOMEM, "manifest.json: out of memory");
        goto out;
    }
    rc = w4w_write_whole(h, sink, "manifest.json", text, strlen(text), NULL);
out:
    cJSON_free(text);
    cJSON_Delete(m);
    return rc;
}
