/* GPTQ reader — quantization config. See gptq_config.h. */
#include "gptq_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "qlinear.h"
#include "qbk_str.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

/* First of `a`, `b` present in object `o`, or NULL. */
static const cJSON *gptq_get2(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (!v && b)
        v = cJSON_GetObjectItemCaseSensitive(o, b);
    return v;
}

static int gptq_is_int(const cJSON *v, int64_t *out)
{
    double d;
    if (!cJSON_IsNumber(v))
        return 0;
    d = v->valuedouble;
    /* (int64_t) of a double outside [-2^63, 2^63) (1e300, inf, nan) is undefined behaviour */
    if (!(d >= -0x1p63 && d < 0x1p63) || d != (double)(int64_t)d)
        return 0;
    *out = (int64_t)d;
    return 1;
}

/* Parses one params object (base config or a dynamic override). Fields that
 * are absent leave has_* zero. Returns QB_OK or QB_E_FORMAT/UNSUPPORTED. */
static qb_status gptq_parse_params(const qb_host *h, const char *src, const char *where,
                                   const cJSON *o, gptq_params *p, int *has_bits, int *has_gs,
                                   int *has_sym, int *has_desc)
{
    const cJSON *v;
    int64_t i;
    *has_bits = *has_gs = *has_sym = *has_desc = 0;
    if ((v = gptq_get2(o, "bits", "w_bit"))) {
        if (!gptq_is_int(v, &i))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: bits is not an integer", src, where);
        if (i == 5 || i == 6 || i == 7)
            /* GPTQModel model_dequant.convert_gptq_file: 5/6/7-bit exist only
             * in the planar gptq_p layout */
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: %s: bits %lld (GPTQModel planar gptq_p layout) is not supported",
                                src, where, (long long)i);
        if (i != 2 && i != 3 && i != 4 && i != 8)
            return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: bits %lld not supported (2, 3, 4, 8)",
                                src, where, (long long)i);
        p->bits = (int)i;
        *has_bits = 1;
    }
    if ((v = gptq_get2(o, "group_size", "q_group_size"))) {
        if (!gptq_is_int(v, &i) || (i < 1 && i != -1))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: group_size must be > 0 or -1", src, where);
        p->group_size = i;
        *has_gs = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sym"))) {
        if (!cJSON_IsBool(v))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: sym is not a boolean", src, where);
        p->sym = cJSON_IsTrue(v);
        *has_sym = 1;
    } else if ((v = cJSON_GetObjectItemCaseSensitive(o, "zero_point"))) {
        if (!cJSON_IsBool(v))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: zero_point is not a boolean", src, where);
        p->sym = !cJSON_IsTrue(v);
        *has_sym = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "desc_act"))) {
        if (!cJSON_IsBool(v))
            return h->set_error(h, QB_E_FORMAT, "%s: %s: desc_act is not a boolean", src, where);
        p->desc_act = cJSON_IsTrue(v);
        *has_desc = 1;
    }
    return QB_OK;
}

/* Python-only escapes translated to POSIX ERE; anything else that ERE
 * cannot mean the same way is refused rather than approximated. */
