# `cmake --install build --prefix P` installs what a training script needs,
# together:
#   P/bin/memopt-compile, memopt-opt, memopt-translate   (with the compiler)
#   P/lib/libmemopt_runtime.so, P/include/memopt/Runtime/*.h (and the
#     launch stubs' LaunchStubDevice.cuh)
#   P/lib/cmake/memopt/                                  the CMake package
#   P/<MEMOPT_PYTHON_INSTALL_DIR>/memopt/                 the Python package
# and writes memopt/_paths.py there with the relative locations of bin/ and
# lib/, so that `import memopt` (with that directory on sys.path) finds its
# own compiler and runtime wherever the prefix is moved. All of it is the
# install component `memopt` (`--component memopt`: without the static
# libraries add_mlir_library's own rules install).

if(NOT DEFINED MEMOPT_PYTHON_INSTALL_DIR)
  execute_process(
    COMMAND ${MEMOPT_PYTHON} -c "import sys; print('%d.%d' % sys.version_info[:2])"
    OUTPUT_VARIABLE memopt_python_version OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE memopt_python_rc)
  if(NOT memopt_python_rc EQUAL 0 OR memopt_python_version STREQUAL "")
    set(memopt_python_version 3)
  endif()
  # Debian's python3 searches <prefix>/lib/python3.X/dist-packages for
  # /usr/local (elsewhere: put it on PYTHONPATH).
  set(MEMOPT_PYTHON_INSTALL_DIR "lib/python${memopt_python_version}/dist-packages")
endif()
set(MEMOPT_PYTHON_INSTALL_DIR "${MEMOPT_PYTHON_INSTALL_DIR}" CACHE STRING
    "Where (relative to the prefix, or absolute) the memopt Python package is installed")

set_target_properties(memopt_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS memopt_runtime EXPORT memoptTargets
        LIBRARY DESTINATION lib COMPONENT memopt)
install(DIRECTORY ${MEMOPT_SOURCE_DIR}/include/memopt/Runtime
        DESTINATION include/memopt COMPONENT memopt
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
if(MEMOPT_BUILD_COMPILER)
  # Installed tools keep finding libMLIR (/usr/lib/llvm-19/lib is not on
  # the loader's path): the link directories outside the build go into
  # their RUNPATH.
  set_target_properties(memopt-compile memopt-opt memopt-translate
    PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  set_target_properties(memopt-compile PROPERTIES EXPORT_NAME compile)
  install(TARGETS memopt-compile EXPORT memoptTargets
          RUNTIME DESTINATION bin COMPONENT memopt)
  install(TARGETS memopt-opt memopt-translate
          RUNTIME DESTINATION bin COMPONENT memopt)
endif()

# The CMake package: find_package(memopt CONFIG) from another project
# (cmake/memoptConfig.cmake.in; memopt_add_model with the compiler).
include(CMakePackageConfigHelpers)
set(MEMOPT_CMAKE_INSTALL_DIR lib/cmake/memopt)
install(EXPORT memoptTargets NAMESPACE memopt::
        DESTINATION ${MEMOPT_CMAKE_INSTALL_DIR} COMPONENT memopt)
configure_package_config_file(
  ${MEMOPT_SOURCE_DIR}/cmake/memoptConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/memoptConfig.cmake
  INSTALL_DESTINATION ${MEMOPT_CMAKE_INSTALL_DIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/memoptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/memoptConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/memoptConfigVersion.cmake
        DESTINATION ${MEMOPT_CMAKE_INSTALL_DIR} COMPONENT memopt)
if(MEMOPT_BUILD_COMPILER)
  install(FILES ${MEMOPT_SOURCE_DIR}/cmake/memoptAddModel.cmake
                ${MEMOPT_SOURCE_DIR}/cmake/memoptModelHeader.cmake
          DESTINATION ${MEMOPT_CMAKE_INSTALL_DIR} COMPONENT memopt)
endif()

install(DIRECTORY ${MEMOPT_SOURCE_DIR}/python/memopt
        DESTINATION ${MEMOPT_PYTHON_INSTALL_DIR} COMPONENT memopt
        FILES_MATCHING PATTERN "*.py"
        PATTERN "__pycache__" EXCLUDE
        PATTERN "_paths.py" EXCLUDE
        PATTERN "_bin" EXCLUDE
        PATTERN "_lib" EXCLUDE)

# _paths.py: computed at install time, when the prefix (--prefix) is known.
install(CODE "
  set(memopt_py \"${MEMOPT_PYTHON_INSTALL_DIR}\")
  if(NOT IS_ABSOLUTE \"\${memopt_py}\")
    set(memopt_py \"\${CMAKE_INSTALL_PREFIX}/\${memopt_py}\")
  endif()
  file(RELATIVE_PATH memopt_bin \"\${memopt_py}/memopt\" \"\${CMAKE_INSTALL_PREFIX}/bin\")
  file(RELATIVE_PATH memopt_lib \"\${memopt_py}/memopt\" \"\${CMAKE_INSTALL_PREFIX}/lib\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${memopt_py}/memopt/_paths.py\")
  file(WRITE \"\$ENV{DESTDIR}\${memopt_py}/memopt/_paths.py\"
\"# Written by cmake --install: where this installation's memopt-compile and
# libmemopt_runtime.so are, relative to this package (memopt/locate.py).
BIN_DIR = '\${memopt_bin}'
LIB_DIR = '\${memopt_lib}'
\")
" COMPONENT memopt)
