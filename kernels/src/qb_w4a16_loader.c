/*
 * libquantbridge-w4a16 loader: validates manifest.json of a converted
 * directory against format "sm86-w4a16" version 1 (w4a16-format.md) with
 * the kit's manifest check (w4a16_manifest, the one the sm86-w4a16
 * plugin's reader uses), maps its safetensors files through the kit's
 * strict parser (qbk_safetensors, linked statically, no qb_host) and hands
 * out tensors by name.
 */
#include <quantbridge/qb_w4a16.h>

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_path.h"
#include "w4a16_int4.h"
#include "qbk_safetensors.h"
#include "w4a16_manifest.h"

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
};

/* Message of the calling thread's last failure: queries may run
 * concurrently on one model, so the text cannot live in the model. */
static _Thread_local char tl_err[ERR_LEN];

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

static qb_status read_manifest(qb_w4a16_model *m, char **text, size_t *text_len)
{
    char *path = qbk_path_join(m->dir, "manifest.json"), *buf = NULL;
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
    buf = qbk_malloc((size_t)len + 1);
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
    *text_len = (size_t)len;
    buf = NULL;
out:
    if (f)
        fclose(f);
    qbk_free(buf);
    qbk_free(path);
    return st;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

qb_status qb_w4a16_open(const char *dir, unsigned flags, qb_w4a16_model **out, char *err,
                        size_t err_len)
{
    qb_w4a16_model *m = NULL;
    w4a16_manifest man = {0};
    qbk_st_err *e = NULL;
    char *text = NULL, *mp = NULL;
    size_t text_len = 0;
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
    if (!(m = qbk_calloc(1, sizeof(*m))) || !(m->dir = qbk_strdup(dir))) {
        st = QB_E_NOMEM;
        if (err && err_len)
            snprintf(err, err_len, "%s: out of memory", dir);
        goto out;
    }
    pthread_mutex_init(&m->copies_lock, NULL);
    /* the kit's message buffer is larger than a thread-local one should be */
    if (!(e = qbk_malloc(sizeof(*e))) || !(mp = qbk_path_join(dir, W4A16_MANIFEST))) {
        st = fail(m, QB_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    if ((st = read_manifest(m, &text, &text_len)) != QB_OK)
        goto out;
    if ((st = w4a16_manifest_parse(e, mp, text, text_len, &man)) != QB_OK) {
        fail(m, st, "%s", e->msg);
        goto out;
    }
    m->group_size = man.group_size;
    m->num_layers = man.num_layers;
    m->feat_perm = man.input_perm;
    m->feat_qhead = man.quantized_head;
    m->architecture = man.architecture;
    man.architecture = NULL;
    if (!(m->files = qbk_calloc(man.n_files + 1, sizeof(*m->files)))) {
        st = fail(m, QB_E_NOMEM, "%s: out of memory", mp);
        goto out;
    }
    for (size_t i = 0; i < man.n_files; i++) {
        const w4a16_file *f = &man.files[i];
        char *path;
        st = w4a16_file_check(e, dir, f, (flags & QB_W4A16_OPEN_VERIFY_SHA256) != 0);
        if (st == QB_OK && ends_with(f->name, ".safetensors")) {
            mapped_file *mf = &m->files[m->n_files];
            if (!(path = qbk_path_join(dir, f->name)) || !(mf->name = qbk_strdup(f->name))) {
                qbk_free(path);
                st = fail(m, QB_E_NOMEM, "%s: out of memory", mp);
                goto out;
            }
            m->n_files++;
            st = qbk_st_open_file(e, path, &mf->set);
            qbk_free(path);
        }
        if (st != QB_OK) {
            fail(m, st, "%s", e->msg);
            goto out;
        }
    }
    *out = m;
    m = NULL;
out:
    if (m && err && err_len)
        snprintf(err, err_len, "%s", tl_err[0] ? tl_err : "qb_w4a16_open failed");
    w4a16_manifest_free(&man);
    qbk_free(e);
    qbk_free(text);
    qbk_free(mp);
    qb_w4a16_close(m);
    return st;
}

void qb_w4a16_close(qb_w4a16_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_files; i++) {
        if (m->files[i].set)
            qbk_st_set_free(m->files[i].set);
        qbk_free(m->files[i].name);
    }
    qbk_free(m->files);
    for (size_t i = 0; i < m->n_copies; i++)
        qbk_free(m->copies[i].copy);
    qbk_free(m->copies);
    pthread_mutex_destroy(&m->copies_lock);
    qbk_free(m->architecture);
    qbk_free(m->dir);
    qbk_free(m);
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
    if (strcmp(name, W4A16_FEAT_PERM) == 0)
        return m->feat_perm;
    if (strcmp(name, W4A16_FEAT_QHEAD) == 0)
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
    if (layer < 0 || layer >= m->num_layers)
        return QB_E_RANGE;
    return w4a16_layer_file(layer, m->num_layers, buf, len) == 0 ? QB_OK : QB_E_INVALID;
}

qb_status qb_w4a16_tensor_get(qb_w4a16_model *m, const char *file, const char *name,
                              qb_w4a16_tensor *out)
{
    const qb_st_tensor *t = NULL;
    size_t esize;
    int dt;
    for (size_t i = 0; i < m->n_files; i++)
        if (strcmp(m->files[i].name, file) == 0) {
            t = qbk_st_find(m->files[i].set, name);
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
    case QB_DT_F32:
        dt = QB_W4A16_DT_F32, esize = 4;
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
            struct aligned_copy *grown = qbk_realloc(m->copies, cap * sizeof(*grown));
            if (grown)
                m->copies = grown, m->cap_copies = cap;
            else
                st = QB_E_NOMEM;
        }
        if (!copy && st == QB_OK) {
            if ((copy = qbk_malloc(t->n_bytes ? t->n_bytes : 1)) != NULL) {
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
    if (k < 1)
        return fail(m, QB_E_FORMAT, "%s/%s: %s.packed has no input columns", m->dir, file, path);
    if (n < 1 || tp.dims[1] != w4a16_int4_packed_bytes(k) || ts.dims[0] != n ||
        ts.dims[1] != w4a16_int4_n_groups(k, g))
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
        if (!(seen = qbk_calloc((size_t)k, 1)))
            return fail(m, QB_E_NOMEM, "%s: out of memory", m->dir);
        for (int64_t i = 0; i < k; i++) {
            if (p[i] < 0 || p[i] >= k || seen[p[i]]) {
                qbk_free(seen);
                return fail(m, QB_E_FORMAT, "%s/%s: %s.perm is not a permutation of 0..%" PRId64
                            " (entry %" PRId64 ")", m->dir, file, path, k - 1, i);
            }
            seen[p[i]] = 1;
        }
        qbk_free(seen);
    }
    if (tb.data && (tb.dtype != QB_W4A16_DT_F16 || tb.n_dims != 1 || tb.dims[0] != n))
        return fail(m, QB_E_FORMAT, "%s/%s: %s.bias is not F16 [%" PRId64 "]", m->dir, file, path, n);
    /* g >= k is one group per row: hand out k, the value every kernel
     * takes for it (qb_w4a16.h, encoding) */
    *out = (qb_w4a16_linear){.packed = tp.data, .scales = ts.data, .perm = tperm.data,
                             .bias = tb.data, .n = n, .k = k, .group_size = g < k ? g : k};
    return QB_OK;
}
