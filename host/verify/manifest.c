/*
 * quantbridge host — which tensors of a converted sm86-w4a16 model its
 * writer declared exact: the manifest's per-linear "exact" flag (true when
 * the decoded weights equal the source's dequantized weights bit for bit,
 * docs/w4a16-format.md), mapped back to canonical names so verify can hold
 * those tensors to bit equality; and which tensors the reader serves as
 * fused expert tensors, so verify groups them as the writer did.
 */
#include "verify.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbk_w4a16_names.h"

/* "<file>:<base>" -> canonical weight name: a layer file's linears live
 * under model.layers.N, anything else (lm_head.safetensors) at the top. */
static char *canonical(const char *key)
{
    const char *colon = strchr(key, ':');
    char buf[512];
    int layer = -1, used = 0;
    if (!colon || !colon[1])
        return NULL;
    if (sscanf(key, "layer_%d.safetensors:%n", &layer, &used) == 1 && used > 0 && layer >= 0)
        snprintf(buf, sizeof buf, "model.layers.%d.%s.weight", layer, colon + 1);
    else
        snprintf(buf, sizeof buf, "%s.weight", colon + 1);
    return g_strdup(buf);
}

/* dir/manifest.json parsed when it is an sm86-w4a16 manifest, else NULL
 * (not a W4A16 directory: no claims; the reader already refused anything
 * malformed). cJSON_Delete it. */
static cJSON *load(const char *dir)
{
    char path[4096];
    void *text = NULL;
    size_t len = 0;
    cJSON *m, *fmt;

    if ((size_t)snprintf(path, sizeof path, "%s/manifest.json", dir) >= sizeof path)
        return NULL;
    if (qbh_read_small_file(path, 64u << 20, &text, &len) != QB_OK) {
        qbh_error_clear();
        return NULL;
    }
    m = cJSON_ParseWithLength(text, len);
    qbh_free(text);
    fmt = m ? cJSON_GetObjectItemCaseSensitive(m, QBK_W4A16_K_FORMAT) : NULL;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, QBK_W4A16_FORMAT) != 0) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

qb_status qbh_verify_manifest_exact(const char *dir, GHashTable **out)
{
    cJSON *m = load(dir), *t;
    GHashTable *set = NULL;

    *out = NULL;
    if (!m)
        return QB_OK;
    set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, QBK_W4A16_K_TENSORS))
    {
        char *name;
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "exact")) || !t->string)
            continue;
        name = canonical(t->string);
        if (name)
            g_hash_table_add(set, name);
    }
    *out = set;
    cJSON_Delete(m);
    return QB_OK;
}

qb_status qbh_verify_manifest_fused(const char *dir, GHashTable **out, int64_t *group_size)
{
    cJSON *m = load(dir), *f, *gs;
    GHashTable *set = NULL;

    *out = NULL;
    *group_size = 0;
    if (!m)
        return QB_OK;
    gs = cJSON_GetObjectItemCaseSensitive(m, QBK_W4A16_K_GROUP_SIZE);
    if (!cJSON_IsNumber(gs) || gs->valuedouble < 1.0)
        goto out;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(m, QBK_W4A16_K_FUSED_EXPERTS))
    {
        cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "tensor");
        cJSON *layout = cJSON_GetObjectItemCaseSensitive(f, "layout");
        if (!cJSON_IsString(name) || !cJSON_IsString(layout) ||
            strcmp(layout->valuestring, QBK_W4A16_FUSED_LAYOUT) != 0)
            continue;
        if (!set)
            set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_add(set, g_strdup(name->valuestring));
    }
    *out = set;
    *group_size = set ? (int64_t)gs->valuedouble : 0;
out:
    cJSON_Delete(m);
    return QB_OK;
}
