/*
 * quantbridge verify — what the writer declared of the converted model's
 * tensors, learnt from the plugins (docs/plugin-design.md, "Declarations
 * for verify"), never from a format's files: the converted model's reader
 * serves them in its metadata view ("quantbridge.exact:NAME",
 * "quantbridge.expert_grid:NAME", "quantbridge.quant_rule:NAME"); when it declares no exactness at all,
 * `convert --verify` takes it from the writer's plan (a source tensor all
 * of whose planned outputs are `exact`). So a third-party writer and
 * reader get the same verify as the native ones.
 */
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECL_EXACT "quantbridge.exact:"
#define DECL_EXPERT "quantbridge.expert_grid:"
#define DECL_RULE "quantbridge.quant_rule:"

/* The rules a writer may declare (docs/verify.md, "Rules judged at the
 * model's output"): the activation-aware ones trade plain weight error for
 * the error weighted by the activations (or of the layer's output) by
 * design, so plain error against absmax cannot judge them. */
static const char *const AWARE_RULES[] = {"weighted", "gptq"};
static const char *const PLAIN_RULES[] = {"absmax", "search", "keep", "auto"};

/* 1 activation-aware, 0 a plain rule, -1 a rule verify does not know. */
static int rule_kind(const char *v)
{
    size_t i;
    for (i = 0; i < sizeof AWARE_RULES / sizeof *AWARE_RULES; i++)
        if (strcmp(v, AWARE_RULES[i]) == 0)
            return 1;
    for (i = 0; i < sizeof PLAIN_RULES / sizeof *PLAIN_RULES; i++)
        if (strcmp(v, PLAIN_RULES[i]) == 0)
            return 0;
    return -1;
}

/* "bits=B group_size=G scale_dtype=D" into rl (a GRID rule of a fused
 * expert tensor; expert_rows and n_groups are the tensor's to set).
 * 0 when the text is not of that form. */
static int parse_expert(const char *v, qbh_vb_rule *rl)
{
    int bits = 0, used = 0;
    long long gs = 0;
    char dt[8];
    if (sscanf(v, "bits=%d group_size=%lld scale_dtype=%7s%n", &bits, &gs, dt, &used) != 3 ||
        v[used] != '\0' || bits < 1 || bits > 8 || gs < 1)
        return 0;
    if (strcmp(dt, "F16") == 0)
        rl->scale_dtype = QB_DT_F16;
    else if (strcmp(dt, "BF16") == 0)
        rl->scale_dtype = QB_DT_BF16;
    else if (strcmp(dt, "F32") == 0)
        rl->scale_dtype = QB_DT_F32;
    else
        return 0;
    rl->kind = QBH_VB_GRID;
    rl->bits = bits;
    rl->group_size = gs;
    return 1;
}

/* The reader's entries. A malformed declaration is an error: verify would
 * otherwise judge the tensor by a rule its writer did not mean. */
static qb_status from_reader(const qbh_source *conv, qbh_verify_decl *d)
{
    char buf[256];
    qb_meta_entry e;
    size_t i;
    qb_status rc;

    if (!qbh_source_has_meta(conv))
        return QB_OK;
    for (i = 0; (rc = qbh_source_meta(conv, i, &e, buf, sizeof buf)) == QB_OK; i++) {
        if (strncmp(e.key, DECL_EXACT, sizeof DECL_EXACT - 1) == 0) {
            const char *name = e.key + sizeof DECL_EXACT - 1;
            if (strcmp(buf, "true") != 0 && strcmp(buf, "false") != 0)
                return qbh_error_set(QB_E_FORMAT, "%s: reader %s: %s is '%s', not true or false",
                                     conv->path, conv->reader->name, e.key, buf);
            d->declares = 1;
            if (strcmp(buf, "true") == 0)
                g_hash_table_add(d->exact, g_strdup(name));
        } else if (strncmp(e.key, DECL_EXPERT, sizeof DECL_EXPERT - 1) == 0) {
            qbh_vb_rule *rl = g_new0(qbh_vb_rule, 1);
            if (!parse_expert(buf, rl)) {
                g_free(rl);
                return qbh_error_set(QB_E_FORMAT,
                                     "%s: reader %s: %s is '%s', not \"bits=B "
                                     "group_size=G scale_dtype=F16|BF16|F32\"",
                                     conv->path, conv->reader->name, e.key, buf);
            }
            g_hash_table_insert(d->expert, g_strdup(e.key + sizeof DECL_EXPERT - 1), rl);
        } else if (strncmp(e.key, DECL_RULE, sizeof DECL_RULE - 1) == 0) {
            int k = rule_kind(buf);
            if (k < 0) /* judged by a rule verify does not know: refused, not guessed */
                return qbh_error_set(QB_E_FORMAT,
                                     "%s: reader %s: %s is '%s', not a rule verify knows "
                                     "(weighted, gptq, absmax, search, keep, auto)",
                                     conv->path, conv->reader->name, e.key, buf);
            if (k == 1)
                g_hash_table_insert(d->aware, g_strdup(e.key + sizeof DECL_RULE - 1),
                                    g_strdup(buf));
        }
    }
    return rc == QB_E_RANGE ? QB_OK : rc;
}

/* The writer's plan: a source tensor is declared exact when it has
 * planned outputs and every one is exact (a split tensor has one per
 * part). */
static void from_plan(const qbh_plan *plan, const qbh_source *src, qbh_verify_decl *d)
{
    signed char *state = g_new0(signed char, src->info.n_tensors + 1); /* 0 none, 1 exact, -1 not */
    size_t i;
    for (i = 0; i < plan->n; i++) {
        size_t t = plan->items[i].tensor;
        if (t >= src->info.n_tensors)
            continue;
        if (plan->items[i].action != QB_PLAN_EXACT)
            state[t] = -1;
        else if (state[t] == 0)
            state[t] = 1;
    }
    for (i = 0; i < src->info.n_tensors; i++)
        if (state[i] == 1)
            g_hash_table_add(d->exact, g_strdup(src->tensors[i].name));
    g_free(state);
}

qb_status qbh_verify_declared(const qbh_source *conv, const qbh_source *src, const qbh_plan *plan,
                              qbh_verify_decl *d)
{
    qb_status rc;
    d->exact = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->expert = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    d->aware = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    d->declares = 0;
    d->from_plan = 0;
    if ((rc = from_reader(conv, d))) {
        qbh_verify_decl_free(d);
        return rc;
    }
    if (!d->declares && plan && plan->has_actions && src) {
        from_plan(plan, src, d);
        d->from_plan = 1;
    }
    return QB_OK;
}

void qbh_verify_decl_free(qbh_verify_decl *d)
{
    if (d->exact)
        g_hash_table_destroy(d->exact);
    if (d->expert)
        g_hash_table_destroy(d->expert);
    if (d->aware)
        g_hash_table_destroy(d->aware);
    d->exact = d->expert = d->aware = NULL;
}
