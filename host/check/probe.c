/*
 * quantbridge plugin-check — probe purity and robustness.
 *
 * The probe is the one reader call made on every input, recognised or not
 * (qb_reader.h: pure, no state, nothing allocated that outlives the call,
 * must not crash on any input). Each family of inputs below is probed in
 * its own child, each input twice: a crash or hang fails the check (the
 * parent names the input), and so do a score outside 0..100, a second
 * answer that differs from the first, a host allocation left live, and a
 * probe that wrote into the bytes it was handed. Inputs are built the way
 * the host builds them (qbh_probe_in_build), except where the point is an
 * input no file gives: a missing path, a head cut short in memory.
 */
#include "plugin_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#define MAX_DIR_FILES 8

typedef struct probe_run {
    const qbh_plugin *p;
    char scores[1024];
    size_t used;
    size_t n;
} probe_run;

/* A fresh directory under the session's scratch directory (g_free). */
static char *scratch_dir(const qbh_pc_session *s, const char *what)
{
    gchar *t = g_strdup_printf("%s/probe-%s-XXXXXX", s->tmp, what);
    if (!g_mkdtemp(t))
        qbh_pc_result(QBH_PC_FAIL, "cannot create a directory under %s: %s", s->tmp,
                      strerror(errno));
    return t;
}

static void write_file(const char *path, const void *data, size_t len)
{
    GError *e = NULL;
    if (!g_file_set_contents(path, data, (gssize)len, &e)) {
        qbh_pc_ctx("writing %s", path);
        qbh_pc_result(QBH_PC_FAIL, "cannot write %s: %s", path, e ? e->message : "?");
    }
}

