/*
 * GGUF container parsing: header, metadata and tensor infos (see
 * gguf_container.h). Facts: ggml-org/ggml src/gguf.cpp
 * (gguf_init_from_file_impl), docs/formats/gguf.md "Container layout".
 */
#include "gguf_container.h"

#include "ggml_types.h"
#include "qbk_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader decodes little-endian files with plain loads"
#endif

#define GGUF_MAGIC 0x46554747u /* "GGUF" read as a little-endian u32 */
#define GGUF_MAX_NESTING 8      /* arrays of arrays deeper than this are refused */
#define GGUF_MAX_KEY 4096       /* longest metadata key accepted */

typedef struct cursor {
    const qb_host *h;
    const char *path;
    const uint8_t *buf;
    size_t size;
    size_t pos;
} cursor;

static size_t cur_left(const cursor *c)
{
    return c->size - c->pos;
}

static qb_status cur_bytes(cursor *c, void *dst, size_t n, const char *what)
{
    if (cur_left(c) < n)
        return c->h->set_error(c->h, QB_E_FORMAT, "%s: truncated GGUF file: %s at offset %zu needs %zu bytes, %zu left",
                               c->path, what, c->pos, n, cur_left(c));
    if (dst)
        memcpy(dst, c->buf + c->pos, n);
    c->pos += n;
    return QB_OK;
}

static qb_status cur_u32(cursor *c, uint32_t *v, const char *what)
{
    return cur_bytes(c, v, 4, what);
}

static qb_status cur_u64(cursor *c, uint64_t *v, const char *what)
{
    return cur_bytes(c, v, 8, what);
}

/* gguf_string: u64 length + bytes, no NUL (gguf.cpp gguf_reader::read(std::string&)).
 * The length is checked against the bytes left before anything is copied. */
static qb_status cur_string(cursor *c, const uint8_t **s, uint64_t *len, const char *what)
{
    qb_status st = cur_u64(c, len, what);
    if (st)
        return st;
    if (*len > cur_left(c))
        return c->h->set_error(c->h, QB_E_FORMAT,
                               "%s: %s: string length %llu at offset %zu exceeds the %zu bytes left in the file",
                               c->path, what, (unsigned long long)*len, c->pos - 8, cur_left(c));
    *s = c->buf + c->pos;
    c->pos += (size_t)*len;
    return QB_OK;
}

