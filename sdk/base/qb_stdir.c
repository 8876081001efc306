/* libquantbridge-base: a Hugging Face safetensors checkpoint directory
 * (qb_stdir.h). */
#include <string.h>
#include <sys/stat.h>

#include <quantbridge/base/qb_stdir.h>

#include "qb_base_internal.h"

const char *const qb_stdir_tokenizer_files[] = {
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.tiktoken",
    "chat_template.jinja",
    "chat_template.json",
    NULL,
};

int qb_stdir_is_tokenizer_file(const char *name)
{
    size_t k;
    for (k = 0; qb_stdir_tokenizer_files[k]; k++)
        if (strcmp(qb_stdir_tokenizer_files[k], name) == 0)
            return 1;
    return 0;
}

static int has_json(const qb_host *h)
{
    return QB_HAS_FIELD(h, qb_host, json) && h->json;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *dir, const char *name, const qb_host *h)
{
    char *p = qb_base_join(h, dir, name);
    struct stat sb;
    int ok = p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    h->free(h, p);
    return ok;
}

/* d->dir (and d->file) from `path`. */
static qb_status set_paths(qb_stdir *d, const char *path, uint32_t flags)
{
    const qb_host *h = d->host;
    const char *slash;
    if (is_dir(path)) {
        d->dir = qb_base_strdup(h, path);
    } else {
        slash = strrchr(path, '/');
        if (!slash)
            d->dir = qb_base_strdup(h, ".");
        else if (slash == path)
            d->dir = qb_base_strdup(h, "/");
        else if ((d->dir = h->alloc(h, (size_t)(slash - path) + 1)) != NULL) {
            memcpy(d->dir, path, (size_t)(slash - path));
            d->dir[slash - path] = '\0';
        }
        if (d->dir && (flags & QB_STDIR_FILE_OK) && ends_with(path, ".safetensors") &&
            !(d->file = qb_base_strdup(h, path)))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    if (!d->dir || !(d->config_path = qb_base_join(h, d->dir, "config.json")))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    return QB_OK;
}

/* Reads dir/name as NUL-terminated text (*out host->alloc'd, *len its
 * bytes); *out NULL and QB_OK for an absent optional file. */
static qb_status read_text(const qb_stdir *d, const char *path, int optional, char **out,
                           size_t *len)
{
    const qb_host *h = d->host;
    void *data = NULL;
    char *text;
    qb_status st;

    *out = NULL;
    *len = 0;
    st = h->read_small_file(h, path, QB_STDIR_JSON_MAX, &data, len);
    if (st == QB_E_NOT_FOUND && optional)
        return QB_OK;
    if (st == QB_E_NOT_FOUND)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: missing (a Hugging Face checkpoint needs it)",
                            path);
    if (st != QB_OK)
        return st;
    /* read_small_file promises no terminator: copy with one */
    text = h->alloc(h, *len + 1);
    if (!text) {
        h->free(h, data);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    memcpy(text, data, *len);
    text[*len] = '\0';
    h->free(h, data);
    *out = text;
    return QB_OK;
}

/* Parses text (len bytes) strictly into an object tree. */
static qb_status parse_object(const qb_host *h, const char *path, const char *text, size_t len,
                              qb_json **out)
{
    qb_status st = h->json->parse(h, path, text, len, out);
    if (st != QB_OK)
        return st;
    if (h->json->type(*out) != QB_JSON_OBJECT) {
        h->json->free(*out);
        *out = NULL;
        return h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", path);
    }
    return QB_OK;
}

static qb_status read_config(qb_stdir *d)
{
    const qb_host *h = d->host;
    const qb_json_api *J = h->json;
    const qb_json *mt, *q;
    qb_status st;

    if ((st = read_text(d, d->config_path, 0, &d->config_text, &d->config_len)) != QB_OK)
        return st;
    if ((st = parse_object(h, d->config_path, d->config_text, d->config_len, &d->config)) != QB_OK)
        return st;
    mt = J->get(d->config, "model_type");
    d->model_type = J->get_string(mt);
    if (!d->model_type || !d->model_type[0])
        return h->set_error(h, QB_E_FORMAT, "%s: no model_type string", d->config_path);
    q = J->get(d->config, "quantization_config");
    if (q && J->type(q) != QB_JSON_OBJECT)
        return h->set_error(h, QB_E_FORMAT, "%s: quantization_config is not an object",
                            d->config_path);
    d->quant_config = q;
    return QB_OK;
}

static qb_status read_generation_config(qb_stdir *d)
{
    const qb_host *h = d->host;
    char *path = qb_base_join(h, d->dir, "generation_config.json");
    qb_json *tree = NULL;
    size_t len;
    qb_status st;

    if (!path)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", d->dir);
    st = read_text(d, path, 1, &d->generation_config_text, &len);
    if (st == QB_OK && d->generation_config_text)
        st = parse_object(h, path, d->generation_config_text, len, &tree);
    h->json->free(tree);
    h->free(h, path);
    return st;
}

qb_status qb_stdir_has_tokenizer(const qb_host *h, const char *dir, int *has)
{
    char **names = NULL;
    size_t i;
    qb_status st = h->list_dir(h, dir, &names);
    *has = 0;
    if (st != QB_OK)
        return st;
    for (i = 0; names[i] && !*has; i++)
        *has = qb_stdir_is_tokenizer_file(names[i]);
    h->free_list(h, names);
    return QB_OK;
}

qb_status qb_stdir_open_set(qb_stdir *d)
{
    const qb_host *h = d->host;
    if (d->st)
        return h->set_error(h, QB_E_INVALID, "%s: the safetensors set is open already", d->dir);
    /* a named shard of an indexed checkpoint stands for the checkpoint */
    if (d->file && !is_file(d->dir, "model.safetensors.index.json", h))
        return h->safetensors->open_file(h, d->file, &d->st);
    return h->safetensors->open_dir(h, d->dir, &d->st);
}

qb_status qb_stdir_open(const qb_host *h, const char *path, uint32_t flags, qb_stdir **out)
{
    qb_stdir *d;
    qb_status st;

    if (!out)
        return h ? h->set_error(h, QB_E_INVALID, "qb_stdir_open: out is NULL") : QB_E_INVALID;
    *out = NULL;
    if (!h || !path)
        return h ? h->set_error(h, QB_E_INVALID, "qb_stdir_open: path is NULL") : QB_E_INVALID;
    if (flags & ~(QB_STDIR_FILE_OK | QB_STDIR_DEFER_SET))
        return h->set_error(h, QB_E_INVALID, "%s: qb_stdir_open: unknown flags 0x%x", path,
                            (unsigned)flags);
    if (!has_json(h))
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: reading config.json needs the host's JSON service (ABI 1.1)",
                            path);
    d = h->alloc(h, sizeof *d);
    if (!d)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    memset(d, 0, sizeof *d);
    d->host = h;
    if ((st = set_paths(d, path, flags)) == QB_OK && (st = read_config(d)) == QB_OK &&
        (st = read_generation_config(d)) == QB_OK &&
        (st = qb_stdir_has_tokenizer(h, d->dir, &d->has_tokenizer)) == QB_OK &&
        !(flags & QB_STDIR_DEFER_SET))
        st = qb_stdir_open_set(d);
    if (st != QB_OK) {
        qb_stdir_close(d);
        return st;
    }
    *out = d;
    return QB_OK;
}

