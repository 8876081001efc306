/*
 * quantbridge host — probe input and reader arbitration (--format auto).
 *
 * Every enabled reader scores the same input (docs/plugin-design.md, "Reader
 * choice"): the highest score wins; equal top scores are decided by config
 * priority; a tie that remains is an error listing the candidates (no
 * silent pick), and a winner below [general] min-probe-score is refused
 * with a hint to name the format.
 */
#include "qbh.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#define QBH_PROBE_HEAD (64u * 1024u)
#define QBH_CONFIG_JSON_MAX (4u * 1024u * 1024u)

void qbh_probe_in_free(qbh_probe_in *pi)
{
    if (!pi)
        return;
    qbh_free(pi->head_buf);
    qbh_free_list(pi->siblings);
    qbh_free(pi->config_json);
    qbh_free(pi->main_file);
    memset(pi, 0, sizeof *pi);
}

static qb_status read_head(const char *path, uint8_t **buf, size_t *len)
{
    uint8_t *b;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                             strerror(errno));
    b = qbh_calloc(1, QBH_PROBE_HEAD + QB_PROBE_PADDING);
    if (!b) {
        close(fd);
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory", path);
    }
    while (got < QBH_PROBE_HEAD) {
        ssize_t r = read(fd, b + got, QBH_PROBE_HEAD - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            qb_status rc = qbh_error_set(QB_E_IO, "%s: %s", path, strerror(errno));
            close(fd);
            qbh_free(b);
            return rc;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = got;
    return QB_OK;
}

qb_status qbh_probe_in_build(const char *path, qbh_probe_in *pi)
{
    struct stat st;
    gchar *dir = NULL, *cj = NULL;
    qb_status rc = QB_OK;

    memset(pi, 0, sizeof *pi);
    pi->in.struct_size = sizeof pi->in;
    pi->in.path = path;
    if (stat(path, &st) != 0)
        return qbh_error_set(errno == ENOENT ? QB_E_NOT_FOUND : QB_E_IO, "%s: %s", path,
                             strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        pi->in.is_dir = 1;
        dir = g_strdup(path);
    } else if (S_ISREG(st.st_mode)) {
        pi->main_file = qbh_strdup(path);
        if (!pi->main_file) {
            rc = qbh_error_set(QB_E_NOMEM, "out of memory");
            goto out;
        }
        pi->in.main_file = pi->main_file;
        rc = read_head(path, &pi->head_buf, &pi->in.head_len);
        if (rc)
            goto out;
        pi->in.head = pi->head_buf;
        dir = g_path_get_dirname(path);
    } else {
        return qbh_error_set(QB_E_INVALID, "%s: neither a file nor a directory", path);
    }
    rc = qbh_list_dir(dir, &pi->siblings);
    if (rc)
        goto out;
    pi->in.siblings = (const char *const *)pi->siblings;
    cj = g_build_filename(dir, "config.json", NULL);
    if (access(cj, F_OK) == 0) {
        void *data = NULL;
        rc = qbh_read_small_file(cj, QBH_CONFIG_JSON_MAX, &data, NULL);
        if (rc)
            goto out;
        pi->config_json = data;
        pi->in.config_json = pi->config_json;
    }
out:
    g_free(cj);
    g_free(dir);
    if (rc)
        qbh_probe_in_free(pi);
    return rc;
}

void qbh_probe_run(qbh_plugin *const *readers, const qb_probe_input *in, qbh_probe_score *scores)
{
    size_t i;
    for (i = 0; readers[i]; i++) {
        const qb_plugin *d = readers[i]->desc;
        int s;
        if (readers[i]->contained) {
            /* Untrusted: a crash or hang must cost only this plugin. */
            const qbh_registry *reg = readers[i]->reg;
            s = qbh_probe_contained(readers[i], in, reg ? reg->cfg.probe_timeout_s : 5);
            if (s < 0) {
                scores[i].plugin = readers[i];
                scores[i].score = 0;
                continue;
            }
        } else {
            QBH_CALL(readers[i], "probe", in->path, s = d->reader->probe(d->ctx, in));
        }
        if (s < 0 || s > 100) {
            /* Out of contract: report it and treat as "not mine", never as
             * a confident match. */
            qbh_log(QB_LOG_WARN, readers[i]->name, "probe returned %d (outside 0..100); "
                    "treated as 0", s);
            s = 0;
        }
        scores[i].plugin = readers[i];
        scores[i].score = s;
    }
}

qb_status qbh_probe_choose(const qbh_probe_score *scores, size_t n, int min_score,
                           const char *path, qbh_plugin **winner)
{
    const qbh_probe_score *best = NULL;
    size_t i, n_tied = 0;
    char list[1024];
    size_t len = 0;

    *winner = NULL;
    for (i = 0; i < n; i++) {
        const qbh_probe_score *s = &scores[i];
        if (!best || s->score > best->score ||
            (s->score == best->score && s->plugin->conf->priority > best->plugin->conf->priority))
            best = s;
    }
    if (!best || best->score <= 0)
        return qbh_error_set(QB_E_NOT_FOUND,
                             "%s: no reader recognises this input (%zu reader%s probed); "
                             "name one with --format", path, n, n == 1 ? "" : "s");
    list[0] = '\0';
    for (i = 0; i < n; i++) {
        const qbh_probe_score *s = &scores[i];
        if (s->score == best->score && s->plugin->conf->priority == best->plugin->conf->priority) {
            n_tied++;
            if (len < sizeof list)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", n_tied > 1 ? ", " : "",
                                        s->plugin->name);
        }
    }
    if (n_tied > 1)
        return qbh_error_set(QB_E_MISMATCH,
                             "%s: %zu readers claim this input with score %d and priority %d (%s); "
                             "choose one with --format", path, n_tied, best->score,
                             best->plugin->conf->priority, list);
    if (best->score < min_score)
        return qbh_error_set(QB_E_NOT_FOUND,
                             "%s: best match is reader %s with score %d, below min-probe-score %d; "
                             "if that is right, say --format %s", path, best->plugin->name,
                             best->score, min_score, best->plugin->name);
    *winner = best->plugin;
    return QB_OK;
}

