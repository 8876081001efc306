# GGUF fixtures: library (writer + synthetic models from known weights) for
# the gguf tests, and qb-gen-gguf for CLI tests.
add_library(qbt_gguf_gen STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_gguf.c)
target_link_libraries(qbt_gguf_gen PUBLIC qbt_gen_common)
add_executable(qb-gen-gguf ${CMAKE_CURRENT_LIST_DIR}/gen_gguf.c)
target_compile_definitions(qb-gen-gguf PRIVATE QBT_GEN_GGUF_MAIN)
target_link_libraries(qb-gen-gguf PRIVATE qbt_gen_common)
set_target_properties(qb-gen-gguf PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