static char *dup_n(const uint8_t *s, size_t n)
{
    char *r = qbk_malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* Size of one scalar of a fixed-size value type, 0 for STRING/ARRAY, -1 unknown. */
static int vt_size(uint32_t t)
{
    switch (t) {
    case GGUF_VT_UINT8:
    case GGUF_VT_INT8:
    case GGUF_VT_BOOL:
        return 1;
    case GGUF_VT_UINT16:
    case GGUF_VT_INT16:
        return 2;
    case GGUF_VT_UINT32:
    case GGUF_VT_INT32:
    case GGUF_VT_FLOAT32:
        return 4;
    case GGUF_VT_UINT64:
    case GGUF_VT_INT64:
    case GGUF_VT_FLOAT64:
        return 8;
    case GGUF_VT_STRING:
    case GGUF_VT_ARRAY:
        return 0;
    default:
        return -1;
    }
}

/* Skips one value of type t, validating every length on the way. Array
 * counts are bounded by the bytes left (each element needs >= 1 byte, a
 * string >= 8, a nested array >= 12) before the loop starts. */
static qb_status skip_value(cursor *c, uint32_t t, const char *key, int depth)
{
    int sz = vt_size(t);
    qb_status st;
    if (sz < 0)
        return c->h->set_error(c->h, QB_E_FORMAT, "%s: metadata '%s': unknown value type %u", c->path, key, t);
    if (sz > 0)
        return cur_bytes(c, NULL, (size_t)sz, key);
    if (t == GGUF_VT_STRING) {
        const uint8_t *s;
        uint64_t n = 0;
        return cur_string(c, &s, &n, key);
    }
    {
        uint32_t et = 0;
        uint64_t n = 0, i, min_elem;
        int esz;
        if (depth >= GGUF_MAX_NESTING)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: metadata '%s': arrays nested deeper than %d", c->path, key,
                                   GGUF_MAX_NESTING);
        if ((st = cur_u32(c, &et, key)) || (st = cur_u64(c, &n, key)))
            return st;
        esz = vt_size(et);
        if (esz < 0)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: metadata '%s': unknown array element type %u", c->path, key,
                                   et);
        min_elem = esz > 0 ? (uint64_t)esz : (et == GGUF_VT_STRING ? 8u : 12u);
        if (n > cur_left(c) / min_elem)
            return c->h->set_error(c->h, QB_E_FORMAT,
                                   "%s: metadata '%s': array of %llu elements cannot fit in the %zu bytes left", c->path,
                                   key, (unsigned long long)n, cur_left(c));
        if (esz > 0)
            return cur_bytes(c, NULL, (size_t)(n * (uint64_t)esz), key);
        for (i = 0; i < n; i++)
            if ((st = skip_value(c, et, key, depth + 1)))
                return st;
        return QB_OK;
    }
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Refuses duplicate names among n strings reached through `get`. */
static qb_status check_unique(const qb_host *h, const char *path, const char *what, char **names, size_t n)
{
    size_t i;
    if (n < 2)
        return QB_OK;
    qsort(names, n, sizeof(*names), cmp_str_ptr);
    for (i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            return h->set_error(h, QB_E_FORMAT, "%s: duplicate %s '%s'", path, what, names[i]);
    return QB_OK;
}

static qb_status parse_kvs(cursor *c, gguf_file *f)
{
    uint64_t i;
    qb_status st;
    char **names = NULL;
    for (i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        const uint8_t *s = NULL;
        uint64_t len = 0;
        char what[64];
        snprintf(what, sizeof(what), "metadata key #%llu", (unsigned long long)i);
        if ((st = cur_string(c, &s, &len, what)))
            return st;
        /* Keys are short dotted names (docs/formats/gguf.md, "Container layout"); a huge "key" is
         * corruption, refused before it is copied. */
        if (len == 0 || len > GGUF_MAX_KEY)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: %s: length %llu not in 1..%d", f->path, what,
                                   (unsigned long long)len, GGUF_MAX_KEY);
        if (!(kv->key = dup_n(s, (size_t)len)))
            return c->h->set_error(c->h, QB_E_NOMEM, "%s: out of memory", f->path);
        if ((st = cur_u32(c, &kv->type, kv->key)))
            return st;
        if (kv->type == GGUF_VT_ARRAY) {
            size_t at = c->pos;
            if ((st = skip_value(c, GGUF_VT_ARRAY, kv->key, 0)))
                return st;
            memcpy(&kv->arr_type, c->buf + at, 4);
            memcpy(&kv->arr_n, c->buf + at + 4, 8);
            kv->val = c->buf + at + 12;
        } else {
            kv->val = c->buf + c->pos;
            if ((st = skip_value(c, kv->type, kv->key, 0)))
                return st;
        }
    }
    if (f->n_kv) {
        names = qbk_malloc((size_t)f->n_kv * sizeof(*names));
        if (!names)
            return c->h->set_error(c->h, QB_E_NOMEM, "%s: out of memory", f->path);
        for (i = 0; i < f->n_kv; i++)
            names[i] = f->kv[i].key;
        st = check_unique(c->h, f->path, "metadata key", names, (size_t)f->n_kv);
        qbk_free(names);
        if (st)
            return st;
    }
    return QB_OK;
}

static qb_status read_alignment(cursor *c, gguf_file *f)
{
    uint64_t i;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        uint32_t a;
        if (strcmp(kv->key, "general.alignment") != 0)
            continue;
        /* gguf.cpp: general.alignment must be a UINT32, non-zero power of two. */
        if (kv->type != GGUF_VT_UINT32)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: general.alignment has type %u, expected UINT32", f->path,
                                   kv->type);
        memcpy(&a, kv->val, 4);
        if (a == 0 || (a & (a - 1)) != 0)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: general.alignment %u is not a power of two", f->path, a);
        f->alignment = a;
    }
    return QB_OK;
}