/* A reader that failed to load may be the one this input needed: say so
 * rather than let "no reader recognises" mislead. */
static void note_failed_plugins(const qbh_registry *reg)
{
    char list[512], msg[2048];
    size_t i, len = 0, n = 0;
    list[0] = '\0';
    for (i = 0; i < reg->n_plugins; i++) {
        const qbh_plugin *p = reg->plugins[i];
        if (p->state == QBH_LOAD_OK || p->state == QBH_LOAD_DISABLED)
            continue;
        n++;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", n > 1 ? ", " : "",
                                    p->name);
    }
    if (!n)
        return;
    snprintf(msg, sizeof msg, "%s (note: %zu configured plugin%s failed to load: %s; see "
             "`quantbridge plugins`)", qbh_error_message(), n, n == 1 ? "" : "s", list);
    qbh_error_set(qbh_error_code(), "%s", msg);
}

/* Arbitration found no reader sure enough of `path`. The likeliest one
 * (the highest score above 0) usually knows what is wrong: a damaged file
 * probes low because it is damaged. Open the input with it and, when that
 * fails, show its own diagnosis ("header is not valid JSON", "shard
 * missing") instead of the bare arbitration message; when it opens, the
 * arbitration message (with its --format hint) stands. Returns the status
 * to report: arb_rc, or the open's failure. */
static qb_status diagnose_best(const qbh_probe_score *scores, size_t n, const char *path,
                               qb_status arb_rc)
{
    const qbh_probe_score *best = NULL;
    char *arb_msg = NULL;
    qbh_params rp;
    qbh_source src;
    qb_status rc;
    size_t i;

    for (i = 0; i < n; i++)
        if (scores[i].score > 0 && (!best || scores[i].score > best->score))
            best = &scores[i];
    if (!best)
        return arb_rc;
    arb_msg = qbh_strdup(qbh_error_message());
    if (!arb_msg)
        return arb_rc;
    memset(&rp, 0, sizeof rp);
    memset(&src, 0, sizeof src);
    rc = qbh_params_build(best->plugin->desc, QB_OPTION_ROLE_READER, best->plugin->conf, NULL, 0, &rp);
    if (rc == QB_OK)
        rc = qbh_source_open(best->plugin, path, rp.items, &src);
    if (rc == QB_OK || rc == QB_E_NOMEM) {
        qbh_source_close(&src);
        qbh_error_set(arb_rc, "%s", arb_msg);
        rc = arb_rc;
    } else {
        char *why = qbh_strdup(qbh_error_message());
        rc = qbh_error_set(rc, "%s: no reader is sure of this input; the likeliest, %s (probe "
                           "score %d), says: %s", path, best->plugin->name, best->score,
                           why ? why : qbh_status_name(rc));
        qbh_free(why);
    }
    qbh_params_free(&rp);
    qbh_free(arb_msg);
    return rc;
}

qb_status qbh_select_reader(const qbh_registry *reg, const char *path, const char *format,
                            qbh_plugin **out, qbh_probe_score **scores, size_t *n_scores,
                            int *usage)
{
    qbh_plugin **readers = NULL;
    qbh_probe_in pi;
    qb_status rc;
    size_t n = 0;

    *out = NULL;
    *scores = NULL;
    *n_scores = 0;
    *usage = 0;
    memset(&pi, 0, sizeof pi);
    if (format && strcmp(format, "auto") != 0) {
        qbh_plugin *p = qbh_registry_find(reg, format);
        if (!p || (p->state == QBH_LOAD_OK && !p->desc->reader)) {
            *usage = 1;
            return qbh_error_set(QB_E_NOT_FOUND, "--format %s: no reader plugin of that name "
                                 "(see `quantbridge plugins`)", format);
        }
        if (p->state != QBH_LOAD_OK)
            return qbh_error_set(QB_E_UNSUPPORTED, "--format %s: plugin is %s: %s", format,
                                 p->state == QBH_LOAD_DISABLED ? "disabled" : "not loaded",
                                 p->error ? p->error : "enabled=false in its config");
        *out = p;
        return QB_OK;
    }
    readers = qbh_registry_list(reg, 1);
    if (!readers)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    while (readers[n])
        n++;
    if (n == 0) {
        rc = qbh_error_set(QB_E_NOT_FOUND, "%s: no reader plugin is loaded (see `quantbridge "
                           "plugins`)", path);
        goto out;
    }
    rc = qbh_probe_in_build(path, &pi);
    if (rc)
        goto out;
    *scores = qbh_calloc(n, sizeof **scores);
    if (!*scores) {
        rc = qbh_error_set(QB_E_NOMEM, "out of memory");
        goto out;
    }
    qbh_probe_run(readers, &pi.in, *scores);
    *n_scores = n;
    rc = qbh_probe_choose(*scores, n, reg->cfg.min_probe_score, path, out);
    if (rc == QB_E_NOT_FOUND)
        rc = diagnose_best(*scores, n, path, rc);
out:
    if (rc == QB_E_NOT_FOUND || rc == QB_E_MISMATCH)
        note_failed_plugins(reg);
    qbh_probe_in_free(&pi);
    qbh_free(readers);
    return rc;
}
