# GGUF fixtures: library (writer + synthetic models from known weights) for
# the gguf tests, and qb-gen-gguf for CLI tests. With qbt_ggml_quant
# (gen_ggml.cmake, included before this file) the fixtures can also write
# every ggml type that library quantizes.
add_library(qbt_gguf_gen STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_gguf.c)
target_link_libraries(qbt_gguf_gen PUBLIC qbt_gen_common)
add_executable(qb-gen-gguf ${CMAKE_CURRENT_LIST_DIR}/gen_gguf.c)
target_compile_definitions(qb-gen-gguf PRIVATE QBT_GEN_GGUF_MAIN)
target_link_libraries(qb-gen-gguf PRIVATE qbt_gen_common)
if(TARGET qbt_ggml_quant)
  target_compile_definitions(qbt_gguf_gen PUBLIC QBT_GGUF_HAVE_QUANT)
  target_link_libraries(qbt_gguf_gen PUBLIC qbt_ggml_quant)
  target_compile_definitions(qb-gen-gguf PRIVATE QBT_GGUF_HAVE_QUANT)
  target_link_libraries(qb-gen-gguf PRIVATE qbt_ggml_quant)
endif()
set_target_properties(qb-gen-gguf PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
# HF tokenizer.json -> tokenizer.ggml.* metadata (gen_gguf_tok.h).
add_library(qbt_gguf_tok_gen STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_gguf_tok.c)
target_link_libraries(qbt_gguf_tok_gen PUBLIC qbt_gguf_gen PkgConfig::CJSON)
add_executable(qb-gen-gguf-tok ${CMAKE_CURRENT_LIST_DIR}/gen_gguf_tok_main.c)
target_link_libraries(qb-gen-gguf-tok PRIVATE qbt_gguf_tok_gen)
set_target_properties(qb-gen-gguf-tok PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
