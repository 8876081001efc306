# qb-gen-mxfp4: gpt-oss `quant_method: mxfp4` fixtures (tests/gen/gen_mxfp4.c),
# plus qbt_gen_mxfp4 without main() for tests.
add_library(qbt_gen_mxfp4 STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_mxfp4.c)
target_compile_definitions(qbt_gen_mxfp4 PRIVATE QBT_GEN_NO_MAIN)
target_include_directories(qbt_gen_mxfp4 PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_mxfp4 PUBLIC qbt_gen_common)

add_executable(qb-gen-mxfp4 ${CMAKE_CURRENT_LIST_DIR}/gen_mxfp4.c)
target_link_libraries(qb-gen-mxfp4 PRIVATE qbt_gen_common)
set_target_properties(qb-gen-mxfp4 PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
