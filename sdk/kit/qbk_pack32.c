/*
 * b-bit codes into 32-bit words. See qbk_pack32.h.
 */
#include "qbk_pack32.h"

void qbk_pack32_row(int bits, const uint8_t *u, int64_t cols, uint8_t *dst)
{
    int64_t pf = 32 / bits, words = (cols + pf - 1) / pf, w, k;
    for (w = 0; w < words; w++) {
        uint32_t v = 0;
        for (k = 0; k < pf && w * pf + k < cols; k++)
            v |= (uint32_t)u[w * pf + k] << (bits * k);
        dst[4 * w] = (uint8_t)v;
        dst[4 * w + 1] = (uint8_t)(v >> 8);
        dst[4 * w + 2] = (uint8_t)(v >> 16);
        dst[4 * w + 3] = (uint8_t)(v >> 24);
    }
}
