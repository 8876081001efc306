/*
 * quantbridge reader base library (libquantbridge-base) — its version.
 *
 * STABILITY: stable within a major version; a new function or field comes
 * with a new minor version (QB_BASE_VERSION_MINOR), a changed contract with
 * a new major one.
 *
 * The base library is what every reader of a Hugging Face safetensors
 * directory would otherwise write again: opening the directory and its side
 * files (qb_stdir.h), the reader vtable glue around a format's own tensor
 * table (qb_streader.h) and dense float rows (qb_rows.h). The in-tree
 * readers use it, and so may any vendor's, the way GStreamer's libgstbase
 * serves in-tree and third-party elements alike.
 *
 * It is a static archive, installed with the SDK (`cmake --install build
 * --component sdk`): a plugin links its own copy (CMake target
 * QuantbridgeSDK::base, pkg-config quantbridge-base), so the plugin binary
 * still links nothing from the host and keeps working across host upgrades.
 * It uses nothing but the qb_host table it is handed (safetensors,
 * read_small_file, list_dir, alloc, set_error and, from ABI 1.1, json): no
 * other library, no global state. Its memory comes from host->alloc, so the
 * host's allocation fault injection reaches it. Headers are C99.
 *
 * THREADING: stated per function; nothing here keeps process-wide state.
 */
#ifndef QUANTBRIDGE_BASE_QB_BASE_H
#define QUANTBRIDGE_BASE_QB_BASE_H

#include <stdint.h>

#include <quantbridge/qb_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QB_BASE_VERSION_MAJOR 1
#define QB_BASE_VERSION_MINOR 1
/* The version these headers describe, packed as QB_MAKE_ABI packs. */
#define QB_BASE_VERSION QB_MAKE_ABI(QB_BASE_VERSION_MAJOR, QB_BASE_VERSION_MINOR)

/* The version of the library linked in (QB_BASE_VERSION as it was built):
 * equal to QB_BASE_VERSION when headers and archive come from one SDK.
 * Pure; any thread. */
uint32_t qb_base_version(void);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_BASE_QB_BASE_H */
