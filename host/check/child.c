/*
 * quantbridge plugin-check — one check in a forked child, under a
 * timeout (plugin_check.h has the line protocol).
 *
 * The parent never loads the plugin: a crash in the entry, a probe that
 * spins, a writer that faults when the disk fills -- each costs one child
 * and becomes a FAIL line naming the check and the child's last context.
 */
#include "plugin_check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The child's end of the pipe (-1 in the parent). */
static int child_fd = -1;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes one protocol line: tag, space, text with line breaks flattened. */
static void send_v(char tag, const char *fmt, va_list ap)
{
    char buf[QBH_PC_MSG + 64];
    size_t n = 2, off;
    int k;
    buf[0] = tag;
    buf[1] = ' ';
    k = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    if (k > 0)
        n += (size_t)k < sizeof buf - n - 1 ? (size_t)k : sizeof buf - n - 2;
    for (off = 2; off < n; off++)
        if (buf[off] == '\n' || buf[off] == '\r')
            buf[off] = ' ';
    buf[n++] = '\n';
    for (off = 0; off < n;) {
        ssize_t w = write(child_fd, buf + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(4); /* the parent is gone: nobody to report to */
        off += (size_t)w;
    }
}

static void send_line(char tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_line(char tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_v(tag, fmt, ap);
    va_end(ap);
}

void qbh_pc_ctx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_v('C', fmt, ap);
    va_end(ap);
}

void qbh_pc_value(const char *key, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    send_line('V', "%s %s", key, text);
}

static void (*at_result_fn)(void *);
static void *at_result_arg;

void qbh_pc_at_result(void (*fn)(void *), void *arg)
{
    at_result_fn = fn;
    at_result_arg = arg;
}

void qbh_pc_result(qbh_pc_verdict v, const char *fmt, ...)
{
    static const char *const names[] = {"PASS", "FAIL", "SKIP"};
    char text[QBH_PC_MSG];
    void (*fn)(void *) = at_result_fn;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    send_line('R', "%s %s", names[v], text);
    /* _exit runs no destructor: a reader's temporary files (the gguf
     * reader's rebuilt tokenizer directory) go only through its close. */
    at_result_fn = NULL; /* a check that fails inside its own hook ends here */
    if (fn)
        fn(at_result_arg);
    _exit(0);
}

const char *qbh_pc_value_of(const qbh_pc_outcome *o, const char *key)
{
    size_t i;
    for (i = 0; i < o->n_values; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->values[i];
    return NULL;
}

/* Parses one complete line from the child into *o. */
static void take_line(char *line, qbh_pc_outcome *o, int *have_result)
{
    char *text = line[0] && line[1] == ' ' ? line + 2 : line + strlen(line);
    switch (line[0]) {
    case 'C':
        snprintf(o->ctx, sizeof o->ctx, "%s", text);
        break;
    case 'V': {
        char *sp = strchr(text, ' ');
        if (sp && o->n_values < QBH_PC_MAX_VALUES) {
            *sp = '\0';
            snprintf(o->keys[o->n_values], sizeof o->keys[0], "%s", text);
            snprintf(o->values[o->n_values], sizeof o->values[0], "%s", sp + 1);
            o->n_values++;
        }
        break;
    }
    case 'R':
        if (strncmp(text, "PASS ", 5) == 0)
            o->verdict = QBH_PC_PASS;
        else if (strncmp(text, "SKIP ", 5) == 0)
            o->verdict = QBH_PC_SKIP;
        else
            o->verdict = QBH_PC_FAIL;
        snprintf(o->msg, sizeof o->msg, "%s", strlen(text) > 5 ? text + 5 : "");
        *have_result = 1;
        break;
    default:
        break;
    }
}

/* " (while <ctx>)", or "" when the child said nothing yet. */
static void ctx_suffix(const qbh_pc_outcome *o, char *buf, size_t cap)
{
    if (o->ctx[0])
        snprintf(buf, cap, " (while %s)", o->ctx);
    else
        buf[0] = '\0';
}

/* Name of a signal as the kill(1) spelling: "SIGSEGV". */
static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGXCPU: return "SIGXCPU";
    default: return "a signal";
    }
}

/* The child: never returns. */
static void child_main(const qbh_pc_session *s, qbh_pc_child_fn fn, void *arg, int fd)
{
    static const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    size_t i;
    child_fd = fd;
    /* A crash must end the child by its signal so the parent can name it,
     * whatever handler the runtime (a sanitizer) installed. */
    for (i = 0; i < sizeof crash / sizeof crash[0]; i++)
        signal(crash[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    /* stdout is the parent's report: anything the plugin prints goes to
     * stderr with its log lines. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    fn(s, arg);
    send_line('R', "FAIL the check ended without a result");
    _exit(0);
}

qbh_pc_verdict qbh_pc_run(const qbh_pc_session *s, qbh_pc_child_fn fn, void *arg,
                          qbh_pc_outcome *out)
{
    char buf[QBH_PC_MSG + 128], where[600];
    size_t used = 0;
    int fds[2], status = 0, have_result = 0, timed_out = 0, eof = 0;
    long long limit = (long long)(s->timeout_s * 1000.0), deadline;
    pid_t pid;

    memset(out, 0, sizeof *out);
    out->verdict = QBH_PC_FAIL;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(out->msg, sizeof out->msg, "cannot start a child (pipe: %s)", strerror(errno));
        return out->verdict;
    }
    fflush(NULL); /* the child must not flush the parent's buffered output */
    pid = fork();
    if (pid < 0) {
        snprintf(out->msg, sizeof out->msg, "cannot start a child (fork: %s)", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return out->verdict;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(s, fn, arg, fds[1]);
    }
    close(fds[1]);
    deadline = now_ms() + limit;
    while (!eof) {
        struct pollfd pf = {fds[0], POLLIN, 0};
        long long left = deadline - now_ms();
        ssize_t n;
        int r;
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        r = poll(&pf, 1, (int)(left > 60000 ? 60000 : left));
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        n = read(fds[0], buf + used, sizeof buf - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = 1;
            break;
        }
        used += (size_t)n;
        buf[used] = '\0';
        for (;;) {
            char *nl = memchr(buf, '\n', used);
            size_t len;
            if (!nl) {
                if (used == sizeof buf - 1)
                    used = 0; /* a line longer than any the child writes */
                break;
            }
            *nl = '\0';
            take_line(buf, out, &have_result);
            len = (size_t)(nl - buf) + 1;
            memmove(buf, nl + 1, used - len);
            used -= len;
            buf[used] = '\0';
            deadline = now_ms() + limit; /* a line is a heartbeat */
        }
        if (have_result)
            break; /* the child _exits right after its result */
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    ctx_suffix(out, where, sizeof where);
    if (timed_out) {
        out->verdict = QBH_PC_FAIL;
        snprintf(out->msg, sizeof out->msg, "timed out: no progress within %g s%s", s->timeout_s,
                 where);
    } else if (WIFSIGNALED(status) && !have_result) {
        out->verdict = QBH_PC_FAIL;
        snprintf(out->msg, sizeof out->msg, "crashed with %s (signal %d)%s",
                 sig_name(WTERMSIG(status)), WTERMSIG(status), where);
    } else if (!have_result) {
        out->verdict = QBH_PC_FAIL;
        snprintf(out->msg, sizeof out->msg, "the child exited (status %d) without a result%s",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, where);
    }
    return out->verdict;
}
