/*
 * quantbridge host — typed plugin options (qb_param.h).
 *
 * Values come from a declaration's default, the plugin's config section
 * (option.KEY) and the command line, in rising precedence. Every value is
 * parsed and checked against its declaration here, before any conversion
 * starts, so a plugin only ever sees valid typed values.
 */
#include "qbh.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *qbh_param_type_name(qb_param_type t)
{
    switch (t) {
    case QB_PARAM_BOOL: return "bool";
    case QB_PARAM_INT: return "int";
    case QB_PARAM_DOUBLE: return "double";
    case QB_PARAM_STRING: return "string";
    case QB_PARAM_SIZE: return "size";
    default: return "?";
    }
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;
    if (!*s)
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return -1;
    *out = v;
    return 0;
}

qb_status qbh_parse_size(const char *text, int64_t *out)
{
    static const struct {
        const char *suffix;
        int64_t mul;
    } units[] = {
        {"", 1},           {"b", 1},
        {"k", 1000},       {"kb", 1000},       {"kib", 1024},
        {"m", 1000000},    {"mb", 1000000},    {"mib", 1048576},
        {"g", 1000000000}, {"gb", 1000000000}, {"gib", 1073741824},
        {"tb", 1000000000000LL}, {"tib", 1099511627776LL},
    };
    char *end;
    unsigned long long v;
    size_t i;
    const char *s = text;

    if (*s < '0' || *s > '9')
        return qbh_error_set(QB_E_INVALID, "'%s' is not a byte size", text);
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return qbh_error_set(QB_E_INVALID, "'%s' is not a byte size", text);
    while (*end == ' ')
        end++;
    for (i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            if (v > (unsigned long long)(INT64_MAX / units[i].mul))
                return qbh_error_set(QB_E_INVALID, "'%s': byte size too large", text);
            *out = (int64_t)v * units[i].mul;
            return QB_OK;
        }
    }
    return qbh_error_set(QB_E_INVALID, "'%s': unknown size unit (use B, KB, MB, GB, TB, KiB, "
                         "MiB, GiB, TiB)", text);
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *c = choices;
    while (*c) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, v, n) == 0)
            return 1;
        if (!bar)
            break;
        c = bar + 1;
    }
    return 0;
}

qb_status qbh_option_parse(const qb_option_decl *d, const char *text, const char *origin,
                           qb_param *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->key = d->name;
    out->type = d->type;
    out->is_set = 1;
    switch (d->type) {
    case QB_PARAM_BOOL:
        if (!strcasecmp(text, "true") || !strcmp(text, "1") || !strcasecmp(text, "yes"))
            out->v.b = 1;
        else if (!strcasecmp(text, "false") || !strcmp(text, "0") || !strcasecmp(text, "no"))
            out->v.b = 0;
        else
            return qbh_error_set(QB_E_INVALID, "%s: option %s: '%s' is not a bool (true/false)",
                                 origin, d->name, text);
        return QB_OK;
    case QB_PARAM_INT:
    case QB_PARAM_SIZE:
        if (d->type == QB_PARAM_INT) {
            if (parse_i64(text, &out->v.i))
                return qbh_error_set(QB_E_INVALID, "%s: option %s: '%s' is not an integer",
                                     origin, d->name, text);
        } else if (qbh_parse_size(text, &out->v.i)) {
            return qbh_error_set(QB_E_INVALID, "%s: option %s: %s", origin, d->name,
                                 qbh_error_message());
        }
        if (d->min_int <= d->max_int && (out->v.i < d->min_int || out->v.i > d->max_int))
            return qbh_error_set(QB_E_INVALID, "%s: option %s: %lld outside [%lld, %lld]", origin,
                                 d->name, (long long)out->v.i, (long long)d->min_int,
                                 (long long)d->max_int);
        return QB_OK;
    case QB_PARAM_DOUBLE: {
        char *end;
        errno = 0;
        out->v.d = strtod(text, &end);
        if (!*text || *end || errno || !isfinite(out->v.d))
            return qbh_error_set(QB_E_INVALID, "%s: option %s: '%s' is not a finite number",
                                 origin, d->name, text);
        return QB_OK;
    }
    case QB_PARAM_STRING:
        if (d->choices && !choice_ok(d->choices, text))
            return qbh_error_set(QB_E_INVALID, "%s: option %s: '%s' is not one of %s", origin,
                                 d->name, text, d->choices);
        out->v.s = text;
        return QB_OK;
    default:
        return qbh_error_set(QB_E_INVALID, "%s: option %s: unknown type %d", origin, d->name,
                             (int)d->type);
    }
}

