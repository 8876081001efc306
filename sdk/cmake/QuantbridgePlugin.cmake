# qb_add_plugin(NAME <name> SOURCES <src>... [LIBS <lib>...] [INCLUDES <dir>...])
#
# Builds a quantbridge plugin as a MODULE library named libqb_<name>.so
# ('-' in <name> becomes '_') that exports only qb_plugin_entry_v1:
# hidden visibility, a version script, bundled static deps kept local, and
# -z defs so any accidental use of a host symbol fails at link time (a
# plugin may only use the qb_host table). Used in-tree and, installed with
# the SDK, by third parties through find_package(QuantbridgeSDK).
set(_QB_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(qb_add_plugin)
  cmake_parse_arguments(QBP "" "NAME" "SOURCES;LIBS;INCLUDES" ${ARGN})
  if(NOT QBP_NAME)
    message(FATAL_ERROR "qb_add_plugin: NAME is required")
  endif()
  string(REPLACE "-" "_" _id "${QBP_NAME}")
  set(_tgt "qb_${_id}")
  add_library(${_tgt} MODULE ${QBP_SOURCES})
  target_link_libraries(${_tgt} PRIVATE QuantbridgeSDK::headers ${QBP_LIBS})
  if(QBP_INCLUDES)
    target_include_directories(${_tgt} PRIVATE ${QBP_INCLUDES})
  endif()
  set_target_properties(${_tgt} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "qb_${_id}"
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED QB_PLUGIN_OUTPUT_DIR)
    set_target_properties(${_tgt} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${QB_PLUGIN_OUTPUT_DIR}")
  endif()
  set(_ldflags "-Wl,--version-script=${_QB_PLUGIN_CMAKE_DIR}/qb_plugin.map"
               "-Wl,--exclude-libs,ALL" "-Wl,-Bsymbolic")
  # Sanitizer runtimes live in the executable, so -z defs cannot hold there.
  if(NOT QB_SANITIZE)
    list(APPEND _ldflags "-Wl,-z,defs")
  endif()
  target_link_options(${_tgt} PRIVATE ${_ldflags})
  if(DEFINED QB_PLUGIN_INSTALL_DIR)
    install(TARGETS ${_tgt} LIBRARY DESTINATION ${QB_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
