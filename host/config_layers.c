/*
 * quantbridge host — where plugin registration comes from: the ordered
 * list of directories qbh_config_open reads (config.c merges them).
 *
 * Additive, in the manner of Vulkan's icd.d, p11-kit's modules and
 * GStreamer's plugin path: the installation's own plugins.d always counts,
 * and every later layer adds to it; none replaces it. The user's notes are
 * in conf/quantbridge.conf.
 */
#include "qbh.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#ifndef QBH_SYSCONFDIR
#define QBH_SYSCONFDIR "/etc"
#endif

const char *qbh_layer_kind_name(qbh_layer_kind k)
{
    switch (k) {
    case QBH_LAYER_BUILTIN: return "built-in";
    case QBH_LAYER_USER: return "user";
    case QBH_LAYER_CONFIG_DIR: return "config-dir";
    case QBH_LAYER_PATH: return "plugin-path";
    case QBH_LAYER_PLUGIN_DIR: return "plugin-dir";
    case QBH_LAYER_MAIN: return "config";
    }
    return "?";
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Appends a layer; unless `skipped` is already given, decides whether it
 * is read: an absent directory is not, nor one read before (the same
 * directory reached twice, e.g. named by $QUANTBRIDGE_PLUGIN_PATH and
 * --plugin-dir, would define each of its plugins twice), nor a
 * world-writable one: anyone could drop a NAME.conf there naming a library
 * of theirs, which this host would then run. */
static qb_status add_layer(qbh_config *cfg, qbh_layer_kind kind, const char *path,
                           const char *skipped)
{
    qbh_conf_layer *grown, *l;
    char *canon = skipped ? NULL : realpath(path, NULL);
    struct stat st;
    size_t i;

    grown = qbh_alloc((cfg->n_layers + 1) * sizeof *grown);
    if (!grown) {
        free(canon);
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    }
    if (cfg->n_layers)
        memcpy(grown, cfg->layers, cfg->n_layers * sizeof *grown);
    qbh_free(cfg->layers);
    cfg->layers = grown;
    l = &cfg->layers[cfg->n_layers];
    l->kind = kind;
    l->skipped = skipped;
    l->path = qbh_strdup(canon ? canon : path);
    free(canon);
    if (!l->path)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    cfg->n_layers++;
    if (l->skipped || kind == QBH_LAYER_MAIN)
        return QB_OK;
    if (stat(l->path, &st) != 0) {
        l->skipped = "absent";
    } else if (!S_ISDIR(st.st_mode)) {
        l->skipped = "not a directory";
        qbh_log(QB_LOG_WARN, NULL, "%s plugin layer %s is not a directory; not read",
                qbh_layer_kind_name(kind), l->path);
    } else if (st.st_mode & S_IWOTH) {
        l->skipped = "world-writable: refused";
        qbh_log(QB_LOG_WARN, NULL,
                "%s plugin layer %s is world-writable; not read (anyone could register a "
                "library there; chmod o-w)", qbh_layer_kind_name(kind), l->path);
    } else {
        for (i = 0; i + 1 < cfg->n_layers; i++)
            if (!cfg->layers[i].skipped && strcmp(cfg->layers[i].path, l->path) == 0) {
                l->skipped = "already read";
                break;
            }
    }
    if (l->skipped)
        qbh_log(QB_LOG_INFO, NULL, "%s plugin layer %s: %s", qbh_layer_kind_name(kind), l->path,
                l->skipped);
    return QB_OK;
}

/* <exe>/../etc/quantbridge/plugins.d serves the install prefix and the build
 * tree, which mirrors it; an install whose sysconfdir lies elsewhere (/etc
 * for prefix /usr) has it there instead. */
static gchar *builtin_dir(void)
{
    char *exe = qbh_exe_dir();
    gchar *d = NULL;
    if (exe) {
        d = g_build_filename(exe, "..", "etc", "quantbridge", "plugins.d", NULL);
        qbh_free(exe);
        if (is_dir(d))
            return d;
        g_free(d);
    }
    return g_build_filename(QBH_SYSCONFDIR, "quantbridge", "plugins.d", NULL);
}

static gchar *user_dir(void)
{
    const char *env = secure_getenv("XDG_CONFIG_HOME");
    /* A relative XDG_CONFIG_HOME is invalid (XDG Base Directory spec). */
    if (env && env[0] == '/')
        return g_build_filename(env, "quantbridge", "plugins.d", NULL);
    env = secure_getenv("HOME");
    if (env && env[0] == '/')
        return g_build_filename(env, ".config", "quantbridge", "plugins.d", NULL);
    return NULL;
}

static qb_status path_layers(qbh_config *cfg)
{
    /* secure_getenv: a set-uid run must not be steered by the environment. */
    const char *env = secure_getenv("QUANTBRIDGE_PLUGIN_PATH");
    gchar **dirs;
    qb_status rc = QB_OK;
    size_t i;
    if (!env || !*env)
        return QB_OK;
    dirs = g_strsplit(env, ":", -1);
    for (i = 0; dirs[i] && rc == QB_OK; i++) {
        if (!dirs[i][0])
            continue; /* "a::b", a trailing ':' */
        if (!g_path_is_absolute(dirs[i])) {
            /* A relative entry would mean whatever the cwd is at each run:
             * a model directory, a download folder. */
            qbh_log(QB_LOG_WARN, NULL,
                    "$QUANTBRIDGE_PLUGIN_PATH entry '%s' ignored: not an absolute path", dirs[i]);
            rc = add_layer(cfg, QBH_LAYER_PATH, dirs[i], "not absolute: ignored");
        } else {
            rc = add_layer(cfg, QBH_LAYER_PATH, dirs[i], NULL);
        }
    }
    g_strfreev(dirs);
    return rc;
}

qb_status qbh_config_layers(const qbh_config_request *req, const char *main_path,
                            int main_explicit, qbh_config *cfg)
{
    gchar *d;
    qb_status rc;
    size_t i;

    d = req->builtin_dir ? g_strdup(req->builtin_dir) : builtin_dir();
    rc = add_layer(cfg, QBH_LAYER_BUILTIN, d, NULL);
    g_free(d);
    if (rc == QB_OK && (d = user_dir()) != NULL) {
        rc = add_layer(cfg, QBH_LAYER_USER, d, NULL);
        g_free(d);
    }
    /* A file named for this run may come with its plugins.d, as it did
     * when that file was the only configuration read. An implicitly found
     * main file's plugins.d is the built-in or the user layer already. */
    if (rc == QB_OK && main_path && main_explicit) {
        gchar *dir = g_path_get_dirname(main_path);
        d = g_build_filename(dir, "plugins.d", NULL);
        rc = add_layer(cfg, QBH_LAYER_CONFIG_DIR, d, NULL);
        g_free(d);
        g_free(dir);
    }
    if (rc == QB_OK)
        rc = path_layers(cfg);
    for (i = 0; rc == QB_OK && req->plugin_dirs && i < req->n_plugin_dirs; i++)
        rc = add_layer(cfg, QBH_LAYER_PLUGIN_DIR, req->plugin_dirs[i], NULL);
    if (rc == QB_OK && main_path)
        rc = add_layer(cfg, QBH_LAYER_MAIN, main_path, NULL);
    return rc;
}

qb_status qbh_config_layers_beside(const char *main_path, qbh_config *cfg)
{
    gchar *dir = g_path_get_dirname(main_path);
    gchar *d = g_build_filename(dir, "plugins.d", NULL);
    qb_status rc = add_layer(cfg, QBH_LAYER_CONFIG_DIR, d, NULL);
    g_free(d);
    g_free(dir);
    if (rc == QB_OK)
        rc = add_layer(cfg, QBH_LAYER_MAIN, main_path, NULL);
    return rc;
}
