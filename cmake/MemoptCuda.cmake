# Finds nvcc. The CUDA kernels (plain CUDA C++ behind extern "C" launchers) are
# compiled whenever nvcc exists, so CI checks them even on machines without a
# GPU; they are linked into the runtime only when LibTorch itself has CUDA.
set(MEMOPT_HAVE_NVCC OFF)
if(MEMOPT_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Volta-class and older were dropped by CUDA 13; 80 = A100, 90 = H100/H200.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(MEMOPT_HAVE_NVCC ON)
  endif()
endif()
message(STATUS "memopt: nvcc ${MEMOPT_HAVE_NVCC} (${CMAKE_CUDA_COMPILER})")
