/*
 * sm86-w4a16 — reading and checking manifest.json (w4a16-format.md,
 * "manifest.json" and "Optional features") before any tensor is served.
 */
#include "w4w.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W4W_MANIFEST_MAX (64u << 20)

/* Integer member >= lo, or -1 when absent or not such an integer. */
static int64_t get_int(const cJSON *o, const char *key, int64_t lo)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -1;
    return (int64_t)v->valuedouble;
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Size and SHA-256 of dir/name, read in 1 MiB chunks. */
static qb_status hash_file(const qb_host *h, const char *dir, const char *name, uint64_t *bytes,
                           uint8_t sha[32])
{
    char path[4096];
    uint8_t *buf = NULL;
    FILE *f = NULL;
    w4w_sha256_ctx c;
    qb_status rc = QB_OK;
    size_t n;

    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return h->set_error(h, QB_E_INVALID, "%s: path too long", dir);
    f = fopen(path, "rb");
    if (!f) {
        rc = h->set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO,
                          "%s: listed in manifest.json but cannot be opened: %s", path,
                          strerror(errno));
        goto out;
    }
    buf = malloc(1u << 20);
    if (!buf) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    w4w_sha256_init(&c);
    *bytes = 0;
    while ((n = fread(buf, 1, 1u << 20, f)) > 0) {
        w4w_sha256_update(&c, buf, n);
        *bytes += n;
    }
    if (ferror(f)) {
        rc = h->set_error(h, QB_E_IO, "%s: read error", path);
        goto out;
    }
    w4w_sha256_final(&c, sha);
out:
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

/* Checks one `files` entry against the disk. */
static qb_status check_file(const qb_host *h, const char *dir, const cJSON *e)
{
    const char *name = get_str(e, "name"), *hex = get_str(e, "sha256");
    int64_t want = get_int(e, "bytes", 0);
    uint64_t got = 0;
    uint8_t sha[32];
    char ghex[65];
    qb_status rc;
    int i;

    if (!name || !*name || strchr(name, '/') || name[0] == '.' || !hex || strlen(hex) != 64 ||
        want < 0)
        return h->set_error(h, QB_E_FORMAT, "%s/manifest.json: malformed entry in files", dir);
    rc = hash_file(h, dir, name, &got, sha);
    if (rc != QB_OK)
        return rc;
    for (i = 0; i < 32; i++)
        snprintf(ghex + 2 * i, 3, "%02x", sha[i]);
    if (got != (uint64_t)want)
        return h->set_error(h, QB_E_MISMATCH, "%s/%s: %llu bytes, manifest.json says %lld", dir,
                            name, (unsigned long long)got, (long long)want);
    for (i = 0; i < 64; i++)
        if (ghex[i] != (hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] - 'A' + 'a' : hex[i]))
            return h->set_error(h, QB_E_MISMATCH, "%s/%s: SHA-256 %s, manifest.json says %s", dir,
                                name, ghex, hex);
    return QB_OK;
}

