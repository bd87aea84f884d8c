# Finds LibTorch and records what the rest of the build needs to know about it.
# All PyTorch-version differences are handled in include/memopt/Runtime/TorchCompat.h;
# this file only exposes the version and whether LibTorch was built with CUDA.
find_package(Torch REQUIRED)

# Torch's flags carry the C++ ABI setting (_GLIBCXX_USE_CXX11_ABI) that every
# object linked against LibTorch must share.
separate_arguments(MEMOPT_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

set(MEMOPT_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(MEMOPT_TORCH_HAS_CUDA ON)
endif()
message(STATUS "memopt: LibTorch ${Torch_VERSION} (CUDA: ${MEMOPT_TORCH_HAS_CUDA})")

# memopt_link_torch(target): link LibTorch with its compile flags.
function(memopt_link_torch target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_include_directories(${target} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  target_compile_options(${target} PUBLIC ${MEMOPT_TORCH_CXX_FLAGS})
  # LLVM's build settings turn exceptions off; LibTorch reports errors by throwing.
  target_compile_options(${target} PRIVATE -fexceptions)
endfunction()

if(MEMOPT_BUILD_COMPILER OR MEMOPT_BUILD_TESTS)
  # The Python that runs the generators and the end-to-end tests must import the
  # PyTorch whose LibTorch is linked: the saved-tensor table is derived from it.
  execute_process(
    COMMAND ${MEMOPT_PYTHON} -c "import torch; print(torch.__version__)"
    OUTPUT_VARIABLE MEMOPT_PYTHON_TORCH_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE python_torch_error RESULT_VARIABLE python_torch_rc)
  if(NOT python_torch_rc EQUAL 0)
    message(FATAL_ERROR "memopt: ${MEMOPT_PYTHON} cannot import torch; pass "
      "-DMEMOPT_PYTHON=<python whose torch is ${Torch_VERSION}>")
  endif()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+\\.[0-9]+" python_torch_release "${MEMOPT_PYTHON_TORCH_VERSION}")
  if(NOT python_torch_release VERSION_EQUAL Torch_VERSION)
    message(FATAL_ERROR "memopt: ${MEMOPT_PYTHON} imports PyTorch ${MEMOPT_PYTHON_TORCH_VERSION} "
      "but LibTorch is ${Torch_VERSION}; pass -DMEMOPT_PYTHON=<python of the same PyTorch> "
      "or CMAKE_PREFIX_PATH=<that python's torch.utils.cmake_prefix_path>")
  endif()
endif()

# memopt_unity_build(target [PREFIX header]): compile the target's sources
# in batches of 16 (MEMOPT_UNITY_BUILD, on by default): a LibTorch or MLIR
# source spends most of its compile time on those headers and templates,
# paid once per batch. The sources of such a target must not define the same
# file-local names. PREFIX: a header each batch includes first (LibTorch's
# headers, before a source's `using namespace mlir` makes them ambiguous).
function(memopt_unity_build target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PREFIX" "")
  if(MEMOPT_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES
      UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
    if(ARG_PREFIX)
      set_target_properties(${target} PROPERTIES
        UNITY_BUILD_CODE_BEFORE_INCLUDE "#include \"${ARG_PREFIX}\"")
    endif()
  endif()
endfunction()
