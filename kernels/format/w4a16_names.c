/*
 * The W4A16 format (kernels/format, internal) — layer file numbering of
 * the native W4A16 format (w4a16_names.h, docs/w4a16-format.md "Directory").
 */
#include "w4a16_names.h"

#include <inttypes.h>
#include <stdio.h>

int w4a16_layer_digits(int64_t n_layers)
{
    int digits = 2;
    int64_t v;
    for (v = 100; n_layers - 1 >= v; v *= 10)
        digits++;
    return digits;
}

int w4a16_layer_file(int64_t layer, int64_t n_layers, char *buf, size_t len)
{
    int n;
    if (len)
        buf[0] = '\0';
    if (layer < 0 || layer >= n_layers || n_layers > W4A16_MAX_LAYERS)
        return -1;
    n = snprintf(buf, len, "layer_%0*" PRId64 ".safetensors", w4a16_layer_digits(n_layers),
                 layer);
    if (n < 0 || (size_t)n >= len) {
        if (len)
            buf[0] = '\0';
        return -1;
    }
    return 0;
}