static int listed(const cJSON *files, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, files)
    {
        const char *n = get_str(e, "name");
        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

qb_status w4w_manifest_read(const qb_host *h, const char *dir, w4w_manifest_in *out)
{
    char path[4096], need[64];
    void *text = NULL;
    size_t len = 0;
    cJSON *m = NULL;
    const cJSON *files, *feats, *e, *tie, *sym, *src;
    const char *s;
    int64_t v, l;
    int digits;
    qb_status rc = QB_OK;

    memset(out, 0, sizeof *out);
    if ((size_t)snprintf(path, sizeof path, "%s/manifest.json", dir) >= sizeof path)
        return h->set_error(h, QB_E_INVALID, "%s: path too long", dir);
    rc = h->read_small_file(h, path, W4W_MANIFEST_MAX, &text, &len);
    if (rc != QB_OK)
        return rc;
    m = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(m)) {
        rc = h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    s = get_str(m, "format");
    if (!s || strcmp(s, W4W_PLUGIN_NAME) != 0) {
        rc = h->set_error(h, QB_E_FORMAT, "%s: format is '%s', not '%s'", path, s ? s : "(none)",
                          W4W_PLUGIN_NAME);
        goto out;
    }
    v = get_int(m, "format_version", 0);
    if (v != W4W_FORMAT_VERSION) {
        rc = h->set_error(h, QB_E_UNSUPPORTED,
                          "%s: format_version %lld is not supported (this reader "
                          "knows version %d)",
                          path, (long long)v, W4W_FORMAT_VERSION);
        goto out;
    }
    sym = cJSON_GetObjectItemCaseSensitive(m, "symmetric");
    s = get_str(m, "nibble_order");
    if (get_int(m, "bits", 0) != 4 || !cJSON_IsTrue(sym) || get_int(m, "code_offset", 0) != 8 ||
        !s || strcmp(s, "low-even") != 0) {
        rc = h->set_error(h, QB_E_FORMAT,
                          "%s: bits/symmetric/code_offset/nibble_order are not "
                          "4/true/8/low-even",
                          path);
        goto out;
    }
    out->group_size = get_int(m, "group_size", 1);
    out->n_layers = get_int(m, "num_layers", 1);
    tie = cJSON_GetObjectItemCaseSensitive(m, "tie_word_embeddings");
    if (out->group_size < 1 || out->n_layers < 1 || out->n_layers > 100000 || !cJSON_IsBool(tie)) {
        rc = h->set_error(h, QB_E_FORMAT,
                          "%s: group_size, num_layers or tie_word_embeddings missing "
                          "or invalid",
                          path);
        goto out;
    }
    out->tied = cJSON_IsTrue(tie);
    out->arch = w4w_arch_find(get_str(m, "architecture"));
    if (!out->arch) {
        rc = h->set_error(h, QB_E_UNSUPPORTED, "%s: architecture '%s' is not supported", path,
                          get_str(m, "architecture") ? get_str(m, "architecture") : "(none)");
        goto out;
    }
    feats = cJSON_GetObjectItemCaseSensitive(m, "features");
    if (!cJSON_IsArray(feats)) {
        rc = h->set_error(h, QB_E_FORMAT, "%s: features is not an array", path);
        goto out;
    }
    cJSON_ArrayForEach(e, feats)
    {
        if (cJSON_IsString(e) && strcmp(e->valuestring, "quantized_lm_head") == 0) {
            out->quantized_head = 1;
        } else if (cJSON_IsString(e) && strcmp(e->valuestring, "input_permutation") == 0) {
            out->input_perm = 1;
        } else {
            /* a runtime that does not know a listed feature must refuse
             * (w4a16-format.md) */
            rc = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: feature '%s' is not supported by this reader", path,
                              cJSON_IsString(e) ? e->valuestring : "(not a string)");
            goto out;
        }
    }
    s = get_str(m, "lm_head");
    if (!s || strcmp(s, out->quantized_head ? "quantized" : "f16") != 0 ||
        (out->quantized_head && out->tied)) {
        rc = h->set_error(h, QB_E_FORMAT,
                          "%s: lm_head '%s' disagrees with features and "
                          "tie_word_embeddings",
                          path, s ? s : "(none)");
        goto out;
    }
    src = cJSON_GetObjectItemCaseSensitive(m, "source");
    if (get_str(src, "format"))
        snprintf(out->source_format, sizeof out->source_format, "%s", get_str(src, "format"));

    files = cJSON_GetObjectItemCaseSensitive(m, "files");
    if (!cJSON_IsArray(files)) {
        rc = h->set_error(h, QB_E_FORMAT, "%s: files is not an array", path);
        goto out;
    }
    /* every file the layout needs must be covered by a digest */
    digits = 2;
    for (v = 100; out->n_layers - 1 >= v; v *= 10)
        digits++;
    for (l = -4; l < out->n_layers; l++) {
        if (l == -4)
            snprintf(need, sizeof need, "config.json");
        else if (l == -3)
            snprintf(need, sizeof need, "embed.safetensors");
        else if (l == -2)
            snprintf(need, sizeof need, "norm.safetensors");
        else if (l == -1)
            snprintf(need, sizeof need, out->tied ? "config.json" : "lm_head.safetensors");
        else
            snprintf(need, sizeof need, "layer_%0*d.safetensors", digits & 7, (int)l);
        if (!listed(files, need)) {
            rc = h->set_error(h, QB_E_FORMAT, "%s: %s is not listed in files", path, need);
            goto out;
        }
    }
    if (out->tied && listed(files, "lm_head.safetensors")) {
        rc = h->set_error(h, QB_E_FORMAT,
                          "%s: lm_head.safetensors listed although embeddings are tied", path);
        goto out;
    }
    cJSON_ArrayForEach(e, files)
    {
        rc = check_file(h, dir, e);
        if (rc != QB_OK)
            goto out;
    }
out:
    cJSON_Delete(m);
    h->free(h, text);
    return rc;
}
