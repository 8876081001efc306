/*
 * libquantbridge-w4a16 loader: validates manifest.json of a converted
 * directory against format "sm86-w4a16" version 1 (w4a16-format.md), maps
 * its safetensors files through the host's strict parser (qbk_safetensors,
 * linked statically) and hands out tensors by name.
 */
#include <quantbridge/qb_host.h>
#include <quantbridge/qb_w4a16.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbk_safetensors.h"
#include "w4a16_sha256.h"

enum { MANIFEST_MAX = 64 << 20, ERR_LEN = 1024 };

typedef struct mapped_file {
    char *name;
    qb_st_set *set;
} mapped_file;

struct qb_w4a16_model {
    char *dir;
    char *architecture;
    int64_t group_size, num_layers;
    int feat_perm, feat_qhead;
    mapped_file *files;
    size_t n_files;
    /* Aligned copies of tensors whose mapped bytes are not aligned to their
     * element size (safetensors does not align offsets); freed on close. */
    pthread_mutex_t copies_lock;
    struct aligned_copy {
        const void *src; /* the mapped bytes it copies: one copy per tensor */
        void *copy;
    } *copies;
    size_t n_copies, cap_copies;
    qb_host host; /* set_error target of the parser: writes into tl_err */
};

/* Message of the calling thread's last failure: queries may run
 * concurrently on one model, so the text cannot live in the model. */
static _Thread_local char tl_err[ERR_LEN];

/* The features this library implements (w4a16-format.md "Optional features"). */
static const char *const known_features[] = {"input_permutation", "quantized_lm_head"};

static qb_status model_set_error(const qb_host *h, qb_status code, const char *fmt, ...)
{
    char *buf = h->host_private;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, ERR_LEN, fmt, ap);
    va_end(ap);
    return code;
}

