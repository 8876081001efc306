/*
 * quantbridge host — the Hugging Face side files (tokenizer files, chat
 * template, generation_config.json) written by the host for a writer that
 * declares QB_WRITER_SIDE_FILES_HOST (qb_writer.h), by the rule the
 * built-in writers keep (docs/architecture.md, "HF side files").
 *
 * They go through the same sink as the writer's files, after its finish
 * succeeded and before the sink is synced and renamed into place, so they
 * are hashed, synced and counted like any output file, and a failure
 * discards the whole output.
 */
#include "qbh.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <glib.h>

#include "qbk_hf_sidefiles.h"

#define SIDE_COPY_BLOCK ((size_t)1 << 20)
/* Largest tokenizer_config.json edited in memory (the writers' bound). */
#define SIDE_MAX_TOKCFG ((size_t)64 << 20)

/* Refuses a name the writer created itself: two parties writing one file
 * means one of them is silently lost. */
static qb_status claim(qbh_sink *sink, const char *name, const char *writer)
{
    if (qbh_sink_has_file(sink, name))
        return qbh_error_set(QB_E_INVALID, "writer %s created %s itself but declares "
                             "QB_WRITER_SIDE_FILES_HOST, so the host writes that file; the "
                             "output is discarded", writer, name);
    return QB_OK;
}

static qb_status write_text(qbh_sink *sink, const char *name, const char *text,
                            const char *writer)
{
    const qb_sink *t = qbh_sink_table(sink);
    qb_sink_file *f = NULL;
    qb_status rc = claim(sink, name, writer);
    if (rc)
        return rc;
    rc = t->create(t->handle, name, &f);
    if (rc)
        return rc;
    rc = t->write(f, text, strlen(text));
    if (rc) {
        t->close(f, NULL, NULL);
        return rc;
    }
    return t->close(f, NULL, NULL);
}

/* Copies dir/name byte for byte; a file that is not there is skipped. */
static qb_status copy_file(qbh_sink *sink, const char *dir, const char *name, const char *writer)
{
    const qb_sink *t = qbh_sink_table(sink);
    qb_sink_file *f = NULL;
    char *path = NULL, *buf = NULL;
    struct stat st;
    qb_status rc = QB_OK;
    int fd = -1;

    path = g_build_filename(dir, name, NULL);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            rc = qbh_error_set(QB_E_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = qbh_error_set(QB_E_IO, "%s: not a regular file", path);
        goto out;
    }
    buf = qbh_alloc(SIDE_COPY_BLOCK);
    if (!buf) {
        rc = qbh_error_set(QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    rc = claim(sink, name, writer);
    if (rc)
        goto out;
    rc = t->create(t->handle, name, &f);
    if (rc) {
        f = NULL;
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf, SIDE_COPY_BLOCK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = qbh_error_set(QB_E_IO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        rc = t->write(f, buf, (size_t)r);
        if (rc)
            goto out;
    }
    rc = t->close(f, NULL, NULL);
    f = NULL;
out:
    if (f)
        t->close(f, NULL, NULL);
    if (fd >= 0)
        close(fd);
    qbh_free(buf);
    g_free(path);
    return rc;
}

/* tokenizer_config.json with chat_template set: the source's members kept,
 * or a new object when the source has none. */
static qb_status write_tok_config(qbh_sink *sink, const char *dir, const char *tmpl,
                                  const char *writer)
{
    char *path = dir ? g_build_filename(dir, "tokenizer_config.json", NULL) : NULL;
    void *data = NULL;
    size_t len = 0;
    cJSON *obj = NULL;
    char *text = NULL;
    qb_status rc = QB_OK;

    if (path) {
        rc = qbh_read_small_file(path, SIDE_MAX_TOKCFG, &data, &len);
        if (rc == QB_E_NOT_FOUND) {
            qbh_error_clear();
            rc = QB_OK;
        }
        if (rc)
            goto out;
        if (data && strlen(data) != len) {
            rc = qbh_error_set(QB_E_FORMAT, "%s: contains a NUL byte", path);
            goto out;
        }
    }
    obj = data ? cJSON_Parse(data) : cJSON_CreateObject();
    if (!cJSON_IsObject(obj)) {
        rc = data ? qbh_error_set(QB_E_FORMAT, "%s: not a JSON object", path)
                  : qbh_error_set(QB_E_NOMEM, "tokenizer_config.json: out of memory");
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "chat_template");
    if (!cJSON_AddStringToObject(obj, "chat_template", tmpl) || !(text = cJSON_Print(obj))) {
        rc = qbh_error_set(QB_E_NOMEM, "tokenizer_config.json: out of memory");
        goto out;
    }
    rc = write_text(sink, "tokenizer_config.json", text, writer);
out:
    cJSON_free(text);
    cJSON_Delete(obj);
    qbh_free(data);
    g_free(path);
    return rc;
}

/* The source's generation config, or the one transformers'
 * GenerationConfig.from_model_config derives from the config's special
 * token ids; nothing when there is no config to derive it from. */
static qb_status write_generation(qbh_sink *sink, const qb_model_info *mi, const char *writer)
{
    cJSON *cfg = NULL, *gen = NULL;
    char *text = NULL;
    qb_status rc = QB_OK;

    if (mi->generation_config_json) {
        gen = cJSON_Parse(mi->generation_config_json);
        if (!cJSON_IsObject(gen))
            rc = qbh_error_set(QB_E_FORMAT, "generation_config.json of the source: not a JSON "
                               "object");
        else
            rc = write_text(sink, "generation_config.json", mi->generation_config_json, writer);
        goto out;
    }
    cfg = mi->config_json ? cJSON_Parse(mi->config_json) : NULL;
    if (!cJSON_IsObject(cfg))
        goto out;
    gen = qbk_hf_generation_from_config(cfg);
    if (!gen) {
        rc = qbh_error_set(QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    text = cJSON_Print(gen);
    if (!text) {
        rc = qbh_error_set(QB_E_NOMEM, "generation_config.json: out of memory");
        goto out;
    }
    rc = write_text(sink, "generation_config.json", text, writer);
out:
    cJSON_free(text);
    cJSON_Delete(gen);
    cJSON_Delete(cfg);
    return rc;
}

qb_status qbh_side_files_write(qbh_sink *sink, const qb_model_info *mi, const char *writer)
{
    const char *tmpl = mi->chat_template;
    qb_status rc = QB_OK;
    size_t i;

    for (i = 0; mi->tokenizer_dir && qbk_hf_tokenizer_files[i]; i++) {
        const char *name = qbk_hf_tokenizer_files[i];
        /* With a template to set, tokenizer_config.json is rewritten below,
         * and a template file beside it would override the source's
         * template on load (transformers >= 4.43 prefers
         * chat_template.jinja). */
        if (tmpl && (strcmp(name, "tokenizer_config.json") == 0 ||
                     strncmp(name, "chat_template.", 14) == 0))
            continue;
        rc = copy_file(sink, mi->tokenizer_dir, name, writer);
        if (rc)
            return rc;
    }
    if (tmpl) {
        rc = write_tok_config(sink, mi->tokenizer_dir, tmpl, writer);
        if (rc)
            return rc;
    }
    return write_generation(sink, mi, writer);
}
