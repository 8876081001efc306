/*
 * quantbridge host — configuration: where the main file is, and what the
 * files say, merged layer by layer (config_layers.c lists the layers).
 *
 * Format: GLib GKeyFile (INI). The main file holds [general] and may hold
 * [plugin:NAME] sections; each layer's *.conf files hold more (one plugin
 * per file by convention). Keys of a plugin section: library, override,
 * enabled, priority, trusted, option.KEY (see conf/quantbridge.conf).
 */
#include "qbh.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#ifndef QBH_SYSCONFDIR
#define QBH_SYSCONFDIR "/etc"
#endif

#define QBH_CONF_REL "quantbridge/quantbridge.conf"

static int is_regular_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *qbh_exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    char *slash;
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return qbh_strdup(buf[0] ? buf : "/");
}

static qb_status take_explicit(const char *p, const char *what, char **out)
{
    if (!is_regular_file(p))
        return qbh_error_set(QB_E_NOT_FOUND, "config file %s (from %s): %s", p, what,
                             access(p, F_OK) == 0 ? "not a regular file" : "not found");
    *out = qbh_strdup(p);
    return *out ? QB_OK : qbh_error_set(QB_E_NOMEM, "out of memory");
}

/* The user's own main file ($XDG_CONFIG_HOME or ~/.config), malloc'd, or
 * NULL. */
static char *user_main_path(void)
{
    const char *env = secure_getenv("XDG_CONFIG_HOME");
    if (env && env[0] == '/')
        return g_build_filename(env, QBH_CONF_REL, NULL);
    if ((env = secure_getenv("HOME")) && env[0] == '/')
        return g_build_filename(env, ".config", QBH_CONF_REL, NULL);
    return NULL;
}

/* 1 when canonical `path` is the user's own main file. */
static int is_user_main(const char *path)
{
    char *u = user_main_path(), *c = u ? realpath(u, NULL) : NULL;
    int same = c && strcmp(c, path) == 0;
    free(c);
    g_free(u);
    return same;
}

qb_status qbh_config_locate(const char *cli_path, char **out)
{
    const char *env;
    char *cand = NULL, *exe = NULL;
    qb_status rc = QB_OK;

    *out = NULL;
    if (cli_path)
        return take_explicit(cli_path, "--config", out);
    /* secure_getenv: a set-uid run must not be steered by the environment. */
    env = secure_getenv("QUANTBRIDGE_CONFIG");
    if (env && *env)
        return take_explicit(env, "$QUANTBRIDGE_CONFIG", out);

    cand = user_main_path();
    if (cand && is_regular_file(cand))
        goto found;
    g_free(cand);
    cand = NULL;

    /* <exe>/../etc serves both the install prefix and the build tree, which
     * mirrors it (bin/, lib/quantbridge/plugins/, etc/quantbridge/). */
    exe = qbh_exe_dir();
    if (exe) {
        cand = g_build_filename(exe, "..", "etc", QBH_CONF_REL, NULL);
        if (is_regular_file(cand))
            goto found;
        g_free(cand);
        cand = NULL;
    }
    cand = g_build_filename(QBH_SYSCONFDIR, QBH_CONF_REL, NULL);
    if (is_regular_file(cand))
        goto found;
    g_free(cand);
    cand = NULL;
    goto out;

found:
    {
        /* Canonical, so messages and relative library paths read cleanly. */
        char *canon = realpath(cand, NULL);
        *out = qbh_strdup(canon ? canon : cand);
        free(canon);
    }
    if (!*out)
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
out:
    g_free(cand);
    qbh_free(exe);
    return rc;
}

static int valid_plugin_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return 0;
    return 1;
}

/* Back to an entry no section has spoken about yet (name and seen_in kept). */
static void conf_plugin_reset(qbh_plugin_conf *pc)
{
    size_t i;
    qbh_free(pc->library);
    qbh_free(pc->lib_base);
    qbh_free(pc->source);
    for (i = 0; i < pc->n_options; i++) {
        qbh_free(pc->options[i].key);
        qbh_free(pc->options[i].value);
    }
    qbh_free(pc->options);
    pc->library = pc->lib_base = pc->source = NULL;
    pc->options = NULL;
    pc->n_options = 0;
    pc->layer = QBH_LAYER_BUILTIN;
    pc->lib_here = 0;
    pc->enabled = 1;
    pc->priority = 50;
    pc->trusted = -1; /* unset: plugin_load.c decides by location */
}

static void conf_plugin_clear(qbh_plugin_conf *pc)
{
    conf_plugin_reset(pc);
    qbh_free(pc->name);
    qbh_free(pc->seen_in);
    memset(pc, 0, sizeof *pc);
}

static void config_init(qbh_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->min_probe_score = 50;
    cfg->probe_timeout_s = 5;
}

