/* Spoiled JSON files for every reader (qbt_json_refusals.h). */
#include "qbt_json_refusals.h"

#include <quantbridge/quantbridge.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbt_fs.h"
#include "qbt_host.h"

/* One refusal: text inserted right after the object's '{' (`insert`), or
 * the closing '}' made "...,}" (insert NULL), and what the message says. */
typedef struct spoil {
    const char *name;
    const char *insert; /* "%s" is the duplicated key */
    const char *reason;
} spoil;

static const spoil spoils[] = {
    {"duplicate key", "\"%s\": 0, ", "duplicate key"},
    {"1e400", "\"qbt_big\": 1e400, ", "range of a double"},
    {"leading zero", "\"qbt_lz\": 01, ", "leading zero"},
    {"\\u0000", "\"qbt_nul\": \"a\\u0000b\", ", "U+0000"},
    {"invalid UTF-8", "\"qbt_utf\": \"\xc3\x28\", ", "UTF-8"},
    {"control character", "\"qbt_ctl\": \"a\tb\", ", "control character"},
    {"comment", "/* qbt */ ", "comments"},
    {"trailing comma", NULL, "trailing comma"},
};

/* The spoiled text of `text` (malloc'd). */
static char *spoiled(const char *text, const spoil *s, const char *key)
{
    const char *brace = s->insert ? strchr(text, '{') : strrchr(text, '}');
    char ins[256];
    size_t at, n = strlen(text);
    char *out;

    ck_assert_msg(brace != NULL, "the fixture's JSON has no object");
    if (s->insert)
        snprintf(ins, sizeof ins, s->insert, key);
    else
        snprintf(ins, sizeof ins, ", ");
    at = (size_t)(brace - text) + (s->insert ? 1 : 0);
    out = malloc(n + strlen(ins) + 1);
    ck_assert_ptr_nonnull(out);
    memcpy(out, text, at);
    strcpy(out + at, ins);
    strcat(out, text + at);
    return out;
}

qb_status qbt_json_open_reader(const char *path, void *ctx)
{
    const qb_plugin *p = ctx;
    qb_reader_handle h = NULL;
    qb_status st = p->reader->open(p->ctx, path, NULL, &h);
    if (st == QB_OK)
        p->reader->close(h);
    else
        ck_assert_ptr_null(h);
    return st;
}

void qbt_json_refusals(const char *fixture, const char *file, const char *key,
                       const char *open_path, qbt_json_open_fn open, void *ctx,
                       const char *(*msg)(void))
{
    size_t i;
    for (i = 0; i < sizeof spoils / sizeof spoils[0]; i++) {
        const spoil *s = &spoils[i];
        char *dir = qbt_mkdtemp("json-refusal");
        char *copy = qbt_path(dir, "m"), *target, *text, *bad, *what;
        const char *m;
        qb_status rc;

        qbt_copy_dir(fixture, copy);
        target = qbt_path(copy, file);
        text = qbt_read_file(target, NULL);
        ck_assert_msg(text != NULL, "%s: cannot read", target);
        bad = spoiled(text, s, key);
        qbt_write_file(target, bad);
        what = open_path && open_path[0] ? qbt_path(copy, open_path) : strdup(copy);
        qbt_host_clear_error();
        rc = open(what, ctx);
        m = msg ? msg() : qbt_host_last_error();
        ck_assert_msg(rc == QB_E_FORMAT, "%s with %s: open gave %d (%s)", file, s->name, rc,
                      m ? m : "");
        ck_assert_msg(m && strstr(m, file), "%s with %s: message '%s' does not name the file",
                      file, s->name, m ? m : "");
        ck_assert_msg(strstr(m, s->reason), "%s with %s: message '%s' lacks '%s'", file, s->name,
                      m, s->reason);
        if (s->insert && strstr(s->insert, "%s"))
            ck_assert_msg(strstr(m, key), "%s with %s: message '%s' does not name key '%s'", file,
                          s->name, m, key);
        free(what);
        free(bad);
        free(text);
        free(target);
        free(copy);
        qbt_rmtree(dir);
        free(dir);
    }
}
