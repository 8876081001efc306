/*
 * quantbridge host — the registry: one entry per configured plugin, loaded
 * or not, in name order, and the sorted reader/writer lists the commands
 * use.
 */
#include "qbh.h"

#include <stdlib.h>
#include <string.h>

qb_status qbh_registry_open_config(qbh_config *cfg, qbh_registry *reg)
{
    size_t i;

    memset(reg, 0, sizeof *reg);
    reg->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    reg->plugins = qbh_calloc(reg->cfg.n_plugins + 1, sizeof *reg->plugins);
    if (!reg->plugins)
        goto oom;
    for (i = 0; i < reg->cfg.n_plugins; i++) {
        qbh_plugin *p = qbh_calloc(1, sizeof *p);
        if (!p)
            goto oom;
        pthread_mutex_init(&p->read_lock, NULL);
        p->reg = reg;
        p->conf = &reg->cfg.plugins[i];
        p->name = qbh_strdup(p->conf->name);
        reg->plugins[reg->n_plugins++] = p;
        if (!p->name)
            goto oom;
        if (!p->conf->enabled) {
            /* Resolved all the same: `plugins` shows which file would load,
             * and whether it would be trusted. */
            p->state = QBH_LOAD_DISABLED;
            p->library = p->conf->library ? qbh_plugin_resolve(p->conf) : qbh_strdup("");
            if (!p->library)
                goto oom;
            qbh_plugin_decide_trust(p);
            continue;
        }
        if (qbh_plugin_load(p) != QB_OK)
            qbh_log(QB_LOG_INFO, NULL, "%s", p->error);
    }
    if (!reg->n_plugins)
        qbh_log(QB_LOG_WARN, NULL, "no plugins registered (`quantbridge plugins` lists the "
                                   "places read)");
    qbh_error_clear();
    return QB_OK;
oom:
    qbh_registry_free(reg);
    return qbh_error_set(QB_E_NOMEM, "out of memory loading plugins");
}

qb_status qbh_registry_open(const char *config_path, qbh_registry *reg)
{
    qbh_config_request req;
    qbh_config cfg;
    qb_status rc;

    memset(reg, 0, sizeof *reg);
    memset(&req, 0, sizeof req);
    req.config = config_path;
    rc = qbh_config_open(&req, &cfg);
    if (rc)
        return rc;
    return qbh_registry_open_config(&cfg, reg);
}

void qbh_registry_free(qbh_registry *reg)
{
    size_t i;
    if (!reg)
        return;
    for (i = 0; i < reg->n_plugins; i++) {
        qbh_plugin *p = reg->plugins[i];
        /* state is 0 (OK) in a calloc'd entry the OOM path left unloaded */
        if (p->state == QBH_LOAD_OK && p->desc && p->desc->teardown)
            p->desc->teardown(p->desc->ctx);
        pthread_mutex_destroy(&p->read_lock);
        qbh_free(p->name);
        qbh_free(p->library);
        qbh_free(p->error);
        qbh_free(p);
    }
    qbh_free(reg->plugins);
    qbh_config_free(&reg->cfg);
    memset(reg, 0, sizeof *reg);
}

qbh_plugin *qbh_registry_find(const qbh_registry *reg, const char *name)
{
    size_t i;
    for (i = 0; i < reg->n_plugins; i++)
        if (strcmp(reg->plugins[i]->name, name) == 0)
            return reg->plugins[i];
    return NULL;
}

static int prio_cmp(const void *a, const void *b)
{
    const qbh_plugin *x = *(qbh_plugin *const *)a, *y = *(qbh_plugin *const *)b;
    if (x->conf->priority != y->conf->priority)
        return x->conf->priority > y->conf->priority ? -1 : 1;
    return strcmp(x->name, y->name);
}

qbh_plugin **qbh_registry_list(const qbh_registry *reg, int want_reader)
{
    qbh_plugin **v = qbh_calloc(reg->n_plugins + 1, sizeof *v);
    size_t i, n = 0;
    if (!v)
        return NULL;
    for (i = 0; i < reg->n_plugins; i++) {
        qbh_plugin *p = reg->plugins[i];
        if (p->state != QBH_LOAD_OK)
            continue;
        if (want_reader ? p->desc->reader != NULL : p->desc->writer != NULL)
            v[n++] = p;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, prio_cmp);
    return v;
}
