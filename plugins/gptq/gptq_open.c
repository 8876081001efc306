/* GPTQ reader — open(). See gptq_open.h. */
#include "gptq_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gptq_config.h"
#include "gptq_layout.h"
#include "qbk_str.h"
#include "qbk_alloc.h"

static const char *const gptq_suffixes[] = {".qweight", ".qzeros", ".scales", ".g_idx"};

/* qlinear_config_fn for gptq_config_load */
static qb_status gptq_load_cb(const qb_host *h, const char *dir, const char *config_json, void *cfg)
{
    return gptq_config_load(h, dir, config_json, cfg);
}

static int64_t gptq_ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Builds and validates the quantized linear of `module`. */
static qb_status gptq_add_linear(qlinear_model *m, const char *module, const gptq_params *p)
{
    const qb_host *h = m->host;
    const qb_st_tensor *qw = qlinear_find(h, m->set, module, ".qweight");
    const qb_st_tensor *qz = qlinear_find(h, m->set, module, ".qzeros");
    const qb_st_tensor *sc = qlinear_find(h, m->set, module, ".scales");
    const qb_st_tensor *gi = qlinear_find(h, m->set, module, ".g_idx");
    qlinear_tensor *t;
    uint32_t W, Wz;
    int64_t K, N, gs, G;
    char why[256];

    if (!qz)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s.qweight has no partner %s.qzeros in any shard",
                            qw->file, module, module);
    if (!sc)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s.qweight has no partner %s.scales in any shard",
                            qw->file, module, module);
    if (qlinear_find(h, m->set, module, ".weight") != NULL)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s has both .weight and .qweight", qw->file, module);
    W = qlinear_word_bits(qw->dtype);
    Wz = qlinear_word_bits(qz->dtype);
    if (!W || qw->n_dims != 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qweight: expected a 2-D integer tensor, got %s/%u-D",
                            qw->file, module, qw->dtype_name, qw->n_dims);
    if (!Wz || qz->n_dims != 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qzeros: expected a 2-D integer tensor, got %s/%u-D",
                            qz->file, module, qz->dtype_name, qz->n_dims);
    if ((sc->dtype != QB_DT_F16 && sc->dtype != QB_DT_BF16 && sc->dtype != QB_DT_F32) ||
        sc->n_dims != 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.scales: expected a 2-D float tensor, got %s/%u-D",
                            sc->file, module, sc->dtype_name, sc->n_dims);
    if (p->bits == 3 && (W != 32 || Wz != 32))
        /* GPTQModel _require_int32_words_for_3bit */
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: 3-bit packing exists only in 32-bit words",
                            qw->file, module);
    N = qw->dims[1];
    if (gi) {
        if (gi->n_dims != 1 || (gi->dtype != QB_DT_I32 && gi->dtype != QB_DT_I64))
            return h->set_error(h, QB_E_FORMAT, "%s: %s.g_idx: expected a 1-D I32 tensor, got %s/%u-D",
                                gi->file, module, gi->dtype_name, gi->n_dims);
        K = gi->dims[0];
    } else {
        if ((qw->dims[0] * (int64_t)W) % p->bits != 0)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: %s.qweight: %lld rows of %u-bit words do not hold a whole number "
                                "of %d-bit codes",
                                qw->file, module, (long long)qw->dims[0], W, p->bits);
        K = qw->dims[0] * (int64_t)W / p->bits;
    }
    if (qw->dims[0] != gptq_ceil_div(K * p->bits, W))
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s.qweight: shape [%lld, %lld] does not hold %lld inputs at %d bits "
                            "(expected %lld rows)",
                            qw->file, module, (long long)qw->dims[0], (long long)qw->dims[1],
                            (long long)K, p->bits, (long long)gptq_ceil_div(K * p->bits, W));
    if (qz->dims[1] != gptq_ceil_div(N * p->bits, Wz))
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s.qzeros: %lld columns do not pack %lld outputs at %d bits "
                            "(expected %lld; does bits match the checkpoint?)",
                            qz->file, module, (long long)qz->dims[1], (long long)N, p->bits,
                            (long long)gptq_ceil_div(N * p->bits, Wz));
    if (p->bits == 3 && (K % 32 != 0 || N % 32 != 0))
        return h->set_error(h, QB_E_FORMAT, "%s: %s: 3-bit GPTQ needs in and out features divisible by 32",
                            qw->file, module);
    gs = p->group_size == -1 ? K : p->group_size;
    G = gptq_ceil_div(K, gs);
    if (sc->dims[0] != G || sc->dims[1] != N)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s.scales: shape [%lld, %lld], expected [%lld, %lld] for %lld inputs "
                            "at group size %lld",
                            sc->file, module, (long long)sc->dims[0], (long long)sc->dims[1],
                            (long long)G, (long long)N, (long long)K, (long long)p->group_size);
    if (qz->dims[0] != G)
        return h->set_error(h, QB_E_FORMAT, "%s: %s.qzeros: %lld rows, expected %lld groups", qz->file,
                            module, (long long)qz->dims[0], (long long)G);
    if (!gi && p->desc_act)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: %s: config says desc_act (act-order) but the checkpoint has no "
                            "%s.g_idx; the column-to-group map cannot be guessed",
                            qw->file, module, module);

    t = qlinear_append_quant(m, module,
                                 &(qlinear_tensor){.N = N, .K = K, .bits = (uint32_t)p->bits,
                                                       .G = (uint32_t)G, .gs = gs,
                                                       .per_channel = p->group_size == -1,
                                                       .scale_dtype = sc->dtype, .qweight = qw,
                                                       .qzeros = qz, .scales = sc, .word_bits = W,
                                                       .dec = &gptq_decoder});
    if (!t)
        return QB_E_NOMEM;
    if (gi) {
        int64_t k;
        t->g_idx = qbk_malloc((size_t)K * sizeof(int32_t));
        if (!t->g_idx)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", module);
        for (k = 0; k < K; k++) {
            int64_t v = gi->dtype == QB_DT_I32 ? (int32_t)qlinear_word(gi, (uint64_t)k)
                                               : (int64_t)qlinear_word(gi, (uint64_t)k);
            t->g_idx[k] = (v < 0 || v > INT32_MAX) ? -1 : (int32_t)v;
        }
        if (!qlinear_gidx_valid(t->g_idx, K, t->G, gs, why, sizeof(why)))
            return h->set_error(h, QB_E_FORMAT, "%s: %s.g_idx: not a valid group map: %s", gi->file,
                                module, why);
        if (qlinear_gidx_trivial(t->g_idx, K, gs)) {
            qbk_free(t->g_idx);
            t->g_idx = NULL;
        }
        qlinear_drop_pages(gi); /* copied above; never read again */
    }
    return QB_OK;
}

