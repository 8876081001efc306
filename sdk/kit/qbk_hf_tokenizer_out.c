/* The tokenizer side files of an output directory, written once for every
 * writer (qbk_hf_sidefiles.h; docs/architecture.md, "HF side files"). */
#include "qbk_hf_sidefiles.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <quantbridge/base/qb_stdir.h>

#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_json_edit.h"
#include "qbk_path.h"
#include "qbk_sink_text.h"
#include "qbk_text.h"

#define QBK_SIDE_COPY_BLOCK ((size_t)1 << 20)
/* Largest tokenizer_config.json edited in memory. */
#define QBK_SIDE_MAX_TOKCFG ((size_t)64 << 20)

static qb_status side_write_json(const qb_host *h, const qb_sink *sink, const char *name,
                                 const cJSON *obj)
{
    char *text = cJSON_Print(obj);
    qb_status st;
    if (!text)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", name);
    st = qbk_sink_write_text(sink, name, text);
    cJSON_free(text);
    return st;
}

/* Streams dir/name into the sink byte for byte; absent: skipped. */
static qb_status side_copy(const qb_host *h, const qb_sink *sink, const char *dir,
                           const char *name)
{
    char *path = qbk_path_join(dir, name), *buf = NULL;
    FILE *in = NULL;
    qb_sink_file *f = NULL;
    struct stat sb;
    qb_status st = QB_OK;
    size_t r;

    if (!path) {
        st = h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
        goto out;
    }
    in = fopen(path, "rb");
    if (!in) {
        if (errno != ENOENT)
            st = h->set_error(h, QB_E_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    /* fopen succeeds on a directory; only its reads fail. */
    if (fstat(fileno(in), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = h->set_error(h, QB_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if (!(buf = qbk_malloc(QBK_SIDE_COPY_BLOCK))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if ((st = sink->create(sink->handle, name, &f)) != QB_OK) {
        f = NULL;
        goto out;
    }
    while ((r = fread(buf, 1, QBK_SIDE_COPY_BLOCK, in)) > 0)
        if ((st = sink->write(f, buf, r)) != QB_OK)
            goto out;
    if (ferror(in)) {
        st = h->set_error(h, QB_E_IO, "%s: read error", path);
        goto out;
    }
    st = sink->close(f, NULL, NULL);
    f = NULL;
out:
    if (f)
        sink->close(f, NULL, NULL);
    if (in)
        fclose(in);
    qbk_free(buf);
    qbk_free(path);
    return st;
}

/* tokenizer_config.json with chat_template set: the source's members kept
 * as written (qbk_json_edit.h: a tokenizer's model_max_length is an
 * integer beyond 2^53), or a new object when dir is NULL or has none. */
static qb_status side_tok_config(const qb_host *h, const qb_sink *sink, const char *dir,
                                 const char *tmpl)
{
    static const char *const keys[] = {"chat_template", NULL};
    const char *values[2] = {NULL, NULL};
    char *src = NULL, *path = NULL, *text = NULL;
    qbk_text lit = {0};
    qb_status st = QB_OK;

    if (dir && (st = qbk_read_side_text(h, dir, "tokenizer_config.json", QBK_SIDE_MAX_TOKCFG,
                                        NULL, 1, &src)) != QB_OK)
        goto out;
    if (src && !(path = qbk_path_join(dir, "tokenizer_config.json"))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    qbk_text_json_str(&lit, tmpl);
    if (lit.oom) {
        st = h->set_error(h, QB_E_NOMEM, "tokenizer_config.json: out of memory");
        goto out;
    }
    values[0] = lit.p;
    st = qbk_json_edit(h, path ? path : "tokenizer_config.json", src ? src : "{}", NULL, keys,
                       values, &text);
    if (st == QB_OK)
        st = qbk_sink_write_text(sink, "tokenizer_config.json", text);
out:
    qbk_free(text);
    qbk_text_free(&lit);
    if (src)
        h->free(h, src);
    qbk_free(path);
    return st;
}

/* The source's generation config, or the one transformers'
 * GenerationConfig.from_model_config derives from the config's special
 * token ids; nothing when there is no config to derive it from. */
static qb_status side_generation(const qb_host *h, const qb_sink *sink, const qb_model_info *mi)
{
    cJSON *cfg = NULL, *gen = NULL;
    qb_status st = QB_OK;

    if (mi->generation_config_json) {
        st = qbk_json_parse_object(h, "generation_config.json of the source",
                                   mi->generation_config_json, strlen(mi->generation_config_json),
                                   &gen);
        if (st == QB_OK)
            st = qbk_sink_write_text(sink, "generation_config.json", mi->generation_config_json);
        goto out;
    }
    if (!mi->config_json)
        goto out;
    st = qbk_json_parse(h, "config.json of the source", mi->config_json, strlen(mi->config_json),
                        &cfg);
    if (st != QB_OK || !cJSON_IsObject(cfg))
        goto out;
    if (!(gen = qbk_hf_generation_from_config(cfg))) {
        st = h->set_error(h, QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    st = side_write_json(h, sink, "generation_config.json", gen);
out:
    cJSON_Delete(gen);
    cJSON_Delete(cfg);
    return st;
}

qb_status qbk_hf_write_tokenizer_files(const qb_host *h, const qb_sink *sink,
                                       const qb_model_info *mi)
{
    const char *tmpl = QB_HAS_FIELD(mi, qb_model_info, chat_template) ? mi->chat_template : NULL;
    qb_status st = QB_OK;
    size_t i;

    assert(h && sink && mi);
    for (i = 0; mi->tokenizer_dir && qb_stdir_tokenizer_files[i]; i++) {
        const char *name = qb_stdir_tokenizer_files[i];
        /* With a template to set, tokenizer_config.json is rewritten below,
         * and a template file beside it would override the source's
         * template on load (transformers >= 4.43 prefers
         * chat_template.jinja). */
        if (tmpl && (strcmp(name, "tokenizer_config.json") == 0 ||
                     strncmp(name, "chat_template.", 14) == 0))
            continue;
        if ((st = side_copy(h, sink, mi->tokenizer_dir, name)) != QB_OK)
            return st;
    }
    if (tmpl && (st = side_tok_config(h, sink, mi->tokenizer_dir, tmpl)) != QB_OK)
        return st;
    return side_generation(h, sink, mi);
}