void qbh_config_free(qbh_config *cfg)
{
    size_t i;
    if (!cfg)
        return;
    for (i = 0; i < cfg->n_plugins; i++)
        conf_plugin_clear(&cfg->plugins[i]);
    qbh_free(cfg->plugins);
    for (i = 0; i < cfg->n_layers; i++)
        qbh_free(cfg->layers[i].path);
    qbh_free(cfg->layers);
    qbh_free(cfg->path);
    config_init(cfg);
}

const qbh_plugin_conf *qbh_config_find_plugin(const qbh_config *cfg, const char *name)
{
    size_t i;
    for (i = 0; i < cfg->n_plugins; i++)
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    return NULL;
}

static qbh_plugin_conf *plugin_get(qbh_config *cfg, const char *name)
{
    qbh_plugin_conf *pc, *grown;
    size_t i;
    for (i = 0; i < cfg->n_plugins; i++)
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    grown = qbh_alloc((cfg->n_plugins + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    if (cfg->n_plugins)
        memcpy(grown, cfg->plugins, cfg->n_plugins * sizeof *grown);
    qbh_free(cfg->plugins);
    cfg->plugins = grown;
    pc = &cfg->plugins[cfg->n_plugins];
    memset(pc, 0, sizeof *pc);
    conf_plugin_reset(pc);
    pc->name = qbh_strdup(name);
    if (!pc->name)
        return NULL;
    cfg->n_plugins++;
    return pc;
}

static int set_str(char **dst, const char *v)
{
    char *c = qbh_strdup(v);
    if (!c)
        return -1;
    qbh_free(*dst);
    *dst = c;
    return 0;
}

static int set_option(qbh_plugin_conf *pc, const char *key, const char *value)
{
    qbh_kv *grown;
    size_t i;
    for (i = 0; i < pc->n_options; i++)
        if (strcmp(pc->options[i].key, key) == 0)
            return set_str(&pc->options[i].value, value);
    grown = qbh_alloc((pc->n_options + 1) * sizeof *grown);
    if (!grown)
        return -1;
    if (pc->n_options)
        memcpy(grown, pc->options, pc->n_options * sizeof *grown);
    qbh_free(pc->options);
    pc->options = grown;
    grown[pc->n_options].key = qbh_strdup(key);
    grown[pc->n_options].value = qbh_strdup(value);
    pc->n_options++;
    if (!grown[pc->n_options - 1].key || !grown[pc->n_options - 1].value)
        return -1;
    return 0;
}

static qb_status read_bool(GKeyFile *kf, const char *file, const char *grp, const char *key,
                           int *out)
{
    GError *err = NULL;
    gboolean v = g_key_file_get_boolean(kf, grp, key, &err);
    if (err) {
        g_error_free(err);
        return qbh_error_set(QB_E_FORMAT, "%s: [%s] %s: expected true or false", file, grp, key);
    }
    *out = v ? 1 : 0;
    return QB_OK;
}

static qb_status read_int(GKeyFile *kf, const char *file, const char *grp, const char *key,
                          int lo, int hi, int *out)
{
    GError *err = NULL;
    gint v = g_key_file_get_integer(kf, grp, key, &err);
    if (err) {
        g_error_free(err);
        return qbh_error_set(QB_E_FORMAT, "%s: [%s] %s: expected an integer", file, grp, key);
    }
    if (v < lo || v > hi)
        return qbh_error_set(QB_E_FORMAT, "%s: [%s] %s: %d outside [%d, %d]", file, grp, key, v,
                             lo, hi);
    *out = v;
    return QB_OK;
}

/* One [plugin:NAME] section of `file` (in layer `layer`). A section with
 * library= defines the plugin: a second definition is refused unless it
 * says override=true, because two layers quietly disagreeing about which
 * library NAME is would make the outcome depend on reading order. */
static qb_status merge_plugin(qbh_config *cfg, GKeyFile *kf, const char *file, const char *dir,
                              const char *grp, const qbh_conf_layer *layer)
{
    const char *name = grp + strlen("plugin:");
    qbh_plugin_conf *pc;
    gchar **keys = NULL;
    qb_status rc = QB_OK;
    int defines = g_key_file_has_key(kf, grp, "library", NULL), replace = 0;
    size_t i;

    if (!valid_plugin_name(name))
        return qbh_error_set(QB_E_FORMAT, "%s: [%s]: plugin names are [a-z0-9-]+", file, grp);
    if (g_key_file_has_key(kf, grp, "override", NULL)) {
        rc = read_bool(kf, file, grp, "override", &replace);
        if (rc)
            return rc;
        if (replace && !defines)
            return qbh_error_set(QB_E_FORMAT,
                                 "%s: [%s] override=true without library=: override replaces "
                                 "the plugin's definition, and this section gives none", file,
                                 grp);
    }
    pc = plugin_get(cfg, name);
    if (!pc || (!pc->seen_in && set_str(&pc->seen_in, file)))
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    if (defines && pc->source) {
        if (!replace)
            return qbh_error_set(QB_E_INVALID,
                                 "%s: [%s] defines plugin %s, which %s already defines; remove "
                                 "one of the two, or say override=true in the later one to "
                                 "replace the earlier (a section without library= only adjusts "
                                 "settings)", file, grp, name, pc->source);
        qbh_log(QB_LOG_INFO, NULL, "%s: [%s] replaces the definition in %s (override=true)", file,
                grp, pc->source);
        conf_plugin_reset(pc);
    }
    keys = g_key_file_get_keys(kf, grp, NULL, NULL);
    for (i = 0; keys && keys[i]; i++) {
        const char *k = keys[i];
        if (strcmp(k, "override") == 0) {
            continue; /* read above */
        } else if (strcmp(k, "enabled") == 0) {
            rc = read_bool(kf, file, grp, k, &pc->enabled);
        } else if (strcmp(k, "trusted") == 0) {
            int v = -1;
            rc = read_bool(kf, file, grp, k, &v);
            /* Trust skips the probe's sandbox: only the installation's own
             * configuration, or the one file the user named on the command
             * line, may grant it; a conf dropped beside a library could
             * otherwise vouch for itself (docs/plugin-design.md, "Trust"). */
            if (rc == QB_OK && v == 1 && layer->kind != QBH_LAYER_BUILTIN &&
                !(layer->kind == QBH_LAYER_MAIN && cfg->main_trusts))
                qbh_log(QB_LOG_WARN, NULL,
                        "%s: [%s] trusted=true ignored: only the installation's configuration "
                        "or the file named with --config can trust a plugin", file, grp);
            else if (rc == QB_OK)
                pc->trusted = v;
        } else if (strcmp(k, "priority") == 0) {
            rc = read_int(kf, file, grp, k, -1000000, 1000000, &pc->priority);
        } else if (strcmp(k, "library") == 0 || strncmp(k, "option.", 7) == 0) {
            gchar *v = g_key_file_get_string(kf, grp, k, NULL);
            if (!v || !*v) {
                rc = qbh_error_set(QB_E_FORMAT, "%s: [%s] %s: empty value", file, grp, k);
            } else if (k[0] == 'l') {
                if (set_str(&pc->library, v) || set_str(&pc->lib_base, dir) ||
                    set_str(&pc->source, file)) {
                    rc = qbh_error_set(QB_E_NOMEM, "out of memory");
                } else {
                    pc->layer = layer->kind;
                    pc->lib_here = layer->kind == QBH_LAYER_PATH ||
                                   layer->kind == QBH_LAYER_PLUGIN_DIR;
                }
            } else if (k[7] == '\0') {
                rc = qbh_error_set(QB_E_FORMAT, "%s: [%s] %s: empty option name", file, grp, k);
            } else if (set_option(pc, k + 7, v)) {
                rc = qbh_error_set(QB_E_NOMEM, "out of memory");
            }
            g_free(v);
        } else {
            qbh_log(QB_LOG_WARN, NULL, "%s: [%s]: unknown key '%s' ignored", file, grp, k);
        }
        if (rc)
            break;
    }
    g_strfreev(keys);
    return rc;
}

static qb_status merge_file(qbh_config *cfg, const char *file, const qbh_conf_layer *layer)
{
    GKeyFile *kf = g_key_file_new();
    GError *err = NULL;
    gchar **groups = NULL, *dir = NULL;
    qb_status rc = QB_OK;
    size_t i;

    if (!g_key_file_load_from_file(kf, file, G_KEY_FILE_NONE, &err)) {
        rc = qbh_error_set(err->domain == G_FILE_ERROR ? QB_E_IO : QB_E_FORMAT, "%s: %s", file,
                           err->message);
        g_error_free(err);
        goto out;
    }
    dir = g_path_get_dirname(file);
    groups = g_key_file_get_groups(kf, NULL);
    for (i = 0; groups[i] && rc == QB_OK; i++) {
        const char *g = groups[i];
        if (strcmp(g, "general") == 0) {
            if (layer->kind != QBH_LAYER_MAIN) {
                qbh_log(QB_LOG_WARN, NULL, "%s: [general] belongs in the main file; ignored", file);
                continue;
            }
            gchar **keys = g_key_file_get_keys(kf, g, NULL, NULL);
            size_t k;
            for (k = 0; keys && keys[k] && rc == QB_OK; k++) {
                if (strcmp(keys[k], "min-probe-score") == 0)
                    rc = read_int(kf, file, g, keys[k], 0, 100, &cfg->min_probe_score);
                else if (strcmp(keys[k], "probe-timeout") == 0)
                    rc = read_int(kf, file, g, keys[k], 1, 3600, &cfg->probe_timeout_s);
                else
                    qbh_log(QB_LOG_WARN, NULL, "%s: [general]: unknown key '%s' ignored", file,
                            keys[k]);
            }
            g_strfreev(keys);
        } else if (strncmp(g, "plugin:", 7) == 0) {
            rc = merge_plugin(cfg, kf, file, dir, g, layer);
        } else {
            qbh_log(QB_LOG_WARN, NULL, "%s: unknown section [%s] ignored", file, g);
        }
    }
out:
    g_strfreev(groups);
    g_free(dir);
    g_key_file_free(kf);
    return rc;
}

static int is_main_file(const char *f, const char *main_canon)
{
    char *c = realpath(f, NULL);
    int same = c && strcmp(c, main_canon) == 0;
    free(c);
    return same;
}

/* Every *.conf of a layer directory, in name order, except the main file
 * (read last, once, when it lies in a plugin directory). A world-writable
 * file is refused like a world-writable directory (config_layers.c). */
static qb_status merge_dir(qbh_config *cfg, const qbh_conf_layer *layer)
{
    const char *main_canon = NULL;
    char **names = NULL;
    qb_status rc;
    size_t i;

    for (i = 0; i < cfg->n_layers; i++)
        if (cfg->layers[i].kind == QBH_LAYER_MAIN)
            main_canon = cfg->layers[i].path;

    rc = qbh_list_dir(layer->path, &names);
    if (rc == QB_E_NOT_FOUND)
        return QB_OK; /* removed since config_layers.c looked */
    for (i = 0; rc == QB_OK && names[i]; i++) {
        size_t n = strlen(names[i]);
        struct stat st;
        gchar *f;
        if (n <= 5 || strcmp(names[i] + n - 5, ".conf") != 0 || names[i][0] == '.')
            continue;
        f = g_build_filename(layer->path, names[i], NULL);
        if (main_canon && is_main_file(f, main_canon))
            qbh_log(QB_LOG_DEBUG, NULL, "%s: the main file; read last", f);
        else if (stat(f, &st) != 0 || !S_ISREG(st.st_mode))
            qbh_log(QB_LOG_WARN, NULL, "%s: not a regular file; ignored", f);
        else if (st.st_mode & S_IWOTH)
            qbh_log(QB_LOG_WARN, NULL, "%s is world-writable; not read (chmod o-w)", f);
        else
            rc = merge_file(cfg, f, layer);
        g_free(f);
    }
    qbh_free_list(names);
    return rc;
}

static int conf_cmp(const void *a, const void *b)
{
    return strcmp(((const qbh_plugin_conf *)a)->name, ((const qbh_plugin_conf *)b)->name);
}

/* Reads cfg->layers in order (the main file is the MAIN layer). */
static qb_status merge_layers(qbh_config *cfg)
{
    qb_status rc = QB_OK;
    size_t i;
    for (i = 0; i < cfg->n_layers && rc == QB_OK; i++) {
        const qbh_conf_layer *l = &cfg->layers[i];
        if (l->skipped)
            continue;
        rc = l->kind == QBH_LAYER_MAIN ? merge_file(cfg, cfg->path, l) : merge_dir(cfg, l);
    }
    if (rc == QB_OK && cfg->n_plugins > 1)
        qsort(cfg->plugins, cfg->n_plugins, sizeof cfg->plugins[0], conf_cmp);
    return rc;
}

qb_status qbh_config_open(const qbh_config_request *req, qbh_config *cfg)
{
    const char *env;
    qb_status rc;
    int explicit_main;

    config_init(cfg);
    rc = qbh_config_locate(req->config, &cfg->path);
    if (rc)
        goto out;
    env = secure_getenv("QUANTBRIDGE_CONFIG");
    explicit_main = cfg->path && (req->config || (env && *env));
    cfg->main_trusts = cfg->path && (req->config || (!(env && *env) && !is_user_main(cfg->path)));
    rc = qbh_config_layers(req, cfg->path, explicit_main, cfg);
    if (rc == QB_OK)
        rc = merge_layers(cfg);
out:
    if (rc)
        qbh_config_free(cfg);
    return rc;
}

qb_status qbh_config_load(const char *path, qbh_config *cfg)
{
    qb_status rc;

    config_init(cfg);
    if (!path)
        return QB_OK;
    cfg->main_trusts = 1; /* the caller named it */
    cfg->path = qbh_strdup(path);
    if (!cfg->path)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    rc = qbh_config_layers_beside(path, cfg);
    if (rc == QB_OK)
        rc = merge_layers(cfg);
    if (rc)
        qbh_config_free(cfg);
    return rc;
}
