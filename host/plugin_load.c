/*
 * quantbridge host — loading one plugin library.
 *
 * Sequence (docs/plugin-design.md, "Discovery and load sequence"): resolve the
 * file, check it is an ELF shared object, dlopen(RTLD_NOW | RTLD_LOCAL |
 * RTLD_NODELETE), dlsym the entry, negotiate the ABI, validate the
 * descriptor, refuse a duplicate name. Each failure has its own category
 * and message; the plugin is then skipped and the host carries on. The
 * library is never dlclosed: plugin code may have registered destructors
 * or handed out function pointers.
 */
#include "qbh.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#define QBH_ABI_MIN QB_MAKE_ABI(1, 0)

#ifndef QBH_PLUGIN_REL_DIR
#define QBH_PLUGIN_REL_DIR "lib/quantbridge/plugins"
#endif

/* A plugin's structs may be newer (bigger) than these headers, never
 * smaller than ABI 1.0 made them. The minimums are the SDK's frozen 1.0
 * constants (qb_abi.h), never sizeof: sizeof grows with the first appended
 * field and would then refuse every 1.0 plugin. Fields after 1.0 are read
 * only under QB_HAS_FIELD. */
#define QBH_PLUGIN_SIZE_1_0 ((size_t)QB_PLUGIN_SIZE_1_0)
#define QBH_READER_SIZE_1_0 ((size_t)QB_READER_VTABLE_SIZE_1_0)
#define QBH_WRITER_SIZE_1_0 ((size_t)QB_WRITER_VTABLE_SIZE_1_0)
#define QBH_OPTION_SIZE_1_0 ((size_t)QB_OPTION_DECL_SIZE_1_0)

const char *qbh_load_state_name(qbh_load_state s)
{
    switch (s) {
    case QBH_LOAD_OK: return "OK";
    case QBH_LOAD_DISABLED: return "DISABLED";
    case QBH_LOAD_NO_LIBRARY: return "NO_LIBRARY";
    case QBH_LOAD_FILE_MISSING: return "FILE_MISSING";
    case QBH_LOAD_NOT_SHARED_OBJECT: return "NOT_SHARED_OBJECT";
    case QBH_LOAD_DLOPEN_FAILED: return "DLOPEN_FAILED";
    case QBH_LOAD_ENTRY_MISSING: return "ENTRY_MISSING";
    case QBH_LOAD_ABI_REFUSED: return "ABI_REFUSED";
    case QBH_LOAD_INIT_FAILED: return "INIT_FAILED";
    case QBH_LOAD_DESCRIPTOR_INVALID: return "DESCRIPTOR_INVALID";
    case QBH_LOAD_DUPLICATE_NAME: return "DUPLICATE_NAME";
    case QBH_LOAD_UNSAFE_PERMISSIONS: return "UNSAFE_PERMISSIONS";
    }
    return "?";
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

char *qbh_plugin_resolve(const qbh_plugin_conf *pc)
{
    const char *lib = pc->library;
    const char *env;
    char *exe = NULL, *last = NULL, *res = NULL;

    if (strchr(lib, '/')) {
        gchar *p;
        /* "./libx.so" (the conf's own directory): shown without the "./".
         * Nothing else is rewritten: "a/../b" may cross a symlink. */
        while (lib[0] == '.' && lib[1] == '/') {
            lib += 2;
            while (*lib == '/')
                lib++;
        }
        p = g_path_is_absolute(lib)
                ? g_strdup(lib)
                : g_build_filename(pc->lib_base ? pc->lib_base : ".", lib, NULL);
        res = qbh_strdup(p);
        g_free(p);
        return res;
    }
    /* Bare name: the search path only; never the cwd or the model dir. A
     * conf in a plugin directory names the library beside it first. */
    if (pc->lib_here && pc->lib_base) {
        last = g_build_filename(pc->lib_base, lib, NULL);
        if (file_exists(last))
            goto done;
    }
    env = secure_getenv("QUANTBRIDGE_PLUGIN_PATH");
    if (env && *env) {
        gchar **dirs = g_strsplit(env, ":", -1);
        size_t i;
        for (i = 0; dirs[i]; i++) {
            gchar *p;
            if (!g_path_is_absolute(dirs[i]))
                continue; /* would mean the cwd; config_layers.c warned */
            p = g_build_filename(dirs[i], lib, NULL);
            g_free(last);
            last = p;
            if (file_exists(p))
                break;
        }
        g_strfreev(dirs);
        if (last && file_exists(last))
            goto done;
    }
    /* The build tree always uses lib/quantbridge/plugins; an install may
     * use another libdir (lib/x86_64-linux-gnu on Debian), compiled in. */
    exe = qbh_exe_dir();
    if (exe) {
        static const char *const rel[] = {"lib/quantbridge/plugins", QBH_PLUGIN_REL_DIR};
        size_t i;
        for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            gchar *dir = g_build_filename(exe, "..", rel[i], NULL);
            char *canon = realpath(dir, NULL);
            g_free(last);
            last = g_build_filename(canon ? canon : dir, lib, NULL);
            free(canon);
            g_free(dir);
            if (file_exists(last))
                break;
        }
    }
done:
    if (last && file_exists(last)) {
        char *canon = realpath(last, NULL);
        if (canon) {
            res = qbh_strdup(canon);
            free(canon);
            g_free(last);
            qbh_free(exe);
            return res;
        }
    }
    res = qbh_strdup(last ? last : lib);
    g_free(last);
    qbh_free(exe);
    return res;
}

