/*
 * quantbridge host — SIGBUS: a source that changed under its mapping.
 *
 * Readers mmap their sources (docs/plugin-design.md, "Mapped sources"); when a file shrinks while
 * mapped, touching a page past its new end raises SIGBUS (mmap(2)). The
 * reader cannot recover: the data it was promised is gone, and unwinding
 * from a signal through plugin code (siglongjmp) would skip its locks and
 * cleanup on whatever thread faulted. So the process ends here, the way
 * a failed conversion does: one error line, the temporary output removed,
 * the final path untouched (it is only ever reached by rename), exit 1.
 *
 * Everything in the handler is async-signal-safe (signal-safety(7)):
 * write, open, getdents64, unlinkat, rmdir, _exit; the path was copied
 * in before arming. The temporary directory is flat (the sink accepts
 * plain names only), so no recursion is needed.
 */
#include "qbh.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char tmp_dir[PATH_MAX];
static volatile sig_atomic_t armed;
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

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    put("quantbridge: error: source file changed or truncated while reading (SIGBUS at "
        "address ");
    put_hex((uintptr_t)si->si_addr);
    put(")");
    if (armed) {
        remove_flat_dir(tmp_dir);
        put("; temporary output removed");
    }
    put("\n");
    _exit(QBH_EXIT_FAIL);
}

void qbh_fatal_install(void)
{
    struct sigaction sa;
    if (installed)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask); /* nothing else runs on this thread meanwhile */
    sigaction(SIGBUS, &sa, NULL);
    installed = 1;
}

void qbh_fatal_arm(const char *tmp_path)
{
    armed = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!tmp_path || strlen(tmp_path) >= sizeof tmp_dir)
        return;
    memcpy(tmp_dir, tmp_path, strlen(tmp_path) + 1);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    armed = 1;
}