void qbh_params_free(qbh_params *p)
{
    size_t i;
    if (!p)
        return;
    if (p->strings)
        for (i = 0; i < p->n; i++)
            qbh_free(p->strings[i]);
    qbh_free(p->strings);
    qbh_free(p->items);
    memset(p, 0, sizeof *p);
}

/* Parses text for item k and keeps a private copy of string values. */
static qb_status set_item(qbh_params *p, size_t k, const qb_option_decl *d, const char *text,
                          const char *origin)
{
    qb_status rc = qbh_option_parse(d, text, origin, &p->items[k]);
    if (rc)
        return rc;
    if (d->type == QB_PARAM_STRING) {
        char *c = qbh_strdup(text);
        if (!c)
            return qbh_error_set(QB_E_NOMEM, "out of memory");
        qbh_free(p->strings[k]);
        p->strings[k] = c;
        p->items[k].v.s = c;
    }
    return QB_OK;
}

uint32_t qbh_option_roles(const qb_option_decl *d)
{
    uint32_t r = QB_HAS_FIELD(d, qb_option_decl, roles) ? d->roles : 0;
    return r ? r : QB_OPTION_ROLE_BOTH;
}

const char *qbh_role_name(uint32_t role)
{
    return role == QB_OPTION_ROLE_READER ? "reader" : "writer";
}

uint32_t qbh_option_key_split(const char *key, const char **name)
{
    if (strncmp(key, "reader.", 7) == 0) {
        *name = key + 7;
        return QB_OPTION_ROLE_READER;
    }
    if (strncmp(key, "writer.", 7) == 0) {
        *name = key + 7;
        return QB_OPTION_ROLE_WRITER;
    }
    *name = key;
    return 0;
}

const qb_option_decl *qbh_option_find(const qb_plugin *d, uint32_t role, const char *name)
{
    size_t k;
    for (k = 0; d && d->options && d->options[k]; k++)
        if ((qbh_option_roles(d->options[k]) & role) && strcmp(d->options[k]->name, name) == 0)
            return d->options[k];
    return NULL;
}

qb_status qbh_params_build(const qb_plugin *d, uint32_t role, const qbh_plugin_conf *conf,
                           qbh_opt *cli, size_t n_cli, qbh_params *out)
{
    size_t n = 0, k, i, all = 0;
    qb_status rc = QB_OK;

    assert(role == QB_OPTION_ROLE_READER || role == QB_OPTION_ROLE_WRITER);
    memset(out, 0, sizeof *out);
    while (d->options && d->options[all])
        n += (qbh_option_roles(d->options[all++]) & role) != 0;
    out->items = qbh_calloc(n + 1, sizeof *out->items);
    out->strings = qbh_calloc(n + 1, sizeof *out->strings);
    out->n = n;
    if (!out->items || !out->strings) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    for (k = 0, all = 0; k < n; all++) {
        const qb_option_decl *od = d->options[all];
        if (!(qbh_option_roles(od) & role))
            continue;
        out->items[k].struct_size = sizeof(qb_param);
        out->items[k].key = od->name;
        out->items[k].type = od->type;
        if (od->default_value) {
            char origin[256];
            snprintf(origin, sizeof origin, "plugin %s: default", d->name);
            rc = set_item(out, k, od, od->default_value, origin);
            if (rc)
                goto out;
        }
        if (conf) {
            for (i = 0; i < conf->n_options; i++) {
                if (strcmp(conf->options[i].key, od->name) != 0)
                    continue;
                char origin[1024];
                snprintf(origin, sizeof origin, "config [plugin:%s] option.%s", conf->name,
                         od->name);
                rc = set_item(out, k, od, conf->options[i].value, origin);
                if (rc)
                    goto out;
            }
        }
        for (i = 0; i < n_cli; i++) {
            const char *name;
            uint32_t qual = qbh_option_key_split(cli[i].key, &name);
            if ((qual && qual != role) || strcmp(name, od->name) != 0)
                continue;
            rc = set_item(out, k, od, cli[i].value, cli[i].origin);
            if (rc)
                goto out;
            cli[i].used = 1;
        }
        k++;
    }
    out->items[n].struct_size = sizeof(qb_param);
    out->items[n].type = QB_PARAM_END;
out:
    if (rc)
        qbh_params_free(out);
    return rc;
}

