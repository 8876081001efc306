/*
 * Typed metadata access (see gguf_kv.h). Value encodings: ggml-org/ggml
 * include/gguf.h enum gguf_type; docs/formats/gguf.md "Metadata values".
 */
#include "gguf_kv.h"
#include "qbk_alloc.h"

#include <stdlib.h>
#include <string.h>

const gguf_kv *gguf_kv_find(const gguf_file *f, const char *key)
{
    uint64_t i;
    for (i = 0; i < f->n_kv; i++)
        if (strcmp(f->kv[i].key, key) == 0)
            return &f->kv[i];
    return NULL;
}

int64_t gguf_kv_int_at(uint32_t et, const uint8_t *p, uint64_t i, int *ok)
{
    *ok = 1;
    switch (et) {
    case GGUF_VT_UINT8:
    case GGUF_VT_BOOL:
        return p[i];
    case GGUF_VT_INT8:
        return (int8_t)p[i];
    case GGUF_VT_UINT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case GGUF_VT_INT16: {
        int16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case GGUF_VT_UINT32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case GGUF_VT_INT32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case GGUF_VT_UINT64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        if (v > (uint64_t)INT64_MAX)
            *ok = 0;
        return (int64_t)v;
    }
    case GGUF_VT_INT64: {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    default:
        *ok = 0;
        return 0;
    }
}

static qb_status wrong_type(const qb_host *h, const gguf_file *f, const gguf_kv *kv, const char *want)
{
    return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' has type %u, expected %s", f->path, kv->key, kv->type, want);
}

qb_status gguf_kv_int(const qb_host *h, const gguf_file *f, const char *key, int64_t *out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    int ok;
    int64_t v;
    if (!kv)
        return QB_E_NOT_FOUND;
    v = gguf_kv_int_at(kv->type, kv->val, 0, &ok);
    if (!ok)
        return wrong_type(h, f, kv, "an integer");
    *out = v;
    return QB_OK;
}

qb_status gguf_kv_int_uniform(const qb_host *h, const gguf_file *f, const char *key, int64_t *out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    uint64_t i;
    int ok;
    int64_t v0;
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type != GGUF_VT_ARRAY)
        return gguf_kv_int(h, f, key, out);
    if (kv->arr_n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' is an empty array", f->path, key);
    v0 = gguf_kv_int_at(kv->arr_type, kv->val, 0, &ok);
    if (!ok)
        return h->set_error(h, QB_E_FORMAT, "%s: metadata '%s' is an array of type %u, expected integers", f->path,
                            key, kv->arr_type);
    for (i = 1; i < kv->arr_n; i++)
        if (gguf_kv_int_at(kv->arr_type, kv->val, i, &ok) != v0 || !ok)
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: metadata '%s' has different per-layer values (layer %llu); not expressible in config.json",
                                f->path, key, (unsigned long long)i);
    *out = v0;
    return QB_OK;
}

qb_status gguf_kv_float(const qb_host *h, const gguf_file *f, const char *key, double *out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type == GGUF_VT_FLOAT32) {
        float v;
        memcpy(&v, kv->val, 4);
        *out = v;
    } else if (kv->type == GGUF_VT_FLOAT64) {
        double v;
        memcpy(&v, kv->val, 8);
        *out = v;
    } else {
        int ok;
        int64_t v = gguf_kv_int_at(kv->type, kv->val, 0, &ok);
        if (!ok || kv->type == GGUF_VT_BOOL)
            return wrong_type(h, f, kv, "a number");
        *out = (double)v;
    }
    return QB_OK;
}

qb_status gguf_kv_bool(const qb_host *h, const gguf_file *f, const char *key, int *out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type != GGUF_VT_BOOL)
        return wrong_type(h, f, kv, "BOOL");
    *out = kv->val[0] != 0;
    return QB_OK;
}

qb_status gguf_kv_string(const qb_host *h, const gguf_file *f, const char *key, char **out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    uint64_t len;
    char *s;
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type != GGUF_VT_STRING)
        return wrong_type(h, f, kv, "STRING");
    memcpy(&len, kv->val, 8); /* validated against the file size by the parser */
    s = qbk_malloc((size_t)len + 1);
    if (!s)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
    memcpy(s, kv->val + 8, (size_t)len);
    s[len] = '\0';
    *out = s;
    return QB_OK;
}

qb_status gguf_kv_array_len(const qb_host *h, const gguf_file *f, const char *key, uint64_t *out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type != GGUF_VT_ARRAY)
        return wrong_type(h, f, kv, "ARRAY");
    *out = kv->arr_n;
    return QB_OK;
}