static uint64_t next_random(uint64_t *x)
{
    /* xorshift64*: reproducible inputs, so a failure names its seed */
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

static void fill_random(uint8_t *b, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t i;
    for (i = 0; i < n; i++)
        b[i] = (uint8_t)(next_random(&x) >> 56);
}

/* Probes `in` twice and ends the child with a FAIL on any breach. */
static int probe_one(probe_run *r, const char *label, const qb_probe_input *in)
{
    const qb_reader_vtable *rv = r->p->desc->reader;
    size_t hl = in->head ? in->head_len + QB_PROBE_PADDING : 0;
    size_t cl = in->config_json ? strlen(in->config_json) + 1 : 0;
    uint8_t *head = hl ? g_memdup2(in->head, hl) : NULL;
    char *cfg = cl ? g_strdup(in->config_json) : NULL;
    long live0, live;
    int s1, s2;

    qbh_pc_ctx("probe of %s", label);
    live0 = qbh_alloc_live();
    s1 = rv->probe(r->p->desc->ctx, in);
    live = qbh_alloc_live();
    if (s1 < QB_PROBE_NONE || s1 > QB_PROBE_CERTAIN)
        qbh_pc_result(QBH_PC_FAIL, "%s: score %d outside 0..100", label, s1);
    if (live != live0)
        qbh_pc_result(QBH_PC_FAIL, "%s: the probe left %ld host allocation(s) live (a probe "
                      "keeps nothing past the call)", label, live - live0);
    if ((hl && memcmp(head, in->head, hl) != 0) || (cl && memcmp(cfg, in->config_json, cl) != 0))
        qbh_pc_result(QBH_PC_FAIL, "%s: the probe wrote into its input", label);
    qbh_pc_ctx("second probe of %s", label);
    s2 = rv->probe(r->p->desc->ctx, in);
    if (s2 != s1)
        qbh_pc_result(QBH_PC_FAIL, "%s: not pure: scored %d, then %d on the same input", label, s1,
                      s2);
    if (qbh_alloc_live() != live0)
        qbh_pc_result(QBH_PC_FAIL, "%s: the second probe left %ld host allocation(s) live", label,
                      qbh_alloc_live() - live0);
    g_free(head);
    g_free(cfg);
    if (r->used < sizeof r->scores)
        r->used += (size_t)snprintf(r->scores + r->used, sizeof r->scores - r->used, "%s%d",
                                    r->n ? " " : "", s1);
    r->n++;
    return s1;
}

/* Probes the path as the host would present it. */
static int probe_path(probe_run *r, const char *label, const char *path)
{
    qbh_probe_in pi;
    int sc;
    qbh_pc_ctx("building the probe input of %s", path);
    if (qbh_probe_in_build(path, &pi) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "cannot build the probe input of %s: %s", path,
                      qbh_error_message());
    sc = probe_one(r, label, &pi.in);
    qbh_probe_in_free(&pi);
    return sc;
}

static void inputs_file(const qbh_pc_session *s, probe_run *r)
{
    static const char text[] = "This is a text file, not a model.\n";
    char *d = scratch_dir(s, "file"), *f = g_build_filename(d, "notes.txt", NULL);
    write_file(f, text, sizeof text - 1);
    probe_path(r, "a text file", f);
    g_free(f);
    g_free(d);
}

static void inputs_dir(const qbh_pc_session *s, probe_run *r)
{
    static const char cfg[] = "{\"model_type\": \"llama\", \"quantization_config\": "
                              "{\"quant_method\": 7, \"bits\": \"four\"}, \"hidden_size\": -1}";
    char *d = scratch_dir(s, "dir"), *e = g_build_filename(d, "empty", NULL);
    char *j = g_build_filename(d, "junk", NULL), *c, *st, *sub;
    uint8_t junk[64];
    if (mkdir(e, 0700) != 0 || mkdir(j, 0700) != 0)
        qbh_pc_result(QBH_PC_FAIL, "cannot create directories in %s: %s", d, strerror(errno));
    probe_path(r, "an empty directory", e);
    c = g_build_filename(j, "config.json", NULL);
    st = g_build_filename(j, "model.safetensors", NULL);
    sub = g_build_filename(j, "model.gguf", NULL);
    write_file(c, cfg, sizeof cfg - 1);
    fill_random(junk, sizeof junk, 99);
    write_file(st, junk, sizeof junk);
    if (mkdir(sub, 0700) != 0) /* a directory where a probe may expect a file */
        qbh_pc_result(QBH_PC_FAIL, "cannot create %s: %s", sub, strerror(errno));
    probe_path(r, "a directory with a junk config.json and model.safetensors", j);
    probe_path(r, "a junk model.safetensors beside a junk config.json", st);
    g_free(sub);
    g_free(st);
    g_free(c);
    g_free(j);
    g_free(e);
    g_free(d);
}

static void inputs_empty(const qbh_pc_session *s, probe_run *r)
{
    static const char *const names[] = {"empty", "model.safetensors", "model.gguf", "config.json"};
    char *d = scratch_dir(s, "empty");
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *f = g_build_filename(d, names[i], NULL);
        write_file(f, "", 0);
        g_free(f);
    }
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *f = g_build_filename(d, names[i], NULL), label[128];
        snprintf(label, sizeof label, "an empty file %s (beside an empty config.json)", names[i]);
        probe_path(r, label, f);
        g_free(f);
    }
    probe_path(r, "a directory of empty files", d);
    g_free(d);
}

/* Inputs no filesystem gives the host, but a probe must still survive. */
static void inputs_missing(const qbh_pc_session *s, probe_run *r)
{
    const char *const none[] = {NULL};
    uint8_t pad[QB_PROBE_PADDING];
    char *d = scratch_dir(s, "missing"), *f = g_build_filename(d, "gone", "model.safetensors", NULL);
    char *g = g_build_filename(d, "gone", NULL);
    qb_probe_input in;
    memset(pad, 0, sizeof pad);
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    in.path = f;
    in.main_file = f;
    in.head = pad;
    in.head_len = 0;
    in.siblings = none;
    probe_one(r, "a nonexistent file with no siblings", &in);
    in.path = g;
    in.is_dir = 1;
    in.main_file = NULL;
    in.head = NULL;
    probe_one(r, "a nonexistent directory with no entries", &in);
    g_free(g);
    g_free(f);
    g_free(d);
}