/* A config option.KEY that no declaration of the plugin has, whatever its
 * role, reaches the plugin only through get_config: said once. */
static void warn_unknown_conf(const qbh_plugin *p)
{
    size_t i, k;
    if (!p->conf)
        return;
    for (i = 0; i < p->conf->n_options; i++) {
        int known = 0;
        for (k = 0; p->desc->options && p->desc->options[k]; k++)
            known |= strcmp(p->conf->options[i].key, p->desc->options[k]->name) == 0;
        if (!known)
            qbh_log(QB_LOG_WARN, NULL,
                    "config [plugin:%s] option.%s: not an option of plugin %s; ignored",
                    p->conf->name, p->conf->options[i].key, p->desc->name);
    }
}

/* Appends "reader NAME: a, b" (the keys `p` declares for `role`) to buf. */
static size_t list_keys(char *buf, size_t size, size_t len, const qbh_plugin *p, uint32_t role)
{
    size_t k, n = 0;
    if (len >= size)
        return len;
    len += (size_t)snprintf(buf + len, size - len, "%s%s %s: ", len ? "; " : "",
                            qbh_role_name(role), p->name);
    for (k = 0; p->desc->options && p->desc->options[k] && len < size; k++)
        if (qbh_option_roles(p->desc->options[k]) & role)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", n++ ? ", " : "",
                                    p->desc->options[k]->name);
    if (!n && len < size)
        len += (size_t)snprintf(buf + len, size - len, "(none)");
    return len;
}

/* " (dtype is an option of writer hf-dense)": where a key the run's
 * plugins lack is declared instead, so the message points at the fix. */
static void hint_elsewhere(const qbh_registry *reg, const char *name, char *buf, size_t size)
{
    size_t i, len = 0;
    buf[0] = '\0';
    for (i = 0; reg && i < reg->n_plugins && len < size; i++) {
        const qbh_plugin *o = reg->plugins[i];
        uint32_t role;
        if (o->state != QBH_LOAD_OK)
            continue;
        for (role = QB_OPTION_ROLE_READER; role <= QB_OPTION_ROLE_WRITER; role <<= 1) {
            int has_half = role == QB_OPTION_ROLE_READER ? !!o->desc->reader : !!o->desc->writer;
            if (has_half && qbh_option_find(o->desc, role, name) && len < size)
                len += (size_t)snprintf(buf + len, size - len, "%s%s %s",
                                        len ? ", " : " (declared by ", qbh_role_name(role),
                                        o->name);
        }
    }
    if (len && len < size)
        snprintf(buf + len, size - len, ")");
}

