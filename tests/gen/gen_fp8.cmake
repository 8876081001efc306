# qb-gen-fp8: `quant_method: fp8` fixtures from known FP8 bytes and scales
# (tests/gen/gen_fp8.c, on the llama skeleton of gen_ct.c), plus qbt_gen_fp8
# without main() for tests.
add_library(qbt_gen_fp8 STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_fp8.c)
target_compile_definitions(qbt_gen_fp8 PRIVATE QBT_GEN_NO_MAIN)
target_include_directories(qbt_gen_fp8 PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_fp8 PUBLIC qbt_gen_ct qbt_gen_hf_dense qbt_gen_common)

add_executable(qb-gen-fp8 ${CMAKE_CURRENT_LIST_DIR}/gen_fp8.c)
target_link_libraries(qb-gen-fp8 PRIVATE qbt_gen_ct qbt_gen_hf_dense qbt_gen_common)
set_target_properties(qb-gen-fp8 PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
