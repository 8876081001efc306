/* See qbt_check_main.h. Runs qbt_suite() with check's defaults (each test
 * forked, CK_NORMAL output); exit 0 when all pass, 1 otherwise, 77 when
 * the suite skipped itself. */
#include "qbt_check_main.h"

#include <stdlib.h>

int main(void)
{
    Suite *s = qbt_suite();
    SRunner *sr;
    int failed;
    if (!s)
        return 77;
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
