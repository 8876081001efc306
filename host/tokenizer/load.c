/*
 * quantbridge tokenizer — tokenizer.json -> qbh_tok (tok.h), read through
 * the host's strict JSON parser (qb_json.h). Every
 * component is either understood exactly or refused by name: an encoder
 * that guesses would hand verify's perplexity wrong tokens silently.
 * Field names and defaults are those of the tokenizers library's
 * serialization (docs/forward.md, "Text").
 */
#include "tok.h"

#include <assert.h>
#include <string.h>

/* tokenizer.json of a large vocabulary is tens of MiB; bound it anyway. */
#define TOK_MAX_JSON ((size_t)512 << 20)

/* GPT-2's pre-tokenizer pattern (tokenizers' ByteLevel with use_regex). */
static const char GPT2_RX[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Member `key` of object o (NULL when absent or o is no object). */
static const qb_json *jget(const qbh_tok *t, const qb_json *o, const char *key)
{
    return t->J->get(o, key);
}

static const char *jstr(const qbh_tok *t, const qb_json *o, const char *key)
{
    return t->J->get_string(jget(t, o, key));
}

static int jnull(const qbh_tok *t, const qb_json *v)
{
    return t->J->type(v) == QB_JSON_NULL;
}

/* A boolean field: dflt when absent or null; -1 when something else. */
static int jbool(const qbh_tok *t, const qb_json *o, const char *key, int dflt)
{
    const qb_json *v = jget(t, o, key);
    int32_t b;
    if (!v || jnull(t, v))
        return dflt;
    return t->J->get_bool(v, &b) ? (int)b : -1;
}

/* 1 and *out when v is a number in [lo, hi]. */
static int jnum(const qbh_tok *t, const qb_json *v, double lo, double hi, double *out)
{
    return t->J->get_number(v, out) && *out >= lo && *out <= hi;
}

static const char *jtype(const qbh_tok *t, const qb_json *o)
{
    const char *s = jstr(t, o, "type");
    return s ? s : "(no type)";
}

/* A pattern object {"String": s} or {"Regex": r} as a GRegex. */
static qb_status pattern(const qbh_tok *t, const char *where, const qb_json *p, GRegex **out)
{
    const char *s = jstr(t, p, "String"), *r = jstr(t, p, "Regex"), *what = t->what;
    GError *err = NULL;
    char *esc = NULL;
    if (!s && !r)
        return t->h->set_error(t->h, QB_E_FORMAT,
                               "%s: %s: pattern is neither {\"String\"} nor {\"Regex\"}", what,
                               where);
    if (s)
        esc = g_regex_escape_string(s, -1);
    /* GRegex is PCRE2 with UTF and Unicode properties (\s, \p{L} over all
     * of Unicode), as the Oniguruma regexes of tokenizers. */
    *out = g_regex_new(s ? esc : r, G_REGEX_OPTIMIZE, 0, &err);
    g_free(esc);
    if (!*out) {
        qb_status rc =
            t->h->set_error(t->h, QB_E_FORMAT, "%s: %s: bad regex: %s", what, where, err->message);
        g_error_free(err);
        return rc;
    }
    return QB_OK;
}

static qb_status add_normalizer(qbh_tok *t, const qb_json *n)
{
    const char *type = jtype(t, n);
    qbh_tok_norm x;
    memset(&x, 0, sizeof x);
    if (!n || jnull(t, n)) /* absent or null: none */
        return QB_OK;
    if (!strcmp(type, "Sequence")) {
        const qb_json *list = jget(t, n, "normalizers");
        size_t i;
        for (i = 0; t->J->type(list) == QB_JSON_ARRAY && i < t->J->count(list); i++) {
            qb_status rc = add_normalizer(t, t->J->at(list, i, NULL));
            if (rc)
                return rc;
        }
        return QB_OK;
    }
    if (!strcmp(type, "Prepend")) {
        const char *p = jstr(t, n, "prepend");
        if (!p)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: normalizer Prepend has no \"prepend\"",
                                   t->what);
        x.kind = QBH_TOK_N_PREPEND;
        x.a = g_strdup(p);
    } else if (!strcmp(type, "Replace")) {
        const char *c = jstr(t, n, "content");
        qb_status rc;
        if (!c)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: normalizer Replace has no \"content\"",
                                   t->what);
        rc = pattern(t, "normalizer Replace", jget(t, n, "pattern"), &x.rx);
        if (rc)
            return rc;
        x.kind = QBH_TOK_N_REPLACE;
        x.a = g_strdup(c);
    } else if (!strcmp(type, "NFC") || !strcmp(type, "NFD") || !strcmp(type, "NFKC") ||
               !strcmp(type, "NFKD")) {
        x.kind = QBH_TOK_N_UNICODE;
        x.mode = !strcmp(type, "NFC")    ? G_NORMALIZE_NFC
                 : !strcmp(type, "NFD")  ? G_NORMALIZE_NFD
                 : !strcmp(type, "NFKC") ? G_NORMALIZE_NFKC
                                         : G_NORMALIZE_NFKD;
    } else {
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: normalizer %s is not supported by the host's "
                               "encoder (Prepend, Replace, NFC/NFD/NFKC/NFKD, Sequence are)",
                               t->what, type);
    }
    g_array_append_val(t->norms, x);
    return QB_OK;
}

