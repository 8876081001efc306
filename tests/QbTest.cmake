# qb_add_check_test(NAME <name> SOURCES <src>... [LIBS <lib>...] [INCLUDES <dir>...]
#                   [ENV <VAR=value>...] [LABELS <label>...])
# Builds a `check` test program and registers it with CTest. check forks each
# test by default, so one crashing test cannot take the suite down.
# Tests find the built tool and plugins through QB_TEST_BIN / QB_TEST_BUILD_DIR /
# QB_TEST_SOURCE_DIR in the environment. Every test links qbt_support
# (tests/support): a test that defines qbt_suite() and no main() gets its main.
function(qb_add_check_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;INCLUDES;ENV;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE PkgConfig::CHECK QuantbridgeSDK::headers ${T_LIBS} qbt_support qbk)
  if(T_INCLUDES)
    target_include_directories(${T_NAME} PRIVATE ${T_INCLUDES})
  endif()
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set(_env "QB_TEST_BIN=$<TARGET_FILE:quantbridge>"
           "QB_TEST_BUILD_DIR=${CMAKE_BINARY_DIR}"
           "QB_TEST_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
           "QB_TEST_TMPDIR=${CMAKE_BINARY_DIR}/tests/tmp"
           ${T_ENV})
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${_env}" TIMEOUT 600)
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
