# Installation and the CMake package: find_package(tilejit CONFIG) gives tilejit::tilejit, ::dsl, ::kernel, ::jit,
# ::runtime.
include(CMakePackageConfigHelpers)

option(TILEJIT_INSTALL "Generate the install rules of tilejit" ON)
if(NOT TILEJIT_INSTALL)
  return()
endif()

set(TILEJIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilejit CACHE STRING
    "Where the tilejit CMake package files are installed, relative to the prefix")

# Shared builds: an installed library finds its siblings next to it, and libnvrtc where it was linked from.
foreach(_tilejit_lib tilejit_jit tilejit_runtime)
  get_target_property(_tilejit_type ${_tilejit_lib} TYPE)
  if(_tilejit_type STREQUAL "SHARED_LIBRARY")
    set_target_properties(${_tilejit_lib} PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
  endif()
endforeach()
unset(_tilejit_lib)
unset(_tilejit_type)

install(TARGETS tilejit_dsl tilejit_kernel tilejit_jit tilejit_runtime tilejit
  EXPORT tilejitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Whole include trees: public headers may pull in .def / .inc files next to them.
install(DIRECTORY
    ${PROJECT_SOURCE_DIR}/dsl/include/
    ${PROJECT_SOURCE_DIR}/jit/include/
    ${PROJECT_SOURCE_DIR}/runtime/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
get_target_property(_tilejit_runtime_binary_dir tilejit_runtime BINARY_DIR)
install(FILES ${_tilejit_runtime_binary_dir}/include/tilejit/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilejit)
unset(_tilejit_runtime_binary_dir)

install(EXPORT tilejitTargets
  NAMESPACE tilejit::
  FILE tilejitTargets.cmake
  DESTINATION ${TILEJIT_INSTALL_CMAKEDIR})

# The installed config finds what the exported link interface names: static libraries carry
# their private dependencies (NVRTC, Threads, libdl) to the consumer's link line.
get_target_property(_tilejit_runtime_type tilejit_runtime TYPE)
if(_tilejit_runtime_type STREQUAL "STATIC_LIBRARY")
  set(TILEJIT_STATIC_LIBS ON)
else()
  set(TILEJIT_STATIC_LIBS OFF)
endif()
unset(_tilejit_runtime_type)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/tilejitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tilejitConfig.cmake
  INSTALL_DESTINATION ${TILEJIT_INSTALL_CMAKEDIR})
# 0.x releases may break compatibility between minor versions.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/tilejitConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/cmake/tilejitConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/tilejitConfigVersion.cmake
  DESTINATION ${TILEJIT_INSTALL_CMAKEDIR})
