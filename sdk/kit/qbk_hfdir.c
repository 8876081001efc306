/* fp8 reader — Hugging Face checkpoint directory. See fp8_hfdir.h. */
#include "qbk_hfdir.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FP8_CONFIG_MAX (4u << 20)

char *fp8_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static char *fp8_dir_of(const char *path)
{
    struct stat st;
    const char *slash;
    char *d;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return strdup(path);
    slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    d = malloc((size_t)(slash - path) + 1);
    if (!d)
        return NULL;
    memcpy(d, path, (size_t)(slash - path));
    d[slash - path] = '\0';
    return d;
}

static qb_status fp8_read_text(const qb_host *h, const char *dir, const char *name, int optional,
                               char **out)
{
    char *p = fp8_path_join(dir, name);
    void *data = NULL;
    size_t len = 0;
    qb_status st;
    char *copy;

    *out = NULL;
    if (!p)
        return h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
    st = h->read_small_file(h, p, FP8_CONFIG_MAX, &data, &len);
    free(p);
    if (st == QB_E_NOT_FOUND && optional)
        return QB_OK;
    if (st != QB_OK)
        return st;
    copy = malloc(len + 1);
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

qb_status fp8_hfdir_open(const qb_host *h, const char *path, fp8_hfdir **out)
{
    fp8_hfdir *d = NULL;
    char **names = NULL;
    const cJSON *mt;
    qb_status st;
    size_t i;

    *out = NULL;
    d = calloc(1, sizeof(*d));
    if (!d || !(d->dir = fp8_dir_of(path))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    st = fp8_read_text(h, d->dir, "config.json", 0, &d->config_text);
    if (st != QB_OK)
        goto out;
    d->config = cJSON_Parse(d->config_text);
    if (!d->config || !cJSON_IsObject(d->config)) {
        st = h->set_error(h, QB_E_FORMAT, "%s/config.json: not a JSON object", d->dir);
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
    st = fp8_read_text(h, d->dir, "generation_config.json", 1, &d->gen_text);
    if (st != QB_OK)
        goto out;
    st = h->list_dir(h, d->dir, &names);
    if (st != QB_OK)
        goto out;
    for (i = 0; names[i]; i++)
        if (!strcmp(names[i], "tokenizer.json") || !strcmp(names[i], "tokenizer.model") ||
            !strcmp(names[i], "tokenizer_config.json"))
            d->has_tokenizer = 1;
    st = h->safetensors->open_dir(h, d->dir, &d->st);
out:
    if (names)
        h->free_list(h, names);
    if (st != QB_OK)
        fp8_hfdir_close(h, d);
    else
        *out = d;
    return st;
}

void fp8_hfdir_close(const qb_host *h, fp8_hfdir *d)
{
    if (!d)
        return;
    if (d->st)
        h->safetensors->close(d->st);
    cJSON_Delete(d->config);
    free(d->config_text);
    free(d->gen_text);
    free(d->dir);
    free(d);
}