static qb_status fail(qb_w4a16_model *m, qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static qb_status fail(qb_w4a16_model *m, qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)m;
    vsnprintf(tl_err, ERR_LEN, fmt, ap);
    va_end(ap);
    return code;
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static qb_status read_manifest(qb_w4a16_model *m, char **text)
{
    char *path = path_join(m->dir, "manifest.json"), *buf = NULL;
    FILE *f = NULL;
    long len;
    qb_status st = QB_OK;
    *text = NULL;
    if (!path)
        return fail(m, QB_E_NOMEM, "%s/manifest.json: out of memory", m->dir);
    f = fopen(path, "rb");
    if (!f) {
        st = fail(m, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = fail(m, QB_E_IO, "%s: cannot size the file", path);
        goto out;
    }
    if (len > MANIFEST_MAX) {
        st = fail(m, QB_E_FORMAT, "%s: larger than %d bytes", path, MANIFEST_MAX);
        goto out;
    }
    buf = malloc((size_t)len + 1);
    if (!buf) {
        st = fail(m, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        st = fail(m, QB_E_IO, "%s: short read", path);
        goto out;
    }
    buf[len] = '\0';
    *text = buf;
    buf = NULL;
out:
    if (f)
        fclose(f);
    free(buf);
    free(path);
    return st;
}

/* Integer value of a JSON number that is exactly an integer in [lo, hi]. */
static int json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *v)
{
    double d;
    if (!cJSON_IsNumber(j))
        return 0;
    d = j->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || floor(d) != d || fabs(d) > 9007199254740992.0)
        return 0;
    *v = (int64_t)d;
    return 1;
}

/* First key that occurs twice in object `o`, or NULL. The manifest is
 * small; a quadratic scan is fine. */
static const char *dup_key(const cJSON *o)
{
    for (const cJSON *a = o->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && strcmp(a->string, b->string) == 0)
                return a->string;
    return NULL;
}

static int plain_name(const char *s)
{
    return s[0] && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static qb_status check_header(qb_w4a16_model *m, const char *mp, const cJSON *root)
{
    const cJSON *j;
    const char *d;
    int64_t v;

    if (!cJSON_IsObject(root))
        return fail(m, QB_E_FORMAT, "%s: not a JSON object", mp);
    if ((d = dup_key(root)) != NULL)
        return fail(m, QB_E_FORMAT, "%s: duplicate key '%s'", mp, d);
    j = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(j) || strcmp(j->valuestring, "sm86-w4a16") != 0)
        return fail(m, QB_E_FORMAT, "%s: \"format\" is not \"sm86-w4a16\"", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    if (!json_int(j, INT32_MIN, INT32_MAX, &v))
        return fail(m, QB_E_FORMAT, "%s: \"format_version\" missing or not an integer", mp);
    if (v != 1)
        return fail(m, QB_E_UNSUPPORTED,
                    "%s: format_version %" PRId64 " is not supported (this library reads 1)", mp, v);
    j = cJSON_GetObjectItemCaseSensitive(root, "bits");
    if (!json_int(j, 0, 64, &v) || v != 4)
        return fail(m, QB_E_FORMAT, "%s: \"bits\" is not 4", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "symmetric");
    if (!cJSON_IsTrue(j))
        return fail(m, QB_E_FORMAT, "%s: \"symmetric\" is not true", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "code_offset");
    if (!json_int(j, INT32_MIN, INT32_MAX, &v) || v != 8)
        return fail(m, QB_E_FORMAT, "%s: \"code_offset\" is not 8", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "nibble_order");
    if (!cJSON_IsString(j) || strcmp(j->valuestring, "low-even") != 0)
        return fail(m, QB_E_FORMAT, "%s: \"nibble_order\" is not \"low-even\"", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "group_size");
    if (!json_int(j, 1, INT32_MAX, &m->group_size))
        return fail(m, QB_E_FORMAT, "%s: \"group_size\" is not an integer >= 1", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "num_layers");
    if (!json_int(j, 0, 100000, &m->num_layers))
        return fail(m, QB_E_FORMAT, "%s: \"num_layers\" is not an integer in [0, 100000]", mp);
    j = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    if (!cJSON_IsString(j))
        return fail(m, QB_E_FORMAT, "%s: \"architecture\" missing or not a string", mp);
    if (!(m->architecture = strdup(j->valuestring)))
        return fail(m, QB_E_NOMEM, "%s: out of memory", mp);

    j = cJSON_GetObjectItemCaseSensitive(root, "features");
    if (!cJSON_IsArray(j))
        return fail(m, QB_E_FORMAT, "%s: \"features\" missing or not a list", mp);
    for (const cJSON *f = j->child; f; f = f->next) {
        size_t i;
        if (!cJSON_IsString(f))
            return fail(m, QB_E_FORMAT, "%s: \"features\" holds a non-string", mp);
        for (i = 0; i < sizeof(known_features) / sizeof(known_features[0]); i++)
            if (strcmp(f->valuestring, known_features[i]) == 0)
                break;
        if (i == sizeof(known_features) / sizeof(known_features[0]))
            return fail(m, QB_E_UNSUPPORTED, "%s: unknown feature \"%s\": refusing the model", mp,
                        f->valuestring);
        if (i == 0)
            m->feat_perm = 1;
        else
            m->feat_qhead = 1;
    }
    return QB_OK;
}

/* Checks one "files" entry against the file on disk; maps .safetensors. */
static qb_status check_file(qb_w4a16_model *m, const char *mp, const cJSON *e, unsigned flags)
{
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *jb = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    const cJSON *jh = cJSON_GetObjectItemCaseSensitive(e, "sha256");
    const qb_st_api *api = qbk_safetensors_api();
    char *path = NULL, hex[65];
    struct stat sb;
    int64_t bytes;
    qb_status st = QB_OK;

    if (!cJSON_IsObject(e) || !cJSON_IsString(jn) || !plain_name(jn->valuestring))
        return fail(m, QB_E_FORMAT, "%s: a \"files\" entry has no plain \"name\"", mp);
    if (!json_int(jb, 0, INT64_MAX, &bytes))
        return fail(m, QB_E_FORMAT, "%s: files[%s]: \"bytes\" is not an integer >= 0", mp,
                    jn->valuestring);
    if (!cJSON_IsString(jh) || strlen(jh->valuestring) != 64 ||
        strspn(jh->valuestring, "0123456789abcdef") != 64)
        return fail(m, QB_E_FORMAT, "%s: files[%s]: \"sha256\" is not 64 lowercase hex digits", mp,
                    jn->valuestring);
    for (size_t i = 0; i < m->n_files; i++)
        if (strcmp(m->files[i].name, jn->valuestring) == 0)
            return fail(m, QB_E_FORMAT, "%s: files[%s] listed twice", mp, jn->valuestring);
    if (!(path = path_join(m->dir, jn->valuestring)))
        return fail(m, QB_E_NOMEM, "%s: out of memory", mp);
    if (stat(path, &sb) != 0) {
        st = fail(m, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s (listed in %s)", path,
                  strerror(errno), mp);
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = fail(m, QB_E_FORMAT, "%s: not a regular file", path);
        goto out;
    }
    if ((int64_t)sb.st_size != bytes) {
        st = fail(m, QB_E_MISMATCH, "%s: %lld bytes, manifest says %" PRId64, path,
                  (long long)sb.st_size, bytes);
        goto out;
    }
    if (flags & QB_W4A16_OPEN_VERIFY_SHA256) {
        if (w4a16_sha256_file(path, hex) != 0) {
            st = fail(m, QB_E_IO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (strcmp(hex, jh->valuestring) != 0) {
            st = fail(m, QB_E_MISMATCH, "%s: sha256 %s, manifest says %s", path, hex,
                      jh->valuestring);
            goto out;
        }
    }
    if (ends_with(jn->valuestring, ".safetensors")) {
        mapped_file *mf = &m->files[m->n_files];
        if (!(mf->name = strdup(jn->valuestring))) {
            st = fail(m, QB_E_NOMEM, "%s: out of memory", path);
            goto out;
        }
        m->n_files++;
        st = api->open_file(&m->host, path, &mf->set);
    }
out:
    free(path);
    return st;
}

qb_status qb_w4a16_open(const char *dir, unsigned flags, qb_w4a16_model **out, char *err,
                        size_t err_len)
{
    qb_w4a16_model *m = NULL;
    cJSON *root = NULL;
    char *text = NULL, *mp = NULL;
    const cJSON *files;
    qb_status st = QB_OK;

    if (out)
        *out = NULL;
    if (err && err_len)
        err[0] = '\0';
    tl_err[0] = '\0';
    if (!dir || !out || (flags & ~QB_W4A16_OPEN_VERIFY_SHA256)) {
        if (err && err_len)
            snprintf(err, err_len, "qb_w4a16_open: invalid arguments");
        return QB_E_INVALID;
    }
    if (!(m = calloc(1, sizeof(*m))) || !(m->dir = strdup(dir))) {
        st = QB_E_NOMEM;
        if (err && err_len)
            snprintf(err, err_len, "%s: out of memory", dir);
        goto out;
    }
    pthread_mutex_init(&m->copies_lock, NULL);
    m->host.struct_size = sizeof(m->host);
    m->host.abi = QB_ABI_CURRENT;
    m->host.host_private = tl_err; /* the parser runs only inside this call */
    m->host.set_error = model_set_error;
    if (!(mp = path_join(dir, "manifest.json"))) {
        st = fail(m, QB_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    if ((st = read_manifest(m, &text)) != QB_OK)
        goto out;
    if (!(root = cJSON_Parse(text))) {
        st = fail(m, QB_E_FORMAT, "%s: not valid JSON", mp);
        goto out;
    }
    if ((st = check_header(m, mp, root)) != QB_OK)
        goto out;
    files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsArray(files)) {
        st = fail(m, QB_E_FORMAT, "%s: \"files\" missing or not a list", mp);
        goto out;
    }
    if (!(m->files = calloc((size_t)cJSON_GetArraySize(files) + 1, sizeof(*m->files)))) {
        st = fail(m, QB_E_NOMEM, "%s: out of memory", mp);
        goto out;
    }
    for (const cJSON *e = files->child; e; e = e->next)
        if ((st = check_file(m, mp, e, flags)) != QB_OK)
            goto out;
    /* The format numbers every decoder layer; a runtime must find them all. */
    for (int64_t l = 0; l < m->num_layers; l++) {
        char name[32];
        int found = 0;
        qb_w4a16_layer_file(m, l, name, sizeof(name));
        for (size_t i = 0; i < m->n_files && !found; i++)
            found = strcmp(m->files[i].name, name) == 0;
        if (!found) {
            st = fail(m, QB_E_FORMAT, "%s: %s is not listed in \"files\"", mp, name);
            goto out;
        }
    }
    *out = m;
    m = NULL;
out:
    if (m && err && err_len)
        snprintf(err, err_len, "%s", tl_err[0] ? tl_err : "qb_w4a16_open failed");
    cJSON_Delete(root);
    free(text);
    free(mp);
    qb_w4a16_close(m);
    return st;
}

void qb_w4a16_close(qb_w4a16_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_files; i++) {
        if (m->files[i].set)
            qbk_safetensors_api()->close(m->files[i].set);
        free(m->files[i].name);
    }
    free(m->files);
    for (size_t i = 0; i < m->n_copies; i++)
        free(m->copies[i].copy);
    free(m->copies);
    pthread_mutex_destroy(&m->copies_lock);
    free(m->architecture);
    free(m->dir);
    free(m);
}

int64_t qb_w4a16_group_size(const qb_w4a16_model *m)
{
    return m->group_size;
}

int64_t qb_w4a16_num_layers(const qb_w4a16_model *m)
{
    return m->num_layers;
}

const char *qb_w4a16_architecture(const qb_w4a16_model *m)
{
    return m->architecture ? m->architecture : "";
}

int qb_w4a16_has_feature(const qb_w4a16_model *m, const char *name)
{
    if (strcmp(name, known_features[0]) == 0)
        return m->feat_perm;
    if (strcmp(name, known_features[1]) == 0)
        return m->feat_qhead;
    return 0;
}

const char *qb_w4a16_error(const qb_w4a16_model *m)
{
    (void)m;
    return tl_err;
}

qb_status qb_w4a16_layer_file(const qb_w4a16_model *m, int64_t layer, char *buf, size_t len)
{
    int n;
    if (layer < 0 || layer >= m->num_layers)
        return QB_E_RANGE;
    /* w4a16-format.md: at least two digits, three when more than 100 layers. */
    n = snprintf(buf, len, m->num_layers > 100 ? "layer_%03" PRId64 ".safetensors"
                                                : "layer_%02" PRId64 ".safetensors",
                 layer);
    return n < 0 || (size_t)n >= len ? QB_E_INVALID : QB_OK;
}

qb_status qb_w4a16_tensor_get(qb_w4a16_model *m, const char *file, const char *name,
                              qb_w4a16_tensor *out)
{
    const qb_st_tensor *t = NULL;
    size_t esize;
    int dt;
    for (size_t i = 0; i < m->n_files; i++)
        if (strcmp(m->files[i].name, file) == 0) {
            t = qbk_safetensors_api()->find(m->files[i].set, name);
            if (!t)
                return fail(m, QB_E_NOT_FOUND, "%s/%s: tensor '%s' not found", m->dir, file, name);
            break;
        }
    if (!t)
        return fail(m, QB_E_NOT_FOUND, "%s/%s: no such safetensors file in the manifest", m->dir,
                    file);
    switch (t->dtype) {
    case QB_DT_U8:
        dt = QB_W4A16_DT_U8, esize = 1;
        break;
    case QB_DT_F16:
        dt = QB_W4A16_DT_F16, esize = 2;
        break;
    case QB_DT_I32:
        dt = QB_W4A16_DT_I32, esize = 4;
        break;
    default:
        return fail(m, QB_E_UNSUPPORTED, "%s/%s: tensor '%s': dtype %s is not used by the format",
                    m->dir, file, name, t->dtype_name);
    }
    if (t->n_dims < 1 || t->n_dims > 2)
        return fail(m, QB_E_UNSUPPORTED, "%s/%s: tensor '%s': %u dims (the format uses 1 or 2)",
                    m->dir, file, name, t->n_dims);
    out->data = t->data;
    if ((uintptr_t)t->data % esize != 0) {
        /* malloc memory is aligned for every scalar type; the copy is made
         * once per tensor and lives until close, so the pointer contract is
         * the same as a mapping's. */
        void *copy = NULL;
        qb_status st = QB_OK;
        pthread_mutex_lock(&m->copies_lock);
        for (size_t i = 0; i < m->n_copies && !copy; i++)
            if (m->copies[i].src == t->data)
                copy = m->copies[i].copy;
        if (!copy && m->n_copies == m->cap_copies) {
            size_t cap = m->cap_copies ? 2 * m->cap_copies : 16;
            struct aligned_copy *grown = realloc(m->copies, cap * sizeof(*grown));
            if (grown)
                m->copies = grown, m->cap_copies = cap;
            else
                st = QB_E_NOMEM;
        }
        if (!copy && st == QB_OK) {
            if ((copy = malloc(t->n_bytes ? t->n_bytes : 1)) != NULL) {
                memcpy(copy, t->data, t->n_bytes);
                m->copies[m->n_copies].src = t->data;
                m->copies[m->n_copies++].copy = copy;
            } else {
                st = QB_E_NOMEM;
            }
        }
        pthread_mutex_unlock(&m->copies_lock);
        if (st != QB_OK)
            return fail(m, st, "%s/%s: tensor '%s': out of memory", m->dir, file, name);
        out->data = copy;
    }
    out->n_bytes = t->n_bytes;
    out->dtype = dt;
    out->n_dims = (int)t->n_dims;
    out->dims[0] = t->dims[0];
    out->dims[1] = t->n_dims == 2 ? t->dims[1] : 0;
    return QB_OK;
}

/* tensor_get for an optional tensor: QB_OK with data NULL when absent. */
static qb_status get_optional(qb_w4a16_model *m, const char *file, const char *name,
                              qb_w4a16_tensor *t)
{
    qb_status st = qb_w4a16_tensor_get(m, file, name, t);
    if (st == QB_E_NOT_FOUND) {
        memset(t, 0, sizeof(*t));
        tl_err[0] = '\0';
        return QB_OK;
    }
    return st;
}

qb_status qb_w4a16_linear_get(qb_w4a16_model *m, int64_t layer, const char *path, int64_t k,
                              qb_w4a16_linear *out)
{
    char file[32], name[512];
    qb_w4a16_tensor tp, ts, tperm, tb;
    int64_t n, g = m->group_size;
    qb_status st;

    if (k < 0)
        return fail(m, QB_E_INVALID, "%s: linear '%s': k < 0", m->dir, path);
    if (layer == -1)
        snprintf(file, sizeof(file), "lm_head.safetensors");
    else if ((st = qb_w4a16_layer_file(m, layer, file, sizeof(file))) != QB_OK)
        return fail(m, st, "%s: layer %" PRId64 " outside [0, %" PRId64 ")", m->dir, layer,
                    m->num_layers);
#define GET(T, SUFFIX, OPT)                                                                      \
    do {                                                                                         \
        if ((size_t)snprintf(name, sizeof(name), "%s." SUFFIX, path) >= sizeof(name))            \
            return fail(m, QB_E_INVALID, "%s: linear name too long", m->dir);                     \
        st = (OPT) ? get_optional(m, file, name, &T) : qb_w4a16_tensor_get(m, file, name, &T);   \
        if (st != QB_OK)                                                                         \
            return st;                                                                           \
    } while (0)
    GET(tp, "packed", 0);
    GET(ts, "scales", 0);
    GET(tperm, "perm", 1);
    GET(tb, "bias", 1);
#undef GET
    if (tp.dtype != QB_W4A16_DT_U8 || tp.n_dims != 2)
        return fail(m, QB_E_FORMAT, "%s/%s: %s.packed is not U8 [n, ceil(k/2)]", m->dir, file, path);
    if (ts.dtype != QB_W4A16_DT_F16 || ts.n_dims != 2)
        return fail(m, QB_E_FORMAT, "%s/%s: %s.scales is not F16 [n, ceil(k/g)]", m->dir, file, path);
    n = tp.dims[0];
    if (k == 0)
        k = 2 * tp.dims[1];
    if (n < 1 || tp.dims[1] != (k + 1) / 2 || ts.dims[0] != n || ts.dims[1] != (k + g - 1) / g)
        return fail(m, QB_E_MISMATCH,
                    "%s/%s: %s: packed [%" PRId64 ", %" PRId64 "] / scales [%" PRId64 ", %" PRId64
                    "] do not match k = %" PRId64 ", group_size %" PRId64,
                    m->dir, file, path, tp.dims[0], tp.dims[1], ts.dims[0], ts.dims[1], k, g);
    if (tperm.data) {
        const int32_t *p = tperm.data;
        unsigned char *seen;
        if (!m->feat_perm)
            return fail(m, QB_E_FORMAT, "%s/%s: %s.perm present but the manifest does not list "
                        "input_permutation", m->dir, file, path);
        if (tperm.dtype != QB_W4A16_DT_I32 || tperm.n_dims != 1 || tperm.dims[0] != k)
            return fail(m, QB_E_FORMAT, "%s/%s: %s.perm is not I32 [%" PRId64 "]", m->dir, file,
                        path, k);
        if (!(seen = calloc((size_t)k, 1)))
            return fail(m, QB_E_NOMEM, "%s: out of memory", m->dir);
        for (int64_t i = 0; i < k; i++) {
            if (p[i] < 0 || p[i] >= k || seen[p[i]]) {
                free(seen);
                return fail(m, QB_E_FORMAT, "%s/%s: %s.perm is not a permutation of 0..%" PRId64
                            " (entry %" PRId64 ")", m->dir, file, path, k - 1, i);
            }
            seen[p[i]] = 1;
        }
        free(seen);
    }
    if (tb.data && (tb.dtype != QB_W4A16_DT_F16 || tb.n_dims != 1 || tb.dims[0] != n))
        return fail(m, QB_E_FORMAT, "%s/%s: %s.bias is not F16 [%" PRId64 "]", m->dir, file, path, n);
    *out = (qb_w4a16_linear){.packed = tp.data, .scales = ts.data, .perm = tperm.data,
                             .bias = tb.data, .n = n, .k = k, .group_size = g};
    return QB_OK;
}