static qb_status split_behavior(const qbh_tok *t, const qb_json *o, qbh_tok_behavior *b)
{
    const char *s = jstr(t, o, "behavior"), *what = t->what;
    static const struct {
        const char *name;
        qbh_tok_behavior b;
    } map[] = {{"Removed", QBH_TOK_S_REMOVED},
               {"Isolated", QBH_TOK_S_ISOLATED},
               {"MergedWithPrevious", QBH_TOK_S_MERGED_PREV},
               {"MergedWithNext", QBH_TOK_S_MERGED_NEXT},
               {"Contiguous", QBH_TOK_S_CONTIGUOUS}};
    size_t i;
    for (i = 0; s && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].name)) {
            *b = map[i].b;
            return QB_OK;
        }
    return t->h->set_error(t->h, QB_E_FORMAT,
                           "%s: pre-tokenizer Split: behavior %s is not one of "
                           "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous",
                           what, s ? s : "(missing)");
}

static qb_status add_pretokenizer(qbh_tok *t, const qb_json *p)
{
    const char *type = jtype(t, p);
    qbh_tok_pre x;
    qb_status rc = QB_OK;
    memset(&x, 0, sizeof x);
    if (!p || jnull(t, p))
        return QB_OK;
    if (!strcmp(type, "Sequence")) {
        const qb_json *list = jget(t, p, "pretokenizers");
        size_t i;
        for (i = 0; t->J->type(list) == QB_JSON_ARRAY && i < t->J->count(list); i++)
            if ((rc = add_pretokenizer(t, t->J->at(list, i, NULL))))
                return rc;
        return QB_OK;
    }
    if (!strcmp(type, "Split")) {
        if (jbool(t, p, "invert", 0) != 0)
            return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                                   "%s: pre-tokenizer Split with invert is not "
                                   "supported by the host's encoder",
                                   t->what);
        if ((rc = split_behavior(t, p, &x.behavior)))
            return rc;
        if ((rc = pattern(t, "pre-tokenizer Split", jget(t, p, "pattern"), &x.rx)))
            return rc;
        x.kind = QBH_TOK_P_SPLIT;
    } else if (!strcmp(type, "ByteLevel")) {
        int aps = jbool(t, p, "add_prefix_space", 1), rx = jbool(t, p, "use_regex", 1);
        if (aps < 0 || rx < 0)
            return t->h->set_error(t->h, QB_E_FORMAT,
                                   "%s: pre-tokenizer ByteLevel: add_prefix_space / "
                                   "use_regex is not a boolean",
                                   t->what);
        x.kind = QBH_TOK_P_BYTELEVEL;
        x.add_prefix_space = aps;
        if (rx) {
            GError *err = NULL;
            x.rx = g_regex_new(GPT2_RX, G_REGEX_OPTIMIZE, 0, &err);
            assert(x.rx); /* a constant pattern */
        }
        x.behavior = QBH_TOK_S_ISOLATED;
    } else if (!strcmp(type, "Metaspace")) {
        const char *rep = jstr(t, p, "replacement"), *scheme = jstr(t, p, "prepend_scheme");
        int split = jbool(t, p, "split", 1);
        if (!rep || g_utf8_strlen(rep, -1) != 1)
            return t->h->set_error(t->h, QB_E_FORMAT,
                                   "%s: pre-tokenizer Metaspace: replacement is not "
                                   "one character",
                                   t->what);
        x.kind = QBH_TOK_P_METASPACE;
        x.replacement = g_strdup(rep);
        {
            char *esc = g_regex_escape_string(rep, -1);
            x.rx = g_regex_new(esc, 0, 0, NULL);
            g_free(esc);
            assert(x.rx);
        }
        x.split = split > 0;
        if (scheme)
            x.prepend = !strcmp(scheme, "always") ? 1 : !strcmp(scheme, "first") ? 2
                        : !strcmp(scheme, "never") ? 0 : -1;
        else /* older files: add_prefix_space (default true) means "always" */
            x.prepend = jbool(t, p, "add_prefix_space", 1) > 0;
        if (x.prepend < 0) {
            g_free(x.replacement);
            g_regex_unref(x.rx);
            return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                                   "%s: pre-tokenizer Metaspace: prepend_scheme "
                                   "%s is not always, first or never",
                                   t->what, scheme);
        }
    } else if (!strcmp(type, "Digits")) {
        GError *err = NULL;
        int individual = jbool(t, p, "individual_digits", 0);
        /* tokenizers splits on char::is_numeric (Nd, Nl, No = \p{N}):
         * each digit Isolated, or runs of them Contiguous. */
        x.kind = QBH_TOK_P_SPLIT;
        x.behavior = QBH_TOK_S_ISOLATED;
        x.rx = g_regex_new(individual > 0 ? "\\p{N}" : "\\p{N}+", G_REGEX_OPTIMIZE, 0, &err);
        assert(x.rx);
    } else {
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: pre-tokenizer %s is not supported by the "
                               "host's encoder (Split, ByteLevel, Metaspace, Digits, Sequence are)",
                               t->what, type);
    }
    g_array_append_val(t->pres, x);
    return rc;
}

