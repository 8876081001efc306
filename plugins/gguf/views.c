/*
 * GGUF reader — the stored tensors and metadata (gguf_views.h). Value
 * encodings: docs/formats/gguf.md "Metadata values" (a string is a u64
 * byte count then the bytes; an array is its element type, a u64 count,
 * then the elements).
 */
#include "gguf_views.h"

#include "ggml_types.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Array elements shown before the summary stops ("..."). */
#define GGUF_VIEW_ARRAY_SHOWN 8
/* Characters of one string shown before it is cut. */
#define GGUF_VIEW_STRING_SHOWN 200

qb_status gguf_view_raw(const gguf_model *m, const gguf_ctensor *t, size_t n, size_t index,
                        qb_raw_tensor_info *out)
{
    const gguf_tinfo *ti = NULL;
    const char *type;
    size_t f, i, left = index;
    uint32_t d;

    for (f = 0; f < m->n_files && !ti; f++) {
        if (left < m->files[f]->n_tensors)
            ti = &m->files[f]->t[left];
        else
            left -= (size_t)m->files[f]->n_tensors;
    }
    if (!ti)
        return QB_E_RANGE;
    type = gguf_ggml_type_name(ti->type);
    out->name = ti->name;
    out->type = type ? type : "unknown";
    out->n_dims = ti->n_dims;
    for (d = 0; d < QB_MAX_DIMS; d++)
        out->dims[d] = d < ti->n_dims ? ti->ne[d] : 0;
    out->n_bytes = ti->nbytes;
    out->file = ti->file->path;
    out->canonical = -1;
    for (i = 0; i < n; i++) {
        if (t[i].src != ti && t[i].kv_v != ti && t[i].oss_up != ti && t[i].qkvz_z != ti)
            continue;
        /* A fused stored tensor split into several canonical ones belongs
         * to none of them alone. */
        out->canonical = out->canonical == -1 ? (int64_t)i : -2;
    }
    if (out->canonical == -2)
        out->canonical = -1;
    return QB_OK;
}

