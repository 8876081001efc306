/*
 * The one main() of the check tests (qbt_check_main.c, in qbt_support): a
 * test program defines qbt_suite() and no main of its own.
 */
#ifndef QBT_CHECK_MAIN_H
#define QBT_CHECK_MAIN_H

#include <check.h>

/* Defined by each test program: its suite, or NULL when the test cannot
 * run here (it prints why first), which main reports as skipped (exit 77). */
Suite *qbt_suite(void);

#endif
