/*
 * quantbridge host core (host/, qbh_core) — its one header (the role
 * sqliteInt.h plays in SQLite). The host's other libraries (host/pipeline,
 * host/verify, host/check, host/cli) build on it; the model library and the
 * tokenizer (host/model, host/tokenizer) do not: they see the SDK only.
 * Nothing here crosses the SDK boundary: plugins see only the SDK headers
 * (sdk/include/quantbridge).
 *
 * Layout (one concept per file):
 *   error.c       per-thread error slot (qb_host.set_error)
 *   alloc.c       the one allocator, with a fault-injection countdown
 *   config.c      config file lookup and GKeyFile merge
 *   config_layers.c  the ordered plugin registration layers
 *   plugin_load.c dlopen, entry, negotiation, descriptor validation
 *   registry.c    the set of configured plugins and lookups
 *   services.c    the qb_host table served to each plugin
 *   json.c        the JSON service (qb_json.h) over the kit's strict
 *                 parser (sdk/kit/qbk_json.c); json_emit.c its emitter
 *                 (json_node.h: the node layout)
 *   threadpool.c  the fixed pthread pool behind parallel_for
 *   options.c     typed option parsing/validation, qb_param arrays
 *   probe.c       probe input and reader arbitration
 *   model_src.c   qb_model_src forwarding to a reader
 *   model_facts.c qb_model_facts from the config and the tensor list
 *   source_views.c  the reader's stored-tensor and metadata views
 *   sink.c        qb_sink over a directory; sha256.c FIPS 180-4
 *   outdir.c      output-path safety, temp dir, rename, cleanup
 *   signals.c     SIGINT/SIGTERM -> cancel flag
 *   fatal.c       SIGBUS (source changed under a mapping) -> clean exit
 *   stale.c       leftover temp dirs of dead runs: proof and removal
 *   probe_fork.c  probing an untrusted plugin in a forked child
 *   testhooks.c   test-only fault hooks read from the environment
 *   objects.c     live host-service objects by maker (plugin-check's leaks)
 *   services_13.c the ABI 1.3 services: SHA-256, map_file, hf_config_clean
 *   progress.c    progress display
 *   build_info.c  configure-time facts (--version, verify's report)
 *
 * Conventions: functions return qb_status (0 or a negative QB_E_*) and set
 * the calling thread's error message with qbh_error_set() on failure.
 */
#ifndef QBH_H
#define QBH_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <quantbridge/quantbridge.h>

#include "qbk_sha256.h"

#define QBH_VERSION_STRING "0.1.0"

/* CLI exit codes. */
#define QBH_EXIT_OK 0
#define QBH_EXIT_FAIL 1
#define QBH_EXIT_USAGE 2
#define QBH_EXIT_VERIFY 3 /* a verify ran and the comparison failed */

/* ---- error.c -------------------------------------------------------------- */

/* Records `code` and a formatted message in the calling thread's error slot
 * (replacing what was there) and returns `code`. Never fails: long messages
 * are truncated. Thread-safe (the slot is thread-local). */
