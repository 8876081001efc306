# AWQ gemm/gemv fixtures, built on the llama-shaped truth of gen_gptq.c.
add_library(qbt_gen_awq STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_awq.c)
target_include_directories(qbt_gen_awq PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_awq PUBLIC qbt_gen_gptq qbt_gen_common)
