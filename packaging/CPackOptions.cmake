# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE): read by cpack for
# each generator it runs.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
endif()
