/*
 * quantbridge SDK — umbrella header. Include this from a plugin.
 *
 *   qb_abi.h          versions, QB_EXPORT, QB_HAS_FIELD, status codes
 *   qb_param.h        typed plugin options
 *   qb_tensor.h       canonical tensors, model info, integer grids
 *   qb_host.h         host services table
 *   qb_json.h         the host's JSON parser and emitter (ABI 1.1)
 *   qb_safetensors.h  the host's strict safetensors parser
 *   qb_reader.h       reader interface
 *   qb_writer.h       writer interface and output sink
 *   qb_plugin.h       entry point, negotiation, descriptor
 *   qb_half.h         fp16 / bf16 conversions (header-only)
 */
#ifndef QUANTBRIDGE_QUANTBRIDGE_H
#define QUANTBRIDGE_QUANTBRIDGE_H

#include "qb_abi.h"
#include "qb_half.h"
#include "qb_host.h"
#include "qb_json.h"
#include "qb_param.h"
#include "qb_plugin.h"
#include "qb_reader.h"
#include "qb_safetensors.h"
#include "qb_tensor.h"
#include "qb_writer.h"

#endif /* QUANTBRIDGE_QUANTBRIDGE_H */
