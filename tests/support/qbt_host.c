/* See qbt_host.h: thin names over qbh_core's services, error slot, pool
 * and allocation countdown. */
#include "qbt_host.h"

#include <check.h>

#include "qbh.h"
#include "qbt_host_log.h"

const qb_host *qbt_host(void)
{
    qbt_host_log_install();
    return qbh_services_anonymous();
}

const char *qbt_host_last_error(void)
{
    return qbh_error_message();
}

qb_status qbt_host_last_code(void)
{
    return qbh_error_code();
}

void qbt_host_clear_error(void)
{
    qbh_error_clear();
}

void qbt_host_reset(void)
{
    qbh_error_clear();
    qbt_host_log_reset();
}

void qbt_host_threads(uint32_t n)
{
    ck_assert_msg(qbh_pool_start(n) == QB_OK, "thread pool: %s", qbh_error_message());
}

void qbt_host_alloc_fail_after(long n)
{
    qbh_alloc_fail_after(n);
}