/* Decides the zero convention (rule in gptq_open.h). */
static qb_status gptq_decide_zero(qlinear_model *m, const gptq_config *cfg, int zero_opt, int all_sym,
                                  int *conv, const char **why)
{
    const qb_host *h = m->host;
    int data_lo = 1, data_hi = 1, any = 0;
    size_t i;
    int data;
    static const char *const names[] = {"none", "v1", "v2"};
    for (i = 0; i < m->n; i++) {
        int lo, hi;
        if (m->t[i].kind != QLINEAR_QUANT)
            continue;
        any = 1;
        gptq_stored_zero_uniform(&m->t[i], &lo, &hi);
        qlinear_drop_pages(m->t[i].qzeros);
        data_lo &= lo;
        data_hi &= hi;
    }
    data = !any ? GPTQ_CONV_NONE : data_lo ? GPTQ_CONV_V1 : data_hi ? GPTQ_CONV_V2 : GPTQ_CONV_NONE;
    if (zero_opt != GPTQ_OPT_AUTO) {
        *conv = zero_opt == GPTQ_OPT_V1 ? GPTQ_CONV_V1 : GPTQ_CONV_V2;
        *why = "from --option zero_convention";
        if (all_sym && data != GPTQ_CONV_NONE && data != *conv)
            h->log(h, QB_LOG_WARN,
                   "%s: zero_convention=%s overrides the stored zeros, which are all %s and make "
                   "the symmetric checkpoint symmetric only as %s",
                   m->dir, names[*conv], data == GPTQ_CONV_V1 ? "2^(b-1)-1" : "2^(b-1)", names[data]);
        return QB_OK;
    }
    if (all_sym && data != GPTQ_CONV_NONE) {
        *conv = data;
        *why = data == GPTQ_CONV_V1 ? "stored zeros all 2^(b-1)-1" : "stored zeros all 2^(b-1)";
        if (cfg->label && cfg->label != data)
            h->log(h, QB_LOG_WARN,
                   "%s: checkpoint_format \"%s\" says %s, but every stored zero is %s, which only %s "
                   "reads as the symmetric zero 2^(b-1) the config claims; using %s",
                   cfg->source, cfg->label_text, names[cfg->label],
                   data == GPTQ_CONV_V1 ? "2^(b-1)-1" : "2^(b-1)", names[data], names[data]);
        return QB_OK;
    }
    if (!any) {
        *conv = cfg->label ? cfg->label : GPTQ_CONV_V1;
        *why = "no quantized tensors";
        return QB_OK;
    }
    if (cfg->label) {
        *conv = cfg->label;
        *why = "checkpoint_format label";
        if (all_sym)
            h->log(h, QB_LOG_WARN,
                   "%s: config says sym but the stored zeros are not uniformly 2^(b-1)-1 or 2^(b-1); "
                   "trusting checkpoint_format \"%s\" (%s)",
                   cfg->source, cfg->label_text, names[cfg->label]);
        return QB_OK;
    }
    return h->set_error(h, QB_E_UNSUPPORTED,
                        "%s: cannot tell GPTQ zero convention v1 (stored zero = zero - 1) from v2: "
                        "the zeros are %s and the config has no checkpoint_format; pass "
                        "--option zero_convention=v1 or --option zero_convention=v2",
                        cfg->source, all_sym ? "not uniform" : "asymmetric");
}

