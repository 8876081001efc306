# qb_add_plugin(NAME <name> SOURCES <src>... [LIBS <lib>...] [INCLUDES <dir>...]
#               [CORE] [NO_INSTALL] [CONF <file>] [DESTINATION <dir>])
#
# Builds a quantbridge plugin as a MODULE library named libqb_<name>.so
# ('-' in <name> becomes '_') that exports only qb_plugin_entry_v1:
# hidden visibility, a version script, bundled static deps kept local, and
# -z defs so any accidental use of a host symbol fails at link time (a
# plugin may only use the qb_host table). Used in-tree and, installed with
# the SDK, by third parties through find_package(QuantbridgeSDK 1).
#
# Installation (`cmake --install`), first rule that applies:
#   NO_INSTALL          nothing is installed (test plugins, which must never
#                       reach a trusted plugin directory);
#   DESTINATION <dir>   the library, and the CONF file, go to <dir> (relative:
#                       under CMAKE_INSTALL_PREFIX), a vendor's own directory;
#                       users register it with $QUANTBRIDGE_PLUGIN_PATH=<dir>
#                       or `quantbridge --plugin-dir <dir>` (the conf's
#                       library= can then be the bare file name);
#   in tree             QB_PLUGIN_INSTALL_DIR, the conf to
#                       QB_PLUGIN_CONF_INSTALL_DIR (both set by the top-level
#                       CMakeLists.txt);
#   out of tree         the directories of the SDK that find_package found:
#                       QUANTBRIDGE_PLUGIN_DIR (the installed host's trusted
#                       plugin directory) and QUANTBRIDGE_PLUGIN_CONF_DIR (the
#                       plugins.d it reads), absolute paths into that SDK's
#                       prefix: installing there makes the plugin part of
#                       that installation (root may be needed).
# Neither set (this file included without the package): nothing is installed,
# with a warning.
#
# CONF <file> (optional): the plugin's registration, a [plugin:<name>]
# section (named like the plugin's descriptor), installed as described above
# and renamed <name>.conf (one plugin per file, named after it). Use a bare
# library=libqb_<id>.so in it: it then resolves in the plugin directory.
#
# CORE (optional): SOURCES are compiled once, into an OBJECT library
# qb_<id>_core, and the MODULE is linked from its objects. Tests and fuzz
# targets then link qb_<id>_core instead of listing the plugin's files again:
# they get the same objects (same flags), its include directories (the
# plugin folder and INCLUDES, PUBLIC) and its LIBS. The core holds every
# source, the entry file too: unit tests call qb_plugin_entry_v1 in-process
# with a fake host, and an entry may share its file with reader code. Why an
# OBJECT library and not a static one: objects are linked whole, so nothing
# the vtables reach can be dropped, and the entry is not an archive member,
# which --exclude-libs,ALL would keep from being exported. Per-plugin
# compile options then go on qb_<id>_core (the MODULE compiles nothing).
# Without CORE the MODULE compiles SOURCES itself, as before, so third-party
# calls such as target_compile_options(qb_<id> ...) keep working.
set(_QB_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(qb_add_plugin)
  cmake_parse_arguments(QBP "CORE;NO_INSTALL" "NAME;CONF;DESTINATION" "SOURCES;LIBS;INCLUDES" ${ARGN})
  if(NOT QBP_NAME)
    message(FATAL_ERROR "qb_add_plugin: NAME is required")
  endif()
  string(REPLACE "-" "_" _id "${QBP_NAME}")
  set(_tgt "qb_${_id}")
  if(QBP_CORE)
    set(_core "${_tgt}_core")
    add_library(${_core} OBJECT ${QBP_SOURCES})
    target_link_libraries(${_core} PUBLIC QuantbridgeSDK::headers ${QBP_LIBS})
    target_include_directories(${_core} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${QBP_INCLUDES})
    # The plugin's own compile settings: every user of the core gets the
    # objects the MODULE ships.
    set_target_properties(${_core} PROPERTIES
      POSITION_INDEPENDENT_CODE ON
      C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
    # Linking an OBJECT library adds its objects to this target's link line
    # (and only to this one: users of the MODULE get none of them).
    add_library(${_tgt} MODULE)
    target_link_libraries(${_tgt} PRIVATE ${_core})
  else()
    add_library(${_tgt} MODULE ${QBP_SOURCES})
    target_link_libraries(${_tgt} PRIVATE QuantbridgeSDK::headers ${QBP_LIBS})
    if(QBP_INCLUDES)
      target_include_directories(${_tgt} PRIVATE ${QBP_INCLUDES})
    endif()
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
  _qb_plugin_install()
endfunction()

# The install rules of qb_add_plugin (see its header); a macro so it sees the
# caller's parsed QBP_* arguments and _tgt.
macro(_qb_plugin_install)
  if(QBP_NO_INSTALL)
    if(QBP_DESTINATION OR QBP_CONF)
      message(FATAL_ERROR "qb_add_plugin(${QBP_NAME}): NO_INSTALL with DESTINATION or CONF")
    endif()
  else()
    if(QBP_DESTINATION)
      set(_lib_dest "${QBP_DESTINATION}")
      set(_conf_dest "${QBP_DESTINATION}")
    elseif(DEFINED QB_PLUGIN_INSTALL_DIR)
      set(_lib_dest "${QB_PLUGIN_INSTALL_DIR}")
      set(_conf_dest "${QB_PLUGIN_CONF_INSTALL_DIR}")
    elseif(DEFINED QUANTBRIDGE_PLUGIN_DIR)
      set(_lib_dest "${QUANTBRIDGE_PLUGIN_DIR}")
      set(_conf_dest "${QUANTBRIDGE_PLUGIN_CONF_DIR}")
    else()
      set(_lib_dest "")
      message(WARNING "qb_add_plugin(${QBP_NAME}): no plugin directory known (neither "
              "QB_PLUGIN_INSTALL_DIR nor the package's QUANTBRIDGE_PLUGIN_DIR): not installed; "
              "pass DESTINATION or use find_package(QuantbridgeSDK 1)")
    endif()
    if(_lib_dest)
      install(TARGETS ${_tgt} LIBRARY DESTINATION "${_lib_dest}")
      if(QBP_CONF)
        if(NOT _conf_dest)
          message(FATAL_ERROR "qb_add_plugin(${QBP_NAME}): CONF given but no conf directory known")
        endif()
        get_filename_component(_conf_src "${QBP_CONF}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
        if(NOT EXISTS "${_conf_src}")
          message(FATAL_ERROR "qb_add_plugin(${QBP_NAME}): CONF file ${_conf_src} does not exist")
        endif()
        install(FILES "${_conf_src}" DESTINATION "${_conf_dest}" RENAME "${QBP_NAME}.conf")
      endif()
    endif()
  endif()
endmacro()
