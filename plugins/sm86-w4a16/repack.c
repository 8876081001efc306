/*
 * sm86-w4a16 — which source integer grids map exactly into the format's
 * int4 codes.
 *
 * The format decodes q * scale with q in [-8, 7] (w4a16-format.md). A
 * source grid promises dense = (code - zero) * scale (qb_tensor.h). When
 * the grid is symmetric with b <= 4 bits, its zero is 2^(b-1) and
 * code - zero lies in [-2^(b-1), 2^(b-1) - 1], a subset of [-8, 7]: the
 * codes carry over unchanged in value (GPTQ 2/3-bit sym: [-2, 1] / [-4, 3]).
 * Asymmetric grids (zero anywhere in 0 .. 2^b - 1) and wider grids do not.
 */
#include "w4w.h"

#include <stdio.h>

int w4w_repack_zero(const qb_grid_info *gi, char *why, size_t why_len)
{
    if (gi->bits < 1 || gi->bits > 4 || !gi->symmetric) {
        snprintf(why, why_len, "grid is %u-bit %s", gi->bits,
                 gi->symmetric ? "symmetric" : "asymmetric");
        return 0;
    }
    return 1 << (gi->bits - 1);
}
