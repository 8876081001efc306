/* fp8 reader — Hugging Face checkpoint directory. See qbk_hfdir.h. */
#include "qbk_hfdir.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json.h"
#include "qbk_path.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "qbk_alloc.h"

#define QBK_HFDIR_TEXT_MAX (4u << 20)

static char *hfdir_dir_of(const char *path)
{
    struct stat st;
    const char *slash;
    char *d;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return qbk_strdup(path);
    slash = strrchr(path, '/');
    if (!slash)
        return qbk_strdup(".");
    d = qbk_malloc((size_t)(slash - path) + 1);
    if (!d)
        return NULL;
    memcpy(d, path, (size_t)(slash - path));
    d[slash - path] = '\0';
    return d;
}

static qb_status hfdir_read_text(const qb_host *h, const char *dir, const char *name, int optional,
                               char **out)
{
    char *p = qbk_path_join(dir, name);
    void *data = NULL;
    size_t len = 0;
    qb_status st;
    char *copy;

    *out = NULL;
    if (!p)
        return h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
    st = h->read_small_file(h, p, QBK_HFDIR_TEXT_MAX, &data, &len);
    qbk_free(p);
    if (st == QB_E_NOT_FOUND && optional)
        return QB_OK;
    if (st != QB_OK)
        return st;
    copy = qbk_malloc(len + 1);
    if (!copy) {
        h->free(h, data);
        return h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
    }
    memcpy(copy, data, len);
    copy[len] = '\0';
    h->free(h, data);
    *out = copy;
    return QB_OK;
}

qb_status qbk_hfdir_open(const qb_host *h, const char *path, qbk_hfdir **out)
{
    qbk_hfdir *d = NULL;
    char **names = NULL;
    const cJSON *mt;
    qb_status st;
    size_t i;

    *out = NULL;
    d = qbk_calloc(1, sizeof(*d));
    if (!d || !(d->dir = hfdir_dir_of(path))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    st = hfdir_read_text(h, d->dir, "config.json", 0, &d->config_text);
    if (st != QB_OK)
        goto out;
    {
        char *what = qbk_path_join(d->dir, "config.json");
        st = what ? qbk_json_parse_object(h, what, d->config_text, strlen(d->config_text),
                                          &d->config)
                  : h->set_error(h, QB_E_NOMEM, "%s: out of memory", d->dir);
        qbk_free(what);
        if (st != QB_OK)
            goto out;
    }
    mt = cJSON_GetObjectItemCaseSensitive(d->config, "model_type");
    if (!cJSON_IsString(mt) || !mt->valuestring[0]) {
        st = h->set_error(h, QB_E_FORMAT, "%s/config.json: no string model_type", d->dir);
        goto out;
    }
    d->model_type = mt->valuestring;
    d->qcfg = cJSON_GetObjectItemCaseSensitive(d->config, "quantization_config");
    if (d->qcfg && !cJSON_IsObject(d->qcfg)) {
        st = h->set_error(h, QB_E_FORMAT, "%s/config.json: quantization_config is not an object",
                          d->dir);
        goto out;
    }
    st = hfdir_read_text(h, d->dir, "generation_config.json", 1, &d->gen_text);
    if (st != QB_OK)
        goto out;
    st = h->list_dir(h, d->dir, &names);
    if (st != QB_OK)
        goto out;
    for (i = 0; names[i]; i++)
        if (qbk_hf_is_tokenizer_file(names[i])) /* the readers' one rule (qbk_hf_dir_has_tokenizer) */
            d->has_tokenizer = 1;
    st = h->safetensors->open_dir(h, d->dir, &d->st);
out:
    if (names)
        h->free_list(h, names);
    if (st != QB_OK)
        qbk_hfdir_close(h, d);
    else
        *out = d;
    return st;
}

void qbk_hfdir_close(const qb_host *h, qbk_hfdir *d)
{
    if (!d)
        return;
    if (d->st)
        h->safetensors->close(d->st);
    cJSON_Delete(d->config);
    qbk_free(d->config_text);
    qbk_free(d->gen_text);
    qbk_free(d->dir);
    qbk_free(d);
}