static char *gptq_regex_translate(const char *pat, int *ok)
{
    size_t n = strlen(pat), i, o = 0;
    /* after a quantifier: 0 no, 1 yes, 2 yes and its lazy '?' */
    int quant = 0, in_class = 0;
    char *out = qbk_malloc(16 * n + 8);
    *ok = 1;
    if (!out)
        return NULL;
    out[o++] = '^';
    out[o++] = '(';
    for (i = 0; i < n; i++) {
        char c = pat[i];
        if (in_class) {
            if (c == ']')
                in_class = 0;
            out[o++] = c;
            continue;
        }
        if (c == '[') {
            in_class = 1;
            quant = 0;
            out[o++] = c;
            if (i + 1 < n && pat[i + 1] == '^')
                out[o++] = pat[++i];
            if (i + 1 < n && pat[i + 1] == ']')
                out[o++] = pat[++i]; /* a leading ']' is a literal in both */
            continue;
        }
        if (c == '*' || c == '+' || c == '?' ||
            (c == '{' && i + 1 < n && ((pat[i + 1] >= '0' && pat[i + 1] <= '9') || pat[i + 1] == ','))) {
            /* Python's re refuses a quantifier after a quantifier ("multiple
             * repeat") except one lazy '?'; glibc regcomp accepts "a+++..."
             * and needs gigabytes for it (30 '+': > 16 GB). The lazy '?'
             * changes no match/no-match answer of re.match; ERE has no such
             * syntax, so it is dropped. */
            if (c == '?' && quant == 1) {
                quant = 2;
                continue;
            }
            if (quant) {
                *ok = 0;
                return out;
            }
            quant = 1;
            if (c == '{') {
                while (i < n && pat[i] != '}')
                    out[o++] = pat[i++];
                if (i == n) {
                    *ok = 0;
                    return out;
                }
            }
            out[o++] = pat[i];
            continue;
        }
        quant = 0;
        if (c == '\\' && i + 1 < n) {
            const char *rep = NULL;
            switch (pat[i + 1]) {
            case 'd': rep = "[0-9]"; break;
            case 'D': rep = "[^0-9]"; break;
            case 'w': rep = "[A-Za-z0-9_]"; break;
            case 'W': rep = "[^A-Za-z0-9_]"; break;
            case 's': rep = "[[:space:]]"; break;
            case 'S': rep = "[^[:space:]]"; break;
            case '.': case '\\': case '(': case ')': case '[': case ']': case '{': case '}':
            case '*': case '+': case '?': case '|': case '^': case '$': case '-': case ':':
                out[o++] = '\\';
                out[o++] = pat[i + 1];
                i++;
                continue;
            default:
                *ok = 0;
                return out;
            }
            memcpy(out + o, rep, strlen(rep));
            o += strlen(rep);
            i++;
            continue;
        }
        if (c == '(' && i + 2 < n && pat[i + 1] == '?') {
            if (pat[i + 2] != ':') {
                *ok = 0;
                return out;
            }
            out[o++] = '(';
            i += 2;
            continue;
        }
        out[o++] = c;
    }
    out[o++] = ')';
    out[o] = '\0';
    return out;
}

static qb_status gptq_parse_dynamic(const qb_host *h, const char *src, const cJSON *dyn,
                                    gptq_config *cfg)
{
    const cJSON *e;
    qb_status st;
    size_t n = (size_t)cJSON_GetArraySize(dyn), i = 0;
    if (!cJSON_IsObject(dyn))
        return h->set_error(h, QB_E_FORMAT, "%s: dynamic is not an object", src);
    if (n == 0)
        return QB_OK;
    cfg->rules = qbk_calloc(n, sizeof(*cfg->rules));
    if (!cfg->rules)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
    cJSON_ArrayForEach(e, dyn)
    {
        gptq_rule *r = &cfg->rules[i];
        const char *key = e->string;
        char *ere;
        int ok, rc;
        if (!cJSON_IsObject(e))
            return h->set_error(h, QB_E_FORMAT, "%s: dynamic[\"%s\"] is not an object", src, key);
        if (strncmp(key, "-:", 2) == 0) {
            r->negative = 1;
            key += 2;
        } else if (strncmp(key, "+:", 2) == 0) {
            key += 2;
        }
        if (!(r->pattern = qbk_strdup(key)))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
        r->p = cfg->base;
        /* Rule i only counts in n_rules (what gptq_config_free releases) once its regex is
         * compiled, so a refused rule frees its own pattern here. */
        st = gptq_parse_params(h, src, e->string, e, &r->p, &r->has_bits, &r->has_gs, &r->has_sym,
                               &r->has_desc);
        if (st != QB_OK)
            goto refused;
        ere = gptq_regex_translate(key, &ok);
        if (!ere) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
            goto refused;
        }
        if (!ok) {
            qbk_free(ere);
            st = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: dynamic pattern \"%s\" uses Python regex syntax this reader "
                              "cannot match exactly",
                              src, e->string);
            goto refused;
        }
        rc = regcomp(&r->re, ere, REG_EXTENDED | REG_NOSUB);
        qbk_free(ere);
        if (rc != 0) {
            st = h->set_error(h, QB_E_FORMAT, "%s: dynamic pattern \"%s\" is not a valid regex",
                              src, e->string);
            goto refused;
        }
        cfg->n_rules = ++i;
    }
    return QB_OK;