/* 1 when `file` (canonical) lies directly in the installation's own plugin
 * directory, <exe>/../lib/quantbridge/plugins or <exe>/../QBH_PLUGIN_REL_DIR:
 * the plugins that shipped with this host. */
static int is_bundled(const char *file)
{
    static const char *const rel[] = {"lib/quantbridge/plugins", QBH_PLUGIN_REL_DIR};
    char *exe = qbh_exe_dir(), *canon = realpath(file, NULL);
    gchar *fdir = canon ? g_path_get_dirname(canon) : NULL;
    int yes = 0;
    size_t i;
    for (i = 0; exe && fdir && !yes && i < sizeof rel / sizeof rel[0]; i++) {
        gchar *dir = g_build_filename(exe, "..", rel[i], NULL);
        char *cd = realpath(dir, NULL);
        yes = cd && strcmp(cd, fdir) == 0;
        free(cd);
        g_free(dir);
    }
    g_free(fdir);
    free(canon);
    qbh_free(exe);
    return yes;
}

void qbh_plugin_decide_trust(qbh_plugin *p)
{
    /* trusted= unset: the plugins that shipped with the host run in-process,
     * any other library has its probe contained (probe_fork.c). */
    p->contained = p->conf->trusted == 0 ||
                   (p->conf->trusted < 0 && !(p->library && is_bundled(p->library)));
}

/* Anyone may replace a world-writable library (or, in a world-writable
 * directory, rename another file over it): loading it would run whatever a
 * local user put there. 0 when safe, else the offending path in *what. */
static int unsafe_perms(const char *file, gchar **what)
{
    struct stat st;
    gchar *dir = g_path_get_dirname(file);
    int bad = 0;
    *what = NULL;
    if (stat(file, &st) == 0 && (st.st_mode & S_IWOTH)) {
        *what = g_strdup_printf("%s is world-writable", file);
        bad = 1;
    } else if (stat(dir, &st) == 0 && (st.st_mode & S_IWOTH)) {
        *what = g_strdup_printf("its directory %s is world-writable", dir);
        bad = 1;
    }
    g_free(dir);
    return bad;
}

