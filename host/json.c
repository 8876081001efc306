/*
 * quantbridge host — the JSON service (qb_json.h), the qb_json_api table
 * every qb_host carries: reading and building trees of cJSON nodes
 * (json_node.h); parsing is the kit's strict parser (qbh_json_parse below,
 * over sdk/kit/qbk_json.h, the one every plugin uses too), emitting
 * json_emit.c.
 *
 * Reads never write to a tree, so concurrent reads of one tree are safe
 * (qb_json.h THREADING). What at() remembers to stay O(1) on a forward
 * walk is per thread and dropped by any change to any tree.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "json_node.h"

/* Bumped before every change to any tree (before, so that memory freed by
 * the change is never reused while the old generation is still current);
 * a cursor from another generation is not trusted. */
static atomic_ulong generation;

typedef struct jcursor {
    const cJSON *parent;
    const cJSON *node;
    size_t index;
    unsigned long gen;
} jcursor;

static _Thread_local jcursor cursor;

void qbh_json_touch(void)
{
    atomic_fetch_add(&generation, 1);
}

static int is_container(const cJSON *n)
{
    return n && ((n->type & 0xff) == cJSON_Array || (n->type & 0xff) == cJSON_Object);
}

static int is_type(const cJSON *n, int type)
{
    return n && (n->type & 0xff) == type;
}

/* A root: not linked into any tree (json_node.h). */
static int is_root(const cJSON *n)
{
    return !n->prev && !n->next && !n->string;
}

qb_status qbh_json_parse(const char *what, const char *text, size_t len, qb_json **out)
{
    qbk_json_fail f;
    cJSON *root = NULL;
    char msg[1024 + sizeof f.reason];

    if (!what)
        what = "JSON text";
    if (!out)
        return qbh_error_set(QB_E_INVALID, "%s: no place for the result (out is NULL)", what);
    *out = NULL;
    if (!text)
        return qbh_error_set(QB_E_INVALID, "%s: no text to parse (NULL)", what);
    if (qbk_json_parse_text(text, len, qbh_alloc_admit, &root, &f) != QB_OK) {
        qbk_json_fail_text(&f, what, msg, sizeof msg);
        return qbh_error_set(f.rc, "%s", msg);
    }
    *out = (qb_json *)(void *)root;
    return QB_OK;
}

qb_status qbh_json_parse_cjson(const char *what, const char *text, size_t len, struct cJSON **out)
{
    /* The service's trees are the kit parser's cJSON trees (json_node.h):
     * nothing to copy. */
    return qbh_json_parse(what, text, len, (qb_json **)(void *)out);
}

static qb_status j_parse(const qb_host *h, const char *what, const char *text, size_t len,
                         qb_json **out)
{
    qb_status rc;
    (void)h; /* the tree is cJSON memory (json_node.h), not host->alloc */
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "json->parse")) {
        *out = NULL;
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory parsing JSON (injected by "
                             "plugin-check)", what ? what : "JSON");
    }
    rc = qbh_json_parse(what, text, len, out);
    if (rc == QB_OK)
        qbh_objects_add(*out, "JSON tree from json->parse");
    return rc;
}

static void j_free(qb_json *root)
{
    cJSON *n = qbh_jnode(root);
    if (!n)
        return;
    if (!is_root(n)) {
        /* Freeing it would leave its tree pointing at freed memory. */
        qbh_log(QB_LOG_WARN, NULL, "JSON free: the node is inside another tree; ignored "
                                   "(free the root of that tree instead)");
        return;
    }
    qbh_json_touch(); /* first: the memory may be reused as soon as it is freed */
    qbh_objects_remove(root);
    cJSON_Delete(n);
}

static qb_json_type j_type(const qb_json *node)
{
    const cJSON *n = qbh_jcnode(node);
    if (!n)
        return QB_JSON_INVALID;
    switch (n->type & 0xff) {
    case cJSON_NULL: return QB_JSON_NULL;
    case cJSON_False:
    case cJSON_True: return QB_JSON_BOOL;
    case cJSON_Number: return QB_JSON_NUMBER;
    case cJSON_String: return QB_JSON_STRING;
    case cJSON_Array: return QB_JSON_ARRAY;
    case cJSON_Object: return QB_JSON_OBJECT;
    default: return QB_JSON_INVALID;
    }
}