refused:
    qbk_free(cfg->rules[i].pattern);
    cfg->rules[i].pattern = NULL;
    return st;
}

/* One config object (the quantization_config dict or quantize_config.json). */
static qb_status gptq_parse_object(const qb_host *h, const char *src, const cJSON *o,
                                   gptq_config *cfg)
{
    const cJSON *v;
    int hb, hg, hs, hd;
    qb_status st;
    if (!cJSON_IsObject(o))
        return h->set_error(h, QB_E_FORMAT, "%s: quantization config is not an object", src);
    if ((v = gptq_get2(o, "quant_method", "method")) && cJSON_IsString(v) &&
        strcasecmp(v->valuestring, "gptq") != 0)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: quant_method \"%s\" is not GPTQ", src,
                            v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "is_marlin_format")) && cJSON_IsTrue(v))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: is_marlin_format: GPTQ marlin layout is not supported",
                            src);
    if ((v = gptq_get2(o, "checkpoint_format", "format"))) {
        if (!cJSON_IsString(v))
            return h->set_error(h, QB_E_FORMAT, "%s: checkpoint_format is not a string", src);
        if (strcmp(v->valuestring, "gptq") == 0)
            cfg->label = GPTQ_CONV_V1;
        else if (strcmp(v->valuestring, "gptq_v2") == 0)
            cfg->label = GPTQ_CONV_V2;
        else
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: checkpoint_format \"%s\" is not supported (gptq, gptq_v2)", src,
                                v->valuestring);
        qbk_free(cfg->label_text);
        if (!(cfg->label_text = qbk_strdup(v->valuestring)))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src);
    }
    cfg->base.bits = 0;
    cfg->base.group_size = 0;
    cfg->base.sym = 1; /* AutoGPTQ: sym absent -> warn and default True */
    cfg->base.desc_act = 0;
    if ((st = gptq_parse_params(h, src, "quantization config", o, &cfg->base, &hb, &hg, &hs, &hd)) != QB_OK)
        return st;
    if (!hb)
        return h->set_error(h, QB_E_FORMAT, "%s: bits missing", src);
    if (!hg)
        return h->set_error(h, QB_E_FORMAT, "%s: group_size missing", src);
    cfg->sym_given = hs;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "dynamic")) && !cJSON_IsNull(v))
        return gptq_parse_dynamic(h, src, v, cfg);
    return QB_OK;
}

static qb_status gptq_load_file(const qb_host *h, const char *dir, const char *name, cJSON **out)
{
    char *text = NULL;
    qb_status st = qbk_read_text(h, dir, name, &text);
    *out = NULL;
    if (st != QB_OK || !text)
        return st;
    st = qbk_json_parse_file(h, dir, name, text, strlen(text), out);
    h->free(h, text);
    return st;
}

