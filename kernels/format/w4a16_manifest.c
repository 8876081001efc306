/*
 * The W4A16 format (kernels/format) — reading and checking manifest.json of the
 * native W4A16 format (w4a16_manifest.h, docs/w4a16-format.md).
 */
#include "w4a16_manifest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbk_sha256.h"
#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_path.h"

/* Integer value of a JSON number whose text is exactly an integer in
 * [lo, hi] (qbk_json_int). */
static int json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *v)
{
    int64_t x;
    if (!qbk_json_int(j, &x) || x < lo || x > hi)
        return 0;
    *v = x;
    return 1;
}

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str_member(const cJSON *o, const char *key)
{
    const cJSON *v = member(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int lower_hex64(const char *s)
{
    return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* A name that stays inside the directory and is not hidden. */
static int plain_name(const char *s)
{
    return s[0] && s[0] != '.' && strchr(s, '/') == NULL;
}

static qb_status check_fixed(qbk_st_err *err, const char *path, const cJSON *root)
{
    const char *s;
    int64_t v;

    s = str_member(root, W4A16_K_FORMAT);
    if (!s || strcmp(s, W4A16_FORMAT) != 0)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"format\" is '%s', not '%s'", path,
                           s ? s : "(none)", W4A16_FORMAT);
    if (!json_int(member(root, W4A16_K_VERSION), INT32_MIN, INT32_MAX, &v))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"format_version\" missing or not an integer",
                           path);
    if (v != W4A16_FORMAT_VERSION)
        return qbk_st_fail(err, QB_E_UNSUPPORTED,
                           "%s: format_version %lld is not supported (this reader knows version %d)",
                           path, (long long)v, W4A16_FORMAT_VERSION);
    if (!json_int(member(root, W4A16_K_BITS), 0, 64, &v) || v != W4A16_BITS)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"bits\" is not 4", path);
    if (!cJSON_IsTrue(member(root, W4A16_K_SYMMETRIC)))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"symmetric\" is not true", path);
    if (!json_int(member(root, W4A16_K_CODE_OFFSET), INT32_MIN, INT32_MAX, &v) ||
        v != W4A16_CODE_OFFSET)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"code_offset\" is not 8", path);
    s = str_member(root, W4A16_K_NIBBLE_ORDER);
    if (!s || strcmp(s, W4A16_NIBBLE_ORDER) != 0)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"nibble_order\" is not \"low-even\"", path);
    return QB_OK;
}

static qb_status read_model(qbk_st_err *err, const char *path, const cJSON *root,
                            w4a16_manifest *m)
{
    const cJSON *j, *f;
    const char *s;

    if (!json_int(member(root, W4A16_K_GROUP_SIZE), 1, INT32_MAX, &m->group_size))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"group_size\" is not an integer in [1, %d]",
                           path, INT32_MAX);
    /* zero layers is refused: no supported architecture has none, and an
     * empty model is a broken conversion (w4a16-format.md "Strict reading") */
    if (!json_int(member(root, W4A16_K_NUM_LAYERS), 1, W4A16_MAX_LAYERS, &m->num_layers))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"num_layers\" is not an integer in [1, %d]",
                           path, W4A16_MAX_LAYERS);
    s = str_member(root, W4A16_K_ARCH);
    if (!s || !*s)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"architecture\" missing or not a string", path);
    if (!(m->architecture = qbk_strdup(s)))
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    j = member(root, W4A16_K_TIED);
    if (!cJSON_IsBool(j))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
    m->tied = cJSON_IsTrue(j);
    j = member(root, W4A16_K_FEATURES);
    if (!cJSON_IsArray(j))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"features\" missing or not a list", path);
    for (f = j->child; f; f = f->next) {
        int *flag;
        if (!cJSON_IsString(f))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: \"features\" holds a non-string", path);
        if (strcmp(f->valuestring, W4A16_FEAT_PERM) == 0)
            flag = &m->input_perm;
        else if (strcmp(f->valuestring, W4A16_FEAT_QHEAD) == 0)
            flag = &m->quantized_head;
        else /* a reader that does not know a listed feature must refuse (w4a16-format.md) */
            return qbk_st_fail(err, QB_E_UNSUPPORTED,
                               "%s: feature '%s' is not supported by this reader", path,
                               f->valuestring);
        if (*flag)
            return qbk_st_fail(err, QB_E_FORMAT, "%s: feature '%s' listed twice", path,
                               f->valuestring);
        *flag = 1;
    }
    s = str_member(root, W4A16_K_LM_HEAD);
    if (!s || strcmp(s, m->quantized_head ? W4A16_LM_HEAD_QUANTIZED : W4A16_LM_HEAD_F16) ||
        (m->quantized_head && m->tied))
        return qbk_st_fail(err, QB_E_FORMAT,
                           "%s: lm_head '%s' disagrees with features and tie_word_embeddings",
                           path, s ? s : "(none)");
    s = str_member(member(root, W4A16_K_SOURCE), "format");
    if (!(m->source_format = qbk_strdup(s ? s : "")))
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    return QB_OK;
}