static const cJSON *member(const cJSON *obj, const char *key)
{
    const cJSON *c;
    for (c = obj->child; c; c = c->next)
        if (strcmp(c->string, key) == 0)
            return c;
    return NULL;
}

static const qb_json *j_get(const qb_json *obj, const char *key)
{
    const cJSON *o = qbh_jcnode(obj);
    if (!is_type(o, cJSON_Object) || !key)
        return NULL;
    return (const qb_json *)(const void *)member(o, key);
}

static size_t j_count(const qb_json *node)
{
    const cJSON *n = qbh_jcnode(node);
    return is_container(n) ? qbh_jcount(n) : 0;
}

static const qb_json *j_at(const qb_json *node, size_t i, const char **key)
{
    const cJSON *n = qbh_jcnode(node), *c;
    unsigned long gen;
    size_t k;

    if (key)
        *key = NULL;
    if (!is_container(n) || i >= qbh_jcount(n))
        return NULL;
    gen = atomic_load(&generation);
    if (cursor.parent == n && cursor.gen == gen && cursor.index <= i) {
        c = cursor.node;
        k = cursor.index;
    } else {
        c = n->child;
        k = 0;
    }
    for (; k < i; k++)
        c = c->next;
    cursor.parent = n;
    cursor.node = c;
    cursor.index = i;
    cursor.gen = gen;
    if (key && is_type(n, cJSON_Object))
        *key = c->string;
    return (const qb_json *)(const void *)c;
}

static const char *j_get_string(const qb_json *node)
{
    const cJSON *n = qbh_jcnode(node);
    return is_type(n, cJSON_String) ? n->valuestring : NULL;
}

static int j_get_number(const qb_json *node, double *out)
{
    const cJSON *n = qbh_jcnode(node);
    if (!is_type(n, cJSON_Number))
        return 0;
    if (out)
        *out = n->valuedouble;
    return 1;
}

static int j_get_int(const qb_json *node, int64_t *out)
{
    const cJSON *n = qbh_jcnode(node);
    if (!is_type(n, cJSON_Number) || !(n->type & QBH_JSON_INT_OK))
        return 0;
    if (out)
        *out = (int64_t)n->valuedouble;
    return 1;
}

static int j_get_bool(const qb_json *node, int32_t *out)
{
    const cJSON *n = qbh_jcnode(node);
    if (!is_type(n, cJSON_True) && !is_type(n, cJSON_False))
        return 0;
    if (out)
        *out = is_type(n, cJSON_True);
    return 1;
}

/* A new root made by the service `call`: an injected failure (NULL, as
 * for no memory) or a tracked tree (objects.c). */
static int new_refused(const char *call)
{
    return qbh_testhook_fault(QBH_FAULT_SERVICE, call);
}

static qb_json *new_string_node(const char *utf8);

static qb_json *made(qb_json *root, const char *what)
{
    qbh_objects_add(root, what);
    return root;
}

static qb_json *j_new_object(void)
{
    if (new_refused("json->new_object"))
        return NULL;
    return made((qb_json *)(void *)qbh_jnode_new(cJSON_Object),
                "JSON tree from json->new_object");
}

static qb_json *j_new_array(void)
{
    if (new_refused("json->new_array"))
        return NULL;
    return made((qb_json *)(void *)qbh_jnode_new(cJSON_Array), "JSON tree from json->new_array");
}

static qb_json *j_new_string(const char *utf8)
{
    if (new_refused("json->new_string"))
        return NULL;
    return made(new_string_node(utf8), "JSON tree from json->new_string");
}

static qb_json *new_string_node(const char *utf8)
{
    size_t n;
    char *copy;
    cJSON *node;
    if (!utf8)
        return NULL;
    n = strlen(utf8) + 1;
    copy = qbh_jbuf_new(n);
    if (!copy)
        return NULL;
    memcpy(copy, utf8, n);
    node = qbh_jnode_new(cJSON_String);
    if (!node) {
        cJSON_free(copy);
        return NULL;
    }
    node->valuestring = copy;
    return (qb_json *)(void *)node;
}

