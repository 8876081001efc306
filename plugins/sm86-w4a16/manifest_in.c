/*
 * sm86-w4a16 — reading and checking manifest.json (w4a16-format.md,
 * "manifest.json", "Optional features", "Strict reading") before any
 * tensor is served; the rules themselves are the kit's (w4a16_manifest).
 */
#include "w4w.h"

#include "w4a16_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"
#include "qbk_path.h"

#define W4W_MANIFEST_MAX (64u << 20)

/* Reads DIR/manifest.json through the host (its size limit and errors)
 * and checks it with the kit (w4a16_manifest: the same rules as
 * libquantbridge-w4a16), then every listed file's size and digest. */
qb_status w4w_manifest_read(const qb_host *h, const char *dir, w4w_manifest_in *out)
{
    char *path = qbk_path_join(dir, W4A16_MANIFEST);
    void *text = NULL;
    size_t len = 0, i;
    w4a16_manifest man;
    qbk_st_err *err = NULL;
    qb_status rc;

    memset(out, 0, sizeof *out);
    memset(&man, 0, sizeof man);
    if (!path)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    rc = h->read_small_file(h, path, W4W_MANIFEST_MAX, &text, &len);
    if (rc != QB_OK)
        goto out;
    /* a qbk_st_err is too large for the stack of a plugin call */
    err = qbk_malloc(sizeof *err);
    if (!err) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    rc = w4a16_manifest_parse(err, path, text, len, &man);
    if (rc != QB_OK) {
        rc = h->set_error(h, rc, "%s", err->msg);
        goto out;
    }
    out->arch = w4w_arch_find(man.architecture);
    if (!out->arch) {
        rc = h->set_error(h, QB_E_UNSUPPORTED, "%s: architecture '%s' is not supported", path,
                          man.architecture);
        goto out;
    }
    out->group_size = man.group_size;
    out->n_layers = man.num_layers;
    out->tied = man.tied;
    out->quantized_head = man.quantized_head;
    out->input_perm = man.input_perm;
    snprintf(out->source_format, sizeof out->source_format, "%s", man.source_format);
    for (i = 0; i < man.n_files && rc == QB_OK; i++) {
        rc = w4a16_file_check(err, dir, &man.files[i], 1);
        if (rc != QB_OK)
            rc = h->set_error(h, rc, "%s", err->msg);
    }
out:
    w4a16_manifest_free(&man);
    qbk_free(err);
    qbk_free(path);
    h->free(h, text);
    return rc;
}
