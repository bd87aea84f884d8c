# Finds MLIR/LLVM 19 and sets up LLVM's CMake helpers (tablegen, lit, docs).
find_package(MLIR REQUIRED CONFIG
  HINTS /usr/lib/llvm-19/lib/cmake/mlir ${MLIR_DIR})
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "memopt needs MLIR/LLVM 19, found ${LLVM_PACKAGE_VERSION} (${MLIR_DIR})")
endif()
message(STATUS "memopt: MLIR from ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")

set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
# Keep exceptions available: LibTorch-facing code throws and catches c10::Error.
set(LLVM_ENABLE_EH ON)
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
include_directories(${MEMOPT_SOURCE_DIR}/include ${MEMOPT_BINARY_DIR}/include)
link_directories(${LLVM_BUILD_LIBRARY_DIR})
add_definitions(${LLVM_DEFINITIONS})

# Everything links the shared libMLIR.so (and, through it, libLLVM), so that
# one process never holds two copies of MLIR's global registries.
set(MEMOPT_MLIR_LIBS MLIR)
if(NOT TARGET mlir-doc)
  add_custom_target(mlir-doc)
endif()
if(NOT TARGET mlir-headers)
  add_custom_target(mlir-headers)
endif()