/* Records a load failure in p and in the thread's error slot. */
static qb_status fail(qbh_plugin *p, qbh_load_state st, qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static qb_status fail(qbh_plugin *p, qbh_load_state st, qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qbh_error_setv(code, fmt, ap);
    va_end(ap);
    p->state = st;
    qbh_free(p->error);
    p->error = qbh_strdup(qbh_error_message());
    return code;
}

static int name_ok(const char *s, int allow_dash)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        int ok = (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                 (allow_dash ? *s == '-' : *s == '_');
        if (!ok)
            return 0;
    }
    return 1;
}

static qb_status validate_option(const qb_plugin *d, size_t k, const char *file)
{
    const qb_option_decl *o = d->options[k];
    qb_param tmp;
    size_t j;

    if (o->struct_size < QBH_OPTION_SIZE_1_0)
        return qbh_error_set(QB_E_INVALID, "%s: option %zu: struct_size %u < %zu", file, k,
                             o->struct_size, QBH_OPTION_SIZE_1_0);
    if (!name_ok(o->name, 0))
        return qbh_error_set(QB_E_INVALID, "%s: option %zu: name '%s' is not [a-z0-9_]+", file,
                             k, o->name ? o->name : "(null)");
    if (o->type < QB_PARAM_BOOL || o->type > QB_PARAM_SIZE)
        return qbh_error_set(QB_E_INVALID, "%s: option %s: unknown type %d", file, o->name,
                             (int)o->type);
    if (o->choices && o->type != QB_PARAM_STRING)
        return qbh_error_set(QB_E_INVALID, "%s: option %s: choices on a non-string option", file,
                             o->name);
    if (o->choices && (!*o->choices))
        return qbh_error_set(QB_E_INVALID, "%s: option %s: empty choices", file, o->name);
    if (QB_HAS_FIELD(o, qb_option_decl, roles)) {
        if (o->roles & ~(uint32_t)QB_OPTION_ROLE_BOTH)
            return qbh_error_set(QB_E_INVALID, "%s: option %s: unknown role bits 0x%x (only "
                                 "QB_OPTION_ROLE_READER and QB_OPTION_ROLE_WRITER exist)", file,
                                 o->name, o->roles & ~(uint32_t)QB_OPTION_ROLE_BOTH);
        if ((o->roles & QB_OPTION_ROLE_READER) && !d->reader)
            return qbh_error_set(QB_E_INVALID, "%s: option %s is declared for the reader role "
                                 "but plugin %s has no reader", file, o->name, d->name);
        if ((o->roles & QB_OPTION_ROLE_WRITER) && !d->writer)
            return qbh_error_set(QB_E_INVALID, "%s: option %s is declared for the writer role "
                                 "but plugin %s has no writer", file, o->name, d->name);
    }
    /* One name may be declared once per role: a reader option and a
     * writer option of one plugin may share a name, as two options. */
    for (j = 0; j < k; j++) {
        uint32_t shared = qbh_option_roles(d->options[j]) & qbh_option_roles(o);
        if (shared && strcmp(d->options[j]->name, o->name) == 0)
            return qbh_error_set(QB_E_INVALID, "%s: option %s declared twice for the %s role",
                                 file, o->name,
                                 qbh_role_name(shared & QB_OPTION_ROLE_READER
                                                   ? QB_OPTION_ROLE_READER
                                                   : QB_OPTION_ROLE_WRITER));
    }
    if (o->default_value && qbh_option_parse(o, o->default_value, "default", &tmp))
        return qbh_error_set(QB_E_INVALID, "%s: option %s: invalid default: %s", file, o->name,
                             qbh_error_message());
    return QB_OK;
}