static qb_json *j_new_number(double v)
{
    cJSON *node;
    if (new_refused("json->new_number"))
        return NULL;
    if (isnan(v) || isinf(v))
        return NULL;
    node = qbh_jnode_new(cJSON_Number);
    if (!node)
        return NULL;
    node->valuedouble = v;
    qbh_jnumber_flag_from_value(node);
    return made((qb_json *)(void *)node, "JSON tree from json->new_number");
}

static qb_json *j_new_bool(int32_t v)
{
    if (new_refused("json->new_bool"))
        return NULL;
    return made((qb_json *)(void *)qbh_jnode_new(v ? cJSON_True : cJSON_False),
                "JSON tree from json->new_bool");
}

static qb_json *j_new_null(void)
{
    if (new_refused("json->new_null"))
        return NULL;
    return made((qb_json *)(void *)qbh_jnode_new(cJSON_NULL), "JSON tree from json->new_null");
}

/* The checks add and append share. On a refusal the item is freed unless
 * freeing it would free something the caller still holds. */
static qb_status check_move(cJSON *parent, int parent_type, cJSON *it, const char *call)
{
    if (!it)
        return qbh_error_set(QB_E_INVALID, "JSON %s: item is NULL", call);
    if (it == parent || !is_root(it))
        /* not freed: it is the target itself, or belongs to another tree */
        return qbh_error_set(QB_E_INVALID, "JSON %s: item is %s", call,
                             it == parent ? "the target itself" : "not a root (inside a tree)");
    if (!is_type(parent, parent_type)) {
        qbh_json_touch();
        qbh_objects_remove(it);
        cJSON_Delete(it);
        return qbh_error_set(QB_E_INVALID, "JSON %s: target is not %s", call,
                             parent_type == cJSON_Object ? "an object" : "an array");
    }
    return QB_OK;
}

static qb_status j_add(qb_json *obj, const char *key, qb_json *item)
{
    cJSON *o = qbh_jnode(obj), *it = qbh_jnode(item), *old;
    qb_status rc = check_move(o, cJSON_Object, it, "add");
    size_t n;
    char *k;

    if (rc)
        return rc;
    qbh_json_touch(); /* before anything is freed or relinked */
    qbh_objects_remove(it); /* from here on part of obj's tree, or freed */
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "json->add")) {
        cJSON_Delete(it);
        return qbh_error_set(QB_E_NOMEM, "JSON add: out of memory (injected by plugin-check)");
    }
    if (!key) {
        cJSON_Delete(it);
        return qbh_error_set(QB_E_INVALID, "JSON add: key is NULL");
    }
    n = strlen(key) + 1;
    k = qbh_jbuf_new(n);
    if (!k) {
        cJSON_Delete(it);
        return qbh_error_set(QB_E_NOMEM, "JSON add: out of memory");
    }
    memcpy(k, key, n);
    it->string = k;
    it->type &= ~cJSON_StringIsConst;
    old = (cJSON *)member(o, key);
    if (old)
        cJSON_ReplaceItemViaPointer(o, old, it); /* frees old */
    else {
        cJSON_AddItemToArray(o, it); /* links only: cannot fail */
        qbh_jcount_set(o, qbh_jcount(o) + 1);
    }
    return QB_OK;
}

static qb_status j_append(qb_json *arr, qb_json *item)
{
    cJSON *a = qbh_jnode(arr), *it = qbh_jnode(item);
    qb_status rc = check_move(a, cJSON_Array, it, "append");
    if (rc)
        return rc;
    qbh_json_touch();
    qbh_objects_remove(it);
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "json->append")) {
        cJSON_Delete(it);
        return qbh_error_set(QB_E_NOMEM, "JSON append: out of memory (injected by "
                             "plugin-check)");
    }
    cJSON_AddItemToArray(a, it);
    qbh_jcount_set(a, qbh_jcount(a) + 1);
    return QB_OK;
}

/* ---- ABI 1.3 ------------------------------------------------------------- */

static qb_json *j_copy(const qb_json *node)
{
    const cJSON *n = qbh_jcnode(node);
    cJSON *c;
    if (!n || new_refused("json->copy") || !qbh_alloc_admit())
        return NULL;
    /* cJSON_Duplicate keeps type (with the exact-integer mark) and
     * valuedouble (a container's count, json_node.h) */
    c = cJSON_Duplicate(n, 1);
    if (!c)
        return NULL;
    if (c->string && !(c->type & cJSON_StringIsConst))
        cJSON_free(c->string);
    c->string = NULL; /* a root has no key */
    c->type &= ~cJSON_StringIsConst;
    return made((qb_json *)(void *)c, "JSON tree from json->copy");
}