/* Random bytes of a few lengths; with a sample file, also its first bytes
 * (its magic) followed by random ones, under its own name. */
static void inputs_random(const qbh_pc_session *s, probe_run *r)
{
    static const size_t lens[] = {1, 100, 4096, 70000};
    char *d = scratch_dir(s, "random");
    uint8_t *buf = g_malloc(70000);
    struct stat st;
    size_t i;
    for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char name[64], label[128], *f;
        snprintf(name, sizeof name, "random-%zu.bin", i + 1);
        f = g_build_filename(d, name, NULL);
        fill_random(buf, lens[i], i + 1);
        write_file(f, buf, lens[i]);
        snprintf(label, sizeof label, "%zu random bytes (seed %zu)", lens[i], i + 1);
        probe_path(r, label, f);
        g_free(f);
    }
    if (s->sample && stat(s->sample, &st) == 0 && S_ISREG(st.st_mode)) {
        gchar *base = g_path_get_basename(s->sample), *data = NULL;
        gsize len = 0;
        GError *e = NULL;
        if (!g_file_get_contents(s->sample, &data, &len, &e)) /* samples are small */
            qbh_pc_result(QBH_PC_FAIL, "cannot read %s: %s", s->sample, e ? e->message : "?");
        for (i = 0; i < 4; i++) {
            static const size_t keep[] = {4, 8, 16, 64};
            size_t k = keep[i] < len ? keep[i] : len, n = 4096 + 1000 * i;
            char sub[64], label[256], *sd, *f;
            snprintf(sub, sizeof sub, "magic-%zu", i);
            sd = g_build_filename(d, sub, NULL);
            if (mkdir(sd, 0700) != 0)
                qbh_pc_result(QBH_PC_FAIL, "cannot create %s: %s", sd, strerror(errno));
            f = g_build_filename(sd, base, NULL);
            fill_random(buf, n, 100 + i);
            memcpy(buf, data, k);
            write_file(f, buf, n);
            snprintf(label, sizeof label, "the first %zu bytes of the sample, then random ones "
                     "(seed %zu)", k, 100 + i);
            probe_path(r, label, f);
            g_free(f);
            g_free(sd);
        }
        g_free(data);
        g_free(base);
    }
    g_free(buf);
    g_free(d);
}

/* A copy of pi's input whose head stops after `len` bytes (then the
 * host's zero padding), or whose config.json text stops after `cfg_len`
 * (< 0: unchanged): what the probe would see of a truncated file. */
static void probe_cut(probe_run *r, const char *label, const qbh_probe_in *pi, size_t len,
                      long cfg_len)
{
    qb_probe_input in = pi->in;
    uint8_t *head = NULL;
    char *cfg = NULL;
    if (pi->in.head) {
        head = g_malloc0(len + QB_PROBE_PADDING);
        memcpy(head, pi->in.head, len);
        in.head = head;
        in.head_len = len;
    }
    if (cfg_len >= 0) {
        cfg = g_strndup(pi->in.config_json, (gsize)cfg_len);
        in.config_json = cfg;
    }
    probe_one(r, label, &in);
    g_free(cfg);
    g_free(head);
}

static void cut_heads(probe_run *r, const char *file)
{
    static const size_t lens[] = {0, 1, 2, 4, 8, 16, 64, 256, 4096};
    qbh_probe_in pi;
    size_t i;
    if (qbh_probe_in_build(file, &pi) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "cannot build the probe input of %s: %s", file,
                      qbh_error_message());
    for (i = 0; i < sizeof lens / sizeof lens[0] + 2; i++) {
        size_t len = i < sizeof lens / sizeof lens[0] ? lens[i]
                     : i == sizeof lens / sizeof lens[0] ? pi.in.head_len / 2
                                                         : pi.in.head_len - 1;
        char label[4200];
        if (pi.in.head_len == 0 || len >= pi.in.head_len)
            continue;
        snprintf(label, sizeof label, "%s cut to %zu of %zu head bytes", file, len,
                 pi.in.head_len);
        probe_cut(r, label, &pi, len, -1);
    }
    qbh_probe_in_free(&pi);
}

