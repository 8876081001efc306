/*
 * The float dtype a writer stores scales and dense tensors in (F32, F16 or
 * BF16: the model dtype of a Hugging Face checkpoint it writes), shared by
 * the compressed-tensors and mlx writers: its size and names, rounding a
 * float32 to it, encoding floats in it, which dtype holds another's values,
 * and the dtype a config.json declares.
 */
#ifndef QBK_OUT_DTYPE_H
#define QBK_OUT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>

/* Bytes of one element: 4 for QB_DT_F32, else 2 (F16, BF16). Pure. */
size_t qbk_out_dt_size(qb_dtype dt);
/* safetensors dtype name: "F32", "F16" or "BF16". Pure. */
const char *qbk_out_dt_st_name(qb_dtype dt);
/* torch dtype name: "float32", "float16" or "bfloat16". Pure. */
const char *qbk_out_dt_torch_name(qb_dtype dt);
/* v rounded to dt (ties to even), as float32; F32 returns v. Pure. */
float qbk_out_dt_round(qb_dtype dt, float v);
/* Encodes n floats as dt, little-endian, into dst (n * size bytes); a value
 * not representable in dt is rounded to nearest even. Pure. */
void qbk_out_dt_encode(qb_dtype dt, const float *src, size_t n, uint8_t *dst);
/* 1 when every value of dtype s is a value of dt (dt == s, or F32 holding
 * F16 / BF16), else 0. Pure. */
int qbk_out_dt_holds(qb_dtype dt, qb_dtype s);
/* The dtype config.json text declares (`torch_dtype`, else `dtype`):
 * QB_DT_BF16 for "bfloat16", QB_DT_F32 for "float32", QB_DT_F16 for
 * anything else, for no such key and for a config that does not parse
 * (no message then). */
qb_dtype qbk_out_dt_of_config(const qb_host *h, const char *source, const char *config_json);

#endif /* QBK_OUT_DTYPE_H */
