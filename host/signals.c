/*
 * quantbridge host — SIGINT/SIGTERM become a cancel request.
 *
 * The first signal only sets a flag: qb_host.cancelled/progress report it,
 * the sink refuses further writes, the pipeline unwinds, the writer aborts
 * and the temporary directory is removed (exit status 1). A second signal
 * restores the default action and re-raises, for a user who really wants
 * the process gone now (the temp dir may then stay; its marker file names
 * the pid).
 */
#include "qbh.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t cancel_flag;
static volatile sig_atomic_t cancel_sig;

static void on_signal(int sig)
{
    if (cancel_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    cancel_sig = sig;
    cancel_flag = 1;
}

void qbh_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a blocking read/write returns EINTR and the caller
     * re-checks; our loops retry EINTR explicitly. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int qbh_cancel_requested(void)
{
    return cancel_flag != 0;
}

void qbh_cancel_request(void)
{
    cancel_flag = 1;
}

int qbh_cancel_signal(void)
{
    return cancel_sig;
}