/* TemplateProcessing's single template: the ids before and after $A. */
static qb_status template_single(qbh_tok *t, const qb_json *pp)
{
    const qb_json *special = jget(t, pp, "special_tokens"), *single = jget(t, pp, "single");
    size_t i, k;
    int seen_a = 0;
    if (t->before->len || t->after->len)
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: more than one TemplateProcessing "
                               "post-processor",
                               t->what);
    for (i = 0; t->J->type(single) == QB_JSON_ARRAY && i < t->J->count(single); i++) {
        const qb_json *e = t->J->at(single, i, NULL);
        const qb_json *sp = jget(t, e, "SpecialToken");
        const qb_json *sq = jget(t, e, "Sequence");
        if (sq) {
            const char *id = jstr(t, sq, "id");
            if (!id || strcmp(id, "A") || seen_a)
                return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                                       "%s: TemplateProcessing single template "
                                       "holds a sequence other than one $A",
                                       t->what);
            seen_a = 1;
        } else if (sp) {
            const char *name = jstr(t, sp, "id");
            const qb_json *st = name ? jget(t, special, name) : NULL;
            const qb_json *ids = jget(t, st, "ids");
            if (t->J->type(ids) != QB_JSON_ARRAY)
                return t->h->set_error(t->h, QB_E_FORMAT,
                                       "%s: TemplateProcessing: special token %s has "
                                       "no ids in special_tokens",
                                       t->what, name ? name : "(none)");
            for (k = 0; k < t->J->count(ids); k++) {
                int64_t id;
                double d;
                if (!jnum(t, t->J->at(ids, k, NULL), 0, INT32_MAX, &d))
                    return t->h->set_error(t->h, QB_E_FORMAT,
                                           "%s: TemplateProcessing: special token %s: "
                                           "an id is not a token id",
                                           t->what, name);
                id = (int64_t)d;
                g_array_append_val(seen_a ? t->after : t->before, id);
                if (id > t->max_id)
                    t->max_id = id;
            }
        } else {
            return t->h->set_error(t->h, QB_E_FORMAT,
                                   "%s: TemplateProcessing: a single template item is "
                                   "neither SpecialToken nor Sequence",
                                   t->what);
        }
    }
    if (!seen_a)
        return t->h->set_error(t->h, QB_E_FORMAT,
                               "%s: TemplateProcessing single template has no $A", t->what);
    return QB_OK;
}

