/* Quantized-linear reader core: opening a checkpoint source (directory or
 * single .safetensors file). The GPTQ/AWQ core; see qlinear.h. */
#include "qlinear.h"

#include <string.h>

#include "qbk_str.h"
#include "qbk_alloc.h"

qb_status qlinear_begin(const qb_host *h, const char *path, qlinear_model **out)
{
    qlinear_model *m;
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
    m = qlinear_new(h, dir);
    qbk_free(dir);
    if (!m)
        return QB_E_NOMEM;
    if ((st = qlinear_load_side_files(m)) != QB_OK) {
        qlinear_free(m);
        return st;
    }
    *out = m;
    return QB_OK;
}

qb_status qlinear_open_set(qlinear_model *m, const char *path)
{
    const qb_host *h = m->host;
    return qbk_ends_with(path, ".safetensors") ? h->safetensors->open_file(h, path, &m->set)
                                               : h->safetensors->open_dir(h, m->dir, &m->set);
}