static qb_status parse_tensor_info(cursor *c, gguf_file *f, gguf_tinfo *t, uint64_t idx)
{
    const qb_host *h = c->h;
    const uint8_t *s = NULL;
    uint64_t len = 0, nrows = 1;
    uint32_t i;
    qb_status st;
    const gguf_ggml_type_info *ti;
    char what[64];

    snprintf(what, sizeof(what), "tensor info #%llu", (unsigned long long)idx);
    if ((st = cur_string(c, &s, &len, what)))
        return st;
    if (len == 0 || len >= GGUF_MAX_NAME)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: name length %llu not in 1..%d", f->path, what,
                            (unsigned long long)len, GGUF_MAX_NAME - 1);
    if (!(t->name = dup_n(s, (size_t)len)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
    t->file = f;
    if ((st = cur_u32(c, &t->n_dims, t->name)))
        return st;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': n_dims %u not in 1..%d", f->path, t->name, t->n_dims,
                            GGUF_MAX_DIMS);
    for (i = 0; i < GGUF_MAX_DIMS; i++)
        t->ne[i] = 1;
    for (i = 0; i < t->n_dims; i++) {
        uint64_t d = 0;
        if ((st = cur_u64(c, &d, t->name)))
            return st;
        if (d == 0 || d > (uint64_t)INT64_MAX)
            return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': dimension %u is %llu", f->path, t->name, i,
                                (unsigned long long)d);
        t->ne[i] = (int64_t)d;
    }
    if ((st = cur_u32(c, &t->type, t->name)) || (st = cur_u64(c, &t->offset, t->name)))
        return st;
    ti = gguf_ggml_type_get(t->type);
    if (!ti)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: tensor '%s': unknown ggml type id %u", f->path, t->name,
                            t->type);
    /* gguf.cpp: ne[0] must be a multiple of the block size; the total
     * element count must not overflow int64. */
    for (i = 1; i < GGUF_MAX_DIMS; i++) {
        if (nrows > (uint64_t)INT64_MAX / (uint64_t)t->ne[i])
            return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': element count overflows", f->path, t->name);
        nrows *= (uint64_t)t->ne[i];
    }
    if (nrows > (uint64_t)INT64_MAX / (uint64_t)t->ne[0])
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': element count overflows", f->path, t->name);
    if ((uint64_t)t->ne[0] % ti->blck != 0)
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': row length %lld is not a multiple of the %s block size %u",
                            f->path, t->name, (long long)t->ne[0], ti->name, ti->blck);
    if (gguf_ggml_row_bytes(t->type, t->ne[0], &t->row_bytes) != 0 || t->row_bytes == 0 ||
        nrows > UINT64_MAX / t->row_bytes)
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': byte size overflows", f->path, t->name);
    t->n_rows = (int64_t)nrows;
    t->nbytes = t->row_bytes * nrows;
    if (t->offset % f->alignment != 0)
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': data offset %llu is not a multiple of the alignment %u",
                            f->path, t->name, (unsigned long long)t->offset, f->alignment);
    return QB_OK;
}

