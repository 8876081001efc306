/*
 * quantbridge host — which tensors of a converted sm86-w4a16 model its
 * writer declared exact: the manifest's per-linear "exact" flag (true when
 * the decoded weights equal the source's dequantized weights bit for bit,
 * docs/w4a16-format.md), mapped back to canonical names so verify can hold
 * those tensors to bit equality.
 */
#include "verify_engine.h"

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

qb_status qbh_verify_manifest_exact(const char *dir, GHashTable **out)
{
    char path[4096];
    void *text = NULL;
    size_t len = 0;
    cJSON *m = NULL, *t, *fmt;
    GHashTable *set = NULL;
    qb_status rc = QB_OK;

    *out = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/manifest.json", dir) >= sizeof path)
        return QB_OK;
    if (qbh_read_small_file(path, 64u << 20, &text, &len) != QB_OK) {
        qbh_error_clear(); /* not a W4A16 directory: no exactness claims */
        return QB_OK;
    }
    m = cJSON_ParseWithLength(text, len);
    fmt = m ? cJSON_GetObjectItemCaseSensitive(m, QBK_W4A16_K_FORMAT) : NULL;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "sm86-w4a16") != 0)
        goto out; /* the reader already refused anything malformed */
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
out:
    cJSON_Delete(m);
    qbh_free(text);
    return rc;
}