static qb_status post_processor(qbh_tok *t, const qb_json *pp)
{
    const char *type = jtype(t, pp);
    if (!pp || jnull(t, pp))
        return QB_OK;
    if (!strcmp(type, "Sequence")) {
        const qb_json *list = jget(t, pp, "processors");
        size_t i;
        for (i = 0; t->J->type(list) == QB_JSON_ARRAY && i < t->J->count(list); i++) {
            qb_status rc = post_processor(t, t->J->at(list, i, NULL));
            if (rc)
                return rc;
        }
        return QB_OK;
    }
    if (!strcmp(type, "ByteLevel")) /* adjusts offsets only, never ids */
        return QB_OK;
    if (!strcmp(type, "TemplateProcessing"))
        return template_single(t, pp);
    return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                           "%s: post-processor %s is not supported by the host's "
                           "encoder (TemplateProcessing, ByteLevel, Sequence are)",
                           t->what, type);
}

static qb_status added_tokens(qbh_tok *t, const qb_json *arr)
{
    size_t n = 0, i, count = t->J->type(arr) == QB_JSON_ARRAY ? t->J->count(arr) : 0;
    t->added = g_new0(qbh_tok_added, count + 1);
    for (i = 0; i < count; i++) {
        const qb_json *e = t->J->at(arr, i, NULL);
        const char *c = jstr(t, e, "content");
        double id;
        qbh_tok_added *a = &t->added[n];
        if (!c || !jnum(t, jget(t, e, "id"), 0, INT32_MAX, &id))
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: added_tokens[%zu] has no content or id",
                                   t->what, n);
        if (jbool(t, e, "single_word", 0) != 0)
            return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                                   "%s: added token %s is single_word, which the "
                                   "host's encoder does not support",
                                   t->what, c);
        if (!*c)
            continue;
        a->content = g_strdup(c);
        a->len = strlen(c);
        a->id = (int64_t)id;
        a->lstrip = jbool(t, e, "lstrip", 0) > 0;
        a->rstrip = jbool(t, e, "rstrip", 0) > 0;
        /* tokenizers' AddedToken default: normalized = !special. */
        a->normalized = jbool(t, e, "normalized", jbool(t, e, "special", 0) > 0 ? 0 : 1) > 0;
        if (a->id > t->max_id)
            t->max_id = a->id;
        n++;
    }
    t->n_added = n;
    return QB_OK;
}

/* The merge "left right" (string form) or ["left", "right"]. */
static qb_status merge_parts(const qbh_tok *t, const qb_json *m, size_t i, char **l, char **r)
{
    const char *s = t->J->get_string(m), *a, *b;
    *l = *r = NULL;
    if (s) {
        const char *sp = strchr(s, ' ');
        if (sp && sp != s && sp[1]) {
            *l = g_strndup(s, (gsize)(sp - s));
            *r = g_strdup(sp + 1);
            return QB_OK;
        }
    } else if (t->J->type(m) == QB_JSON_ARRAY && t->J->count(m) == 2 &&
               (a = t->J->get_string(t->J->at(m, 0, NULL))) &&
               (b = t->J->get_string(t->J->at(m, 1, NULL)))) {
        *l = g_strdup(a);
        *r = g_strdup(b);
        return QB_OK;
    }
    return t->h->set_error(t->h, QB_E_FORMAT,
                           "%s: model.merges[%zu] is not \"left right\" or "
                           "[left, right]",
                           t->what, i);
}