static int cmp_tinfo_off(const void *a, const void *b)
{
    const gguf_tinfo *x = *(const gguf_tinfo *const *)a, *y = *(const gguf_tinfo *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Data section placement: every tensor inside the file and no two
 * overlapping (gguf.cpp requires the exact running layout; any
 * non-overlapping aligned placement is read correctly here). */
static qb_status place_tensors(cursor *c, gguf_file *f)
{
    const qb_host *h = c->h;
    gguf_tinfo **by_off = NULL;
    char **names = NULL;
    uint64_t i;
    qb_status st = QB_OK;
    uint64_t data_len;

    if (f->n_tensors == 0)
        return QB_OK;
    f->data_start = ((uint64_t)c->pos + f->alignment - 1) / f->alignment * f->alignment;
    if (f->data_start > f->size)
        return h->set_error(h, QB_E_FORMAT, "%s: truncated GGUF file: data section starts at %llu past the end (%zu bytes)",
                            f->path, (unsigned long long)f->data_start, f->size);
    data_len = f->size - f->data_start;
    for (i = 0; i < f->n_tensors; i++) {
        gguf_tinfo *t = &f->t[i];
        if (t->offset > data_len || t->nbytes > data_len - t->offset)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: tensor '%s': data [%llu, +%llu) lies past the end of the file (data section has %llu bytes)",
                                f->path, t->name, (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                                (unsigned long long)data_len);
        t->data = f->map + f->data_start + t->offset;
    }
    by_off = qbk_malloc((size_t)f->n_tensors * sizeof(*by_off));
    names = qbk_malloc((size_t)f->n_tensors * sizeof(*names));
    if (!by_off || !names) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
        goto out;
    }
    for (i = 0; i < f->n_tensors; i++) {
        by_off[i] = &f->t[i];
        names[i] = f->t[i].name;
    }
    if ((st = check_unique(h, f->path, "tensor name", names, (size_t)f->n_tensors)))
        goto out;
    qsort(by_off, (size_t)f->n_tensors, sizeof(*by_off), cmp_tinfo_off);
    for (i = 1; i < f->n_tensors; i++) {
        if (by_off[i - 1]->offset + by_off[i - 1]->nbytes > by_off[i]->offset) {
            st = h->set_error(h, QB_E_FORMAT, "%s: tensors '%s' and '%s' overlap in the data section", f->path,
                              by_off[i - 1]->name, by_off[i]->name);
            goto out;
        }
    }
out:
    qbk_free(by_off);
    qbk_free(names);
    return st;
}

qb_status gguf_file_parse(const qb_host *h, const char *path, const uint8_t *buf, size_t size, gguf_file **out)
{
    gguf_file *f;
    cursor c = {h, path, buf, size, 0};
    uint32_t magic = 0;
    uint64_t i;
    qb_status st;

    *out = NULL;
    f = qbk_calloc(1, sizeof(*f));
    if (!f || !(f->path = qbk_strdup(path))) {
        qbk_free(f);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    f->map = buf;
    f->size = size;
    c.path = f->path;
    if ((st = cur_u32(&c, &magic, "magic")))
        goto out;
    if (magic != GGUF_MAGIC) {
        st = h->set_error(h, QB_E_FORMAT, "%s: not a GGUF file (magic %08x)", path, magic);
        goto out;
    }
    if ((st = cur_u32(&c, &f->version, "version")))
        goto out;
    /* gguf.cpp: a byte-swapped (big-endian) file shows its version in the
     * high half of the little-endian u32. */
    if (f->version != 0 && (f->version & 0xffffu) == 0) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: big-endian GGUF file (byte-swapped version %u): only little-endian is supported",
                          path, f->version >> 16);
        goto out;
    }
    if (f->version == 1) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: GGUF version 1 is not supported (only versions 2 and 3)", path);
        goto out;
    }
    if (f->version != 2 && f->version != 3) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: unsupported GGUF version %u (only versions 2 and 3)", path,
                          f->version);
        goto out;
    }
    if ((st = cur_u64(&c, &f->n_tensors, "tensor count")) || (st = cur_u64(&c, &f->n_kv, "metadata count")))
        goto out;
    /* Bound the counts by the bytes left before allocating: a key/value
     * needs at least 8 (key length) + 4 (type) + 1 bytes, a tensor info at
     * least 8 + 1 (name) + 4 + 8 (one dim) + 4 + 8. */
    if (f->n_kv > cur_left(&c) / 13) {
        st = h->set_error(h, QB_E_FORMAT, "%s: metadata count %llu cannot fit in a %zu-byte file", path,
                          (unsigned long long)f->n_kv, size);
        goto out;
    }
    if (f->n_tensors > cur_left(&c) / 33) {
        st = h->set_error(h, QB_E_FORMAT, "%s: tensor count %llu cannot fit in a %zu-byte file", path,
                          (unsigned long long)f->n_tensors, size);
        goto out;
    }
    if (f->n_kv && !(f->kv = qbk_calloc((size_t)f->n_kv, sizeof(*f->kv)))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if ((st = parse_kvs(&c, f)) || (st = read_alignment(&c, f)))
        goto out;
    if (f->n_tensors > cur_left(&c) / 33) {
        st = h->set_error(h, QB_E_FORMAT, "%s: tensor count %llu cannot fit in the %zu bytes after the metadata", path,
                          (unsigned long long)f->n_tensors, cur_left(&c));
        goto out;
    }
    if (f->n_tensors && !(f->t = qbk_calloc((size_t)f->n_tensors, sizeof(*f->t)))) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    for (i = 0; i < f->n_tensors; i++)
        if ((st = parse_tensor_info(&c, f, &f->t[i], i)))
            goto out;
    st = place_tensors(&c, f);
out:
    if (st) {
        gguf_file_close(f);
        return st;
    }
    *out = f;
    return QB_OK;
}

qb_status gguf_file_open(const qb_host *h, const char *path, gguf_file **out)
{
    int fd;
    struct stat sb;
    void *map;
    qb_status st;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return h->set_error(h, errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: cannot open: %s", path,
                            strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return h->set_error(h, QB_E_IO, "%s: not a regular file", path);
    }
    if (sb.st_size < 8) {
        close(fd);
        return h->set_error(h, QB_E_FORMAT, "%s: truncated GGUF file (%lld bytes)", path, (long long)sb.st_size);
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return h->set_error(h, QB_E_IO, "%s: mmap failed: %s", path, strerror(errno));
    st = gguf_file_parse(h, path, map, (size_t)sb.st_size, out);
    if (st) {
        munmap(map, (size_t)sb.st_size);
        return st;
    }
    (*out)->mapped = 1;
    return QB_OK;
}

void gguf_file_close(gguf_file *f)
{
    uint64_t i;
    if (!f)
        return;
    if (f->kv)
        for (i = 0; i < f->n_kv; i++)
            qbk_free(f->kv[i].key);
    if (f->t)
        for (i = 0; i < f->n_tensors; i++)
            qbk_free(f->t[i].name);
    qbk_free(f->kv);
    qbk_free(f->t);
    if (f->mapped)
        munmap((void *)f->map, f->size);
    qbk_free(f->path);
    qbk_free(f);
}

const gguf_tinfo *gguf_file_find_tensor(const gguf_file *f, const char *name)
{
    uint64_t i;
    for (i = 0; i < f->n_tensors; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}
