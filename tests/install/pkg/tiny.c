/* The smallest plugin that builds: tests/install/check_install.sh only
 * checks where qb_add_plugin installs it. It refuses to load. */
#include <quantbridge/quantbridge.h>

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host, const qb_plugin **out)
{
    (void)neg;
    (void)host;
    (void)out;
    return QB_E_UNSUPPORTED;
}
