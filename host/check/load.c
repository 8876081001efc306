/*
 * quantbridge plugin-check — the library, the entry, negotiation over
 * every ABI 1.x minor, the descriptor and the option declarations.
 *
 * The load steps are the host's (docs/plugin-design.md, "Discovery and load
 * sequence"): the ELF test, dlopen flags, the other-major entry names and
 * qbh_plugin_validate come from plugin_load.c, the services table from
 * services.c, the default parameters from options.c, so a plugin passes
 * here exactly when the host would load it.
 */
#include "plugin_check.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

/* struct_size of the services table a host of minor m hands out: an older
 * host's table ends earlier, and a plugin must check QB_HAS_FIELD before
 * reading past it. Minors beyond this table get the whole table. */
static const size_t host_size_of_minor[] = {QB_HOST_SIZE_1_0, QB_HOST_SIZE_1_1,
                                            QB_HOST_SIZE_1_1 /* 1.2 added no service */};

#define N_HOST_SIZES (sizeof host_size_of_minor / sizeof host_size_of_minor[0])

/* Opens the library as plugin_load.c does and returns its entry; any
 * failure ends the child with a FAIL naming the step. */
static qb_plugin_entry_fn open_library(const qbh_pc_session *s, void **dl_out)
{
    qb_plugin_entry_fn entry;
    unsigned major;
    char sym[32];
    int io_err = 0;
    void *dl;

    qbh_pc_ctx("reading the ELF header of %s", s->lib);
    if (!qbh_file_is_elf(s->lib, &io_err))
        qbh_pc_result(QBH_PC_FAIL, "%s is not an ELF shared object (%s)", s->lib,
                      io_err ? strerror(io_err) : "no ELF header");
    qbh_pc_ctx("dlopen %s", s->lib);
    dlerror();
    dl = dlopen(s->lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dl) {
        const char *e = dlerror();
        qbh_pc_result(QBH_PC_FAIL, "dlopen(RTLD_NOW) failed: %s", e ? e : "unknown error");
    }
    *(void **)&entry = dlsym(dl, QB_PLUGIN_ENTRY_SYMBOL);
    if (!entry) {
        major = qbh_plugin_foreign_entry(dl, sym, sizeof sym);
        if (major)
            qbh_pc_result(QBH_PC_FAIL,
                          "exports %s (built for ABI major %u) and not %s: this host speaks ABI "
                          "%u.0 to %u.%u", sym, major, QB_PLUGIN_ENTRY_SYMBOL, QB_ABI_MAJOR,
                          QB_ABI_MAJOR, QB_ABI_MINOR);
        qbh_pc_result(QBH_PC_FAIL, "does not export %s (not a quantbridge plugin?)",
                      QB_PLUGIN_ENTRY_SYMBOL);
    }
    *dl_out = dl;
    return entry;
}

/* Fills the part of *p a load needs before the entry: file, handle, a name
 * for log lines until the descriptor says its own. */
static void plugin_init(const qbh_pc_session *s, void *dl, qbh_plugin *p)
{
    memset(p, 0, sizeof *p);
    p->name = g_path_get_basename(s->lib); /* the child's, until it exits */
    p->library = s->lib;
    p->dl = dl;
    p->state = QBH_LOAD_INIT_FAILED;
}

/* Calls the entry as a host of ABI 1.minor: range [1.0, 1.minor], that
 * host's services table (an older host's is shorter, its newer fields
 * absent). */
static qb_status call_entry(qbh_plugin *p, qb_plugin_entry_fn entry, unsigned minor,
                            qb_negotiation *neg, const qb_plugin **desc)
{
    qbh_services_init(p);
    if (minor < QB_ABI_MINOR && minor < N_HOST_SIZES) {
        size_t n = host_size_of_minor[minor];
        memset((char *)&p->host + n, 0, sizeof p->host - n);
        p->host.struct_size = (uint32_t)n;
        p->host.abi = QB_MAKE_ABI(QB_ABI_MAJOR, minor);
    }
    memset(neg, 0, sizeof *neg);
    neg->struct_size = sizeof *neg;
    neg->host_abi_min = QBH_PC_ABI_MIN;
    neg->host_abi_max = QB_MAKE_ABI(QB_ABI_MAJOR, minor);
    *desc = NULL;
    qbh_error_clear();
    return entry(neg, &p->host, desc);
}

/* "1.3", or "unset" for 0. */
static const char *abi_text(uint32_t abi, char buf[32])
{
    if (abi == 0)
        snprintf(buf, 32, "unset");
    else
        snprintf(buf, 32, "%u.%u", QB_ABI_GET_MAJOR(abi), QB_ABI_GET_MINOR(abi));
    return buf;
}

