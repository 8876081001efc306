/*
 * quantbridge host — `convert --imatrix FILE`: llama.cpp's importance
 * matrix as activation statistics (calibrate.h; docs/fidelity.md,
 * "Importance from llama.cpp"). Two forms, told apart by the first four
 * bytes:
 *
 *   GGUF ("GGUF" magic; llama-imatrix's default since 2025): per weight
 *   two F32 tensors, "<name>.in_sum2" [n_cols] (the sum of x_j^2 over the
 *   rows it saw) and "<name>.counts" [1] (how many rows); mean = sum /
 *   count. A per-expert entry ([n_cols, n_expert], counts [n_expert]) is
 *   refused by name: its experts are not one linear of ours.
 *
 *   legacy .dat: int32 n_entries, then per entry int32 name length, the
 *   name, int32 ncall, int32 n_values, n_values float32 (llama-imatrix's
 *   save_imatrix_legacy writes sum / count * ncall), then trailing chunk
 *   and dataset fields we do not need; mean = value / ncall, as
 *   llama-quantize's load_legacy_imatrix divides.
 *
 * Names are llama.cpp's stored names ("blk.0.attn_q.weight"); they are
 * mapped to the source's canonical tensors through its reader's stored
 * view (qb_raw_tensor_info.canonical), so a GGUF source maps without this
 * file knowing its naming scheme. An entry that names no stored tensor of
 * the source, or one of another column count, is an error naming it.
 */
#include "cli.h"
#include "calibrate.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

/* Bounded little-endian reader over the file's bytes. */
typedef struct rd {
    const uint8_t *p;
    size_t n, off;
    const char *path;
} rd;

static int take(rd *r, void *dst, size_t k)
{
    if (k > r->n - r->off)
        return -1;
    memcpy(dst, r->p + r->off, k);
    r->off += k;
    return 0;
}

static qb_status truncated(const rd *r, const char *what)
{
    return qbh_error_set(QB_E_FORMAT, "%s: imatrix truncated or malformed at byte %zu (%s)",
                         r->path, r->off, what);
}

/* stored name -> canonical index + 1 of the source's raw view */
static qb_status raw_map(const qbh_source *s, GHashTable **out)
{
    qb_raw_tensor_info ri;
    size_t i;
    qb_status rc;
    *out = NULL;
    if (!qbh_source_has_raw(s))
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: reader %s offers no stored-tensor view: an "
                             "imatrix's names cannot be mapped to its tensors", s->path,
                             s->reader->name);
    *out = g_hash_table_new(g_str_hash, g_str_equal);
    for (i = 0; (rc = qbh_source_raw(s, i, &ri)) == QB_OK; i++)
        if (ri.canonical >= 0)
            g_hash_table_insert(*out, (gpointer)ri.name, GSIZE_TO_POINTER((size_t)ri.canonical + 1));
    if (rc == QB_E_RANGE)
        return QB_OK;
    g_hash_table_destroy(*out);
    *out = NULL;
    return rc;
}

/* Stores mean[j] = v[j] / div for the tensor `name` maps to. */
static qb_status put_entry(const qbh_source *s, GHashTable *map, qbh_actstats *a, const char *path,
                           const char *name, const float *v, int64_t n, double div, uint64_t tokens)
{
    gpointer hit = g_hash_table_lookup(map, name);
    size_t t;
    int64_t j;
    if (!hit)
        return qbh_error_set(QB_E_NOT_FOUND, "%s: imatrix entry '%s' names no stored tensor of "
                             "%s (reader %s)", path, name, s->path, s->reader->name);
    t = GPOINTER_TO_SIZE(hit) - 1;
    if (s->tensors[t].n_dims != 2 || qb_tensor_cols(&s->tensors[t]) != n)
        return qbh_error_set(QB_E_FORMAT, "%s: imatrix entry '%s' has %lld values, tensor %s has "
                             "%lld columns", path, name, (long long)n, s->tensors[t].name,
                             (long long)qb_tensor_cols(&s->tensors[t]));
    if (!(div > 0))
        return qbh_error_set(QB_E_FORMAT, "%s: imatrix entry '%s': count %g", path, name, div);
    qbh_free(a->mean[t]);
    a->mean[t] = qbh_calloc((size_t)n, sizeof *a->mean[t]);
    if (!a->mean[t])
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (j = 0; j < n; j++)
        a->mean[t][j] = (float)((double)v[j] / div);
    a->cols[t] = n;
    a->tokens[t] = tokens;
    return QB_OK;
}

