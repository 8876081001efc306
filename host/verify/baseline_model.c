/*
 * quantbridge verify — the baseline model of verify's model verdict
 * (docs/verify.md, "Model verdict"): the converted model's structure, its
 * values what the plain rules make of the source's. The model check runs
 * the source's forward pass with qbh_vb_model_filter on every weight read,
 * so the third pass costs no copy of the model: each row block is
 * requantized (or rounded) as it streams by.
 *
 * What each tensor gets comes from the converted model's reader alone
 * (its tensor info and grid info), never from a format's files: a grid
 * the reader describes as symmetric gets the absmax rule of
 * baseline.c in that grid's grouping (contiguous or the column map
 * of an act-order grid), a float tensor nearest rounding to its dtype.
 * Where that cannot be formed, the tensor carries the reason and the pass
 * stops when it reads it: the verdict then says "baseline not computed"
 * rather than guess.
 */
#include "model.h"
#include "verify.h"

#include <string.h>

typedef struct vbm_entry {
    qbh_vb_rule rule;       /* kind NONE: no rule, `why` says why */
    int64_t rows, cols;     /* the converted tensor's matrix view */
    char why[200];
} vbm_entry;

struct qbh_vb_model {
    qbh_source *conv;       /* not owned */
    vbm_entry *e;           /* one per converted tensor */
    size_t n;
    GHashTable *by_name;    /* converted name -> entry (borrowed keys) */
    size_t n_grid;
    int bits;               /* common code width, 0 when mixed */
    int64_t group_size;     /* common group size, 0 when mixed */
};

static int64_t grid_group(const qbh_vb_rule *rl, int64_t cols)
{
    if (rl->col_group)
        return (cols + rl->n_groups / 2) / rl->n_groups;
    return rl->group_size;
}

/* The rule of converted tensor i into e. */
static qb_status entry_init(qbh_source *conv, size_t i, vbm_entry *e)
{
    const qb_tensor_info *ti = &conv->tensors[i];
    memset(e, 0, sizeof *e);
    e->rows = qb_tensor_rows(ti);
    e->cols = qb_tensor_cols(ti);
    if (ti->has_grid && conv->src.get_grid_info) {
        qb_grid_info gi;
        qb_status rc;
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        if (conv->src.get_grid_info(conv->src.handle, i, &gi) != QB_OK) {
            snprintf(e->why, sizeof e->why, "its reader gives no grid for %s (%s)", ti->name,
                     qbh_error_message());
            qbh_error_clear();
            return QB_OK;
        }
        if ((rc = qbh_vb_rule_grid(&e->rule, &gi, e->cols)))
            return rc;
        if (e->rule.kind != QBH_VB_GRID)
            snprintf(e->why, sizeof e->why, "%s is on a grid without a plain absmax rule "
                     "(%u-bit, %s)", ti->name, gi.bits,
                     gi.symmetric ? "symmetric" : "asymmetric");
        return QB_OK;
    }
    switch (ti->source_dtype) {
    case QB_DT_F16:
    case QB_DT_BF16:
    case QB_DT_F32:
        e->rule.kind = QBH_VB_ROUND;
        e->rule.round_dtype = ti->source_dtype;
        break;
    default:
        snprintf(e->why, sizeof e->why, "%s is stored as '%s' and its reader gives no grid "
                 "view to requantize it by", ti->name,
                 ti->source_encoding ? ti->source_encoding : "?");
        break;
    }
    return QB_OK;
}

qb_status qbh_vb_model_new(qbh_source *conv, qbh_vb_model **out)
{
    qbh_vb_model *m = qbh_calloc(1, sizeof *m);
    size_t i;
    qb_status rc = QB_OK;
    *out = NULL;
    if (!m)
        return qbh_error_set(QB_E_NOMEM, "verify: out of memory for the baseline model");
    m->conv = conv;
    m->n = conv->info.n_tensors;
    m->e = qbh_calloc(m->n ? m->n : 1, sizeof *m->e);
    m->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    if (!m->e || !m->by_name) {
        rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory for the baseline model");
        goto out;
    }
    m->bits = -1;
    m->group_size = -1;
    for (i = 0; i < m->n; i++) {
        vbm_entry *e = &m->e[i];
        if ((rc = entry_init(conv, i, e)))
            goto out;
        g_hash_table_insert(m->by_name, (gpointer)conv->tensors[i].name, e);
        if (e->rule.kind == QBH_VB_GRID) {
            int64_t g = grid_group(&e->rule, e->cols);
            m->n_grid++;
            m->bits = m->bits < 0 || m->bits == e->rule.bits ? e->rule.bits : 0;
            m->group_size = m->group_size < 0 || m->group_size == g ? g : 0;
        }
    }
    if (m->bits < 0)
        m->bits = 0;
    if (m->group_size < 0)
        m->group_size = 0;
    *out = m;
    m = NULL;
out:
    qbh_vb_model_free(m);
    return rc;
}

void qbh_vb_model_free(qbh_vb_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; m->e && i < m->n; i++)
        qbh_vb_rule_free(&m->e[i].rule);
    qbh_free(m->e);
    if (m->by_name)
        g_hash_table_destroy(m->by_name);
    qbh_free(m);
}

size_t qbh_vb_model_grids(const qbh_vb_model *m, int *bits, int64_t *group_size)
{
    *bits = m->bits;
    *group_size = m->group_size;
    return m->n_grid;
}

qb_status qbh_vb_model_filter(void *ctx, const char *as, const qb_tensor_info *t, int64_t row0,
                              int64_t n_rows, float *rows)
{
    qbh_vb_model *m = ctx;
    /* read-only after qbh_vb_model_new: lookups from many threads are safe */
    const vbm_entry *e = g_hash_table_lookup(m->by_name, as);
    int64_t bad;
    if (!e && strcmp(as, t->name) != 0)
        e = g_hash_table_lookup(m->by_name, t->name);
    if (!e)
        return qbh_error_set(QB_E_UNSUPPORTED, "the converted model has no tensor %s, which the "
                             "source's pass reads", as);
    if (e->rows != qb_tensor_rows(t) || e->cols != qb_tensor_cols(t))
        return qbh_error_set(QB_E_UNSUPPORTED, "%s is [%lld, %lld] in the converted model, "
                             "[%lld, %lld] in the source (%s)", as, (long long)e->rows,
                             (long long)e->cols, (long long)qb_tensor_rows(t),
                             (long long)qb_tensor_cols(t), t->name);
    if (e->rule.kind != QBH_VB_GRID && e->rule.kind != QBH_VB_ROUND)
        return qbh_error_set(QB_E_UNSUPPORTED, "%s", e->why);
    (void)row0; /* every row of a tensor has the same grouping */
    bad = qbh_vb_apply_rows(&e->rule, rows, n_rows, e->cols);
    if (bad)
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: %lld group(s) the absmax rule cannot store "
                             "(a scale beyond its dtype, or a non-finite value)", as,
                             (long long)bad);
    return QB_OK;
}
