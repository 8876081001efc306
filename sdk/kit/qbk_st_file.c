/*
 * quantbridge host — safetensors: one file, mapped and validated.
 *
 * Format facts (huggingface/safetensors safetensors/src/tensor.rs,
 * SafeTensors::read_metadata and Metadata::validate; README "Format"):
 *   u64 LE header length N (<= 100,000,000), N bytes of UTF-8 JSON, then the
 *   data buffer. data_offsets are relative to the data buffer, half-open,
 *   sorted they start at 0, touch without gaps and the last ends at EOF.
 */
#define _XOPEN_SOURCE 700 /* realpath, strdup, O_CLOEXEC, lstat */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "qbk_st_internal.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

/* Upper bound of the header, as safetensors' MAX_HEADER_SIZE. */
#define ST_MAX_HEADER 100000000ull
/* Integers beyond 2^53 cannot be told apart in a JSON double (cJSON). */
#define ST_MAX_JSON_INT 9007199254740992.0

/* The dtypes of safetensors' `enum Dtype` with their bit sizes. Those with
 * QB_DT_UNKNOWN are known to the format but have no qb_dtype yet: they are
 * refused by name rather than guessed at. */
typedef struct st_dtype_def {
    const char *name;
    qb_dtype dt;
    uint32_t bits;
} st_dtype_def;

static const st_dtype_def st_dtypes[] = {
    {"BOOL", QB_DT_BOOL, 8},          {"U8", QB_DT_U8, 8},
    {"I8", QB_DT_I8, 8},              {"F8_E5M2", QB_DT_F8_E5M2, 8},
    {"F8_E4M3", QB_DT_F8_E4M3, 8},    {"F8_E8M0", QB_DT_F8_E8M0, 8},
    {"I16", QB_DT_I16, 16},           {"U16", QB_DT_U16, 16},
    {"F16", QB_DT_F16, 16},           {"BF16", QB_DT_BF16, 16},
    {"I32", QB_DT_I32, 32},           {"U32", QB_DT_U32, 32},
    {"F32", QB_DT_F32, 32},           {"F64", QB_DT_F64, 64},
    {"I64", QB_DT_I64, 64},           {"U64", QB_DT_U64, 64},
    {"F8_E4M3FNUZ", QB_DT_UNKNOWN, 8}, {"F8_E5M2FNUZ", QB_DT_UNKNOWN, 8},
    {"C64", QB_DT_UNKNOWN, 64},       {"F4", QB_DT_UNKNOWN, 4},
    {"F6_E2M3", QB_DT_UNKNOWN, 6},    {"F6_E3M2", QB_DT_UNKNOWN, 6},
};

static const st_dtype_def *st_dtype_lookup(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++)
        if (strcmp(st_dtypes[i].name, name) == 0)
            return &st_dtypes[i];
    return NULL;
}

/* Strict UTF-8 check (RFC 3629: no overlongs, no surrogates, <= U+10FFFF),
 * as Rust's std::str::from_utf8 applies to the header: the JSON parser's
 * own check (qbk_json_utf8_seq) over the whole header, keys and
 * whitespace included. Returns the offset of the first bad byte, or len
 * when valid. */
static size_t st_utf8_check(const uint8_t *s, size_t len)
{
    size_t i = 0, k;
    while (i < len) {
        k = qbk_json_utf8_seq(s + i, len - i);
        if (!k)
            return i;
        i += k;
    }
    return len;
}

/* A JSON number that is a non-negative integer representable exactly. */
static int st_json_uint(const cJSON *j, uint64_t *v)
{
    double d;
    if (!cJSON_IsNumber(j))
        return 0;
    d = j->valuedouble;
    if (!(d >= 0.0) || d > ST_MAX_JSON_INT || d != (double)(uint64_t)d)
        return 0;
    *v = (uint64_t)d;
    return 1;
}

/* One tensor entry while its file is being validated. */
typedef struct st_entry {
    const char *name; /* points into the cJSON tree */
    const st_dtype_def *dt;
    uint32_t n_dims;
    int64_t dims[QB_MAX_DIMS];
    uint64_t begin, end;
} st_entry;

