/* quantbridge — the program. Everything lives in qbh_core; see cli_main.c. */
#include "cli.h"

int main(int argc, char **argv)
{
    return qbh_cli_main(argc, argv);
}