static qb_status read_files(qbk_st_err *err, const char *path, const cJSON *root,
                            w4a16_manifest *m)
{
    const cJSON *files = member(root, W4A16_K_FILES), *e;
    char need[W4A16_LAYER_NAME_LEN];
    int64_t l;

    if (!cJSON_IsArray(files))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: \"files\" missing or not a list", path);
    m->files = qbk_calloc((size_t)cJSON_GetArraySize(files) + 1, sizeof(*m->files));
    if (!m->files)
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    for (e = files->child; e; e = e->next) {
        const char *name = str_member(e, W4A16_K_FILE_NAME);
        const char *hex = str_member(e, W4A16_K_FILE_SHA256);
        int64_t bytes;
        w4a16_file *f = &m->files[m->n_files];
        if (!cJSON_IsObject(e) || !name || !plain_name(name))
            return qbk_st_fail(err, QB_E_FORMAT,
                               "%s: a \"files\" entry has no plain \"name\" (non-empty, no '/', "
                               "not starting with '.')",
                               path);
        if (!json_int(member(e, W4A16_K_FILE_BYTES), 0, INT64_MAX, &bytes))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: files[%s]: \"bytes\" is not an integer >= 0",
                               path, name);
        if (!hex || !lower_hex64(hex))
            return qbk_st_fail(err, QB_E_FORMAT,
                               "%s: files[%s]: \"sha256\" is not 64 lowercase hex digits", path,
                               name);
        if (w4a16_manifest_find(m, name))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: files[%s] listed twice", path, name);
        if (!(f->name = qbk_strdup(name)))
            return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        f->bytes = (uint64_t)bytes;
        memcpy(f->sha256, hex, 65);
        m->n_files++;
    }
    /* every file the layout needs must be covered by a digest */
    {
        static const char *const fixed[] = {W4A16_CONFIG, W4A16_EMBED, W4A16_NORM};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            if (!w4a16_manifest_find(m, fixed[i]))
                return qbk_st_fail(err, QB_E_FORMAT, "%s: %s is not listed in \"files\"", path,
                                   fixed[i]);
    }
    if (!m->tied != !!w4a16_manifest_find(m, W4A16_LM_HEAD_FILE))
        return qbk_st_fail(err, QB_E_FORMAT,
                           m->tied ? "%s: %s listed although embeddings are tied"
                                   : "%s: %s is not listed in \"files\"",
                           path, W4A16_LM_HEAD_FILE);
    for (l = 0; l < m->num_layers; l++) {
        if (w4a16_layer_file(l, m->num_layers, need, sizeof need) != 0)
            return qbk_st_fail(err, QB_E_INTERNAL, "%s: layer %lld has no file name", path,
                               (long long)l);
        if (!w4a16_manifest_find(m, need))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: %s is not listed in \"files\"", path, need);
    }
    return QB_OK;
}

qb_status w4a16_manifest_parse(qbk_st_err *err, const char *path, const char *text, size_t len,
                                   w4a16_manifest *out)
{
    cJSON *root = NULL;
    qbk_json_fail jf;
    qb_status st;

    memset(out, 0, sizeof *out);
    /* The one strict JSON reading (qbk_json.h): a duplicate key in any
     * object is refused there, so no member is silently picked. */
    if (qbk_json_parse_text(text, len, NULL, &root, &jf) != QB_OK) {
        if (jf.rc == QB_E_NOMEM)
            st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        else if (jf.dup_key[0])
            st = qbk_st_fail(err, QB_E_FORMAT, "%s: duplicate key '%s'", path, jf.dup_key);
        else {
            qbk_json_fail_text(&jf, path, err->msg, sizeof err->msg);
            st = QB_E_FORMAT;
        }
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: not a JSON object", path);
        goto out;
    }
    st = check_fixed(err, path, root);
    if (st == QB_OK)
        st = read_model(err, path, root, out);
    if (st == QB_OK)
        st = read_files(err, path, root, out);
out:
    cJSON_Delete(root);
    if (st != QB_OK)
        w4a16_manifest_free(out);
    return st;
}

void w4a16_manifest_free(w4a16_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_files; i++)
        qbk_free(m->files[i].name);
    qbk_free(m->files);
    qbk_free(m->architecture);
    qbk_free(m->source_format);
    memset(m, 0, sizeof *m);
}

const w4a16_file *w4a16_manifest_find(const w4a16_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->n_files; i++)
        if (strcmp(m->files[i].name, name) == 0)
            return &m->files[i];
    return NULL;
}

qb_status w4a16_file_check(qbk_st_err *err, const char *dir, const w4a16_file *f,
                               int verify_sha256)
{
    char *path;
    struct stat sb;
    uint8_t d[32];
    uint64_t got;
    char hex[65];
    qb_status st = QB_OK;

    if (!(path = qbk_path_join(dir, f->name)))
        return qbk_st_fail(err, QB_E_NOMEM, "%s/%s: out of memory", dir, f->name);
    if (stat(path, &sb) != 0) {
        st = qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO,
                         "%s: listed in manifest.json but cannot be opened: %s", path,
                         strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: not a regular file", path);
    } else if ((uint64_t)sb.st_size != f->bytes) {
        st = qbk_st_fail(err, QB_E_MISMATCH, "%s: %llu bytes, manifest.json says %llu", path,
                         (unsigned long long)sb.st_size, (unsigned long long)f->bytes);
    } else if (verify_sha256) {
        if (qbk_sha256_file(path, d, &got) != 0) {
            if (errno == ENOMEM)
                st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
            else
                st = qbk_st_fail(err, QB_E_IO, "%s: read error: %s", path, strerror(errno));
        } else if (got != f->bytes) {
            /* the file changed between stat and read */
            st = qbk_st_fail(err, QB_E_MISMATCH, "%s: %llu bytes, manifest.json says %llu", path,
                             (unsigned long long)got, (unsigned long long)f->bytes);
        } else {
            qbk_sha256_hex(d, hex);
            if (strcmp(hex, f->sha256) != 0)
                st = qbk_st_fail(err, QB_E_MISMATCH, "%s: SHA-256 %s, manifest.json says %s",
                                 path, hex, f->sha256);
        }
    }
    qbk_free(path);
    return st;
}