/* The plugin's message for the last failure, or a note that it set none. */
static const char *plugin_message(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", qbh_error_message()[0] ? qbh_error_message() : "(no message set)");
    return buf;
}

void qbh_pc_child_load(const qbh_pc_session *s, qbh_plugin *p)
{
    static qbh_plugin_conf conf;
    const qb_plugin *desc = NULL;
    qb_plugin_entry_fn entry;
    qb_negotiation neg;
    char msg[QBH_PC_MSG], a[32];
    qb_status rc;
    void *dl;

    entry = open_library(s, &dl);
    plugin_init(s, dl, p);
    qbh_pc_ctx("%s with host range %u.0 to %u.%u", QB_PLUGIN_ENTRY_SYMBOL, QB_ABI_MAJOR,
               QB_ABI_MAJOR, QB_ABI_MINOR);
    rc = call_entry(p, entry, QB_ABI_MINOR, &neg, &desc);
    if (rc != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "the entry fails (%s): %s", qbh_status_name(rc),
                      plugin_message(msg, sizeof msg));
    if (neg.plugin_abi < QBH_PC_ABI_MIN || neg.plugin_abi > QB_ABI_CURRENT)
        qbh_pc_result(QBH_PC_FAIL, "the entry answers ABI %s, outside the host range",
                      abi_text(neg.plugin_abi, a));
    if (qbh_plugin_validate(desc, neg.plugin_abi, NULL, s->lib) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "the host refuses the descriptor: %s", qbh_error_message());
    p->desc = desc;
    p->abi = neg.plugin_abi;
    p->name = strdup(desc->name);
    if (!p->name)
        qbh_pc_result(QBH_PC_FAIL, "out of memory");
    conf.name = p->name;
    conf.library = p->library;
    conf.enabled = 1;
    conf.priority = 50;
    conf.trusted = 1;
    p->conf = &conf;
    pthread_mutex_init(&p->read_lock, NULL);
    p->state = QBH_LOAD_OK;
}

void qbh_pc_default_params(const qbh_plugin *p, uint32_t role, qbh_params *out)
{
    qbh_pc_ctx("building the default parameters");
    if (qbh_params_build(p->desc, role, p->conf, NULL, 0, out) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "the default %s parameters cannot be built: %s",
                      qbh_role_name(role), qbh_error_message());
}

void qbh_pc_check_load(const qbh_pc_session *s, void *arg)
{
    void *dl;
    (void)arg;
    (void)open_library(s, &dl);
    qbh_pc_result(QBH_PC_PASS, "ELF shared object, dlopen(RTLD_NOW) resolves every symbol, "
                  "exports %s", QB_PLUGIN_ENTRY_SYMBOL);
}

void qbh_pc_check_negotiation(const qbh_pc_session *s, void *arg)
{
    unsigned minor = (unsigned)(uintptr_t)arg;
    uint32_t max = QB_MAKE_ABI(QB_ABI_MAJOR, minor);
    const qb_plugin *desc = NULL;
    qb_plugin_entry_fn entry;
    qb_negotiation neg;
    qbh_plugin p;
    char msg[QBH_PC_MSG], a[32];
    qb_status rc;
    void *dl;

    entry = open_library(s, &dl);
    plugin_init(s, dl, &p);
    qbh_pc_ctx("%s with host range %u.0 to %u.%u (a %u.%u services table)",
               QB_PLUGIN_ENTRY_SYMBOL, QB_ABI_MAJOR, QB_ABI_MAJOR, minor, QB_ABI_MAJOR, minor);
    rc = call_entry(&p, entry, minor, &neg, &desc);
    plugin_message(msg, sizeof msg);
    if (rc == QB_E_ABI) {
        /* qb_plugin.h: on a refusal plugin_abi says what it would need */
        if (minor < QB_ABI_MINOR && QB_ABI_GET_MAJOR(neg.plugin_abi) == QB_ABI_MAJOR &&
            neg.plugin_abi > max)
            qbh_pc_result(QBH_PC_PASS, "refuses %u.%u: %s (needs %s)", QB_ABI_MAJOR, minor, msg,
                          abi_text(neg.plugin_abi, a));
        if (minor == QB_ABI_MINOR)
            qbh_pc_result(QBH_PC_FAIL, "refuses %u.%u, the newest ABI this host speaks (it says "
                          "it needs %s): %s", QB_ABI_MAJOR, minor, abi_text(neg.plugin_abi, a),
                          msg);
        qbh_pc_result(QBH_PC_FAIL, "refuses %u.%u without saying it needs a newer %u.x "
                      "(plugin_abi %s): %s", QB_ABI_MAJOR, minor, QB_ABI_MAJOR,
                      abi_text(neg.plugin_abi, a), msg);
    }
    if (rc != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "the entry fails (%s): %s", qbh_status_name(rc), msg);
    if (neg.plugin_abi < QBH_PC_ABI_MIN || neg.plugin_abi > max)
        qbh_pc_result(QBH_PC_FAIL, "answers ABI %s, outside the host range %u.0 to %u.%u",
                      abi_text(neg.plugin_abi, a), QB_ABI_MAJOR, QB_ABI_MAJOR, minor);
    if (!desc)
        qbh_pc_result(QBH_PC_FAIL, "answers %s but returns no descriptor",
                      abi_text(neg.plugin_abi, a));
    /* negotiated: what remains is the descriptor's own check */
    qbh_pc_value("entry", "ok");
    /* abi equal to the answer, every struct at least its 1.0 size, ... */
    if (qbh_plugin_validate(desc, neg.plugin_abi, NULL, s->lib) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "speaks %s but the host refuses its descriptor: %s",
                      abi_text(neg.plugin_abi, a), qbh_error_message());
    qbh_pc_result(QBH_PC_PASS, "speaks %s", abi_text(neg.plugin_abi, a));
}

