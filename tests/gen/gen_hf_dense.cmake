# qb-gen-hf-dense: tiny Hugging Face dense checkpoints from known weights
# (tests/gen/gen_hf_dense.c), plus qbt_gen_hf_dense, the same code without
# main() so tests can recompute the exact expected values.
add_executable(qb-gen-hf-dense ${CMAKE_CURRENT_LIST_DIR}/gen_hf_dense.c)
target_link_libraries(qb-gen-hf-dense PRIVATE qbt_gen_common)
set_target_properties(qb-gen-hf-dense PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests/bin")

add_library(qbt_gen_hf_dense STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_hf_dense.c)
target_compile_definitions(qbt_gen_hf_dense PRIVATE QBT_GEN_NO_MAIN)
target_include_directories(qbt_gen_hf_dense PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_hf_dense PUBLIC qbt_gen_common)

# The bundled sample the README's main command converts:
# build/sample/tiny-llama-bf16 (llama, bf16, 2 layers, hidden 256,
# intermediate 688, vocab 512, untied), regenerated when the generator changes.
set(QB_SAMPLE_TINY_LLAMA "${CMAKE_BINARY_DIR}/sample/tiny-llama-bf16")
add_custom_command(
  OUTPUT "${QB_SAMPLE_TINY_LLAMA}/model.safetensors" "${QB_SAMPLE_TINY_LLAMA}/config.json"
  COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_BINARY_DIR}/sample"
  COMMAND qb-gen-hf-dense --arch llama --dtype bf16 --layers 2 --hidden 256 --intermediate 688
          --vocab 512 --tied 0 --seed 1 --out "${QB_SAMPLE_TINY_LLAMA}"
  DEPENDS qb-gen-hf-dense
  COMMENT "Generating the bundled sample checkpoint ${QB_SAMPLE_TINY_LLAMA}"
  VERBATIM)
add_custom_target(qb_sample_tiny_llama ALL
  DEPENDS "${QB_SAMPLE_TINY_LLAMA}/model.safetensors" "${QB_SAMPLE_TINY_LLAMA}/config.json")
