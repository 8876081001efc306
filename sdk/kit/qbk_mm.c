/*
 * Multimodal wrapper checkpoints read as their text model (qbk_mm.h).
 */
#include "qbk_mm.h"

#include <stdio.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_json_edit.h"

const qb_option_decl qbk_towers_option = {
    .struct_size = sizeof(qb_option_decl),
    .name = "towers",
    .type = QB_PARAM_STRING,
    .default_value = "refuse",
    .help = "a multimodal wrapper checkpoint (text_config; model.language_model.* or "
            "language_model.* beside vision/audio towers) is read as its text model: refuse "
            "(default: name the tower tensors and stop) or drop (leave the towers out)",
    .choices = "refuse|drop",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_READER,
};

qb_status qbk_towers_mode(const qb_host *h, const qb_param *params, int *drop)
{
    const qb_param *p = qb_param_find(params, "towers");
    *drop = 0;
    if (!p || !p->is_set || p->type != QB_PARAM_STRING || !p->v.s)
        return QB_OK;
    if (strcmp(p->v.s, "drop") == 0) {
        *drop = 1;
        return QB_OK;
    }
    if (strcmp(p->v.s, "refuse") == 0)
        return QB_OK;
    return h->set_error(h, QB_E_INVALID, "option towers=%s: expected refuse or drop", p->v.s);
}

int qbk_mm_is_wrapper(const cJSON *config)
{
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(config, "text_config");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(tc, "model_type");
    return cJSON_IsObject(tc) && cJSON_IsString(mt) && mt->valuestring[0];
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

/* Past the JSON string starting at s (a '"'). */
static const char *skip_string(const char *s)
{
    for (s++; *s && *s != '"'; s++)
        if (*s == '\\' && s[1])
            s++;
    return *s ? s + 1 : s;
}

/* Past the JSON value starting at s (text the strict parser accepted). */
static const char *skip_value(const char *s)
{
    int depth = 0;
    do {
        if (*s == '"') {
            s = skip_string(s);
            continue;
        }
        if (*s == '{' || *s == '[')
            depth++;
        else if (*s == '}' || *s == ']')
            depth--;
        else if (depth == 0 && (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
            break;
        if (*s)
            s++;
    } while (*s && depth > 0);
    if (depth == 0)
        while (*s && *s != ',' && *s != '}' && *s != ' ' && *s != '\t' && *s != '\n' &&
               *s != '\r')
            s++;
    return s;
}

/* The text span [*b, *e) of top-level member `key`'s value in object text. */
static int member_span(const char *text, const char *key, const char **b, const char **e)
{
    const char *s = skip_ws(text);
    size_t kl = strlen(key);
    if (*s != '{')
        return 0;
    s = skip_ws(s + 1);
    while (*s == '"') {
        const char *k = s + 1, *ke = skip_string(s);
        int match = (size_t)(ke - 1 - k) == kl && strncmp(k, key, kl) == 0;
        s = skip_ws(ke);
        if (*s != ':')
            return 0;
        s = skip_ws(s + 1);
        if (match) {
            *b = s;
            *e = skip_value(s);
            return 1;
        }
        s = skip_ws(skip_value(s));
        if (*s != ',')
            return 0;
        s = skip_ws(s + 1);
    }
    return 0;
}

qb_status qbk_mm_text_config(const qb_host *h, const char *what, const char *text,
                             const cJSON *config, char **out)
{
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(config, "tie_word_embeddings");
    const char *b, *e;
    char *sub;
    size_t n;
    qb_status rc = QB_OK;

    *out = NULL;
    if (!member_span(text, "text_config", &b, &e) || *b != '{')
        return h->set_error(h, QB_E_FORMAT, "%s: text_config is not an object", what);
    n = (size_t)(e - b);
    if (!(sub = qbk_malloc(n + 1)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", what);
    memcpy(sub, b, n);
    sub[n] = '\0';
    if (cJSON_IsBool(tie)) {
        static const char *const keys[] = {"tie_word_embeddings", NULL};
        const char *vals[] = {cJSON_IsTrue(tie) ? "true" : "false", NULL};
        rc = qbk_json_edit(h, what, sub, NULL, keys, vals, out);
        qbk_free(sub);
        return rc;
    }
    *out = sub;
    return QB_OK;
}

int qbk_mm_text_name(const char *name, char *buf, size_t len)
{
    static const char *const from[] = {"model.language_model.", "language_model.model.",
                                       "language_model.lm_head.", "lm_head.", "mtp."};
    static const char *const to[] = {"model.", "model.", "lm_head.", "lm_head.", "mtp."};
    size_t i;
    for (i = 0; i < sizeof from / sizeof from[0]; i++) {
        size_t fl = strlen(from[i]);
        if (strncmp(name, from[i], fl) == 0) {
            int n = snprintf(buf, len, "%s%s", to[i], name + fl);
            return n < 0 || (size_t)n >= len ? -1 : 1;
        }
    }
    return 0;
}
