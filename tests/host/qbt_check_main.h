/* Shared main() for the host unit suites: each file defines suite(). */
#ifndef QBT_CHECK_MAIN_H
#define QBT_CHECK_MAIN_H
#include <check.h>

static Suite *suite(void);

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
#endif
