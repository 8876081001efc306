# qbt_ggml_quant: ggml block quantizers for fixtures (tests only). Uses the
# type ids and row sizes of the gguf_ggml library; pulls that library in
# when the GGUF plugin folder is not part of this build.
if(NOT TARGET gguf_ggml)
  add_subdirectory(${PROJECT_SOURCE_DIR}/plugins/gguf/ggml
                   ${CMAKE_BINARY_DIR}/gguf_ggml_standalone)
endif()
add_library(qbt_ggml_quant STATIC ${CMAKE_CURRENT_LIST_DIR}/ggml_quant.c)
target_include_directories(qbt_ggml_quant PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(qbt_ggml_quant PUBLIC gguf_ggml QuantbridgeSDK::headers m)
