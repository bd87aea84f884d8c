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
