/*
 * quantbridge host — `inspect --raw` and `inspect --metadata`: the
 * reader's views of the source as stored (SDK ABI 1.2, qb_reader.h) and
 * the model's config.json fields (inspect.h).
 */
#include "inspect.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Value text kept per metadata entry (longer values are cut by the reader). */
#define QBH_META_VALUE_CAP 512
/* Characters of one config value shown in text mode before "...". */
#define QBH_CONFIG_VALUE_SHOWN 100
/* Array elements shown in text mode. */
#define QBH_CONFIG_ARRAY_SHOWN 8

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "-";
}

qb_status qbh_inspect_raw_check(const qbh_source *s)
{
    return qbh_source_has_raw(s) ? QB_OK : qbh_inspect_no_raw(s);
}

qb_status qbh_inspect_no_raw(const qbh_source *s)
{
    return qbh_error_set(QB_E_UNSUPPORTED, "inspect --raw: reader %s (%s) offers no view of the "
                         "stored tensors (SDK ABI 1.2 get_raw_tensor_info)", s->reader->name,
                         s->reader->desc->version);
}

static void raw_shape(const qb_raw_tensor_info *r, char *out, size_t n)
{
    size_t len = 0;
    uint32_t d;
    out[0] = '\0';
    if (r->n_dims == 0)
        snprintf(out, n, "scalar");
    for (d = 0; d < r->n_dims && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? "x" : "", (long long)r->dims[d]);
}

qb_status qbh_inspect_raw_text(const qbh_source *s)
{
    qb_raw_tensor_info r;
    size_t i, n = 0, w = 4, tw = 4;
    uint64_t total = 0;
    qb_status rc;
    char hb[32];

    if (!qbh_source_has_raw(s))
        return qbh_inspect_no_raw(s);
    /* Two passes: column widths, then the rows. */
    for (i = 0; (rc = qbh_source_raw(s, i, &r)) == QB_OK; i++) {
        n++;
        total += r.n_bytes;
        if (strlen(r.name) > w)
            w = strlen(r.name);
        if (strlen(r.type) > tw)
            tw = strlen(r.type);
    }
    if (rc != QB_E_RANGE)
        return rc;
    qbh_human_bytes(total, hb, sizeof hb);
    printf("stored tensors: %zu, %llu bytes (%s), as the %s reader finds them in the source\n", n,
           (unsigned long long)total, hb, s->reader->name);
    printf("  %-*s  %-*s  %-20s  %12s  %-24s  %s\n", (int)w, "NAME", (int)tw, "TYPE", "SHAPE",
           "BYTES", "FILE", "CANONICAL");
    for (i = 0; i < n; i++) {
        char sh[160];
        if ((rc = qbh_source_raw(s, i, &r)))
            return rc;
        raw_shape(&r, sh, sizeof sh);
        printf("  %-*s  %-*s  %-20s  %12llu  %-24s  %s\n", (int)w, r.name, (int)tw, r.type, sh,
               (unsigned long long)r.n_bytes, base_name(r.file),
               r.canonical >= 0 ? s->tensors[r.canonical].name : "-");
    }
    printf("shape: as stored, in the format's own order (GGUF: ne[0], the contiguous one, first); "
           "CANONICAL: the tensor `inspect` lists that is read from it (- none, or several)\n");
    return QB_OK;
}

qb_status qbh_inspect_raw_json(const qbh_source *s, cJSON *root)
{
    cJSON *arr;
    qb_raw_tensor_info r;
    qb_status rc;
    size_t i;
    uint32_t d;

    if (!qbh_source_has_raw(s))
        return qbh_inspect_no_raw(s);
    arr = cJSON_AddArrayToObject(root, "raw_tensors");
    if (!arr)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    for (i = 0; (rc = qbh_source_raw(s, i, &r)) == QB_OK; i++) {
        cJSON *j = cJSON_CreateObject(), *shape;
        if (!j || !cJSON_AddItemToArray(arr, j))
            return qbh_error_set(QB_E_NOMEM, "out of memory");
        cJSON_AddStringToObject(j, "name", r.name);
        cJSON_AddStringToObject(j, "type", r.type);
        shape = cJSON_AddArrayToObject(j, "shape");
        for (d = 0; shape && d < r.n_dims; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)r.dims[d]));
        cJSON_AddNumberToObject(j, "bytes", (double)r.n_bytes);
        if (r.file)
            cJSON_AddStringToObject(j, "file", r.file);
        else
            cJSON_AddNullToObject(j, "file");
        if (r.canonical >= 0)
            cJSON_AddStringToObject(j, "canonical", s->tensors[r.canonical].name);
        else
            cJSON_AddNullToObject(j, "canonical");
    }
    return rc == QB_E_RANGE ? QB_OK : rc;
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsBool(v))
        return "bool";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "array";
    return "object";
}