void qb_stdir_close(qb_stdir *d)
{
    const qb_host *h;
    if (!d)
        return;
    h = d->host;
    if (d->st)
        h->safetensors->close(d->st);
    if (d->config)
        h->json->free(d->config);
    h->free(h, d->generation_config_text);
    h->free(h, d->config_text);
    h->free(h, d->config_path);
    h->free(h, d->file);
    h->free(h, d->dir);
    h->free(h, d);
}

void qb_stdir_model_info(const qb_stdir *d, size_t n_tensors, const char *format,
                         const char *summary, qb_model_info *out)
{
    out->architecture = d->model_type;
    out->config_json = d->config_text;
    out->generation_config_json = d->generation_config_text;
    out->n_tensors = n_tensors;
    out->source_format = format;
    out->source_summary = summary;
    out->tokenizer_dir = d->has_tokenizer ? d->dir : NULL;
    out->chat_template = NULL;
}

int qb_stdir_probe_quant_method(const qb_host *h, const qb_probe_input *in,
                                const char *quant_method)
{
    const qb_json_api *J;
    qb_json *root = NULL;
    const char *m;
    int score = QB_PROBE_NONE;

    if (!h || !in || !in->config_json || !has_json(h))
        return QB_PROBE_NONE;
    J = h->json;
    if (J->parse(h, "config.json", in->config_json, strlen(in->config_json), &root) != QB_OK)
        return QB_PROBE_NONE;
    m = J->get_string(J->get(J->get(root, "quantization_config"), "quant_method"));
    if (m && strcmp(m, quant_method) == 0)
        score = QB_PROBE_LIKELY + 10;
    J->free(root);
    return score;
}
