/*
 * GPTQ reader — open(): pairs every qweight with its qzeros/scales/g_idx
 * across shards, validates shapes, group maps and the zero-point
 * convention, and builds the canonical tensor table.
 */
#ifndef GPTQ_OPEN_H
#define GPTQ_OPEN_H

#include "qlinear.h"

/* Zero-convention choice of the `zero_convention` option. */
enum { GPTQ_OPT_AUTO = 0, GPTQ_OPT_V1 = 1, GPTQ_OPT_V2 = 2 };

/* Opens the GPTQ checkpoint at `path` (a Hugging Face directory, or one
 * .safetensors file whose directory holds the configs). `zero_opt` is
 * GPTQ_OPT_*. On success *out owns everything (free with qlinear_free).
 * On failure *out is NULL, nothing is left allocated and the message names
 * the file and tensor. Errors: QB_E_NOT_FOUND, QB_E_FORMAT,
 * QB_E_UNSUPPORTED, QB_E_MISMATCH, QB_E_IO, QB_E_NOMEM.
 *
 * Zero-point convention rule (v1 stores real zero - 1, v2 stores it as is):
 *   1. --option zero_convention=v1|v2 wins (a warning when the stored zeros
 *      of a symmetric checkpoint say otherwise);
 *   2. when every quantized module claims sym and every stored zero field
 *      is 2^(b-1)-1 (resp. 2^(b-1)), the data decides v1 (resp. v2): only
 *      that reading makes the checkpoint symmetric; a checkpoint_format
 *      label that disagrees gets a warning naming the choice;
 *   3. otherwise (asymmetric, or zeros not uniform) the data cannot tell:
 *      the checkpoint_format label is trusted when present;
 *   4. no label either: error asking for --option zero_convention.
 * Not thread-safe (instance class). */
qb_status gptq_open_model(const qb_host *h, const char *path, int zero_opt, qlinear_model **out);

#endif /* GPTQ_OPEN_H */