static qb_status bpe_model(qbh_tok *t, const qb_json *m)
{
    const char *type = jtype(t, m), *unk = jstr(t, m, "unk_token");
    const char *pfx = jstr(t, m, "continuing_subword_prefix");
    const char *sfx = jstr(t, m, "end_of_word_suffix");
    const qb_json *vocab = jget(t, m, "vocab");
    const qb_json *merges = jget(t, m, "merges");
    const qb_json *dropout = jget(t, m, "dropout");
    const qb_json **items;
    size_t i = 0, n;

    if (strcmp(type, "BPE"))
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: tokenizer model %s is not supported by the "
                               "host's encoder (only BPE is)",
                               t->what, type);
    if ((pfx && *pfx) || (sfx && *sfx))
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: BPE with a continuing_subword_prefix or "
                               "end_of_word_suffix is not supported by the host's encoder",
                               t->what);
    if (dropout && !jnull(t, dropout))
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: BPE dropout is not supported (encoding would "
                               "be random)",
                               t->what);
    if (t->J->type(vocab) != QB_JSON_OBJECT)
        return t->h->set_error(t->h, QB_E_FORMAT, "%s: model.vocab is not an object", t->what);
    t->byte_fallback = jbool(t, m, "byte_fallback", 0) > 0;
    t->fuse_unk = jbool(t, m, "fuse_unk", 0) > 0;
    t->ignore_merges = jbool(t, m, "ignore_merges", 0) > 0;
    for (n = t->J->count(vocab), i = 0; i < n; i++) {
        const char *key = NULL;
        double id;
        if (!jnum(t, t->J->at(vocab, i, &key), 0, INT32_MAX - 1, &id))
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: model.vocab[%s] is not a token id",
                                   t->what, key);
        g_hash_table_insert(t->vocab, g_string_chunk_insert(t->strings, key),
                            GINT_TO_POINTER((int)id + 1));
        if ((int64_t)id > t->max_id)
            t->max_id = (int64_t)id;
    }
    t->unk = -1;
    if (unk && (t->unk = qbh_tok_vocab_id(t, unk)) < 0)
        return t->h->set_error(t->h, QB_E_FORMAT, "%s: model.unk_token %s is not in the vocabulary",
                               t->what, unk);
    t->n_merges = t->J->type(merges) == QB_JSON_ARRAY ? t->J->count(merges) : 0;
    t->merges = g_new0(qbh_tok_merge, t->n_merges + 1);
    /* The entries first, in one forward walk: at() is O(1) only while one
     * array is walked (qb_json.h), and a merge [l, r] is an array itself. */
    items = g_new(const qb_json *, t->n_merges + 1);
    for (i = 0; i < t->n_merges; i++)
        items[i] = t->J->at(merges, i, NULL);
    for (i = 0; i < t->n_merges; i++) {
        char *l, *r, *lr;
        int64_t a, b, c;
        qb_status rc = merge_parts(t, items[i], i, &l, &r);
        if (rc) {
            g_free(items);
            return rc;
        }
        lr = g_strconcat(l, r, NULL);
        a = qbh_tok_vocab_id(t, l);
        b = qbh_tok_vocab_id(t, r);
        c = qbh_tok_vocab_id(t, lr);
        if (a < 0 || b < 0 || c < 0)
            rc = t->h->set_error(t->h, QB_E_FORMAT,
                                 "%s: model.merges[%zu] \"%s %s\": %s is not in the "
                                 "vocabulary",
                                 t->what, i, l, r,
                                 a < 0   ? l
                                 : b < 0 ? r
                                         : lr);
        g_free(l);
        g_free(r);
        g_free(lr);
        if (rc) {
            g_free(items);
            return rc;
        }
        t->merges[i].key = (gint64)((uint64_t)a << 32 | (uint64_t)b);
        t->merges[i].rank = (int32_t)i;
        t->merges[i].id = (int32_t)c;
        /* A repeated pair: the later rank wins, as tokenizers' HashMap
         * collect keeps the last. */
        g_hash_table_replace(t->merge_index, &t->merges[i].key, &t->merges[i]);
    }
    g_free(items);
    return QB_OK;
}

/* g_int64_hash folds the halves (left ^ right): pairs of nearby ids
 * collide by the thousand. A multiplicative mix spreads them. */