static qb_status load_dat(const qbh_source *s, GHashTable *map, rd *r, qbh_actstats *a)
{
    int32_t n_entries, e;
    qb_status rc = QB_OK;
    if (take(r, &n_entries, 4) || n_entries < 0)
        return truncated(r, "entry count");
    for (e = 0; e < n_entries && rc == QB_OK; e++) {
        int32_t len, ncall, nval;
        char name[512];
        float *v;
        if (take(r, &len, 4) || len < 1 || len >= (int32_t)sizeof name || take(r, name, (size_t)len))
            return truncated(r, "entry name");
        name[len] = '\0';
        if (take(r, &ncall, 4) || take(r, &nval, 4) || nval < 1 ||
            (size_t)nval > (r->n - r->off) / 4)
            return truncated(r, name);
        v = qbh_calloc((size_t)nval, sizeof *v);
        if (!v)
            return qbh_error_set(QB_E_NOMEM, "out of memory");
        take(r, v, (size_t)nval * 4);
        rc = put_entry(s, map, a, r->path, name, v, nval, (double)ncall, (uint64_t)ncall);
        qbh_free(v);
    }
    return rc;
}

/* GGUF value sizes by type id (gguf.h enum gguf_type); 0: string or array. */
static size_t gguf_scalar(uint32_t t)
{
    static const size_t sz[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sz[t] : (size_t)-1;
}

static int skip_value(rd *r, uint32_t t, int depth)
{
    uint64_t n, i;
    size_t z = gguf_scalar(t);
    if (z == (size_t)-1 || depth > 2)
        return -1;
    if (t == 8) { /* string: u64 length, bytes */
        if (take(r, &n, 8) || n > r->n - r->off)
            return -1;
        r->off += (size_t)n;
        return 0;
    }
    if (t == 9) { /* array: element type, u64 count, elements */
        uint32_t et;
        if (take(r, &et, 4) || take(r, &n, 8))
            return -1;
        z = gguf_scalar(et);
        if (z == (size_t)-1)
            return -1;
        if (z > 0) {
            if (n > (r->n - r->off) / z)
                return -1;
            r->off += (size_t)(n * z);
            return 0;
        }
        for (i = 0; i < n; i++)
            if (skip_value(r, et, depth + 1))
                return -1;
        return 0;
    }
    if (z > r->n - r->off)
        return -1;
    r->off += z;
    return 0;
}

typedef struct gt {
    char *name;
    uint32_t n_dims, type;
    int64_t ne[4];
    uint64_t off;
} gt;

static qb_status load_gguf(const qbh_source *s, GHashTable *map, rd *r, qbh_actstats *a)
{
    uint32_t magic, version, align = 32;
    uint64_t n_t, n_kv, i, k;
    gt *t = NULL;
    size_t data0;
    qb_status rc = QB_OK;

    if (take(r, &magic, 4) || take(r, &version, 4) || version < 2 || version > 3 ||
        take(r, &n_t, 8) || take(r, &n_kv, 8) || n_t > 1000000)
        return truncated(r, "header");
    for (k = 0; k < n_kv; k++) {
        uint64_t kl;
        uint32_t vt;
        char key[128];
        if (take(r, &kl, 8) || kl > r->n - r->off)
            return truncated(r, "metadata key");
        snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1),
                 (const char *)r->p + r->off);
        r->off += (size_t)kl;
        if (take(r, &vt, 4))
            return truncated(r, key);
        if (strcmp(key, "general.alignment") == 0 && vt == 4) {
            if (take(r, &align, 4) || align == 0 || (align & (align - 1)))
                return truncated(r, key);
        } else if (skip_value(r, vt, 0)) {
            return truncated(r, key);
        }
    }
    t = qbh_calloc(n_t ? (size_t)n_t : 1, sizeof *t);
    if (!t)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (i = 0; i < n_t && rc == QB_OK; i++) {
        uint64_t nl;
        uint32_t d;
        if (take(r, &nl, 8) || nl > 4096 || nl > r->n - r->off) {
            rc = truncated(r, "tensor name");
            break;
        }
        t[i].name = g_strndup((const char *)r->p + r->off, (gsize)nl);
        r->off += (size_t)nl;
        if (take(r, &t[i].n_dims, 4) || t[i].n_dims < 1 || t[i].n_dims > 4) {
            rc = truncated(r, t[i].name);
            break;
        }
        for (d = 0; d < t[i].n_dims; d++)
            if (take(r, &t[i].ne[d], 8) || t[i].ne[d] < 1 || t[i].ne[d] > ((int64_t)1 << 31))
                rc = truncated(r, t[i].name);
        if (rc == QB_OK && (take(r, &t[i].type, 4) || take(r, &t[i].off, 8)))
            rc = truncated(r, t[i].name);
    }
    data0 = (r->off + align - 1) / align * align;
    for (i = 0; i < n_t && rc == QB_OK; i++) {
        size_t nl = strlen(t[i].name), sl = sizeof ".in_sum2" - 1;
        char base[512];
        const gt *cnt = NULL;
        uint64_t j, nv = (uint64_t)t[i].ne[0];
        float c;
        if (nl <= sl || strcmp(t[i].name + nl - sl, ".in_sum2") != 0)
            continue;
        snprintf(base, sizeof base, "%.*s", (int)(nl - sl), t[i].name);
        for (j = 0; j < n_t; j++)
            if (strncmp(t[j].name, base, nl - sl) == 0 && strcmp(t[j].name + nl - sl, ".counts") == 0)
                cnt = &t[j];
        if (t[i].type != 0 || !cnt || cnt->type != 0) {
            rc = qbh_error_set(QB_E_FORMAT, "%s: imatrix entry '%s': in_sum2 and counts must "
                               "both be F32 and present", r->path, base);
            break;
        }
        if (t[i].n_dims > 1 && t[i].ne[1] > 1) {
            rc = qbh_error_set(QB_E_UNSUPPORTED, "%s: imatrix entry '%s' holds %lld experts: "
                               "per-expert importance is not supported", r->path, base,
                               (long long)t[i].ne[1]);
            break;
        }
        if (data0 + t[i].off + nv * 4 > r->n || data0 + cnt->off + 4 > r->n) {
            rc = truncated(r, base);
            break;
        }
        memcpy(&c, r->p + data0 + cnt->off, 4);
        {
            float *v = qbh_calloc((size_t)nv, sizeof *v);
            if (!v) {
                rc = qbh_error_set(QB_E_NOMEM, "out of memory");
                break;
            }
            memcpy(v, r->p + data0 + t[i].off, (size_t)nv * 4);
            rc = put_entry(s, map, a, r->path, base, v, (int64_t)nv, (double)c,
                           (uint64_t)(c > 0 ? c : 0));
            qbh_free(v);
        }
    }
    for (i = 0; i < n_t; i++)
        g_free(t[i].name);
    qbh_free(t);
    return rc;
}