static qb_status gptq_finish(qlinear_model *m, const gptq_config *cfg, int conv, const char *why,
                             size_t n_excluded)
{
    size_t i, nq = 0, nact = 0;
    int mixed = 0, asym = 0;
    const qlinear_tensor *first = NULL;
    for (i = 0; i < m->n; i++) {
        qlinear_tensor *t = &m->t[i];
        char gtxt[32];
        qb_status st;
        if (t->kind != QLINEAR_QUANT)
            continue;
        t->zero_add = conv == GPTQ_CONV_V1 ? 1 : 0;
        if ((st = qlinear_compute_symmetric(m->host, t)) != QB_OK)
            return st;
        if (t->per_channel)
            snprintf(gtxt, sizeof(gtxt), "per-channel");
        else
            snprintf(gtxt, sizeof(gtxt), "g%lld", (long long)t->gs);
        t->encoding = qbk_strdupf("gptq int%u %s %s %s%s", t->bits, gtxt, t->symmetric ? "sym" : "asym",
                                  conv == GPTQ_CONV_V1 ? "v1" : "v2", t->g_idx ? " act-order" : "");
        if (!t->encoding)
            return m->host->set_error(m->host, QB_E_NOMEM, "%s: out of memory", m->dir);
        if (!first)
            first = t;
        else if (first->bits != t->bits || first->gs != t->gs)
            mixed = 1;
        asym |= !t->symmetric;
        nact += t->g_idx != NULL;
        nq++;
    }
    m->source_format = "gptq";
    {
        char gtxt[32] = "per-channel";
        if (cfg->base.group_size != -1)
            snprintf(gtxt, sizeof(gtxt), "g%lld", (long long)cfg->base.group_size);
        m->summary = qbk_strdupf(
            "GPTQ %d-bit %s %s %s%s (zero convention %s: %s; %zu quantized linears%s%s%s)",
            cfg->base.bits, gtxt,
            asym ? "asym" : "sym", conv == GPTQ_CONV_V1 ? "v1" : "v2", nact ? " act-order" : "",
            conv == GPTQ_CONV_V1 ? "v1" : "v2", why, nq, mixed ? ", per-module bits/group size" : "",
            n_excluded ? ", dynamic exclusions" : "", cfg->n_rules ? ", dynamic rules" : "");
    }
    if (!m->summary)
        return m->host->set_error(m->host, QB_E_NOMEM, "%s: out of memory", m->dir);
    return QB_OK;
}

