# qb-gen-ct: compressed-tensors fixtures from known codes (tests/gen/gen_ct.c),
# plus qbt_gen_ct, the same code without main() (and the llama skeleton
# gen_fp8.c shares) so tests can rebuild the exact ground truth.
add_library(qbt_gen_ct STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_ct.c)
target_compile_definitions(qbt_gen_ct PRIVATE QBT_GEN_NO_MAIN)
target_include_directories(qbt_gen_ct PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_ct PUBLIC qbt_gen_common)

add_executable(qb-gen-ct ${CMAKE_CURRENT_LIST_DIR}/gen_ct.c)
target_link_libraries(qb-gen-ct PRIVATE qbt_gen_common)
set_target_properties(qb-gen-ct PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
