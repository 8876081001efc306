/* Quantized-linear reader core: opening a checkpoint source (directory or
 * single .safetensors file). Internal kit code; see qbk_qlinear.h. */
#include "qbk_qlinear.h"

#include <string.h>

#include "qbk_str.h"
#include "qbk_alloc.h"

qb_status qbk_qlinear_begin(const qb_host *h, const char *path, qbk_qlinear_model **out)
{
    qbk_qlinear_model *m;
    char *dir;
    qb_status st;

    *out = NULL;
    if (qbk_ends_with(path, ".safetensors")) {
        const char *slash = strrchr(path, '/');
        dir = slash ? qbk_strndup(path, (size_t)(slash - path)) : qbk_strdup(".");
    } else {
        dir = qbk_strdup(path);
    }
    if (!dir)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    m = qbk_qlinear_new(h, dir);
    qbk_free(dir);
    if (!m)
        return QB_E_NOMEM;
    if ((st = qbk_qlinear_load_side_files(m)) != QB_OK) {
        qbk_qlinear_free(m);
        return st;
    }
    *out = m;
    return QB_OK;
}

qb_status qbk_qlinear_open_set(qbk_qlinear_model *m, const char *path)
{
    const qb_host *h = m->host;
    return qbk_ends_with(path, ".safetensors") ? h->safetensors->open_file(h, path, &m->set)
                                               : h->safetensors->open_dir(h, m->dir, &m->set);
}