qb_status qbh_plugin_validate(const qb_plugin *d, uint32_t abi, const char *section,
                              const char *file)
{
    size_t k;
    if (!d)
        return qbh_error_set(QB_E_INVALID, "%s: entry returned QB_OK but no descriptor", file);
    if (d->struct_size < QBH_PLUGIN_SIZE_1_0)
        return qbh_error_set(QB_E_INVALID,
                             "%s: descriptor struct_size %u is smaller than the ABI 1.0 size %zu",
                             file, d->struct_size, QBH_PLUGIN_SIZE_1_0);
    if (d->abi != abi)
        return qbh_error_set(QB_E_INVALID,
                             "%s: descriptor says ABI %u.%u but negotiation agreed on %u.%u", file,
                             QB_ABI_GET_MAJOR(d->abi), QB_ABI_GET_MINOR(d->abi),
                             QB_ABI_GET_MAJOR(abi), QB_ABI_GET_MINOR(abi));
    if (!name_ok(d->name, 1))
        return qbh_error_set(QB_E_INVALID, "%s: plugin name '%s' is not [a-z0-9-]+", file,
                             d->name ? d->name : "(null)");
    if (section && strcmp(d->name, section) != 0)
        return qbh_error_set(QB_E_INVALID,
                             "%s: plugin calls itself '%s' but is configured as [plugin:%s] (a "
                             "conf section must be named after the plugin it loads: "
                             "[plugin:%s])", file, d->name, section, d->name);
    if (!d->version || !*d->version)
        return qbh_error_set(QB_E_INVALID, "%s: plugin %s has no version", file, d->name);
    if (!d->reader && !d->writer)
        return qbh_error_set(QB_E_INVALID, "%s: plugin %s provides neither reader nor writer",
                             file, d->name);
    if (d->reader) {
        const qb_reader_vtable *r = d->reader;
        if (r->struct_size < QBH_READER_SIZE_1_0)
            return qbh_error_set(QB_E_INVALID,
                                 "%s: reader vtable struct_size %u is smaller than the ABI 1.0 "
                                 "size %zu", file, r->struct_size, QBH_READER_SIZE_1_0);
        if (!r->probe || !r->open || !r->close || !r->get_model_info || !r->get_tensor_info ||
            !r->read_rows)
            return qbh_error_set(QB_E_INVALID, "%s: reader vtable lacks a required function", file);
        if (!r->get_grid_info != !r->read_grid)
            return qbh_error_set(QB_E_INVALID,
                                 "%s: reader vtable has only one of get_grid_info/read_grid", file);
    }
    if (d->writer) {
        const qb_writer_vtable *w = d->writer;
        if (w->struct_size < QBH_WRITER_SIZE_1_0)
            return qbh_error_set(QB_E_INVALID,
                                 "%s: writer vtable struct_size %u is smaller than the ABI 1.0 "
                                 "size %zu", file, w->struct_size, QBH_WRITER_SIZE_1_0);
        if (!w->supports || !w->begin || !w->write_tensor || !w->finish || !w->abort)
            return qbh_error_set(QB_E_INVALID, "%s: writer vtable lacks a required function", file);
    }
    for (k = 0; d->options && d->options[k]; k++) {
        qb_status rc = validate_option(d, k, file);
        if (rc)
            return rc;
    }
    return qbh_writer_caps_validate(d, file);
}

/* Reads the first bytes: a text file named .so must get its own message,
 * not dlopen's "invalid ELF header". */