qb_status qbh_error_set(qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
qb_status qbh_error_setv(qb_status code, const char *fmt, va_list ap);
/* The calling thread's last message ("" when none) and code. The pointer is
 * valid until the next qbh_error_* call on this thread. */
const char *qbh_error_message(void);
qb_status qbh_error_code(void);
/* Clears the calling thread's slot. */
void qbh_error_clear(void);
/* Short name of a status code ("QB_E_FORMAT"); "QB_E_UNKNOWN" otherwise. */
const char *qbh_status_name(qb_status code);

/* ---- alloc.c -------------------------------------------------------------- */

/* malloc/free routed through one place so tests can inject failures.
 * qbh_alloc returns NULL on failure, including an injected one; it never
 * sets an error message (callers do). Thread-safe. */
void *qbh_alloc(size_t n);
void *qbh_calloc(size_t n, size_t size);
void qbh_free(void *p);
char *qbh_strdup(const char *s);
/* After `n` more successful allocations the next one fails (and every one
 * after it, until reset); n < 0 disables injection. For tests. */
void qbh_alloc_fail_after(long n);
/* Number of allocations refused by injection since the process started. */
long qbh_alloc_refused(void);
/* Counts one allocation made by another allocator (cJSON's, json_node.h)
 * against the injection countdown: 0 when injection refuses it (the caller
 * then fails as if out of memory), 1 otherwise. Thread-safe. */
int qbh_alloc_admit(void);
/* Blocks qbh_alloc/qbh_calloc/qbh_strdup (and so qb_host.alloc) returned
 * and qbh_free has not yet released, and blocks returned in all, since the
 * process started. A plugin call that frees what it allocates leaves
 * qbh_alloc_live unchanged. Thread-safe (atomic; a value read while other
 * threads allocate is already stale). */
long qbh_alloc_live(void);
long qbh_alloc_made(void);

/* ---- config.c ------------------------------------------------------------- */

typedef struct qbh_kv {
    char *key;
    char *value;
} qbh_kv;

/* Where registration is read from, in reading order (config.c). */
typedef enum qbh_layer_kind {
    QBH_LAYER_BUILTIN = 0, /* the installation's plugins.d (the built-ins) */
    QBH_LAYER_USER,        /* $XDG_CONFIG_HOME/quantbridge/plugins.d */
    QBH_LAYER_CONFIG_DIR,  /* plugins.d beside a --config / $QUANTBRIDGE_CONFIG file */
    QBH_LAYER_PATH,        /* one directory of $QUANTBRIDGE_PLUGIN_PATH */
    QBH_LAYER_PLUGIN_DIR,  /* one --plugin-dir directory */
    QBH_LAYER_MAIN         /* the main file */
} qbh_layer_kind;

/* One layer as consulted: read, or skipped with the reason. */
typedef struct qbh_conf_layer {
    qbh_layer_kind kind;
    char *path;          /* directory (the main file for QBH_LAYER_MAIN); canonical when it exists */
    const char *skipped; /* NULL when read; else why not (static text: "absent",
                            "already read", "world-writable: refused", "not absolute: ignored") */
} qbh_conf_layer;

/* One [plugin:NAME] after merging every layer. */
typedef struct qbh_plugin_conf {
    char *name;       /* NAME of the section */
    char *library;    /* as written; NULL when no layer defines the plugin */
    char *lib_base;   /* directory of the file that set `library` */
    char *source;     /* file whose section defines it (has library=), or NULL */
    char *seen_in;    /* first file with a [plugin:NAME] section (for messages) */
    qbh_layer_kind layer; /* layer of `source` */
    int lib_here;     /* 1: a bare `library` is looked for in lib_base first
                         (defined in a plugin directory: PATH or --plugin-dir) */
    int enabled;      /* default 1 */
    int priority;     /* default 50 */
    int trusted;      /* 1 / 0 as configured; -1 (default): decided by where
                         the library lies (plugin_load.c) */
    qbh_kv *options;  /* option.KEY values, KEY without the prefix */
    size_t n_options;
} qbh_plugin_conf;

typedef struct qbh_config {
    char *path;          /* main file, or NULL when none was found */
    int min_probe_score; /* [general] min-probe-score, default 50 */
    int probe_timeout_s; /* [general] probe-timeout (untrusted plugins), default 5 */
    qbh_plugin_conf *plugins; /* sorted by name */
    size_t n_plugins;
    qbh_conf_layer *layers;   /* every layer consulted, in reading order */
    size_t n_layers;
    int main_trusts;     /* the main file may say trusted=true: it is the
                            installation's, or named with --config (or given
                            to qbh_config_load); not $QUANTBRIDGE_CONFIG's,
                            not the user's own */
} qbh_config;

/* Short name of a layer kind ("built-in", "user", "config-dir",
 * "plugin-path", "plugin-dir", "config"). */
const char *qbh_layer_kind_name(qbh_layer_kind k);

/* Finds the main config file: `cli_path` (if non-NULL), $QUANTBRIDGE_CONFIG,
 * $XDG_CONFIG_HOME/quantbridge/quantbridge.conf (or ~/.config/...),
 * <exe>/../etc/quantbridge/quantbridge.conf, the compiled-in sysconfdir;
 * first found wins. An explicitly named file (argument or variable) that
 * does not exist is QB_E_NOT_FOUND. *out is NULL with QB_OK when nothing
 * was found. Environment is read with secure_getenv. Caller frees *out
 * with qbh_free. */
qb_status qbh_config_locate(const char *cli_path, char **out);

/* What qbh_config_open reads besides the fixed places. */
typedef struct qbh_config_request {
    const char *config;        /* --config FILE, or NULL */
    char *const *plugin_dirs;  /* --plugin-dir directories (absolute), in order */
    size_t n_plugin_dirs;
    const char *builtin_dir;   /* the built-in plugins.d; NULL: located
                                  (<exe>/../etc/quantbridge/plugins.d, else
                                  the sysconfdir's); set by tests */
} qbh_config_request;

/* Additive registration (conf/quantbridge.conf documents it for users):
 * reads the *.conf files, by name within each directory, of these layers
 * in order: the built-in plugins.d, the user's plugins.d, the plugins.d
 * beside an explicitly named main file (--config or $QUANTBRIDGE_CONFIG),
 * each absolute $QUANTBRIDGE_PLUGIN_PATH directory (a relative entry is
 * warned about and ignored), each req->plugin_dirs directory; then the
 * main file (qbh_config_locate(req->config)), the only one whose [general]
 * counts. A directory already read, absent, or world-writable (refused,
 * with a warning) is listed in cfg->layers with the reason and not read.
 * A section with library= defines the plugin; a second definition of a
 * name is QB_E_INVALID naming both files unless the later section says
 * override=true (it then replaces the earlier definition and everything
 * said about the name before it). A section without library= adjusts:
 * its keys replace earlier values one by one. Errors (QB_E_FORMAT,
 * QB_E_IO, QB_E_INVALID, QB_E_NOT_FOUND for a missing explicit main file)
 * name the file and key; on failure *cfg is left empty. Environment is
 * read with secure_getenv. Main thread only. Free with qbh_config_free. */
qb_status qbh_config_open(const qbh_config_request *req, qbh_config *cfg);

/* config_layers.c: appends to cfg->layers the layers qbh_config_open reads,
 * in order (the main file last, when main_path is non-NULL; main_explicit:
 * it was named by --config or $QUANTBRIDGE_CONFIG), each marked read or
 * skipped with the reason (warnings logged for a world-writable directory
 * and a relative $QUANTBRIDGE_PLUGIN_PATH entry). _beside: only the
 * plugins.d beside main_path, then main_path. QB_E_NOMEM. */
qb_status qbh_config_layers(const qbh_config_request *req, const char *main_path,
                            int main_explicit, qbh_config *cfg);
qb_status qbh_config_layers_beside(const char *main_path, qbh_config *cfg);

/* The parser alone, for tests and the fuzzer: `path` (may be NULL: empty
 * config) as the main file, after the plugins.d beside it as the only
 * other layer; no built-ins, no environment. Same rules and errors as
 * qbh_config_open. */
qb_status qbh_config_load(const char *path, qbh_config *cfg);
void qbh_config_free(qbh_config *cfg);
const qbh_plugin_conf *qbh_config_find_plugin(const qbh_config *cfg, const char *name);

/* Directory of the running executable (via /proc/self/exe), or NULL.
 * Caller frees with qbh_free. */
char *qbh_exe_dir(void);

/* ---- registry.c / plugin_load.c ------------------------------------------ */

typedef enum qbh_load_state {
    QBH_LOAD_OK = 0,
    QBH_LOAD_DISABLED,
    QBH_LOAD_NO_LIBRARY,          /* section without library= */
    QBH_LOAD_FILE_MISSING,
    QBH_LOAD_NOT_SHARED_OBJECT,
    QBH_LOAD_DLOPEN_FAILED,
    QBH_LOAD_ENTRY_MISSING,
    QBH_LOAD_ABI_REFUSED,
    QBH_LOAD_INIT_FAILED,
    QBH_LOAD_DESCRIPTOR_INVALID,
    QBH_LOAD_DUPLICATE_NAME,
    QBH_LOAD_UNSAFE_PERMISSIONS   /* file or its directory world-writable */
} qbh_load_state;

struct qbh_registry;

typedef struct qbh_plugin {
    char *name;                 /* config section name */
    char *library;              /* resolved path (or the raw name when unresolved) */
    const qbh_plugin_conf *conf;
    qbh_load_state state;
    char *error;                /* load failure text, or NULL */
    const qb_plugin *desc;      /* valid when state == QBH_LOAD_OK */
    void *dl;                   /* dlopen handle once opened (never closed) */
    uint32_t abi;               /* negotiated */
    qb_host host;               /* this plugin's services table */
    pthread_mutex_t read_lock;  /* serialises data calls without CONCURRENT_READS */
    struct qbh_registry *reg;
    int contained;              /* untrusted: probe runs in a forked child */
} qbh_plugin;

typedef struct qbh_registry {
    qbh_config cfg;
    qbh_plugin **plugins;       /* one per config section, sorted by name */
    size_t n_plugins;
} qbh_registry;

/* Short category name of a load state ("ENTRY_MISSING"). */
const char *qbh_load_state_name(qbh_load_state s);

/* Resolves the `library` value of `pc`: a bare name is searched in
 * pc->lib_base when pc->lib_here (its conf lies in a plugin directory),
 * then in each absolute $QUANTBRIDGE_PLUGIN_PATH directory, then in
 * <exe>/../lib/quantbridge/plugins (and the compiled-in plugin libdir);
 * never in the cwd. A name with '/' is relative to the directory of the
 * config file that set it (or absolute). Returns a new string (qbh_free) that is
 * the first existing candidate, or, when none exists, the last candidate
 * tried (so the FILE_MISSING message names it); NULL on OOM. */
char *qbh_plugin_resolve(const qbh_plugin_conf *pc);

/* Loads one plugin into `p` (already holding name/conf/reg): resolve,
 * dlopen(RTLD_NOW|RTLD_LOCAL|RTLD_NODELETE), entry, negotiation, descriptor
 * validation, duplicate check against reg's already-loaded plugins. Never
 * dlcloses. Sets p->state and p->error; returns QB_OK or QB_E_ABI/... with
 * the same message in the thread's error slot. Main thread only. */
qb_status qbh_plugin_load(qbh_plugin *p);

/* Sets p->contained from p->conf->trusted and p->library (resolved): with
 * trusted= unset, a library lying directly in the installation's own plugin
 * directory (<exe>/../lib/quantbridge/plugins or the compiled-in libdir) is
 * trusted (probed in-process), any other is contained (probed in a forked
 * child). Main thread only. */
void qbh_plugin_decide_trust(qbh_plugin *p);

/* Validates a descriptor returned by an entry function (exposed for unit
 * tests). `section` is the config name it must carry. Returns QB_OK or
 * QB_E_INVALID with a message. */
qb_status qbh_plugin_validate(const qb_plugin *d, uint32_t negotiated_abi, const char *section,
                              const char *file);

/* 1 when `path` starts with the ELF magic; 0 otherwise, with *io_err the
 * errno of a failed open/read (0 when the bytes were read and differ). */
int qbh_file_is_elf(const char *path, int *io_err);

/* The entry symbol of another ABI major that the dlopen handle `dl`
 * exports (qb_plugin_entry_v2 .. _v9): returns that major and writes the
 * symbol name into sym[cap]; 0 (sym "") when there is none. */
unsigned qbh_plugin_foreign_entry(void *dl, char *sym, size_t cap);

/* Loads the config (qbh_config_open with only `config_path`: no
 * --plugin-dir) and then every section's plugin, in name order. A plugin that fails is kept with its state and
 * error; the registry still works. Returns QB_OK, or an error only when the
 * config itself cannot be read. Main thread only. Free with
 * qbh_registry_free (calls each loaded plugin's teardown). */
qb_status qbh_registry_open(const char *config_path, qbh_registry *reg);
/* Same, from an already-loaded config (takes ownership of *cfg). */
qb_status qbh_registry_open_config(qbh_config *cfg, qbh_registry *reg);
void qbh_registry_free(qbh_registry *reg);
/* Plugin by name (any state), or NULL. */
qbh_plugin *qbh_registry_find(const qbh_registry *reg, const char *name);
/* Loaded plugins that provide a reader (want_reader) or a writer, sorted by
 * priority (descending) then name. Returns a qbh_alloc'd NULL-terminated
 * array (qbh_free), or NULL on OOM. */
qbh_plugin **qbh_registry_list(const qbh_registry *reg, int want_reader);

/* ---- services.c ----------------------------------------------------------- */

/* Process-wide runtime settings read by the services. */
typedef struct qbh_runtime {
    int verbose;         /* 0 quiet, 1 info, 2 debug */
    int progress_tty;    /* stderr is a terminal */
    uint32_t threads;    /* pool size including the calling thread */
} qbh_runtime;

extern qbh_runtime qbh_rt;

/* Fills p->host, the services table of plugin `p`. host_private = p. */
void qbh_services_init(qbh_plugin *p);
/* A services table not tied to a plugin (tests, the host itself). Static,
 * valid for the process lifetime. get_config always answers NULL. */
const qb_host *qbh_services_anonymous(void);
/* A services table for a component of the host itself that is written
 * against the SDK (the model library: "forward"): like the anonymous one,
 * but its log lines and progress stages carry `who` (shorter than 32
 * bytes). One static table per name, valid for the process lifetime; at
 * most 8 names. Thread-safe. */
const qb_host *qbh_services_named(const char *who);
/* Test hook (tests/support qbt_host_log): when set, every log line -- of any
 * level, before the verbosity filter -- is also handed to fn, formatted,
 * under the log lock (fn must not log). NULL removes it. Off in normal runs;
 * nothing in the host sets it. Thread-safe. */
typedef void (*qbh_log_hook_fn)(qb_log_level level, const char *who, const char *line);
void qbh_log_hook_set(qbh_log_hook_fn fn);
/* Host-side log with the same filtering as qb_host.log. */
void qbh_log(qb_log_level level, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The services as plain functions, for host code (same contracts as qb_host). */
qb_status qbh_read_small_file(const char *path, size_t max_len, void **data, size_t *len);
qb_status qbh_list_dir(const char *dir, char ***names);
void qbh_free_list(char **names);

/* ---- json.c / json_parse.c / json_emit.c --------------------------------- */

/* The JSON service every qb_host carries (qb_json.h); static. */
const qb_json_api *qbh_json_api(void);
/* qb_json_api.parse and .emit as host functions (same contracts; messages
 * go to the calling thread's error slot). */
qb_status qbh_json_parse(const char *what, const char *text, size_t len, qb_json **out);
qb_status qbh_json_emit(const qb_host *h, const qb_json *node, int indent, char **out,
                        size_t *len);
/* qbh_json_parse for code that builds its output with cJSON: the same
 * refusals and messages (naming `what`), the tree as the cJSON tree it is
 * (*out, cJSON_Delete; the kit parser's nodes, sdk/kit/qbk_json.h). A
 * cJSON * passed as struct cJSON so this header needs no cJSON. QB_OK,
 * the parser's error, QB_E_NOMEM. Thread-safe. */
struct cJSON;
qb_status qbh_json_parse_cjson(const char *what, const char *text, size_t len, struct cJSON **out);

/* ---- threadpool.c --------------------------------------------------------- */

/* Starts the process-wide pool with n_threads - 1 workers (the caller is the
 * n-th). n_threads 0 means the number of online CPUs. Idempotent: a second
 * call keeps the first pool. Returns QB_OK or QB_E_NOMEM/QB_E_INTERNAL. */
qb_status qbh_pool_start(uint32_t n_threads);
/* Joins the workers. Safe without a pool. */
void qbh_pool_stop(void);
/* Threads parallel_for may use (>= 1). */
uint32_t qbh_pool_threads(void);
/* qb_host.parallel_for semantics: runs fn(arg, i) for i in [0, n) on the
 * pool and the calling thread; after the first failure no new item starts;
 * returns that failure with its message moved to the caller's thread.
 * Calls from inside a worker item run serially. Without a pool, serial.
 * Concurrent top-level calls from different threads take turns. */
qb_status qbh_parallel_for(size_t n, qb_parallel_fn fn, void *arg);

/* ---- options.c ------------------------------------------------------------ */

/* A KEY=VALUE given by the user. KEY may be qualified by a role:
 * "reader.KEY" or "writer.KEY" (qbh_option_key_split). */
typedef struct qbh_opt {
    const char *key;
    const char *value;
    const char *origin;  /* "--option", "--group-size", or a config file */
    int used;            /* set when some plugin declared it */
} qbh_opt;

/* Parses `text` as option `d`'s type and checks range/choices. On success
 * fills *out (key/type/is_set/value; STRING values point into `text`).
 * QB_E_INVALID with a message naming `origin` and the option. */
qb_status qbh_option_parse(const qb_option_decl *d, const char *text, const char *origin,
                           qb_param *out);

/* Parses a SIZE text ("4096", "5GB", "500MiB") into bytes. QB_E_INVALID on
 * junk or overflow. */
qb_status qbh_parse_size(const char *text, int64_t *out);

/* The QB_OPTION_ROLE_* bits declaration `d` applies to: its `roles` (ABI
 * 1.1), or both for 0 and for a 1.0-sized declaration. Pure. */
uint32_t qbh_option_roles(const qb_option_decl *d);
/* "reader" for QB_OPTION_ROLE_READER, else "writer". Pure. */
const char *qbh_role_name(uint32_t role);
/* Splits a command-line key: "reader.K" -> QB_OPTION_ROLE_READER, "writer.K"
 * -> QB_OPTION_ROLE_WRITER, anything else -> 0; *name points at K inside
 * `key`. Pure. */
uint32_t qbh_option_key_split(const char *key, const char **name);
/* The first option of descriptor `d` named `name` whose roles include
 * `role`, or NULL. Pure. */
const qb_option_decl *qbh_option_find(const qb_plugin *d, uint32_t role, const char *name);

/* Owned qb_param array for one plugin call. */
typedef struct qbh_params {
    qb_param *items;   /* n + 1 entries, last has type QB_PARAM_END */
    size_t n;
    char **strings;    /* copies the STRING values point into */
} qbh_params;

/* Builds the complete parameter array of one `role` (QB_OPTION_ROLE_READER
 * or _WRITER) of plugin descriptor `d`: every option declared for that
 * role (qbh_option_roles), filled from (lowest to highest precedence) its
 * default, `conf` values (the plugin's option.* keys) and `cli` entries,
 * in order, whose key names it unqualified or qualified by this role
 * (those get used = 1). Config keys it does not declare are left alone
 * (qbh_params_route warns about them). Invalid values are QB_E_INVALID
 * naming the origin. On failure *out is empty. Free with qbh_params_free. */
qb_status qbh_params_build(const qb_plugin *d, uint32_t role, const qbh_plugin_conf *conf,
                           qbh_opt *cli, size_t n_cli, qbh_params *out);
void qbh_params_free(qbh_params *p);
/* Builds the parameter arrays of the reader role of `reader` and the
 * writer role of `writer` (either may be NULL; the same plugin may be
 * both) from their config and `cli`. A cli key goes to each of those roles
 * that declares it; "reader.K"/"writer.K" name one role. Usage errors
 * (*usage = 1, nothing built): a key no role of the run declares
 * (QB_E_NOT_FOUND, the message lists the valid keys per role and which
 * other loaded plugins declare it); an unqualified key both roles declare
 * through different plugins or different declarations (QB_E_INVALID,
 * asking for reader.K or writer.K). A bad value is QB_E_INVALID (*usage = 1
 * when it came from the command line). Config option.K keys declared by
 * no role of their plugin are warned about once per plugin. On failure
 * both outputs are empty. Main thread (logs). */
qb_status qbh_params_route(qbh_plugin *reader, qbh_plugin *writer, qbh_opt *cli, size_t n_cli,
                           qbh_params *rp, qbh_params *wp, int *usage);
/* Name of a parameter type ("int"). */
const char *qbh_param_type_name(qb_param_type t);

/* ---- writer_caps.c -------------------------------------------------------- */

/* The capabilities writer descriptor `d` declares (qb_plugin.writer_caps,
 * read only when d's struct_size covers the field), or NULL: none declared
 * or not a writer. Pure. */
const qb_writer_caps *qbh_writer_caps(const qb_plugin *d);
/* d's QB_WRITER_SIDE_FILES_* bit (0: nobody writes side files). Pure. */
uint32_t qbh_writer_side_files(const qb_plugin *d);
/* Validates d's writer_caps (called by qbh_plugin_validate): struct_size
 * at least QB_WRITER_CAPS_SIZE_1_1, no unknown flag bits, not both
 * SIDE_FILES bits, no fact bit beyond QB_FACT_ALL, a non-empty
 * architecture list of non-empty names, verify_reader a plugin name.
 * QB_OK, or QB_E_INVALID with a message naming `file`. Pure otherwise. */
qb_status qbh_writer_caps_validate(const qb_plugin *d, const char *file);
/* Name of one QB_FACT_* bit ("layers", "tied_embeddings": the macro's
 * suffix in lower case), or NULL for any other value. Pure. */
const char *qbh_fact_name(uint32_t bit);
/* The names of the bits of `facts`, ", "-separated ("bit N" for a bit
 * without a name), into buf (always terminated, truncated to size). */
void qbh_fact_names(uint32_t facts, char *buf, size_t size);
/* c's architecture list, ", "-separated, into buf ("" for none). */
void qbh_writer_archs(const qb_writer_caps *c, char *buf, size_t size);
/* Before supports: QB_E_UNSUPPORTED naming `source`, the writer and its
 * declared architectures when w declares a list without
 * mi->architecture; QB_OK otherwise. */
qb_status qbh_writer_check_arch(const qbh_plugin *w, const qb_model_info *mi, const char *source);
/* Before begin: QB_E_UNSUPPORTED naming each fact w requires that
 * mi->facts does not know (facts NULL: none known); QB_OK otherwise. */
qb_status qbh_writer_check_facts(const qbh_plugin *w, const qb_model_info *mi, const char *source);

/* ---- probe.c -------------------------------------------------------------- */

typedef struct qbh_probe_in {
    qb_probe_input in;
    uint8_t *head_buf;
    char **siblings;
    char *config_json;
    char *main_file;
} qbh_probe_in;

/* Builds the probe input for `path` (file or directory): head = the first
 * 64 KiB of the file + QB_PROBE_PADDING zero bytes, siblings = sorted
 * directory listing, config_json = config.json of that directory when it
 * exists (> 4 MiB is QB_E_RANGE). Errors name the path. Free with
 * qbh_probe_in_free. */
qb_status qbh_probe_in_build(const char *path, qbh_probe_in *pi);
void qbh_probe_in_free(qbh_probe_in *pi);

typedef struct qbh_probe_score {
    qbh_plugin *plugin;
    int score;
} qbh_probe_score;

/* Calls every reader's probe (readers: NULL-terminated, as from
 * qbh_registry_list) and fills scores[] (same order, caller-sized). */
void qbh_probe_run(qbh_plugin *const *readers, const qb_probe_input *in, qbh_probe_score *scores);

/* Runs plugin p's probe in a forked child that has timeout_s seconds to
 * answer; the host survives a crash or hang of the probe. Returns the
 * score (0..100 as the plugin said), or -1 when the child crashed, timed
 * out or exited without answering; then a warning naming the plugin and
 * the signal (or "timed out") has been logged and the plugin should be
 * skipped for this run. Main thread only (fork). */
int qbh_probe_contained(qbh_plugin *p, const qb_probe_input *in, int timeout_s);

/* Picks the winner among n scores: highest score; a tie at the top is
 * broken by config priority; a remaining tie is QB_E_MISMATCH listing the
 * candidates; a winner below min_score (or 0) is QB_E_NOT_FOUND suggesting
 * --format. Pure. */
qb_status qbh_probe_choose(const qbh_probe_score *scores, size_t n, int min_score,
                           const char *path, qbh_plugin **winner);

/* Chooses the reader of `path`. `format` non-NULL and not "auto": that
 * plugin (unknown name or not a reader: QB_E_NOT_FOUND with *usage = 1;
 * known but not loaded: QB_E_UNSUPPORTED with its load error). Otherwise
 * probes every loaded reader and arbitrates with the config's
 * min-probe-score; *scores (qbh_free) and *n_scores report what each said
 * (also on an arbitration failure). */
qb_status qbh_select_reader(const qbh_registry *reg, const char *path, const char *format,
                            qbh_plugin **out, qbh_probe_score **scores, size_t *n_scores,
                            int *usage);

/* ---- model_src.c ---------------------------------------------------------- */

typedef struct qbh_source {
    qb_model_src src;          /* what the writer sees */
    qbh_plugin *reader;
    qb_reader_handle handle;
    qb_model_info info;        /* info.facts points at facts */
    qb_model_facts facts;      /* computed by the host (model_facts.c) */
    qb_tensor_info *tensors;   /* n_tensors copies (pointers owned by the reader) */
    void *by_name;             /* GHashTable name -> index+1 */
    int serialise;
    pthread_mutex_t info_lock;  /* instance-class queries never overlap */
    char *path;
    /* source statistics (stats.c): the reader's scale-block declarations,
     * read once on first success under info_lock (blocks[n_tensors], 0:
     * none declared), and the run's activation
     * statistics (not owned; set by the pipeline before the writer's begin) */
    int64_t *blocks;
    int blocks_read;
    const struct qbh_actstats *act;
} qbh_source;

/* Opens `path` with reader `p` and params, reads and validates the model
 * description (every tensor info well formed, names unique), and fills
 * *s->src. Errors name the reader, file and tensor. Free with
 * qbh_source_close (closes the reader). */
qb_status qbh_source_open(qbh_plugin *p, const char *path, const qb_param *params,
                          qbh_source *s);
void qbh_source_close(qbh_source *s);

/* The qbh_source behind a qb_model_src the host made (qbh_source_open),
 * or NULL for any other (a test's own, a fake). Pure. */
qbh_source *qbh_source_of(const qb_model_src *src);

/* The tokenizer a source states it does not give (qb_model_info ABI 1.3,
 * validated by qbh_source_open: a known state, no tokenizer_dir with it, a
 * note always set): "skipped" / "refused", or NULL when the state is
 * UNSTATED. Pure. */
const char *qbh_source_tokenizer_state(const qbh_source *s);

/* s's tokenizer_dir when it holds tokenizer.json (what the host's encoder
 * reads), else NULL. Reads the file system; thread-safe. */
const char *qbh_source_tokenizer_json_dir(const qbh_source *s);

/* The refusal of a command that needs the source's tokenizer files
 * (convert, forward --text) when the reader refused them: sets the
 * reader's note followed by the host's own way out, "; or give the
 * tokenizer files with --tokenizer DIR", and returns QB_E_UNSUPPORTED.
 * Precondition: s states QB_TOKENIZER_REFUSED. */
qb_status qbh_source_tokenizer_refused(const qbh_source *s);

/* ---- stats.c: the source statistics service (qb_stats.h) ------------------ */

/* Activation statistics of one source: per canonical tensor the mean of
 * x_j^2 over the tokens its input saw (qb_stats_api.importance). Built by
 * the calibration pass (host/pipeline) or from an imatrix file. */
typedef struct qbh_actstats {
    size_t n_tensors;  /* of the source */
    float **mean;      /* [n_tensors]: cols floats, or NULL (not covered) */
    int64_t *cols;     /* [n_tensors] */
    uint64_t *tokens;  /* [n_tensors] */
    char *origin;      /* "calibration FILE", "imatrix FILE" */
    /* The Hessian (qb_stats_api.hessian), collected on the first request
     * by hess_pass from the calibration tokens; NULL (imatrix): none. */
    struct qbh_hess *hess;
} qbh_actstats;

/* Per-run state of the Hessian service (stats.c serves it, the calibration
 * code fills it: host/cli/hessian.c). */
typedef struct qbh_hess {
    pthread_mutex_t lock;
    int64_t *ids;       /* the calibration tokens (owned) */
    size_t n_ids;
    uint64_t budget;    /* bytes of matrices held at once during a pass */
    char *spill_dir;    /* directory of the temporary file (owned), or NULL: $TMPDIR */
    /* Fills fd, off and tokens for every covered tensor of s; called once,
     * under lock, on the first request. QB_OK or an error (message set). */
    qb_status (*pass)(struct qbh_source *s, struct qbh_hess *hs);
    int done;           /* pass ran */
    qb_status rc;       /* its result */
    char *msg;          /* its message when rc != QB_OK (owned) */
    int fd;             /* the spill file (unlinked), -1 none */
    int64_t *off;       /* [n_tensors]: byte offset in fd, -1 none */
    int64_t *cols;      /* [n_tensors]: n of the matrix */
    uint64_t *tokens;   /* [n_tensors] */
    uint8_t *refused;   /* [n_tensors]: 1 when n * n floats exceed budget */
    uint64_t bytes;     /* spill file size */
    unsigned passes;    /* forward passes run */
} qbh_hess;

/* A Hessian state for n tensors over ids[0..n_ids) (copied), budget in
 * bytes, spill_dir (copied, may be NULL), pass as above. NULL on no memory. */
qbh_hess *qbh_hess_new(size_t n_tensors, const int64_t *ids, size_t n_ids, uint64_t budget,
                       const char *spill_dir,
                       qb_status (*pass)(struct qbh_source *s, struct qbh_hess *hs));
/* Frees it (closing the spill file); NULL is a no-op. */
void qbh_hess_free(qbh_hess *hs);

/* A zeroed table for n tensors with origin (copied). NULL on no memory. */
qbh_actstats *qbh_actstats_new(size_t n_tensors, const char *origin);
/* Frees it; NULL is a no-op. */
void qbh_actstats_free(qbh_actstats *a);

/* The service table served to plugins (never NULL). */
const qb_stats_api *qbh_stats_api(void);

/* The scale block the reader of s declared for tensor i (qb_stats.h):
 * QB_OK with *cols, QB_E_NOT_FOUND (none), or the declarations' reading
 * error (message set). Thread-safe. */
qb_status qbh_source_scale_block(qbh_source *s, size_t i, int64_t *cols);

/* ---- source_views.c ------------------------------------------------------- */

/* 1 when the reader of s offers the ABI 1.2 stored-tensor view
 * (get_raw_tensor_info) / the metadata view (get_metadata). Pure. */
int qbh_source_has_raw(const qbh_source *s);
int qbh_source_has_meta(const qbh_source *s);

/* Stored tensor i of s into *out (struct_size set here). QB_E_RANGE past
 * the last; another failure is the reader's (message set, naming it). */
qb_status qbh_source_raw(const qbh_source *s, size_t i, qb_raw_tensor_info *out);

/* Metadata entry i of s into *out with value buf[cap] (struct_size set
 * here). QB_E_RANGE past the last; another failure is the reader's. */
qb_status qbh_source_meta(const qbh_source *s, size_t i, qb_meta_entry *out, char *buf, size_t cap);

/* ---- model_facts.c ------------------------------------------------------- */

/* Computes *out (struct_size set, every field) from a reader's config text
 * (may be NULL) and tensor list as qb_tensor.h states for qb_model_facts:
 * each fact from its one source, its bit clear when that source does not
 * state it. Without a config object nothing is concluded from the
 * config's silence (no n_layers from tensor names, no dense (0, 0)
 * experts). `what` names the config in messages. Returns QB_OK;
 * QB_E_FORMAT when config_json is not strict JSON (qb_json.h) or not an
 * object: *out then holds the facts of the tensor list alone and the
 * message says why; QB_E_NOMEM. Pure; thread-safe. */
qb_status qbh_model_facts_compute(const char *what, const char *config_json,
                                  const qb_tensor_info *tensors, size_t n_tensors,
                                  qb_model_facts *out);
/* The known facts as one line into buf[n] ("layers 2, hidden 64, vocab 128,
 * ..., tied no, experts 0", or "none known"). Returns the length written,
 * 0 when none is known. */
size_t qbh_model_facts_text(const qb_model_facts *f, char *buf, size_t n);

/* ---- sink.c --------------------------------------------------------------- */

typedef struct qbh_sink qbh_sink;

/* Opens a sink over the existing empty directory `dir` (ownership of the
 * directory stays with the caller). The sink's qb_sink table is at
 * qbh_sink_table(). Returns QB_E_NOMEM/QB_E_IO. */
qb_status qbh_sink_open(const char *dir, qbh_sink **out);
const qb_sink *qbh_sink_table(qbh_sink *s);
/* Names `name` (the final output path) instead of the directory in the
 * sink's error messages: "out/model.safetensors: write: ...". QB_E_NOMEM. */
qb_status qbh_sink_set_shown(qbh_sink *s, const char *name);
/* Number of files created and still open; files closed; bytes closed. */
size_t qbh_sink_open_files(qbh_sink *s);
size_t qbh_sink_closed_files(qbh_sink *s);
uint64_t qbh_sink_bytes(qbh_sink *s);
/* fsyncs every closed file whose fsync was deferred (sink.c), then the
 * directory. QB_E_IO (QB_E_NOSPACE for ENOSPC/EDQUOT) naming the first file
 * that failed; every pending descriptor is closed either way. */
qb_status qbh_sink_sync(qbh_sink *s);
/* 1 when the sink has created a file named `name` (open or closed). Thread-safe. */
int qbh_sink_has_file(qbh_sink *s, const char *name);
/* Frees the sink (files still open are closed and their data discarded). */
void qbh_sink_free(qbh_sink *s);

/* ---- side_files.c --------------------------------------------------------- */

/* Writes the Hugging Face side files of model `mi` through the sink, for
 * writer `writer` that declared QB_WRITER_SIDE_FILES_HOST, after its
 * finish succeeded (docs/architecture.md, "HF side files"): each file of
 * mi->tokenizer_dir named in qbk_hf_tokenizer_files, byte for byte; with
 * mi->chat_template, tokenizer_config.json with chat_template set (made
 * when absent) and no chat_template.* file; generation_config.json, the
 * source's or one derived from config_json's special token ids. A name
 * the writer already created is QB_E_INVALID naming the file and the
 * writer; a source file that cannot be read is QB_E_IO naming it; a
 * source JSON file that is not an object is QB_E_FORMAT. Every sink file
 * it opens is closed again, success or not. Main thread. */
qb_status qbh_side_files_write(qbh_sink *sink, const qb_model_info *mi, const char *writer);

/* ---- outdir.c ------------------------------------------------------------- */

/* Checks that `output` may receive a conversion of `source`: not the same
 * path, not inside it, not an ancestor (compared by realpath; a missing
 * output is resolved through its parent, which must exist), and not an
 * existing non-empty directory unless `overwrite`; an existing non-directory
 * is refused. QB_E_INVALID with a message. */
qb_status qbh_outdir_check(const char *source, const char *output, int overwrite);

typedef struct qbh_outdir {
    char *final_path;   /* as given */
    char *tmp_path;     /* .<name>.qbtmp-<pid>-<rand> beside it */
    int overwrite;
} qbh_outdir;

/* Creates the temporary directory beside `output` with its marker file.
 * QB_E_IO naming the path. */
qb_status qbh_outdir_begin(const char *output, int overwrite, qbh_outdir *od);
/* Removes the marker, syncs, and renames the temp dir into place (moving an
 * old output aside first when overwriting, deleting it after). On failure
 * the final path holds what it held before, and the temp dir remains for
 * qbh_outdir_abort. */
qb_status qbh_outdir_commit(qbh_outdir *od);
/* Removes the temp dir (if still there) and frees od. Never fails. */
void qbh_outdir_abort(qbh_outdir *od);
/* QB_OK when the directory that will hold `path` (its parent; "." for a
 * bare name) exists, is a directory and is writable; else an error whose
 * message starts with `what` and `path` (QB_E_NOT_FOUND, QB_E_INVALID,
 * QB_E_IO). Checked before any work so a bad path fails at once. */
qb_status qbh_outdir_check_parent(const char *path, const char *what);
/* Recursively removes `path` without following symlinks. QB_E_IO. */
qb_status qbh_rmtree(const char *path);

/* ---- stale.c -------------------------------------------------------------- */

/* Start time of process `pid` (field 22 of /proc/<pid>/stat, clock ticks
 * since boot) into *out. QB_E_NOT_FOUND when there is no such process or
 * the field cannot be read. Thread-safe. */
qb_status qbh_proc_start_time(long pid, unsigned long long *out);
/* This boot's id (/proc/sys/kernel/random/boot_id) into out[40]; "" when
 * unavailable. */
void qbh_boot_id(char out[40]);
/* Looks beside `output` for temporary directories a convert of the same
 * output left (.<name>.qbtmp-*) and removes each one it can prove is a
 * leftover of a quantbridge run that is gone: its marker names a pid that
 * no longer runs, or a pid now held by a process started at another time
 * (or in another boot). Prints one line per removed directory saying why;
 * a directory whose owner still runs, or without a readable marker, is
 * left alone (logged at info level). Never fails the conversion: returns
 * the number removed. Main thread only. */
int qbh_outdir_reap_stale(const char *output);

/* ---- fatal.c -------------------------------------------------------------- */

/* Installs the fault handlers. SIGBUS: a mapped source that shrank while
 * being read faults on access (mmap(2): SIGBUS beyond the end of the
 * file); the handler prints "quantbridge: error: source file changed or
 * truncated while reading (SIGBUS at address X)", with ", in plugin NAME
 * VERSION, CALL" when a plugin call is in progress. SIGSEGV, SIGFPE,
 * SIGILL, SIGABRT inside a plugin call (qbh_call_enter): "quantbridge:
 * error: plugin NAME VERSION crashed with SIGSEGV in CALL"; outside any
 * plugin call the default action runs (a host bug keeps its core dump and
 * sanitizer report). Either way, when a plugin was named, the armed
 * temporary directory (flat: the sink creates plain names only) is
 * removed with async-signal-safe calls (", temporary output removed") and
 * the process _exits 1: one line. An alternate signal stack lets a stack
 * overflow on the main thread be named too. Idempotent. Main thread. */
void qbh_fatal_install(void);

/* A plugin call in progress on the calling thread, for the fault handler:
 * plugin, version, call ("read_rows") and detail (a tensor name, or NULL),
 * all valid until qbh_call_leave. Marks nest (a reader's read_rows inside a
 * writer's write_tensor); a fault on a thread with no mark of its own (a
 * pool worker running a writer's parallel_for) is named by the main
 * thread's innermost mark. Stack storage; enter and leave in pairs on one
 * thread. */
typedef struct qbh_call_mark {
    const char *plugin, *version, *call, *detail;
    struct qbh_call_mark *prev;
} qbh_call_mark;
void qbh_call_enter(qbh_call_mark *m, const struct qbh_plugin *p, const char *call,
                    const char *detail);
void qbh_call_leave(qbh_call_mark *m);
/* stmt (one plugin call) between qbh_call_enter and qbh_call_leave. */
#define QBH_CALL(p, call, detail, stmt)                                                        \
    do {                                                                                       \
        qbh_call_mark qbh_m_;                                                                  \
        qbh_call_enter(&qbh_m_, (p), (call), (detail));                                        \
        stmt;                                                                                  \
        qbh_call_leave(&qbh_m_);                                                               \
    } while (0)
/* Arms (path non-NULL: copied into a static buffer; longer than PATH_MAX
 * is ignored) or disarms (NULL) the directory the handler removes. Main
 * thread only. */
void qbh_fatal_arm(const char *tmp_path);
/* Tells the handler that the run's output is complete at final_path (after
 * the rename): a later fault in a plugin call keeps it and the line ends
 * "; the output PATH was complete before the fault ... and is kept".
 * Cleared by the next qbh_fatal_arm(non-NULL). Main thread only. */
void qbh_fatal_output_complete(const char *final_path);

/* ---- services_13.c --------------------------------------------------------- */

/* Fills the ABI 1.3 service entries of h (sha256_*, map_file, unmap_file,
 * hf_config_clean); services.c calls it for every table. */
void qbh_services_13_fill(qb_host *h);

/* ---- objects.c ------------------------------------------------------------ */

/* Live host-service objects (JSON trees, directory listings) with the
 * plugin call that made each: plugin-check's leak accounting. Off until
 * qbh_objects_track(1); every call below is then thread-safe. */
void qbh_objects_track(int on);
/* The plugin call running now ("begin", "write_tensor NAME", "open"),
 * recorded with each object made from here on; NULL or "": none. */
void qbh_objects_set_call(const char *call);
/* obj was made by the service `what` ("JSON tree from json->parse"). */
void qbh_objects_add(const void *obj, const char *what);
/* obj was released, or moved into another tree (no longer a root). */
void qbh_objects_remove(const void *obj);
/* How many are live; their descriptions, "; "-separated, into buf. */
size_t qbh_objects_live(void);
size_t qbh_objects_describe(char *buf, size_t cap);

/* ---- testhooks.c ---------------------------------------------------------- */

/* TEST-ONLY hooks, read once from the environment by qbh_testhooks_init
 * (secure_getenv; ignored in set-uid runs):
 *   QUANTBRIDGE_TEST_ALLOC_FAIL=N      the allocator refuses the (N+1)-th
 *                                      allocation and every later one; at
 *                                      exit "quantbridge: test: K
 *                                      allocation(s) refused" on stderr
 *   QUANTBRIDGE_TEST_WRITE_LIMIT=N     the sink accepts N bytes of file data
 *                                      in total, then write fails (ENOSPC)
 *   QUANTBRIDGE_TEST_STOP_AFTER=K      convert raises SIGSTOP on itself after
 *                                      the K-th tensor is written, so a test
 *                                      can act on a known state (signal it,
 *                                      truncate the source) and continue it
 * No effect without the variables. Main thread only. */
void qbh_testhooks_init(void);
/* Sets the sink's write budget in-process, as QUANTBRIDGE_TEST_WRITE_LIMIT
 * does from the environment: n more bytes of file data, then write fails
 * (ENOSPC); n < 0 removes the limit. For `plugin-check`'s sink-failure
 * runs and tests. Thread-safe. */
void qbh_testhook_write_limit(long long n);
/* How many of `want` bytes the sink may write now (taken from the limit's
 * budget; 0 once it is spent); `want` when no limit is set. Thread-safe. */
size_t qbh_testhook_write_allow(size_t want);
/* Called after tensor k (1-based) was written. */
void qbh_testhook_tensor_done(size_t k);
/* Called at the end of convert: the allocation report, when enabled. */
void qbh_testhooks_report(void);

/* One injected failure (plugin-check's fault runs): the k-th call (from
 * 0, counted from the arm) of a family fails as the real call would fail
 * (an I/O error, or NULL where the service answers NULL for no memory),
 * with a message saying it was injected. Families: each of the sink's
 * calls (create, write, close) and every other fallible host service
 * (read_small_file, list_dir, the JSON service's parse, constructors, add,
 * append and emit, parallel_for, and the 1.3 services). Before the first
 * arm nothing is counted. Thread-safe. */
typedef enum qbh_fault_family {
    QBH_FAULT_CREATE = 0, /* sink->create */
    QBH_FAULT_WRITE,      /* sink->write */
    QBH_FAULT_CLOSE,      /* sink->close */
    QBH_FAULT_SERVICE,    /* every other fallible host service */
    QBH_FAULT_FAMILIES,
} qbh_fault_family;
/* Counts from 0 again; call k fails (k < 0: counts, fails none). */
void qbh_testhook_fault_arm(qbh_fault_family fam, long k);
/* Called by each fallible call before it acts: 1 when this one must fail
 * (its name, e.g. "sink->create", is kept for qbh_testhook_fault_hit). */
int qbh_testhook_fault(qbh_fault_family fam, const char *call);
/* Calls of the family since the arm. */
long qbh_testhook_fault_calls(qbh_fault_family fam);
/* The call made to fail since the arm, or NULL when none was reached. */
const char *qbh_testhook_fault_hit(qbh_fault_family fam);

/* ---- signals.c / progress.c ---------------------------------------------- */

/* Installs SIGINT/SIGTERM handlers that set the cancel flag; a second
 * signal restores the default action and re-raises. */
void qbh_signals_install(void);
/* Nonzero once cancellation was requested. Async-signal-safe read. */
int qbh_cancel_requested(void);
/* Requests cancellation (tests, internal). */
void qbh_cancel_request(void);
/* Signal number that caused cancellation, or 0. */
int qbh_cancel_signal(void);

/* How progress is shown (convert --progress, -q). AUTO: an updating line
 * on a terminal, else nothing (plain lines with --verbose). */
typedef enum qbh_progress_mode {
    QBH_PROGRESS_AUTO = 0,
    QBH_PROGRESS_TTY,   /* one line rewritten in place (\r, erase line) */
    QBH_PROGRESS_PLAIN, /* one line per tensor, for logs */
    QBH_PROGRESS_NONE
} qbh_progress_mode;

/* Sets the mode for this process (AUTO is resolved against
 * qbh_rt.progress_tty and qbh_rt.verbose at each call). Main thread, before
 * any progress call. */
void qbh_progress_configure(qbh_progress_mode mode);
/* Parses "auto", "tty", "plain" or "none" into *out; QB_E_INVALID
 * (message naming the value) otherwise. */
qb_status qbh_progress_parse(const char *s, qbh_progress_mode *out);
/* Starts the clock of a run whose work is `total_units` (planned output
 * bytes, or weights when no plan says bytes) and `total_weights`. */
void qbh_progress_start(uint64_t total_units, uint64_t total_weights);
/* Reports pipeline progress: tensor `i` of `n` named `name` is done;
 * `bytes` written so far, `units` and `weights` of the work done so far.
 * Shows percent (units), MB/s (bytes), M weights/s, elapsed time and ETA
 * in the configured mode. Thread-safe. */
void qbh_progress_tensor(size_t i, size_t n, const char *name, uint64_t bytes, uint64_t units,
                         uint64_t weights);
/* Plugin-reported progress (qb_host.progress) and the verify stage: on a
 * terminal a line with the percent, in plain mode a line per tenth. */
void qbh_progress_stage(const char *who, uint64_t done, uint64_t total, const char *stage);
/* Ends a progress line on a terminal. */
void qbh_progress_done(void);
/* Seconds since qbh_progress_start (0 before it). */
double qbh_progress_elapsed(void);
/* b as "151.2 MiB" into out[n]. Pure. */
void qbh_human_bytes(uint64_t b, char *out, size_t n);
/* Peak resident set size of this process in bytes (getrusage), 0 when
 * unknown. */
uint64_t qbh_peak_rss(void);

/* ---- build_info.c --------------------------------------------------------- */

/* Configure-time facts: the git commit of the source tree ("unknown"
 * outside a checkout), CMAKE_BUILD_TYPE ("" when none) and whether the
 * CUDA kernels were built. Static strings. Pure. */
const char *qbh_build_commit(void);
const char *qbh_build_type(void);
int qbh_build_cuda(void);

#endif /* QBH_H */
