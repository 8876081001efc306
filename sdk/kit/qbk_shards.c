/*
 * Shard cut points, shard file names and the shard index. See
 * qbk_shards.h.
 */
#include "qbk_shards.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_sink_text.h"
#include "qbk_text.h"

#define INDEX_NAME "model.safetensors.index.json"

qb_status qbk_shards_cut(const qb_host *h, const char *what, const uint64_t *bytes,
                         size_t n_items, uint64_t max_bytes, qbk_shard_cut rule,
                         qbk_shards *out)
{
    uint64_t cur = 0;
    size_t i, in_cur = 0;

    memset(out, 0, sizeof *out);
    if (max_bytes < 1)
        return h->set_error(h, QB_E_INVALID, "%s: shard cap of %llu bytes", what,
                            (unsigned long long)max_bytes);
    /* one shard even with no item: first[0] and first[1] */
    out->first = qbk_malloc((n_items + 2) * sizeof *out->first);
    if (!out->first)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", what);
    out->first[0] = 0;
    out->n = 1;
    for (i = 0; i < n_items; i++) {
        int open = rule == QBK_SHARD_CUT_IF_TENSORS ? in_cur > 0 : cur > 0;
        /* strictly past the cap: a shard may fill it exactly */
        if (open && cur + bytes[i] > max_bytes) {
            out->first[out->n++] = i;
            cur = 0;
            in_cur = 0;
        }
        cur += bytes[i];
        in_cur++;
        out->total += bytes[i];
    }
    out->first[out->n] = n_items;
    return QB_OK;
}

uint32_t qbk_shards_of(const qbk_shards *s, size_t i)
{
    uint32_t lo = 0, hi = s->n - 1;
    /* the last shard whose first item is <= i */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (s->first[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void qbk_shards_name(const qbk_shards *s, uint32_t i, char *buf, size_t len)
{
    if (s->n == 1)
        snprintf(buf, len, "model.safetensors");
    else
        snprintf(buf, len, "model-%05u-of-%05u.safetensors", i + 1, s->n);
}

void qbk_shards_free(qbk_shards *s)
{
    qbk_free(s->first);
    memset(s, 0, sizeof *s);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

static void indent(qbk_text *b, int depth, int width)
{
    int k;
    qbk_text_str(b, "\n");
    for (k = 0; k < depth * width; k++)
        qbk_text_str(b, " ");
}

qb_status qbk_shards_write_index(const qb_host *h, const qb_sink *sink, const qbk_shards *s,
                                 const char *const *names, const uint32_t *shard_of,
                                 size_t n_names, const qbk_shard_index *ix)
{
    const char *const **sorted = qbk_malloc((n_names ? n_names : 1) * sizeof *sorted);
    qbk_text b = {0};
    char shard[64];
    size_t i;
    qb_status st;

    if (!sorted)
        return h->set_error(h, QB_E_NOMEM, INDEX_NAME ": out of memory");
    for (i = 0; i < n_names; i++)
        sorted[i] = &names[i];
    qsort(sorted, n_names, sizeof *sorted, cmp_name);
    qbk_text_str(&b, "{");
    indent(&b, 1, ix->indent);
    qbk_text_str(&b, "\"metadata\": {");
    for (i = 0; i < ix->n_meta; i++) {
        if (i)
            qbk_text_str(&b, ",");
        indent(&b, 2, ix->indent);
        qbk_text_json_str(&b, ix->meta_keys[i]);
        qbk_text_str(&b, ": ");
        qbk_text_u64(&b, ix->meta_values[i]);
    }
    indent(&b, 1, ix->indent);
    qbk_text_str(&b, "},");
    indent(&b, 1, ix->indent);
    qbk_text_str(&b, "\"weight_map\": {");
    for (i = 0; i < n_names; i++) {
        size_t t = (size_t)(sorted[i] - names);
        if (i)
            qbk_text_str(&b, ",");
        indent(&b, 2, ix->indent);
        qbk_text_json_str(&b, names[t]);
        qbk_text_str(&b, ": ");
        qbk_shards_name(s, shard_of[t], shard, sizeof shard);
        qbk_text_json_str(&b, shard);
    }
    indent(&b, 1, ix->indent);
    qbk_text_str(&b, "}\n}");
    qbk_free(sorted);
    if (b.oom) {
        qbk_text_free(&b);
        return h->set_error(h, QB_E_NOMEM, INDEX_NAME ": out of memory");
    }
    st = ix->final_newline ? qbk_sink_write_text(sink, INDEX_NAME, b.p)
                           : qbk_sink_write_text_raw(sink, INDEX_NAME, b.p);
    qbk_text_free(&b);
    return st;
}