qb_status qbh_imatrix_load(const qbh_source *s, const char *path, qbh_actstats **out)
{
    const qb_host *h = qbh_services_named("imatrix");
    char origin[1100];
    void *data = NULL;
    size_t len = 0;
    GHashTable *map = NULL;
    qbh_actstats *a = NULL;
    rd r;
    qb_status rc;

    *out = NULL;
    if ((rc = h->read_small_file(h, path, (size_t)1 << 31, &data, &len)))
        return rc;
    if ((rc = raw_map(s, &map)))
        goto done;
    snprintf(origin, sizeof origin, "imatrix %s", path);
    a = qbh_actstats_new(s->info.n_tensors, origin);
    if (!a) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto done;
    }
    r.p = data;
    r.n = len;
    r.off = 0;
    r.path = path;
    rc = len >= 4 && memcmp(data, "GGUF", 4) == 0 ? load_gguf(s, map, &r, a)
                                                   : load_dat(s, map, &r, a);
    if (rc == QB_OK) {
        *out = a;
        a = NULL;
    }
done:
    if (map)
        g_hash_table_destroy(map);
    qbh_actstats_free(a);
    h->free(h, data);
    return rc;
}

qb_status qbh_imatrix_save(const qbh_source *s, const qbh_actstats *a, const char *path)
{
    const char **names = qbh_calloc(a->n_tensors ? a->n_tensors : 1, sizeof *names);
    qb_raw_tensor_info ri;
    int32_t n = 0, v;
    size_t i;
    FILE *f = NULL;
    int bad = 0;

    if (!names)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (i = 0; qbh_source_has_raw(s) && qbh_source_raw(s, i, &ri) == QB_OK; i++)
        if (ri.canonical >= 0 && (size_t)ri.canonical < a->n_tensors)
            names[ri.canonical] = names[ri.canonical] ? "" : ri.name; /* "": several */
    for (i = 0; i < a->n_tensors; i++)
        n += a->mean[i] != NULL;
    f = fopen(path, "wb");
    if (!f) {
        qbh_free(names);
        return qbh_error_set(QB_E_IO, "%s: cannot create: %s", path, g_strerror(errno));
    }
    bad |= fwrite(&n, 4, 1, f) != 1;
    for (i = 0; i < a->n_tensors && !bad; i++) {
        const char *nm = names[i] && names[i][0] ? names[i] : s->tensors[i].name;
        int32_t len = (int32_t)strlen(nm), ncall, nval = (int32_t)a->cols[i], j;
        if (!a->mean[i])
            continue;
        ncall = a->tokens[i] > INT32_MAX ? INT32_MAX : (int32_t)a->tokens[i];
        bad |= fwrite(&len, 4, 1, f) != 1 || fwrite(nm, 1, (size_t)len, f) != (size_t)len ||
               fwrite(&ncall, 4, 1, f) != 1 || fwrite(&nval, 4, 1, f) != 1;
        for (j = 0; j < nval && !bad; j++) {
            float x = (float)((double)a->mean[i][j] * (double)ncall);
            bad |= fwrite(&x, 4, 1, f) != 1;
        }
    }
    /* the trailing fields llama-imatrix writes: the last chunk, the data set's name */
    v = 0;
    bad |= fwrite(&v, 4, 1, f) != 1;
    v = (int32_t)strlen(a->origin);
    bad |= fwrite(&v, 4, 1, f) != 1 || fwrite(a->origin, 1, (size_t)v, f) != (size_t)v;
    bad |= fclose(f) != 0;
    qbh_free(names);
    if (bad)
        return qbh_error_set(QB_E_IO, "%s: write failed", path);
    return QB_OK;
}
