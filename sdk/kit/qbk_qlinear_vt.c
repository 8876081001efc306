/* Quantized-linear reader core: the reader vtable entries that take a
 * qbk_qlinear_model as the opaque handle. Internal kit code; see
 * qbk_qlinear.h. */
#include "qbk_qlinear.h"

void qbk_qlinear_vt_close(qb_reader_handle r)
{
    qbk_qlinear_free(r);
}

qb_status qbk_qlinear_vt_model_info(qb_reader_handle r, qb_model_info *out)
{
    return qbk_qlinear_model_info(r, out);
}

qb_status qbk_qlinear_vt_tensor_info(qb_reader_handle r, size_t i, qb_tensor_info *out)
{
    return qbk_qlinear_tensor_info(r, i, out);
}

qb_status qbk_qlinear_vt_read_rows(qb_reader_handle r, size_t i, int64_t row0, int64_t n, float *dst)
{
    return qbk_qlinear_read_rows(r, i, row0, n, dst);
}

qb_status qbk_qlinear_vt_grid_info(qb_reader_handle r, size_t i, qb_grid_info *out)
{
    return qbk_qlinear_grid_info(r, i, out);
}

qb_status qbk_qlinear_vt_read_grid(qb_reader_handle r, size_t i, int64_t row0, int64_t n,
                                   qb_grid_rows *out)
{
    return qbk_qlinear_read_grid(r, i, row0, n, out);
}