static void cut_config(probe_run *r, const char *path)
{
    qbh_probe_in pi;
    size_t len, i;
    if (qbh_probe_in_build(path, &pi) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "cannot build the probe input of %s: %s", path,
                      qbh_error_message());
    len = pi.in.config_json ? strlen(pi.in.config_json) : 0;
    for (i = 0; len > 0 && i < 5; i++) {
        size_t cut[] = {0, 1, len / 3, len / 2, len - 1};
        char label[4200];
        snprintf(label, sizeof label, "%s with config.json cut to %zu of %zu bytes", path, cut[i],
                 len);
        probe_cut(r, label, &pi, pi.in.head_len, (long)cut[i]);
    }
    qbh_probe_in_free(&pi);
}

static void inputs_truncated(const qbh_pc_session *s, probe_run *r)
{
    struct stat st;
    if (stat(s->sample, &st) != 0)
        qbh_pc_result(QBH_PC_FAIL, "%s: %s", s->sample, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char **names = NULL;
        size_t i, n = 0;
        if (qbh_list_dir(s->sample, &names) != QB_OK)
            qbh_pc_result(QBH_PC_FAIL, "%s", qbh_error_message());
        for (i = 0; names[i] && n < MAX_DIR_FILES; i++) {
            char *f = g_build_filename(s->sample, names[i], NULL);
            if (stat(f, &st) == 0 && S_ISREG(st.st_mode)) {
                cut_heads(r, f);
                n++;
            }
            g_free(f);
        }
        qbh_free_list(names);
    } else {
        cut_heads(r, s->sample);
    }
    cut_config(r, s->sample);
}

void qbh_pc_check_probe(const qbh_pc_session *s, void *arg)
{
    const char *what = arg;
    probe_run r;
    qbh_plugin p;
    int sc;

    memset(&r, 0, sizeof r);
    if ((strcmp(what, "truncated") == 0 || strcmp(what, "sample") == 0) && !s->sample)
        qbh_pc_result(QBH_PC_SKIP, "no --sample");
    qbh_pc_child_load(s, &p);
    r.p = &p;
    if (strcmp(what, "file") == 0) {
        inputs_file(s, &r);
    } else if (strcmp(what, "dir") == 0) {
        inputs_dir(s, &r);
    } else if (strcmp(what, "empty") == 0) {
        inputs_empty(s, &r);
    } else if (strcmp(what, "missing") == 0) {
        inputs_missing(s, &r);
    } else if (strcmp(what, "random") == 0) {
        inputs_random(s, &r);
    } else if (strcmp(what, "truncated") == 0) {
        inputs_truncated(s, &r);
    } else {
        sc = probe_path(&r, "the sample", s->sample);
        /* below the default min-probe-score, `convert` refuses to pick it */
        if (sc < QB_PROBE_POSSIBLE)
            qbh_pc_result(QBH_PC_FAIL, "scores %d on its own sample %s (below %d, the default "
                          "min-probe-score: convert would need --format %s)", sc, s->sample,
                          QB_PROBE_POSSIBLE, p.name);
        qbh_pc_result(QBH_PC_PASS, "scores %d on %s; pure, nothing left allocated, input untouched",
                      sc, s->sample);
    }
    qbh_pc_result(QBH_PC_PASS, "%zu input%s, scores %s; pure, nothing left allocated, input "
                  "untouched", r.n, r.n == 1 ? "" : "s", r.scores);
}