/* Compact JSON of v cut to QBH_CONFIG_VALUE_SHOWN characters. */
static void put_compact(const cJSON *v, char *out, size_t n)
{
    char *t = cJSON_PrintUnformatted(v);
    if (!t) {
        snprintf(out, n, "?");
        return;
    }
    if (strlen(t) > QBH_CONFIG_VALUE_SHOWN)
        snprintf(out, n, "%.*s...", QBH_CONFIG_VALUE_SHOWN, t);
    else
        snprintf(out, n, "%s", t);
    cJSON_free(t);
}

static void config_value_text(const cJSON *v, char *out, size_t n)
{
    if (cJSON_IsArray(v)) {
        int i, k = cJSON_GetArraySize(v);
        size_t len = (size_t)snprintf(out, n, "[%d]", k);
        for (i = 0; i < k && i < QBH_CONFIG_ARRAY_SHOWN && len < n; i++) {
            char e[QBH_CONFIG_VALUE_SHOWN + 8];
            put_compact(cJSON_GetArrayItem(v, i), e, sizeof e);
            len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : " ", e);
        }
        if (k > QBH_CONFIG_ARRAY_SHOWN && len < n)
            snprintf(out + len, n - len, ", ...");
    } else if (cJSON_IsObject(v)) {
        char e[QBH_CONFIG_VALUE_SHOWN + 8];
        put_compact(v, e, sizeof e);
        snprintf(out, n, "{%d keys} %s", cJSON_GetArraySize(v), e);
    } else {
        put_compact(v, out, n);
    }
}

qb_status qbh_inspect_config(const qbh_source *s, cJSON **out)
{
    char what[4200];
    *out = NULL;
    if (!s->info.config_json)
        return QB_OK;
    snprintf(what, sizeof what, "%s: config.json of reader %s", s->path, s->reader->name);
    return qbh_json_parse_cjson(what, s->info.config_json, strlen(s->info.config_json), out);
}

qb_status qbh_inspect_meta_text(const qbh_source *s, const cJSON *cfg)
{
    qb_status rc;
    size_t i;

    if (qbh_source_has_meta(s)) {
        char buf[QBH_META_VALUE_CAP];
        qb_meta_entry e;
        size_t n = 0, kw = 3, tw = 4;
        for (i = 0; (rc = qbh_source_meta(s, i, &e, buf, sizeof buf)) == QB_OK; i++) {
            n++;
            if (strlen(e.key) > kw)
                kw = strlen(e.key);
            if (strlen(e.type) > tw)
                tw = strlen(e.type);
        }
        if (rc != QB_E_RANGE)
            return rc;
        printf("metadata: %zu entries (%s, as stored)\n", n, s->info.source_format);
        printf("  %-*s  %-*s  %s\n", (int)kw, "KEY", (int)tw, "TYPE", "VALUE");
        for (i = 0; i < n; i++) {
            if ((rc = qbh_source_meta(s, i, &e, buf, sizeof buf)))
                return rc;
            printf("  %-*s  %-*s  %s\n", (int)kw, e.key, (int)tw, e.type, buf);
        }
    }
    if (!cfg || !cJSON_IsObject(cfg)) {
        printf("config.json: %s\n", s->info.config_json ? "not a JSON object" : "none");
    } else {
        const cJSON *v;
        size_t kw = 3;
        char line[2 * QBH_CONFIG_VALUE_SHOWN + 64];
        cJSON_ArrayForEach(v, cfg)
            if (strlen(v->string) > kw)
                kw = strlen(v->string);
        printf("config.json: %d fields (%s)\n", cJSON_GetArraySize(cfg),
               qbh_source_has_meta(s) ? "derived by the reader from the metadata above"
                                      : "as the source has it");
        printf("  %-*s  %-6s  %s\n", (int)kw, "KEY", "TYPE", "VALUE");
        cJSON_ArrayForEach(v, cfg) {
            config_value_text(v, line, sizeof line);
            printf("  %-*s  %-6s  %s\n", (int)kw, v->string, json_type(v), line);
        }
    }
    return QB_OK;
}

qb_status qbh_inspect_meta_json(const qbh_source *s, const cJSON *cfg, cJSON *root)
{
    qb_status rc;
    size_t i;

    if (qbh_source_has_meta(s)) {
        char buf[QBH_META_VALUE_CAP];
        qb_meta_entry e;
        cJSON *arr = cJSON_AddArrayToObject(root, "metadata");
        if (!arr)
            return qbh_error_set(QB_E_NOMEM, "out of memory");
        for (i = 0; (rc = qbh_source_meta(s, i, &e, buf, sizeof buf)) == QB_OK; i++) {
            cJSON *j = cJSON_CreateObject();
            if (!j || !cJSON_AddItemToArray(arr, j))
                return qbh_error_set(QB_E_NOMEM, "out of memory");
            cJSON_AddStringToObject(j, "key", e.key);
            cJSON_AddStringToObject(j, "type", e.type);
            cJSON_AddStringToObject(j, "value", buf);
        }
        if (rc != QB_E_RANGE)
            return rc;
    }
    if (cfg && cJSON_IsObject(cfg))
        cJSON_AddItemToObject(root, "config", cJSON_Duplicate(cfg, 1));
    else
        cJSON_AddNullToObject(root, "config");
    return QB_OK;
}