/* Walk state of gptq_open_model. */
typedef struct gptq_walk {
    const gptq_config *cfg;
    size_t n_excluded; /* dense linears a dynamic rule leaves unquantized */
    int all_sym;
} gptq_walk;

/* qlinear_part_fn: a qweight becomes a linear with its module's
 * resolved parameters; a dense linear is only counted; leftovers get the
 * generic error. */
static qb_status gptq_part(void *ctx, qlinear_model *m, const qb_st_tensor *tt, const char *module,
                           int which)
{
    gptq_walk *w = ctx;
    const qb_host *h = m->host;
    gptq_params p;
    if (!module) {
        if (qbk_ends_with(tt->name, ".weight") && tt->n_dims == 2) {
            /* a dense linear the config expects quantized is only fine when a
             * dynamic "-:" rule (or no quantization of that module) says so;
             * we cannot know every linear of every architecture, so only
             * count exclusions for the summary */
            char *mod = qbk_strndup(tt->name, strlen(tt->name) - 7);
            if (mod && gptq_config_resolve(w->cfg, mod, &p) == 1)
                w->n_excluded++;
            qbk_free(mod);
        }
        return QB_OK;
    }
    if (which != 0)
        return QB_OK; /* qzeros/scales/g_idx without their qweight */
    if (gptq_config_resolve(w->cfg, module, &p) == 1)
        return h->set_error(h, QB_E_MISMATCH,
                            "%s: %s: the config's dynamic rules leave %s unquantized but the "
                            "checkpoint has a qweight",
                            tt->file, tt->name, module);
    if (p.group_size == 0 || p.bits == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: no bits/group_size for this module", w->cfg->source,
                            module);
    w->all_sym &= p.sym;
    return gptq_add_linear(m, module, &p);
}

qb_status gptq_open_model(const qb_host *h, const char *path, int zero_opt, qlinear_model **out)
{
    qlinear_model *m = NULL;
    gptq_config cfg;
    gptq_walk w;
    qb_status st;
    const char *dir = NULL;
    int conv = GPTQ_CONV_NONE;
    const char *why = "";

    memset(&cfg, 0, sizeof(cfg));
    *out = NULL;
    if ((st = qlinear_open(h, path, gptq_load_cb, &cfg, &m)) != QB_OK)
        goto out;
    dir = m->dir;
    w.cfg = &cfg;
    w.n_excluded = 0;
    w.all_sym = 1;
    if ((st = qlinear_each(m, gptq_suffixes, sizeof(gptq_suffixes) / sizeof(gptq_suffixes[0]), gptq_part,
                               &w)) != QB_OK)
        goto out;
    if ((st = gptq_decide_zero(m, &cfg, zero_opt, w.all_sym, &conv, &why)) != QB_OK)
        goto out;
    if ((st = gptq_finish(m, &cfg, conv, why, w.n_excluded)) != QB_OK)
        goto out;
    h->log(h, QB_LOG_INFO, "%s: %s", dir, m->summary);
    *out = m;
    m = NULL;
    st = QB_OK;
out:
    gptq_config_free(&cfg);
    qlinear_free(m);
    return st;
}