void qbh_pc_check_descriptor(const qbh_pc_session *s, void *arg)
{
    const qb_plugin *d;
    qbh_plugin p;
    size_t n_opt = 0;
    char a[32];
    (void)arg;

    qbh_pc_child_load(s, &p);
    d = p.desc;
    qbh_pc_value("name", "%s", d->name);
    qbh_pc_value("version", "%s", d->version);
    qbh_pc_value("reader", "%d", d->reader != NULL);
    qbh_pc_value("writer", "%d", d->writer != NULL);
    qbh_pc_value("concurrent", "%d", (d->flags & QB_PLUGIN_CONCURRENT_READS) != 0);
    /* qb_plugin.h: the one line `quantbridge plugins` shows; no "or NULL" */
    if (!d->description || !*d->description)
        qbh_pc_result(QBH_PC_FAIL, "%s has no description (qb_plugin.description: one line for "
                      "`quantbridge plugins`)", d->name);
    while (d->options && d->options[n_opt])
        n_opt++;
    qbh_pc_result(QBH_PC_PASS, "%s %s, ABI %s: %s%s%s%s, %zu option%s", d->name, d->version,
                  abi_text(p.abi, a), d->reader ? "reader" : "", d->reader && d->writer ? " and " : "",
                  d->writer ? "writer" : "",
                  (d->flags & QB_PLUGIN_CONCURRENT_READS) ? " (concurrent reads)" : "", n_opt,
                  n_opt == 1 ? "" : "s");
}

void qbh_pc_check_options(const qbh_pc_session *s, void *arg)
{
    const qb_option_decl *const *decl;
    char names[1024] = "";
    qbh_params pp;
    qbh_plugin p;
    size_t k, n = 0, used = 0;
    int r;
    (void)arg;

    qbh_pc_child_load(s, &p);
    decl = p.desc->options;
    if (!decl || !decl[0])
        qbh_pc_result(QBH_PC_PASS, "no options declared");
    /* The array a reader's open or a writer's begin receives: every option
     * declared for that role once, at its default (set exactly when it has
     * one). */
    for (r = 0; r < 2; r++) {
        uint32_t role = r == 0 ? QB_OPTION_ROLE_READER : QB_OPTION_ROLE_WRITER;
        if (!(r == 0 ? (const void *)p.desc->reader : (const void *)p.desc->writer))
            continue;
        qbh_pc_default_params(&p, role, &pp);
        for (k = 0; decl[k]; k++) {
            const qb_option_decl *o = decl[k];
            size_t j, seen = 0;
            if (!(qbh_option_roles(o) & role))
                continue;
            for (j = 0; j < pp.n; j++) {
                const qb_param *v = &pp.items[j];
                if (strcmp(v->key, o->name) != 0)
                    continue;
                seen++;
                if (v->type != o->type || v->is_set != (o->default_value != NULL))
                    qbh_pc_result(QBH_PC_FAIL,
                                  "%s option %s: its default parameter is %s, is_set %d",
                                  qbh_role_name(role), o->name, qbh_param_type_name(v->type),
                                  v->is_set);
            }
            if (seen != 1)
                qbh_pc_result(QBH_PC_FAIL, "%s option %s appears %zu times in the parameter array",
                              qbh_role_name(role), o->name, seen);
        }
        qbh_params_free(&pp);
    }
    for (k = 0; decl[k]; k++) {
        if (used < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n ? ", " : "",
                                     decl[k]->name);
        n++;
    }
    qbh_pc_result(QBH_PC_PASS, "%zu option%s (%s): names unique, defaults parse under their "
                  "declarations", n, n == 1 ? "" : "s", names);
}