/* Usage error for cli entry `o` that no role of the run declares. */
static qb_status unknown_key(const qbh_opt *o, uint32_t qual, const char *name,
                             const qbh_plugin *reader, const qbh_plugin *writer)
{
    char valid[1024], hint[512], whom[512];
    size_t len = 0;
    const qbh_registry *reg = reader ? reader->reg : writer ? writer->reg : NULL;
    valid[0] = '\0';
    if (reader && qual != QB_OPTION_ROLE_WRITER)
        len = list_keys(valid, sizeof valid, len, reader, QB_OPTION_ROLE_READER);
    if (writer && qual != QB_OPTION_ROLE_READER)
        len = list_keys(valid, sizeof valid, len, writer, QB_OPTION_ROLE_WRITER);
    hint_elsewhere(reg, name, hint, sizeof hint);
    if (qual == QB_OPTION_ROLE_READER && !reader)
        snprintf(whom, sizeof whom, "this command has no reader");
    else if (qual == QB_OPTION_ROLE_WRITER && !writer)
        snprintf(whom, sizeof whom, "this command has no writer");
    else
        snprintf(whom, sizeof whom, "no option %s for %s%s%s%s%s", name,
                 qual == QB_OPTION_ROLE_WRITER || !reader ? "" : "reader ",
                 qual == QB_OPTION_ROLE_WRITER || !reader ? "" : reader->name,
                 qual || !reader || !writer ? "" : " or ",
                 qual == QB_OPTION_ROLE_READER || !writer ? "" : "writer ",
                 qual == QB_OPTION_ROLE_READER || !writer ? "" : writer->name);
    return qbh_error_set(QB_E_NOT_FOUND, "%s %s: %s; valid keys: %s%s", o->origin, o->key, whom,
                         len ? valid : "(none)", hint);
}

qb_status qbh_params_route(qbh_plugin *reader, qbh_plugin *writer, qbh_opt *cli, size_t n_cli,
                           qbh_params *rp, qbh_params *wp, int *usage)
{
    qb_status rc = QB_OK;
    size_t i;

    *usage = 0;
    memset(rp, 0, sizeof *rp);
    memset(wp, 0, sizeof *wp);
    /* Every key is resolved to its roles before any value is parsed, so a
     * key that is unknown or ambiguous is reported as such. */
    for (i = 0; i < n_cli; i++) {
        const char *name;
        uint32_t qual = qbh_option_key_split(cli[i].key, &name);
        const qb_option_decl *dr = NULL, *dw = NULL;
        cli[i].used = 0;
        if (reader && qual != QB_OPTION_ROLE_WRITER)
            dr = qbh_option_find(reader->desc, QB_OPTION_ROLE_READER, name);
        if (writer && qual != QB_OPTION_ROLE_READER)
            dw = qbh_option_find(writer->desc, QB_OPTION_ROLE_WRITER, name);
        if (!dr && !dw) {
            rc = unknown_key(&cli[i], qual, name, reader, writer);
            *usage = 1;
            goto fail;
        }
        /* One declaration serving both roles of one plugin is one option;
         * two declarations are two options that happen to share a name,
         * and guessing which one the user meant could silently change the
         * other half's behaviour. */
        if (dr && dw && (reader != writer || dr != dw)) {
            rc = qbh_error_set(QB_E_INVALID, "%s %s: both the reader %s and the writer %s "
                               "declare option %s; say which: reader.%s=%s or writer.%s=%s",
                               cli[i].origin, cli[i].key, reader->name, writer->name, name, name,
                               cli[i].value, name, cli[i].value);
            *usage = 1;
            goto fail;
        }
    }
    if (reader) {
        rc = qbh_params_build(reader->desc, QB_OPTION_ROLE_READER, reader->conf, cli, n_cli, rp);
        if (rc)
            goto fail;
    }
    if (writer) {
        rc = qbh_params_build(writer->desc, QB_OPTION_ROLE_WRITER, writer->conf, cli, n_cli, wp);
        if (rc)
            goto fail;
    }
    if (reader)
        warn_unknown_conf(reader);
    if (writer && writer != reader)
        warn_unknown_conf(writer);
    return QB_OK;
fail:
    /* A bad value typed on the command line is a usage error; one from a
     * config file is a failure of the installation. */
    if (rc == QB_E_INVALID && strncmp(qbh_error_message(), "--", 2) == 0)
        *usage = 1;
    qbh_params_free(rp);
    qbh_params_free(wp);
    return rc;
}
