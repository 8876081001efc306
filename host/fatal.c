/*
 * quantbridge host — faults: SIGBUS from a source that changed under its
 * mapping, and any fault inside a plugin call.
 *
 * Readers mmap their sources (docs/plugin-design.md, "Mapped sources"); when a file shrinks while
 * mapped, touching a page past its new end raises SIGBUS (mmap(2)). The
 * reader cannot recover: the data it was promised is gone, and unwinding
 * from a signal through plugin code (siglongjmp) would skip its locks and
 * cleanup on whatever thread faulted. So the process ends here, the way
 * a failed conversion does: one error line, the temporary output removed,
 * the final path untouched (it is only ever reached by rename), exit 1.
 * A fault after the rename (the source's close, which convert calls last,
 * or a --verify read of the output) finds the output complete: every
 * writer call returned, the files were synced and renamed. It stays, and
 * the line says so (docs/plugin-design.md, "Trust": a fault in any plugin call).
 *
 * A plugin that faults (SIGSEGV, SIGFPE, SIGILL, abort) inside one of its
 * calls ends the run the same way, the one line naming the plugin, its
 * version and the call the host marked (qbh_call_enter) before calling
 * it: the plugin's state is unknown, and a user who sees exit 139 with no
 * word cannot tell whose bug it was (docs/plugin-design.md, "Trust").
 *
 * Everything in the handler is async-signal-safe (signal-safety(7)):
 * write, open, getdents64, unlinkat, rmdir, _exit; the path was copied
 * in before arming. The temporary directory is flat (the sink accepts
 * plain names only), so no recursion is needed.
 */
#include "qbh.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char tmp_dir[PATH_MAX];
static volatile sig_atomic_t armed;
/* The final output of this run once it is complete (renamed into place):
 * a later fault (the source's close, a --verify read) keeps it and says
 * so, instead of leaving the user to guess from an error line. */
static char done_dir[PATH_MAX];
static volatile sig_atomic_t done;
static int installed;

/* getdents64 record (linux_dirent64, getdents(2)). */
struct qbh_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void put(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void put_hex(uintptr_t v)
{
    char b[2 + 2 * sizeof v + 1];
    int i, n = 0;
    b[n++] = '0';
    b[n++] = 'x';
    for (i = (int)(2 * sizeof v) - 1; i >= 0; i--) {
        unsigned d = (unsigned)(v >> (4 * i)) & 15u;
        if (n == 2 && d == 0 && i > 0)
            continue; /* no leading zeros */
        b[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    }
    b[n] = '\0';
    put(b);
}

/* Unlinks every entry of the flat directory, then the directory. */
static void remove_flat_dir(const char *path)
{
    char buf[4096] __attribute__((aligned(8)));
    int pass, fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    /* Removing entries while reading may make getdents skip some; repeat
     * from the start until a pass finds nothing left to remove. */
    for (pass = 0; pass < 16; pass++) {
        int removed = 0;
        long n;
        lseek(fd, 0, SEEK_SET);
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            long off = 0;
            while (off < n) {
                struct qbh_dirent64 *e = (struct qbh_dirent64 *)(buf + off);
                off += e->d_reclen;
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                if (unlinkat(fd, e->d_name, 0) == 0 ||
                    unlinkat(fd, e->d_name, AT_REMOVEDIR) == 0)
                    removed++;
            }
        }
        if (!removed)
            break;
    }
    close(fd);
    rmdir(path);
}

/* The plugin calls in progress: this thread's innermost, and the main
 * thread's (for pool workers running plugin code without a mark). */
static __thread qbh_call_mark *tls_top;
static qbh_call_mark *volatile main_top;
static pthread_t main_thread;

void qbh_call_enter(qbh_call_mark *m, const struct qbh_plugin *p, const char *call,
                    const char *detail)
{
    m->plugin = p && p->name ? p->name : "?";
    m->version = p && p->desc && p->desc->version ? p->desc->version : "";
    m->call = call;
    m->detail = detail;
    m->prev = tls_top;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tls_top = m;
    if (installed && pthread_equal(pthread_self(), main_thread))
        main_top = m;
}

void qbh_call_leave(qbh_call_mark *m)
{
    tls_top = m->prev;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (installed && pthread_equal(pthread_self(), main_thread))
        main_top = m->prev;
}

static const char *fault_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "SIGABRT";
    }
}

/* "plugin NAME VERSION" and ", CALL DETAIL" / " in CALL DETAIL". */
static void put_plugin(const qbh_call_mark *m)
{
    put("plugin ");
    put(m->plugin);
    if (m->version[0]) {
        put(" ");
        put(m->version);
    }
}

static void put_call(const qbh_call_mark *m)
{
    put(m->call);
    if (m->detail && m->detail[0]) {
        put(" ");
        put(m->detail);
    }
}

static void end_run(void)
{
    if (armed) {
        remove_flat_dir(tmp_dir);
        put("; temporary output removed");
    } else if (done) {
        put("; the output ");
        put(done_dir);
        put(" was complete before the fault (written, synced and renamed into place) and is "
            "kept");
    }
    put("\n");
    _exit(QBH_EXIT_FAIL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    const qbh_call_mark *m = tls_top ? tls_top : main_top;
    (void)uc;
    if (sig == SIGBUS) {
        put("quantbridge: error: source file changed or truncated while reading (SIGBUS at "
            "address ");
        put_hex((uintptr_t)si->si_addr);
        put(")");
        if (m) {
            put(", in ");
            put_plugin(m);
            put(", ");
            put_call(m);
        }
        end_run();
    }
    if (!m) {
        /* the host's own fault: the default action, as if never caught */
        signal(sig, SIG_DFL);
        if (sig == SIGABRT)
            raise(sig);
        return;
    }
    put("quantbridge: error: ");
    put_plugin(m);
    put(" crashed with ");
    put(fault_name(sig));
    put(" in ");
    put_call(m);
    end_run();
}

void qbh_fatal_install(void)
{
    static const int sigs[] = {SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGABRT};
    static char alt[65536] __attribute__((aligned(16)));
    struct sigaction sa;
    stack_t ss;
    size_t i;
    if (installed)
        return;
    main_thread = pthread_self();
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&sa.sa_mask); /* nothing else runs on this thread meanwhile */
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    installed = 1;
}

void qbh_fatal_arm(const char *tmp_path)
{
    armed = 0;
    if (tmp_path)
        done = 0; /* a new output: none of this run is complete yet */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!tmp_path || strlen(tmp_path) >= sizeof tmp_dir)
        return;
    memcpy(tmp_dir, tmp_path, strlen(tmp_path) + 1);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    armed = 1;
}

void qbh_fatal_output_complete(const char *final_path)
{
    done = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!final_path || strlen(final_path) >= sizeof done_dir)
        return;
    memcpy(done_dir, final_path, strlen(final_path) + 1);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    done = 1;
}
