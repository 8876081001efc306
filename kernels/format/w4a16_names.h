/*
 * The W4A16 format (kernels/format, internal) — the names the native
 * W4A16 format fixes (docs/w4a16-format.md, format "sm86-w4a16" version
 * 1): manifest.json
 * field names and values, the fixed file names and the numbering of layer
 * files. The sm86-w4a16 writer emits them, the manifest check
 * (w4a16_manifest.h) reads them: one definition keeps both in step.
 */
#ifndef W4A16_NAMES_H
#define W4A16_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define W4A16_FORMAT "sm86-w4a16"
#define W4A16_FORMAT_VERSION 1
/* Largest num_layers accepted (a sanity bound; no architecture is near). */
#define W4A16_MAX_LAYERS 100000

/* manifest.json members (w4a16-format.md "manifest.json"). */
#define W4A16_K_FORMAT "format"
#define W4A16_K_VERSION "format_version"
#define W4A16_K_BITS "bits"
#define W4A16_K_SYMMETRIC "symmetric"
#define W4A16_K_CODE_OFFSET "code_offset"
#define W4A16_K_NIBBLE_ORDER "nibble_order"
#define W4A16_K_GROUP_SIZE "group_size"
#define W4A16_K_ARCH "architecture"
#define W4A16_K_NUM_LAYERS "num_layers"
#define W4A16_K_TIED "tie_word_embeddings"
#define W4A16_K_LM_HEAD "lm_head"
#define W4A16_K_FEATURES "features"
#define W4A16_K_FILES "files"
#define W4A16_K_FILE_NAME "name"
#define W4A16_K_FILE_BYTES "bytes"
#define W4A16_K_FILE_SHA256 "sha256"
#define W4A16_K_SOURCE "source"
#define W4A16_K_TENSORS "tensors"
/* Optional: the fused expert tensors a reader serves whole, and their
 * layout (w4a16-format.md "gpt-oss"); informational for runtimes. */
#define W4A16_K_FUSED_EXPERTS "fused_experts"
#define W4A16_FUSED_LAYOUT "expert-in-out-interleaved"
/* issue 31: llama4's parts one after another along out */
#define W4A16_FUSED_LAYOUT_CONCAT "expert-in-out-concatenated"

/* Fixed values of the encoding fields. */
#define W4A16_BITS 4
#define W4A16_CODE_OFFSET 8
#define W4A16_NIBBLE_ORDER "low-even"
/* lm_head values: dense F16 head (or none when tied), packed head. */
#define W4A16_LM_HEAD_F16 "f16"
#define W4A16_LM_HEAD_QUANTIZED "quantized"

/* Optional features ("features" entries). */
#define W4A16_FEAT_PERM "input_permutation"
#define W4A16_FEAT_QHEAD "quantized_lm_head"

/* Fixed file names. */
#define W4A16_CONFIG "config.json"
#define W4A16_MANIFEST "manifest.json"
#define W4A16_EMBED "embed.safetensors"
#define W4A16_NORM "norm.safetensors"
#define W4A16_LM_HEAD_FILE "lm_head.safetensors"

/* Longest layer file name, NUL included ("layer_" 6 digits ".safetensors"). */
#define W4A16_LAYER_NAME_LEN 32

/* Digits of every layer file number in a model of n_layers layers: the
 * digits of the largest index n_layers - 1, at least two
 * (w4a16-format.md "Directory"). Pure; n_layers < 1 gives 2. */
int w4a16_layer_digits(int64_t n_layers);

/* Writes layer `layer`'s file name ("layer_07.safetensors") of a model
 * of n_layers layers into buf. Returns 0, or -1 when layer is outside
 * [0, n_layers), n_layers exceeds W4A16_MAX_LAYERS or the name does
 * not fit in len bytes (buf then holds "" when len > 0). Pure. */
int w4a16_layer_file(int64_t layer, int64_t n_layers, char *buf, size_t len);

#endif /* W4A16_NAMES_H */
