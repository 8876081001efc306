/* hf-dense: dense float element conversions. */
#include <string.h>

#include <quantbridge/qb_half.h>

#include "hfd.h"
#include "qbk_half_row.h"

/* safetensors stores little-endian; the copies below rely on the host
 * being little-endian too. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hf-dense assumes a little-endian host"
#endif

const char *hfd_dtype_encoding(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_F32:
        return "f32";
    case QB_DT_F16:
        return "f16";
    case QB_DT_BF16:
        return "bf16";
    default:
        return NULL;
    }
}

int hfd_to_f32(qb_dtype dt, const uint8_t *src, size_t n, float *dst)
{
    /* safetensors data is little-endian and may be unaligned (third-party
     * writers do not pad), so elements are memcpy'd, never dereferenced. */
    switch (dt) {
    case QB_DT_F32:
        memcpy(dst, src, n * sizeof(float));
        return 0;
    case QB_DT_F16:
        qbk_half_f16_row_to_f32(src, dst, n);
        return 0;
    case QB_DT_BF16:
        qbk_half_bf16_row_to_f32(src, dst, n);
        return 0;
    default:
        return -1;
    }
}
