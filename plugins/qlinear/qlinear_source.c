/* Quantized-linear reader core: opening a checkpoint (directory or single
 * .safetensors file) with the reader base's directory. The GPTQ/AWQ core;
 * see qlinear.h. */
#include "qlinear.h"

#include "qbk_alloc.h"

qb_status qlinear_open(const qb_host *h, const char *path, qlinear_config_fn load_config, void *cfg,
                       qlinear_model **out)
{
    qlinear_model *m = qbk_calloc(1, sizeof(*m));
    qb_status st;

    *out = NULL;
    if (!m)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    m->host = h;
    st = qb_stdir_open(h, path, QB_STDIR_FILE_OK | QB_STDIR_DEFER_SET, &m->d);
    if (st == QB_OK) {
        m->dir = m->d->dir;
        m->config_json = m->d->config_text;
        m->generation_config_json = m->d->generation_config_text;
        m->architecture = m->d->model_type;
        m->tokenizer_dir = m->d->has_tokenizer ? m->d->dir : NULL;
        st = load_config(h, m->dir, m->config_json, cfg);
    }
    if (st == QB_OK && (st = qb_stdir_open_set(m->d)) == QB_OK)
        m->set = m->d->st;
    if (st != QB_OK) {
        qlinear_free(m);
        return st;
    }
    *out = m;
    return QB_OK;
}