qb_status gptq_config_load(const qb_host *h, const char *dir, const char *config_json,
                           gptq_config *cfg)
{
    cJSON *side = NULL, *main_cfg = NULL;
    const cJSON *qc = NULL;
    const char *side_name = "quantize_config.json";
    qb_status st;

    if ((st = gptq_load_file(h, dir, side_name, &side)) != QB_OK)
        goto out;
    if (!side) {
        side_name = "quant_config.json";
        if ((st = gptq_load_file(h, dir, side_name, &side)) != QB_OK)
            goto out;
    }
    if (config_json) {
        st = qbk_json_parse_file(h, dir, "config.json", config_json, strlen(config_json),
                                 &main_cfg);
        if (st != QB_OK)
            goto out;
        qc = cJSON_GetObjectItemCaseSensitive(main_cfg, "quantization_config");
    }
    if (side) {
        cfg->source = qbk_strdupf("%s/%s", dir, side_name);
        if (!cfg->source) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        if ((st = gptq_parse_object(h, cfg->source, side, cfg)) != QB_OK)
            goto out;
        if (qc) {
            /* both exist (writers put it in both): they must agree */
            gptq_config other;
            char *src2 = qbk_strdupf("%s/config.json", dir);
            memset(&other, 0, sizeof(other));
            other.source = src2;
            st = src2 ? gptq_parse_object(h, src2, qc, &other)
                      : h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            if (st == QB_OK &&
                (other.base.bits != cfg->base.bits || other.base.group_size != cfg->base.group_size ||
                 (other.sym_given && cfg->sym_given && other.base.sym != cfg->base.sym) ||
                 other.base.desc_act != cfg->base.desc_act ||
                 (other.label && cfg->label && other.label != cfg->label)))
                st = h->set_error(h, QB_E_MISMATCH,
                                  "%s and %s: quantization configs disagree (bits %d/%d, group_size "
                                  "%lld/%lld, sym %d/%d, desc_act %d/%d)",
                                  cfg->source, src2, cfg->base.bits, other.base.bits,
                                  (long long)cfg->base.group_size, (long long)other.base.group_size,
                                  cfg->base.sym, other.base.sym, cfg->base.desc_act,
                                  other.base.desc_act);
            if (st == QB_OK && !cfg->label && other.label) {
                cfg->label = other.label;
                cfg->label_text = other.label_text;
                other.label_text = NULL;
            }
            if (st == QB_OK && !cfg->n_rules && other.n_rules) {
                cfg->rules = other.rules;
                cfg->n_rules = other.n_rules;
                other.rules = NULL;
                other.n_rules = 0;
            }
            gptq_config_free(&other);
            if (st != QB_OK)
                goto out;
        }
    } else if (qc) {
        cfg->source = qbk_strdupf("%s/config.json", dir);
        if (!cfg->source) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
            goto out;
        }
        if ((st = gptq_parse_object(h, cfg->source, qc, cfg)) != QB_OK)
            goto out;
    } else {
        st = h->set_error(h, QB_E_NOT_FOUND,
                          "%s: no GPTQ quantization config (quantize_config.json or "
                          "config.json:quantization_config)",
                          dir);
        goto out;
    }
    st = QB_OK;
out:
    cJSON_Delete(side);
    cJSON_Delete(main_cfg);
    return st;
}

void gptq_config_free(gptq_config *cfg)
{
    size_t i;
    for (i = 0; i < cfg->n_rules; i++) {
        qbk_free(cfg->rules[i].pattern);
        regfree(&cfg->rules[i].re);
    }
    qbk_free(cfg->rules);
    qbk_free(cfg->label_text);
    qbk_free(cfg->source);
    memset(cfg, 0, sizeof(*cfg));
}

int gptq_config_resolve(const gptq_config *cfg, const char *module, gptq_params *out)
{
    size_t i;
    *out = cfg->base;
    for (i = 0; i < cfg->n_rules; i++) {
        const gptq_rule *r = &cfg->rules[i];
        if (regexec(&r->re, module, 0, NULL, 0) != 0)
            continue;
        if (r->negative)
            return 1;
        if (r->has_bits)
            out->bits = r->p.bits;
        if (r->has_gs)
            out->group_size = r->p.group_size;
        if (r->has_sym)
            out->sym = r->p.sym;
        if (r->has_desc)
            out->desc_act = r->p.desc_act;
        return 0; /* first match wins */
    }
    return 0;
}

int gptq_config_probe(const char *config_json, int has_quantize_config)
{
    int score = has_quantize_config ? 50 : 0;
    cJSON *c;
    const cJSON *qc, *m;
    if (!config_json)
        return score;
    c = qbk_json_parse_quiet(config_json, strlen(config_json));
    if (!c)
        return score;
    qc = cJSON_GetObjectItemCaseSensitive(c, "quantization_config");
    if (cJSON_IsObject(qc)) {
        m = gptq_get2(qc, "quant_method", "method");
        if (cJSON_IsString(m) && strcasecmp(m->valuestring, "gptq") == 0)
            score = 90;
        else if (cJSON_IsString(m))
            score = 0; /* another method owns this checkpoint */
    }
    cJSON_Delete(c);
    return score;
}