static guint merge_hash(gconstpointer k)
{
    uint64_t x = (uint64_t)*(const gint64 *)k;
    x ^= x >> 31;
    x *= UINT64_C(0x9e3779b97f4a7c15);
    return (guint)(x >> 32);
}

qb_status qbh_tok_load_json(const qb_host *h, const char *what, const char *json, size_t len,
                            qbh_tok **out)
{
    const qb_json_api *J;
    qb_json *root = NULL;
    qbh_tok *t;
    qb_status rc;

    assert(h && QB_HAS_FIELD(h, qb_host, json) && h->json && what && json && out);
    J = h->json;
    *out = NULL;
    t = g_new0(qbh_tok, 1);
    t->h = h;
    t->J = h->json;
    t->what = g_strdup(what);
    t->norms = g_array_new(FALSE, TRUE, sizeof(qbh_tok_norm));
    t->pres = g_array_new(FALSE, TRUE, sizeof(qbh_tok_pre));
    t->before = g_array_new(FALSE, TRUE, sizeof(int64_t));
    t->after = g_array_new(FALSE, TRUE, sizeof(int64_t));
    t->vocab = g_hash_table_new(g_str_hash, g_str_equal);
    t->strings = g_string_chunk_new(1 << 16);
    t->merge_index = g_hash_table_new(merge_hash, g_int64_equal);
    t->unk = -1;
    t->max_id = -1;
    /* The strict reading of every input JSON file (qb_json.h): a file the
     * parser refuses (a duplicate key, 1e400, ...) is refused, naming it. */
    if ((rc = t->J->parse(h, what, json, len, &root)))
        goto out;
    if (t->J->type(root) != QB_JSON_OBJECT) {
        rc = t->h->set_error(t->h, QB_E_FORMAT, "%s: not a JSON object", what);
        goto out;
    }
    if ((rc = bpe_model(t, jget(t, root, "model"))) ||
        (rc = added_tokens(t, jget(t, root, "added_tokens"))) ||
        (rc = add_normalizer(t, jget(t, root, "normalizer"))) ||
        (rc = add_pretokenizer(t, jget(t, root, "pre_tokenizer"))) ||
        (rc = post_processor(t, jget(t, root, "post_processor"))))
        goto out;
    qbh_tok_added_index(t); /* after the normalizers: it normalizes normalized patterns */
    *out = t;
    t = NULL;
out:
    J->free(root);
    qbh_tok_free(t);
    return rc;
}

qb_status qbh_tok_load(const qb_host *h, const char *dir, qbh_tok **out)
{
    char *path;
    void *data = NULL;
    size_t len = 0;
    qb_status rc;

    assert(dir && out);
    *out = NULL;
    path = g_build_filename(dir, "tokenizer.json", NULL);
    rc = h->read_small_file(h, path, TOK_MAX_JSON, &data, &len);
    if (rc == QB_OK)
        rc = qbh_tok_load_json(h, path, data, len, out);
    h->free(h, data);
    g_free(path);
    return rc;
}

void qbh_tok_free(qbh_tok *t)
{
    guint i;
    if (!t)
        return;
    for (i = 0; i < t->norms->len; i++) {
        qbh_tok_norm *n = &g_array_index(t->norms, qbh_tok_norm, i);
        g_free(n->a);
        if (n->rx)
            g_regex_unref(n->rx);
    }
    for (i = 0; i < t->pres->len; i++) {
        qbh_tok_pre *p = &g_array_index(t->pres, qbh_tok_pre, i);
        g_free(p->replacement);
        if (p->rx)
            g_regex_unref(p->rx);
    }
    qbh_tok_added_free(t);
    for (i = 0; t->added && i < t->n_added; i++)
        g_free(t->added[i].content);
    g_free(t->added);
    g_array_free(t->norms, TRUE);
    g_array_free(t->pres, TRUE);
    g_array_free(t->before, TRUE);
    g_array_free(t->after, TRUE);
    g_hash_table_destroy(t->vocab);
    g_hash_table_destroy(t->merge_index);
    g_string_chunk_free(t->strings);
    g_free(t->merges);
    g_free(t->what);
    g_free(t);
}
