/*
 * libFuzzer target: the host's config parser (host/config.c: GKeyFile text,
 * [general] and [plugin:NAME] sections, typed keys, option.KEY values).
 * The input is written as quantbridge.conf in a scratch directory without
 * plugins.d/ and loaded with qbh_config_load; every merged section is then
 * looked up by name. A failure must be negative with a message in the
 * host's error slot naming the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"

#include "fuzz_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qbh_config cfg;
    const char *path;
    qb_status st;
    size_t i;

    if (!(path = qbt_fuzz_write_tmp("quantbridge.conf", data, size)))
        return 0;
    qbh_error_clear();
    st = qbh_config_load(path, &cfg);
    if (st != QB_OK) {
        if (st > 0 || qbh_error_code() != st || !strstr(qbh_error_message(), path)) {
            fprintf(stderr, "config: status %d, message %d '%s'\n", (int)st, (int)qbh_error_code(),
                    qbh_error_message());
            abort();
        }
    } else {
        if (cfg.min_probe_score < 0 || cfg.min_probe_score > 100)
            __builtin_trap();
        for (i = 0; i < cfg.n_plugins; i++) {
            const qbh_plugin_conf *pc = &cfg.plugins[i];
            if (!pc->name || qbh_config_find_plugin(&cfg, pc->name) != pc)
                __builtin_trap();
        }
    }
    qbh_config_free(&cfg);
    return 0;
}
