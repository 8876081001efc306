/* See qbt_host.h: thin names over qbh_core's services and error slot. */
#include "qbt_host.h"

#include "qbh.h"

const qb_host *qbt_host(void)
{
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
