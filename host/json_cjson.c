/*
 * quantbridge host — input JSON for code that builds output with cJSON
 * (`inspect`'s views, its tokenizer summary): the text is read by the
 * strict parser every input file goes through (qb_json.h; json_parse.c),
 * then copied into a cJSON tree. cJSON never parses input.
 */
#include "qbh.h"

#include <cjson/cJSON.h>

static cJSON *copy(const qb_json_api *J, const qb_json *n);

/* A container's children, fetched in one forward walk first: at() is O(1)
 * only while one container is walked (qb_json.h), and a child may be a
 * container itself. */
static cJSON *copy_children(const qb_json_api *J, const qb_json *n, int object)
{
    size_t i, count = J->count(n);
    const qb_json **kids = qbh_calloc(count ? count : 1, sizeof *kids);
    const char **keys = qbh_calloc(count ? count : 1, sizeof *keys);
    cJSON *out = object ? cJSON_CreateObject() : cJSON_CreateArray();
    for (i = 0; kids && keys && i < count; i++)
        kids[i] = J->at(n, i, object ? &keys[i] : NULL);
    for (i = 0; out && kids && keys && i < count; i++) {
        cJSON *c = copy(J, kids[i]);
        if (!c ||
            !(object ? cJSON_AddItemToObject(out, keys[i], c) : cJSON_AddItemToArray(out, c))) {
            cJSON_Delete(c);
            cJSON_Delete(out);
            out = NULL;
        }
    }
    if (!kids || !keys) {
        cJSON_Delete(out);
        out = NULL;
    }
    qbh_free(kids);
    qbh_free(keys);
    return out;
}

static cJSON *copy(const qb_json_api *J, const qb_json *n)
{
    double d;
    int32_t b;
    switch (J->type(n)) {
    case QB_JSON_BOOL: return J->get_bool(n, &b) ? cJSON_CreateBool(b) : NULL;
    case QB_JSON_NUMBER: return J->get_number(n, &d) ? cJSON_CreateNumber(d) : NULL;
    case QB_JSON_STRING: return cJSON_CreateString(J->get_string(n));
    case QB_JSON_ARRAY: return copy_children(J, n, 0);
    case QB_JSON_OBJECT: return copy_children(J, n, 1);
    default: return cJSON_CreateNull();
    }
}

qb_status qbh_json_parse_cjson(const char *what, const char *text, size_t len, cJSON **out)
{
    const qb_json_api *J = qbh_json_api();
    qb_json *root = NULL;
    qb_status rc = qbh_json_parse(what, text, len, &root);
    *out = NULL;
    if (rc)
        return rc;
    *out = copy(J, root);
    J->free(root);
    if (!*out)
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory", what ? what : "JSON text");
    return QB_OK;
}