static qb_status j_remove(qb_json *obj, const char *key)
{
    cJSON *o = qbh_jnode(obj), *m;
    if (!o || !is_type(o, cJSON_Object) || !key)
        return qbh_error_set(QB_E_INVALID, "JSON remove: %s",
                             !key ? "key is NULL" : "target is not an object");
    m = (cJSON *)member(o, key);
    if (!m)
        return qbh_error_set(QB_E_NOT_FOUND, "JSON remove: no member \"%s\"", key);
    qbh_json_touch();
    cJSON_DetachItemViaPointer(o, m);
    cJSON_Delete(m);
    qbh_jcount_set(o, qbh_jcount(o) - 1);
    return QB_OK;
}

/* A new value node for a setter, added as obj.key (j_add: replaces or
 * appends; frees the node on its refusal). */
static qb_status set_node(qb_json *obj, const char *key, cJSON *node, const char *call)
{
    cJSON *o = qbh_jnode(obj);
    if (!o || !is_type(o, cJSON_Object) || !key) {
        qbh_json_touch();
        cJSON_Delete(node);
        return qbh_error_set(QB_E_INVALID, "JSON %s: %s", call,
                             !key ? "key is NULL" : "target is not an object");
    }
    if (!node)
        return qbh_error_set(QB_E_NOMEM, "JSON %s: out of memory", call);
    return j_add(obj, key, (qb_json *)(void *)node);
}

static qb_status j_set_string(qb_json *obj, const char *key, const char *utf8)
{
    if (!utf8)
        return qbh_error_set(QB_E_INVALID, "JSON set_string: string is NULL");
    if (new_refused("json->set_string"))
        return qbh_error_set(QB_E_NOMEM, "JSON set_string: out of memory (injected by "
                             "plugin-check)");
    return set_node(obj, key, qbh_jnode(new_string_node(utf8)), "set_string");
}

static qb_status j_set_number(qb_json *obj, const char *key, double v)
{
    cJSON *node;
    if (isnan(v) || isinf(v))
        return qbh_error_set(QB_E_INVALID, "JSON set_number: %s is not finite",
                             key ? key : "(null)");
    if (new_refused("json->set_number"))
        return qbh_error_set(QB_E_NOMEM, "JSON set_number: out of memory (injected by "
                             "plugin-check)");
    node = qbh_jnode_new(cJSON_Number);
    if (node) {
        node->valuedouble = v;
        qbh_jnumber_flag_from_value(node);
    }
    return set_node(obj, key, node, "set_number");
}

static qb_status j_set_bool(qb_json *obj, const char *key, int32_t v)
{
    if (new_refused("json->set_bool"))
        return qbh_error_set(QB_E_NOMEM, "JSON set_bool: out of memory (injected by "
                             "plugin-check)");
    return set_node(obj, key, qbh_jnode_new(v ? cJSON_True : cJSON_False), "set_bool");
}

static qb_status j_emit(const qb_host *h, const qb_json *node, int indent, char **out,
                        size_t *len)
{
    if (qbh_testhook_fault(QBH_FAULT_SERVICE, "json->emit")) {
        *out = NULL;
        return qbh_error_set(QB_E_NOMEM, "JSON emit: out of memory (injected by plugin-check)");
    }
    return qbh_json_emit(h, node, indent, out, len);
}

static const qb_json_api json_api = {
    sizeof(qb_json_api),
    j_parse,
    j_free,
    j_type,
    j_get,
    j_count,
    j_at,
    j_get_string,
    j_get_number,
    j_get_int,
    j_get_bool,
    j_new_object,
    j_new_array,
    j_new_string,
    j_new_number,
    j_new_bool,
    j_new_null,
    j_add,
    j_append,
    j_emit,
    j_copy,
    j_remove,
    j_set_string,
    j_set_number,
    j_set_bool,
};

const qb_json_api *qbh_json_api(void)
{
    return &json_api;
}
