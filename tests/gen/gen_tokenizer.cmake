# A hand-built byte-level BPE tokenizer.json (gen_tokenizer.h) for the
# forward and verify tests that run on text.
add_library(qbt_gen_tokenizer STATIC ${CMAKE_CURRENT_LIST_DIR}/gen_tokenizer.c)
target_include_directories(qbt_gen_tokenizer PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_gen_tokenizer PUBLIC PkgConfig::CJSON)
