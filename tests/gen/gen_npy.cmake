# qb-gen-npy: fixture for the out-of-tree example reader (sdk/examples/npy-reader).
add_executable(qb-gen-npy ${CMAKE_CURRENT_LIST_DIR}/gen_npy.c)
target_link_libraries(qb-gen-npy PRIVATE qbt_gen_common)
set_target_properties(qb-gen-npy PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")
