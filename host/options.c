/*
 * quantbridge host — typed plugin options (qb_param.h).
 *
 * Values come from a declaration's default, the plugin's config section
 * (option.KEY) and the command line, in rising precedence. Every value is
 * parsed and checked against its declaration here, before any conversion
 * starts, so a plugin only ever sees valid typed values.
 */
#include "qbh.h"

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

qb_status qbh_params_build(const qb_plugin *d, const qbh_plugin_conf *conf, qbh_opt *cli,
                           size_t n_cli, qbh_params *out)
{
    size_t n = 0, k, i;
    qb_status rc = QB_OK;

    memset(out, 0, sizeof *out);
    while (d->options && d->options[n])
        n++;
    out->items = qbh_calloc(n + 1, sizeof *out->items);
    out->strings = qbh_calloc(n + 1, sizeof *out->strings);
    out->n = n;
    if (!out->items || !out->strings) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    for (k = 0; k < n; k++) {
        const qb_option_decl *od = d->options[k];
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
            if (strcmp(cli[i].key, od->name) != 0)
                continue;
            rc = set_item(out, k, od, cli[i].value, cli[i].origin);
            if (rc)
                goto out;
            cli[i].used = 1;
        }
    }
    out->items[n].struct_size = sizeof(qb_param);
    out->items[n].type = QB_PARAM_END;
    if (conf) {
        for (i = 0; i < conf->n_options; i++) {
            int known = 0;
            for (k = 0; k < n; k++)
                known |= strcmp(conf->options[i].key, d->options[k]->name) == 0;
            if (!known)
                qbh_log(QB_LOG_WARN, NULL,
                        "config [plugin:%s] option.%s: not an option of plugin %s; ignored",
                        conf->name, conf->options[i].key, d->name);
        }
    }
out:
    if (rc)
        qbh_params_free(out);
    return rc;
}

qb_status qbh_params_route(qbh_plugin *reader, qbh_plugin *writer, qbh_opt *cli, size_t n_cli,
                           qbh_params *rp, qbh_params *wp, int *usage)
{
    qb_status rc = QB_OK;
    size_t i;

    *usage = 0;
    memset(rp, 0, sizeof *rp);
    memset(wp, 0, sizeof *wp);
    for (i = 0; i < n_cli; i++)
        cli[i].used = 0;
    if (reader) {
        rc = qbh_params_build(reader->desc, reader->conf, cli, n_cli, rp);
        if (rc)
            goto fail;
    }
    if (writer) {
        rc = qbh_params_build(writer->desc, writer->conf, cli, n_cli, wp);
        if (rc)
            goto fail;
    }
    for (i = 0; i < n_cli; i++) {
        char valid[1024];
        size_t len = 0, k, w;
        qbh_plugin *two[2] = {reader, writer};
        if (cli[i].used)
            continue;
        valid[0] = '\0';
        for (w = 0; w < 2; w++) {
            if (!two[w] || (w == 1 && two[1] == two[0]))
                continue;
            for (k = 0; two[w]->desc->options && two[w]->desc->options[k]; k++)
                if (len < sizeof valid)
                    len += (size_t)snprintf(valid + len, sizeof valid - len, "%s%s (%s)",
                                            len ? ", " : "", two[w]->desc->options[k]->name,
                                            two[w]->name);
        }
        rc = qbh_error_set(QB_E_NOT_FOUND, "%s %s: no such option for reader %s or writer %s; "
                           "valid keys: %s", cli[i].origin, cli[i].key,
                           reader ? reader->name : "-", writer ? writer->name : "-",
                           len ? valid : "(none)");
        *usage = 1;
        goto fail;
    }
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
