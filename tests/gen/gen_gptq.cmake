# GPTQ (and shared llama-shaped) quantized fixtures: library for the reader
# tests plus qb-gen-quant, a CLI that writes one named variant.
add_library(qbt_gen_gptq STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_gptq.c)
target_include_directories(qbt_gen_gptq PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_gptq PUBLIC qbt_gen_common)
add_executable(qb-gen-quant ${CMAKE_CURRENT_LIST_DIR}/gen_gptq_main.c)
target_link_libraries(qb-gen-quant PRIVATE qbt_gen_awq qbt_gen_gptq)
set_target_properties(qb-gen-quant PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