static const char *type_name(uint32_t t)
{
    static const char *const names[GGUF_VT_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return t < GGUF_VT_COUNT ? names[t] : "unknown";
}

/* Bytes of one fixed-size element, 0 for a string (variable) or unknown. */
static size_t elem_size(uint32_t t)
{
    switch (t) {
    case GGUF_VT_UINT8: case GGUF_VT_INT8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_UINT16: case GGUF_VT_INT16: return 2;
    case GGUF_VT_UINT32: case GGUF_VT_INT32: case GGUF_VT_FLOAT32: return 4;
    case GGUF_VT_UINT64: case GGUF_VT_INT64: case GGUF_VT_FLOAT64: return 8;
    default: return 0;
    }
}

/* Appends to buf[cap] at *len, never past cap - 1. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt_s, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t cap, size_t *len, const char *fmt_s, ...)
{
    va_list ap;
    int w;
    if (*len + 1 >= cap)
        return;
    va_start(ap, fmt_s);
    w = vsnprintf(buf + *len, cap - *len, fmt_s, ap);
    va_end(ap);
    if (w > 0)
        *len = *len + (size_t)w < cap ? *len + (size_t)w : cap - 1;
}

/* Writes scalar element of type t at p; returns the bytes it occupies
 * (a string: 8 + its length). */
static uint64_t put_elem(uint32_t t, const uint8_t *p, char *buf, size_t cap, size_t *len)
{
    switch (t) {
    case GGUF_VT_UINT8: put(buf, cap, len, "%u", (unsigned)p[0]); return 1;
    case GGUF_VT_INT8: put(buf, cap, len, "%d", (int)(int8_t)p[0]); return 1;
    case GGUF_VT_BOOL: put(buf, cap, len, "%s", p[0] ? "true" : "false"); return 1;
    case GGUF_VT_UINT16: { uint16_t v; memcpy(&v, p, 2); put(buf, cap, len, "%u", (unsigned)v); return 2; }
    case GGUF_VT_INT16: { int16_t v; memcpy(&v, p, 2); put(buf, cap, len, "%d", (int)v); return 2; }
    case GGUF_VT_UINT32: { uint32_t v; memcpy(&v, p, 4); put(buf, cap, len, "%u", v); return 4; }
    case GGUF_VT_INT32: { int32_t v; memcpy(&v, p, 4); put(buf, cap, len, "%d", v); return 4; }
    case GGUF_VT_FLOAT32: { float v; memcpy(&v, p, 4); put(buf, cap, len, "%.9g", (double)v); return 4; }
    case GGUF_VT_UINT64: { uint64_t v; memcpy(&v, p, 8); put(buf, cap, len, "%llu", (unsigned long long)v); return 8; }
    case GGUF_VT_INT64: { int64_t v; memcpy(&v, p, 8); put(buf, cap, len, "%lld", (long long)v); return 8; }
    case GGUF_VT_FLOAT64: { double v; memcpy(&v, p, 8); put(buf, cap, len, "%.17g", v); return 8; }
    case GGUF_VT_STRING: {
        uint64_t n, i;
        memcpy(&n, p, 8); /* bounded by the container parser */
        put(buf, cap, len, "\"");
        for (i = 0; i < n && i < GGUF_VIEW_STRING_SHOWN; i++) {
            unsigned char c = p[8 + i];
            if (c == '"' || c == '\\')
                put(buf, cap, len, "\\%c", c);
            else if (c == '\n')
                put(buf, cap, len, "\\n");
            else if (c < 0x20 || c == 0x7f)
                put(buf, cap, len, "\\x%02x", c);
            else
                put(buf, cap, len, "%c", c);
        }
        put(buf, cap, len, n > GGUF_VIEW_STRING_SHOWN ? "\"... (%llu bytes)" : "\"",
            (unsigned long long)n);
        return 8 + n;
    }
    default: put(buf, cap, len, "?"); return 0;
    }
}

qb_status gguf_view_meta(const gguf_model *m, const gguf_ctensor *t, size_t n, size_t index,
                         qb_meta_entry *out)
{
    static const char *const arr_types[GGUF_VT_COUNT] = {
        "array[u8]", "array[i8]", "array[u16]", "array[i16]", "array[u32]", "array[i32]",
        "array[f32]", "array[bool]", "array[string]", "array[array]", "array[u64]", "array[i64]",
        "array[f64]",
    };
    const gguf_file *f = gguf_model_meta(m);
    const gguf_kv *kv;
    size_t len = 0;

    if (index >= f->n_kv) {
        size_t i, left = index - (size_t)f->n_kv;
        for (i = 0; i < n; i++) {
            if (!t[i].block_key)
                continue;
            if (left-- == 0) {
                out->key = t[i].block_key;
                out->type = "int";
                put(out->value, out->value_cap, &len, "%u", t[i].block_cols);
                return QB_OK;
            }
        }
        return QB_E_RANGE;
    }
    kv = &f->kv[index];
    out->key = kv->key;
    out->type = type_name(kv->type);
    out->value[0] = '\0';
    if (kv->type == GGUF_VT_ARRAY) {
        const uint8_t *p = kv->val;
        uint64_t i;
        if (kv->arr_type < GGUF_VT_COUNT)
            out->type = arr_types[kv->arr_type];
        put(out->value, out->value_cap, &len, "[%llu]", (unsigned long long)kv->arr_n);
        if (kv->arr_type == GGUF_VT_ARRAY || (kv->arr_type != GGUF_VT_STRING && !elem_size(kv->arr_type)))
            return QB_OK; /* nested arrays: the count says enough */
        for (i = 0; i < kv->arr_n && i < GGUF_VIEW_ARRAY_SHOWN; i++) {
            put(out->value, out->value_cap, &len, i ? ", " : " ");
            p += put_elem(kv->arr_type, p, out->value, out->value_cap, &len);
        }
        if (kv->arr_n > GGUF_VIEW_ARRAY_SHOWN)
            put(out->value, out->value_cap, &len, ", ...");
        return QB_OK;
    }
    put_elem(kv->type, kv->val, out->value, out->value_cap, &len);
    return QB_OK;
}