static int st_entry_cmp(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* Validates one tensor object of the header into *e. */
static qb_status st_parse_entry(qbk_st_err *err, const char *path, const cJSON *item, st_entry *e)
{
    const cJSON *c, *dtype = NULL, *shape = NULL, *offs = NULL;
    const char *name = item->string;
    uint64_t elems = 1, bits, nbytes, v;

    if (!cJSON_IsObject(item))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': entry is not a JSON object", path, name);
    for (c = item->child; c; c = c->next) {
        if (strcmp(c->string, "dtype") == 0)
            dtype = c;
        else if (strcmp(c->string, "shape") == 0)
            shape = c;
        else if (strcmp(c->string, "data_offsets") == 0)
            offs = c;
        else
            return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': unknown key '%s'", path, name,
                                c->string);
    }
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return qbk_st_fail(err, QB_E_FORMAT,
                            "%s: tensor '%s': needs string dtype, array shape and array data_offsets",
                            path, name);

    memset(e, 0, sizeof(*e));
    e->name = name;
    e->dt = st_dtype_lookup(dtype->valuestring);
    if (!e->dt)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': unknown dtype '%s'", path, name,
                            dtype->valuestring);
    if (e->dt->dt == QB_DT_UNKNOWN)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': dtype '%s' is not supported", path,
                            name, dtype->valuestring);

    for (c = shape->child; c; c = c->next) {
        if (e->n_dims == QB_MAX_DIMS)
            return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': more than %d dimensions", path,
                                name, QB_MAX_DIMS);
        if (!st_json_uint(c, &v))
            return qbk_st_fail(err, QB_E_FORMAT,
                                "%s: tensor '%s': dimension %u is not a non-negative integer", path,
                                name, e->n_dims);
        e->dims[e->n_dims++] = (int64_t)v;
        if (__builtin_mul_overflow(elems, v, &elems))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': shape element count overflows",
                                path, name);
    }
    bits = e->dt->bits;
    if (__builtin_mul_overflow(elems, bits, &nbytes))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': byte count overflows", path, name);
    if (nbytes % 8)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': %s data is not a whole number of bytes",
                            path, name, e->dt->name);
    nbytes /= 8;

    c = offs->child;
    if (!c || !c->next || c->next->next || !st_json_uint(c, &e->begin) ||
        !st_json_uint(c->next, &e->end))
        return qbk_st_fail(err, QB_E_FORMAT,
                            "%s: tensor '%s': data_offsets must be two non-negative integers", path,
                            name);
    if (e->end < e->begin)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu) reversed",
                            path, name, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != nbytes)
        return qbk_st_fail(err, QB_E_FORMAT,
                            "%s: tensor '%s': data_offsets span %llu bytes but %s shape needs %llu",
                            path, name, (unsigned long long)(e->end - e->begin), e->dt->name,
                            (unsigned long long)nbytes);
    return QB_OK;
}

/* The header's JSON refused: a duplicate key in the words of the object
 * holding it (a tensor entry, __metadata__, the header itself), anything
 * else as the parser says, at its byte offset in the file. */
static qb_status st_header_json_fail(qbk_st_err *err, const char *path, const qbk_json_fail *f)
{
    if (f->rc == QB_E_NOMEM)
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory for the header", path);
    if (f->dup_key[0] && !f->dup_in[0])
        return qbk_st_fail(err, QB_E_FORMAT, "%s: duplicate key '%s' in the header", path,
                           f->dup_key);
    if (f->dup_key[0] && strcmp(f->dup_in, "__metadata__") == 0)
        return qbk_st_fail(err, QB_E_FORMAT, "%s: __metadata__: duplicate key '%s'", path,
                           f->dup_key);
    if (f->dup_key[0])
        return qbk_st_fail(err, QB_E_FORMAT, "%s: tensor '%s': duplicate key '%s'", path,
                           f->dup_in, f->dup_key);
    return qbk_st_fail(err, QB_E_FORMAT, "%s: header is not valid JSON at byte %zu: %s", path,
                       (size_t)8 + f->offset, f->reason);
}

