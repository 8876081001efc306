/*
 * The private directory the rebuilt tokenizer files live in while the
 * reader is open: qb_model_info.tokenizer_dir points at it, so every
 * writer (built-in or third-party, or the host for writers declaring
 * QB_WRITER_SIDE_FILES_HOST) copies them through the one existing path
 * (docs/architecture.md "HF side files").
 */
#include "gguf_tokenizer.h"

#include "qbk_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const k_files[] = {"tokenizer.json", "tokenizer_config.json"};

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    FILE *fp;
    size_t n = strlen(text);
    int ok;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fp = fopen(path, "wb");
    if (!fp)
        return -1;
    ok = fwrite(text, 1, n, fp) == n;
    ok = (fclose(fp) == 0) && ok;
    return ok ? 0 : -1;
}

qb_status gguf_tokenizer_write_dir(const qb_host *h, const gguf_tokenizer *t, char **dir)
{
    const char *tmp = getenv("TMPDIR");
    const char *texts[2];
    char *d;
    size_t i, n;
    *dir = NULL;
    texts[0] = t->tokenizer_json;
    texts[1] = t->tokenizer_config_json;
    if (!tmp || !*tmp)
        tmp = "/tmp";
    n = strlen(tmp) + sizeof("/qb-gguf-tokenizer-XXXXXX");
    if (!(d = qbk_malloc(n)))
        return h->set_error(h, QB_E_NOMEM, "out of memory");
    snprintf(d, n, "%s/qb-gguf-tokenizer-XXXXXX", tmp);
    if (!mkdtemp(d)) {
        qb_status st = h->set_error(h, QB_E_IO, "%s: cannot create the tokenizer directory: %s", d, strerror(errno));
        qbk_free(d);
        return st;
    }
    for (i = 0; i < 2; i++)
        if (texts[i] && write_file(d, k_files[i], texts[i]) != 0) {
            qb_status st = h->set_error(h, QB_E_IO, "%s/%s: cannot write: %s", d, k_files[i], strerror(errno));
            gguf_tokenizer_remove_dir(d);
            return st;
        }
    *dir = d;
    return QB_OK;
}

void gguf_tokenizer_remove_dir(char *dir)
{
    size_t i;
    char path[4096];
    if (!dir)
        return;
    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, k_files[i]);
        (void)unlink(path);
    }
    (void)rmdir(dir);
    qbk_free(dir);
}
