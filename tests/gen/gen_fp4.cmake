# qb-gen-fp4: 4-bit float (NVFP4 / MXFP4) fixtures in compressed-tensors and
# ModelOpt layouts (tests/gen/gen_fp4.c), plus qbt_gen_fp4, the same code
# without main() so tests can rebuild the exact ground truth.
add_library(qbt_gen_fp4 STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_fp4.c)
target_compile_definitions(qbt_gen_fp4 PRIVATE QBT_GEN_NO_MAIN)
target_include_directories(qbt_gen_fp4 PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_fp4 PUBLIC qbt_gen_ct qbt_gen_common)

add_executable(qb-gen-fp4 ${CMAKE_CURRENT_LIST_DIR}/gen_fp4.c)
target_link_libraries(qb-gen-fp4 PRIVATE qbt_gen_ct qbt_gen_common)
set_target_properties(qb-gen-fp4 PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