/* Copies the string→string __metadata__ object into set->meta. */
static qb_status st_parse_meta(qbk_st_err *err, const char *path, const cJSON *meta, qb_st_set *set,
                               int keep)
{
    const cJSON *c;
    size_t n = 0, i = 0;

    if (!cJSON_IsObject(meta))
        return qbk_st_fail(err, QB_E_FORMAT, "%s: __metadata__ is not a JSON object", path);
    for (c = meta->child; c; c = c->next, n++)
        if (!cJSON_IsString(c))
            return qbk_st_fail(err, QB_E_FORMAT, "%s: __metadata__: value of '%s' is not a string",
                                path, c->string);
    if (!keep || n == 0)
        return QB_OK;
    set->meta = qbk_calloc(2 * n, sizeof(char *));
    if (!set->meta)
        return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    set->n_meta = n;
    for (c = meta->child; c; c = c->next, i++) {
        set->meta[2 * i] = qbk_strdup(c->string);
        set->meta[2 * i + 1] = qbk_strdup(c->valuestring);
        if (!set->meta[2 * i] || !set->meta[2 * i + 1])
            return qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
    }
    return QB_OK;
}

/* Grows an array of `size`-byte elements to hold at least `need`. */
static int st_grow(void **arr, size_t *cap, size_t need, size_t size)
{
    size_t nc;
    void *p;
    if (need <= *cap)
        return 0;
    nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    p = qbk_realloc(*arr, nc * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

qb_status qbk_st_file_load(qbk_st_err *err, qb_st_set *set, const char *path, int want_meta)
{
    qb_status st = QB_OK;
    int fd = -1;
    struct stat sb;
    uint8_t *base = MAP_FAILED;
    size_t flen = 0, i, n_entries = 0, first_t = set->n;
    uint64_t hlen = 0, dlen;
    cJSON *root = NULL;
    const cJSON *c, *meta = NULL;
    st_entry *ents = NULL;
    qbk_st_map *m;
    qbk_json_fail jf;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st = qbk_st_fail(err, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot open: %s",
                          path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &sb) != 0) {
        st = qbk_st_fail(err, QB_E_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = qbk_st_fail(err, QB_E_IO, "%s: not a regular file", path);
        goto out;
    }
    if ((uint64_t)sb.st_size < 8) {
        st = qbk_st_fail(err, QB_E_FORMAT,
                          "%s: %lld bytes, too short for the 8-byte safetensors header length",
                          path, (long long)sb.st_size);
        goto out;
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        st = qbk_st_fail(err, QB_E_IO, "%s: too large to map", path);
        goto out;
    }
    flen = (size_t)sb.st_size;
    base = mmap(NULL, flen, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
        st = qbk_st_fail(err, errno == ENOMEM ? QB_E_NOMEM : QB_E_IO, "%s: mmap failed: %s", path,
                          strerror(errno));
        goto out;
    }
    for (i = 0; i < 8; i++)
        hlen |= (uint64_t)base[i] << (8 * i);
    if (hlen > ST_MAX_HEADER) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: header length %llu exceeds the limit of %llu", path,
                          (unsigned long long)hlen, ST_MAX_HEADER);
        goto out;
    }
    if (hlen > flen - 8) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes)",
                          path, (unsigned long long)hlen, flen);
        goto out;
    }
    dlen = flen - 8 - hlen;
    if (st_utf8_check(base + 8, (size_t)hlen) != hlen) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: header is not valid UTF-8 (byte %zu)", path,
                          (size_t)8 + st_utf8_check(base + 8, (size_t)hlen));
        goto out;
    }
    if (memchr(base + 8, 0, (size_t)hlen)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: header contains a NUL byte", path);
        goto out;
    }
    /* The one strict JSON reading (qbk_json.h): serde_json, which writes
     * and reads these headers, also accepts trailing whitespace (the writer
     * pads with spaces) and nothing else after the value. */
    if (qbk_json_parse_text((const char *)base + 8, (size_t)hlen, NULL, &root, &jf) != QB_OK) {
        st = st_header_json_fail(err, path, &jf);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        st = qbk_st_fail(err, QB_E_FORMAT, "%s: header is not a JSON object", path);
        goto out;
    }
    for (c = root->child; c; c = c->next)
        n_entries++;
    ents = qbk_calloc(n_entries ? n_entries : 1, sizeof(*ents));
    if (!ents) {
        st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    n_entries = 0;
    for (c = root->child; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") == 0) {
            meta = c;
            continue;
        }
        st = st_parse_entry(err, path, c, &ents[n_entries]);
        if (st != QB_OK)
            goto out;
        n_entries++;
    }

    /* Metadata::validate: sorted by offsets, start at 0, no gap or overlap,
     * last end == data buffer length. */
    qsort(ents, n_entries, sizeof(*ents), st_entry_cmp);
    {
        uint64_t pos = 0;
        for (i = 0; i < n_entries; i++) {
            const st_entry *e = &ents[i];
            if (e->end > dlen) {
                st = qbk_st_fail(err, QB_E_FORMAT,
                                  "%s: tensor '%s': data_offsets [%llu, %llu) outside the data buffer (%llu bytes)",
                                  path, e->name, (unsigned long long)e->begin,
                                  (unsigned long long)e->end, (unsigned long long)dlen);
                goto out;
            }
            if (e->begin != pos) {
                st = qbk_st_fail(err, QB_E_FORMAT,
                                  "%s: tensor '%s': data_offsets [%llu, %llu) %s the previous tensor (ends at %llu)",
                                  path, e->name, (unsigned long long)e->begin,
                                  (unsigned long long)e->end,
                                  e->begin < pos ? "overlap" : "leave a gap after", (unsigned long long)pos);
                goto out;
            }
            pos = e->end;
        }
        if (pos != dlen) {
            st = qbk_st_fail(err, QB_E_FORMAT,
                              "%s: tensors end at data byte %llu but the file has %llu data bytes (trailing bytes)",
                              path, (unsigned long long)pos, (unsigned long long)dlen);
            goto out;
        }
    }
    if (meta) {
        st = st_parse_meta(err, path, meta, set, want_meta && !set->meta);
        if (st != QB_OK)
            goto out;
    }

    /* Commit: record the mapping, then the tensors in offset order. */
    if (st_grow((void **)&set->maps, &set->cap_maps, set->n_maps + 1, sizeof(*set->maps)) ||
        st_grow((void **)&set->t, &set->cap, set->n + n_entries, sizeof(*set->t))) {
        st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    m = &set->maps[set->n_maps];
    m->path = qbk_strdup(path);
    if (!m->path) {
        st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    m->base = base;
    m->len = flen;
    set->n_maps++;
    base = MAP_FAILED; /* owned by the set now */
    for (i = 0; i < n_entries; i++) {
        qb_st_tensor *t = &set->t[set->n];
        const st_entry *e = &ents[i];
        memset(t, 0, sizeof(*t));
        t->struct_size = sizeof(*t);
        t->name = qbk_strdup(e->name);
        if (!t->name) {
            st = qbk_st_fail(err, QB_E_NOMEM, "%s: out of memory", path);
            goto out;
        }
        t->dtype = e->dt->dt;
        t->dtype_name = e->dt->name;
        t->n_dims = e->n_dims;
        memcpy(t->dims, e->dims, sizeof(t->dims));
        t->data = (const uint8_t *)m->base + 8 + hlen + e->begin;
        t->n_bytes = e->end - e->begin;
        t->file = m->path;
        set->n++;
    }
out:
    if (st != QB_OK) {
        /* Leave no half-added tensors behind (the mapping stays with the set
         * when it was recorded and is released by close). */
        while (set->n > first_t)
            qbk_free((void *)set->t[--set->n].name);
    }
    if (base != MAP_FAILED)
        munmap(base, flen);
    if (fd >= 0)
        close(fd);
    cJSON_Delete(root);
    qbk_free(ents);
    return st;
}