int qbh_file_is_elf(const char *path, int *io_err)
{
    unsigned char m[4] = {0};
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *io_err = 0;
    if (fd < 0) {
        *io_err = errno;
        return 0;
    }
    n = read(fd, m, sizeof m);
    if (n < 0)
        *io_err = errno;
    close(fd);
    return n == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

unsigned qbh_plugin_foreign_entry(void *dl, char *sym, size_t cap)
{
    unsigned m;
    for (m = 2; m <= 9; m++) {
        snprintf(sym, cap, "qb_plugin_entry_v%u", m);
        if (dlsym(dl, sym))
            return m;
    }
    if (cap)
        sym[0] = '\0';
    return 0;
}

qb_status qbh_plugin_load(qbh_plugin *p)
{
    const char *file;
    void *dl;
    qb_plugin_entry_fn entry;
    qb_negotiation neg;
    const qb_plugin *desc = NULL;
    qb_status rc;
    int io_err = 0;
    size_t i;

    if (p->conf)
        qbh_plugin_decide_trust(p); /* shown even when loading fails */
    if (!p->conf || !p->conf->library)
        return fail(p, QBH_LOAD_NO_LIBRARY, QB_E_NOT_FOUND,
                    "plugin %s: no layer defines it ([plugin:%s] in %s has no library=, so it "
                    "only adjusts a plugin of that name, and none is registered)", p->name,
                    p->name, p->conf && p->conf->seen_in ? p->conf->seen_in : "the config");
    qbh_free(p->library);
    p->library = qbh_plugin_resolve(p->conf);
    if (!p->library)
        return fail(p, QBH_LOAD_FILE_MISSING, QB_E_NOMEM, "plugin %s: out of memory", p->name);
    file = p->library;
    qbh_plugin_decide_trust(p);
    if (!file_exists(file))
        return fail(p, QBH_LOAD_FILE_MISSING, QB_E_NOT_FOUND,
                    "plugin %s: library %s not found (library=%s in %s)", p->name, file,
                    p->conf->library, p->conf->source ? p->conf->source : "config");
    {
        gchar *what = NULL;
        if (unsafe_perms(file, &what)) {
            qb_status r = fail(p, QBH_LOAD_UNSAFE_PERMISSIONS, QB_E_INVALID,
                               "plugin %s: refused: %s (anyone could replace the code this "
                               "host would run; chmod o-w)", p->name, what);
            g_free(what);
            return r;
        }
    }
    if (!qbh_file_is_elf(file, &io_err))
        return fail(p, QBH_LOAD_NOT_SHARED_OBJECT, QB_E_FORMAT,
                    "plugin %s: %s is not a shared object (%s)", p->name, file,
                    io_err ? strerror(io_err) : "no ELF header");

    dlerror();
    dl = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dl) {
        const char *e = dlerror();
        return fail(p, QBH_LOAD_DLOPEN_FAILED, QB_E_IO, "plugin %s: dlopen %s failed: %s",
                    p->name, file, e ? e : "unknown error");
    }
    p->dl = dl;
    /* dlopen hands back the same handle for a library already loaded: a
     * second entry call would re-point the plugin's saved qb_host at this
     * section. One library, one plugin. */
    for (i = 0; p->reg && i < p->reg->n_plugins; i++) {
        qbh_plugin *o = p->reg->plugins[i];
        if (o != p && o->dl == dl)
            return fail(p, QBH_LOAD_DUPLICATE_NAME, QB_E_INVALID,
                        "plugin %s: %s is the library already loaded for plugin %s", p->name,
                        file, o->name);
    }
    *(void **)&entry = dlsym(dl, QB_PLUGIN_ENTRY_SYMBOL);
    if (!entry) {
        char sym[32];
        /* A library built for another ABI major exports a differently named
         * entry (qb_plugin_entry_v<MAJOR>): say so instead of "missing". */
        i = qbh_plugin_foreign_entry(dl, sym, sizeof sym);
        if (i)
            return fail(p, QBH_LOAD_ENTRY_MISSING, QB_E_ABI,
                        "plugin %s: %s exports %s (built for ABI major %zu); this host "
                        "speaks ABI %u.%u to %u.%u and needs %s", p->name, file, sym, i,
                        QB_ABI_GET_MAJOR(QBH_ABI_MIN), QB_ABI_GET_MINOR(QBH_ABI_MIN),
                        QB_ABI_MAJOR, QB_ABI_MINOR, QB_PLUGIN_ENTRY_SYMBOL);
        return fail(p, QBH_LOAD_ENTRY_MISSING, QB_E_NOT_FOUND,
                    "plugin %s: %s does not export %s (not a quantbridge plugin?)", p->name, file,
                    QB_PLUGIN_ENTRY_SYMBOL);
    }

    qbh_services_init(p);
    memset(&neg, 0, sizeof neg);
    neg.struct_size = sizeof neg; /* the host's own struct: its size, not 1.0's */
    neg.host_abi_min = QBH_ABI_MIN;
    neg.host_abi_max = QB_ABI_CURRENT;
    /* Only what the entry itself says with set_error is its refusal text. */
    qbh_error_clear();
    QBH_CALL(p, "qb_plugin_entry_v1", p->library, rc = entry(&neg, &p->host, &desc));
    if (rc == QB_E_ABI || (rc == QB_OK && (neg.plugin_abi < QBH_ABI_MIN ||
                                            neg.plugin_abi > QB_ABI_CURRENT))) {
        char pa[48], why[1024];
        if (neg.plugin_abi)
            snprintf(pa, sizeof pa, "plugin speaks ABI %u.%u", QB_ABI_GET_MAJOR(neg.plugin_abi),
                     QB_ABI_GET_MINOR(neg.plugin_abi));
        else
            snprintf(pa, sizeof pa, "plugin names no ABI");
        if (rc != QB_OK && qbh_error_message()[0]) {
            snprintf(why, sizeof why, "%s", qbh_error_message());
            return fail(p, QBH_LOAD_ABI_REFUSED, QB_E_ABI,
                        "plugin %s: %s: ABI refused: %s (%s, host offers %u.%u to %u.%u)",
                        p->name, file, why, pa, QB_ABI_GET_MAJOR(QBH_ABI_MIN),
                        QB_ABI_GET_MINOR(QBH_ABI_MIN), QB_ABI_MAJOR, QB_ABI_MINOR);
        }
        return fail(p, QBH_LOAD_ABI_REFUSED, QB_E_ABI,
                    "plugin %s: %s: ABI refused: %s, host offers %u.%u to %u.%u", p->name, file,
                    pa, QB_ABI_GET_MAJOR(QBH_ABI_MIN), QB_ABI_GET_MINOR(QBH_ABI_MIN),
                    QB_ABI_MAJOR, QB_ABI_MINOR);
    }
    if (rc != QB_OK) {
        char msg[1024], code[48];
        /* A status this host does not know is QB_E_INTERNAL (qb_abi.h). */
        if (strcmp(qbh_status_name(rc), "QB_E_UNKNOWN") == 0 || rc > 0) {
            snprintf(code, sizeof code, "status %d", (int)rc);
            rc = QB_E_INTERNAL;
        } else
            snprintf(code, sizeof code, "%s", qbh_status_name(rc));
        snprintf(msg, sizeof msg, "%s", qbh_error_message()[0] ? qbh_error_message()
                                                               : "the plugin gave no reason");
        return fail(p, QBH_LOAD_INIT_FAILED, rc, "plugin %s: %s: initialisation failed (%s): %s",
                    p->name, file, code, msg);
    }
    p->abi = neg.plugin_abi;

    /* Duplicate check before the section-name check: a second library that
     * claims an already loaded name deserves that exact diagnosis. */
    if (desc && QB_HAS_FIELD(desc, qb_plugin, name) &&
        desc->name && p->reg) {
        for (i = 0; i < p->reg->n_plugins; i++) {
            qbh_plugin *o = p->reg->plugins[i];
            if (o != p && o->state == QBH_LOAD_OK && strcmp(o->desc->name, desc->name) == 0)
                return fail(p, QBH_LOAD_DUPLICATE_NAME, QB_E_INVALID,
                            "plugin %s: %s declares the name '%s', already provided by %s",
                            p->name, file, desc->name, o->library);
        }
    }
    rc = qbh_plugin_validate(desc, p->abi, p->name, file);
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", qbh_error_message());
        return fail(p, QBH_LOAD_DESCRIPTOR_INVALID, rc,
                    "plugin %s (registered in %s): invalid descriptor: %s", p->name,
                    p->conf->source, msg);
    }
    p->desc = desc;
    p->state = QBH_LOAD_OK;
    return QB_OK;
}
