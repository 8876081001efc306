/*
 * quantbridge host — command-line strictness shared by every command:
 * long options by their exact names only, a "did you mean" for a typo,
 * and output paths checked before any work starts.
 *
 * Why not getopt_long's prefix matching: scripts written against one
 * release would silently change meaning when a later release adds an
 * option sharing the prefix (`--sour` is --source today, ambiguous
 * tomorrow); an exact name is the only spelling that stays valid.
 */
#include "cli.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Levenshtein distance of a and b, capped at 99 (names are short). */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j;
    int row[64], prev, tmp;
    if (la >= 63 || lb >= 63)
        return 99;
    for (j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = (int)i;
        for (j = 1; j <= lb; j++) {
            int best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            tmp = row[j];
            row[j] = best;
            prev = tmp;
        }
    }
    return row[lb];
}

const char *qbh_cli_suggest(const char *typed, const struct option *opts)
{
    const char *best = NULL;
    size_t len = strlen(typed);
    int bd = INT_MAX, i;
    /* Close enough to be a typo: up to a third of the name (at least 2)
     * edits, so "--sour" finds --source but "--x" suggests nothing. */
    int limit = (int)(len / 3) > 2 ? (int)(len / 3) : 2;
    /* A prefix is what getopt_long used to complete: name the shortest
     * option it starts (--conv: --converted, not --converted-format). */
    for (i = 0; len && opts[i].name; i++)
        if (strncmp(opts[i].name, typed, len) == 0 &&
            (!best || strlen(opts[i].name) < strlen(best)))
            best = opts[i].name;
    if (best)
        return best;
    for (i = 0; opts[i].name; i++) {
        int d = edit_distance(typed, opts[i].name);
        if (d < bd) {
            bd = d;
            best = opts[i].name;
        }
    }
    return bd <= limit ? best : NULL;
}

void qbh_cli_usage_hint(const char *cmd)
{
    fprintf(stderr, "try 'quantbridge help%s%s'\n", cmd ? " " : "", cmd ? cmd : "");
}

int qbh_cli_check_long(int argc, char **argv, const struct option *opts, const char *cmd)
{
    int i, k;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *eq;
        size_t n;
        const struct option *hit = NULL;
        if (strcmp(a, "--") == 0)
            return 0; /* the rest are operands */
        if (strncmp(a, "--", 2) != 0)
            continue;
        a += 2;
        eq = strchr(a, '=');
        n = eq ? (size_t)(eq - a) : strlen(a);
        for (k = 0; opts[k].name; k++)
            if (strlen(opts[k].name) == n && strncmp(opts[k].name, a, n) == 0) {
                hit = &opts[k];
                break;
            }
        if (!hit) {
            char name[128];
            const char *s;
            snprintf(name, sizeof name, "%.*s", (int)(n < 100 ? n : 100), a);
            s = qbh_cli_suggest(name, opts);
            fprintf(stderr, "quantbridge: error: %s%sunknown option '--%s'%s%s%s\n",
                    cmd ? cmd : "", cmd ? ": " : "", name, s ? "; did you mean --" : "",
                    s ? s : "", s ? "?" : "");
            qbh_cli_usage_hint(cmd);
            return -1;
        }
        if (hit->has_arg == required_argument && !eq)
            i++; /* its value, whatever it looks like */
    }
    return 0;
}

int qbh_cli_option_kv(char *arg, qbh_opt *out)
{
    char *eq = strchr(arg, '=');
    assert(out);
    if (!eq || eq == arg) {
        fprintf(stderr, "quantbridge: error: --option %s: expected KEY=VALUE\n", arg);
        return -1;
    }
    *eq = '\0';
    out->key = arg;
    out->value = eq + 1;
    out->origin = "--option";
    return 0;
}

int qbh_cli_common_opt(int c, const char *arg, qbh_common *co)
{
    qb_status st = QB_OK;
    assert(co);
    switch (c) {
    case 'C': co->config = arg; break;
    case 'P': st = qbh_common_add_plugin_dir(co, arg); break;
    case 'v': co->verbose++; break;
    case 'T': st = qbh_parse_threads(arg, &co->threads); break;
    default: assert(!"not a common option"); break;
    }
    if (st != QB_OK) {
        qbh_cli_report();
        return -1;
    }
    return 0;
}
