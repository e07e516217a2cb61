# Installs what an embedding program needs: include/onnxkit/, the static libraries
# (onnxkit_lib as onnxkit::onnxkit, onnxkit_c as onnxkit::onnxkit_c), the CLI, and a CMake
# package config that finds the libraries the static ones link (onnxkitConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(onnxkit_lib PROPERTIES EXPORT_NAME onnxkit)
set_target_properties(onnxkit_c PROPERTIES EXPORT_NAME onnxkit_c)
install(TARGETS onnxkit_lib onnxkit_c EXPORT onnxkitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS onnxkit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/onnxkit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(ONNXKIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxkit)
install(EXPORT onnxkitTargets NAMESPACE onnxkit:: DESTINATION ${ONNXKIT_CMAKE_DIR})
configure_package_config_file(cmake/onnxkitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/onnxkitConfig.cmake INSTALL_DESTINATION ${ONNXKIT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/onnxkitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onnxkitConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/onnxkitConfigVersion.cmake
        DESTINATION ${ONNXKIT_CMAKE_DIR})
