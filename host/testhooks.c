/*
 * quantbridge host — test-only fault hooks (see qbh.h, testhooks.c).
 *
 * The fault tests (tests/faults) drive the real binary: they cannot call
 * qbh_alloc_fail_after from outside, and "the disk filled up after N bytes"
 * or "the source shrank after the first tensor" must happen at a known
 * point, not by racing a timer. Each hook is off unless its variable is
 * set; none of them changes what a normal run does.
 */
#include "qbh.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int alloc_hook;             /* QUANTBRIDGE_TEST_ALLOC_FAIL given */
static atomic_llong write_left = -1; /* < 0: no limit */
static long stop_after = -1;

/* Non-negative decimal value of variable `name`, or -1 when unset/junk. */
static long long env_count(const char *name)
{
    const char *v = secure_getenv(name);
    char *end;
    long long n;
    if (!v || !*v)
        return -1;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || *end || n < 0)
        return -1;
    return n;
}

void qbh_testhooks_init(void)
{
    long long n = env_count("QUANTBRIDGE_TEST_ALLOC_FAIL");
    if (n >= 0) {
        alloc_hook = 1;
        qbh_alloc_fail_after((long)n);
    }
    atomic_store(&write_left, env_count("QUANTBRIDGE_TEST_WRITE_LIMIT"));
    stop_after = (long)env_count("QUANTBRIDGE_TEST_STOP_AFTER");
}

void qbh_testhook_write_limit(long long n)
{
    atomic_store(&write_left, n < 0 ? -1 : n);
}

size_t qbh_testhook_write_allow(size_t want)
{
    long long left = atomic_load(&write_left);
    while (left >= 0) {
        long long take = (unsigned long long)left < want ? left : (long long)want;
        if (atomic_compare_exchange_weak(&write_left, &left, left - take))
            return (size_t)take;
    }
    return want;
}

void qbh_testhook_tensor_done(size_t k)
{
    if (stop_after >= 0 && (size_t)stop_after == k)
        raise(SIGSTOP);
}

void qbh_testhooks_report(void)
{
    if (alloc_hook)
        fprintf(stderr, "quantbridge: test: %ld allocation(s) refused\n", qbh_alloc_refused());
}

/* ---- one injected failure of a sink or service call ----------------------- */

/* Per family: calls counted since the last arm, the index that fails (< 0:
 * none), and the name of the call that was made to fail. */
static atomic_long fault_calls[QBH_FAULT_FAMILIES];
static atomic_long fault_at[QBH_FAULT_FAMILIES] = {-2, -2, -2, -2};
static char fault_name[QBH_FAULT_FAMILIES][64];
static atomic_int fault_hit[QBH_FAULT_FAMILIES];

void qbh_testhook_fault_arm(qbh_fault_family fam, long k)
{
    atomic_store(&fault_calls[fam], 0);
    atomic_store(&fault_hit[fam], 0);
    fault_name[fam][0] = '\0';
    atomic_store(&fault_at[fam], k);
}

int qbh_testhook_fault(qbh_fault_family fam, const char *call)
{
    long at = atomic_load(&fault_at[fam]);
    long i;
    if (at < -1)
        return 0; /* never armed: nothing counted (every normal run) */
    i = atomic_fetch_add(&fault_calls[fam], 1);
    if (i != at)
        return 0;
    /* one call only: the name is written once, before fault_hit says so */
    snprintf(fault_name[fam], sizeof fault_name[fam], "%s", call);
    atomic_store(&fault_hit[fam], 1);
    return 1;
}

long qbh_testhook_fault_calls(qbh_fault_family fam)
{
    return atomic_load(&fault_calls[fam]);
}

const char *qbh_testhook_fault_hit(qbh_fault_family fam)
{
    return atomic_load(&fault_hit[fam]) ? fault_name[fam] : NULL;
}
