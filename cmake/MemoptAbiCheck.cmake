# The compiler links LibTorch and LLVM/MLIR into one process, so both must use
# the same libstdc++ string/list ABI (_GLIBCXX_USE_CXX11_ABI). Debian's
# LLVM 19 uses the C++11 ABI; pip wheels of PyTorch before 2.7 ship the
# pre-C++11 one. A mismatch links but crashes at the first std::string that
# crosses the boundary, so it is refused here with what to do instead.
function(memopt_check_cxx_abi)
  set(torch_abi 1)
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    set(torch_abi 0)
  endif()

  # LLVM's ABI: its exported symbols name std::__cxx11 types or they do not.
  set(llvm_abi "")
  find_program(MEMOPT_NM nm)
  find_library(MEMOPT_LLVM_SHARED NAMES LLVM LLVM-${LLVM_VERSION_MAJOR}
               HINTS ${LLVM_LIBRARY_DIR} NO_DEFAULT_PATH)
  if(MEMOPT_NM AND MEMOPT_LLVM_SHARED)
    execute_process(COMMAND ${MEMOPT_NM} -D --defined-only ${MEMOPT_LLVM_SHARED}
                    OUTPUT_VARIABLE symbols ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0 AND symbols)
      if(symbols MATCHES "__cxx11")
        set(llvm_abi 1)
      else()
        set(llvm_abi 0)
      endif()
    endif()
  endif()
  if(llvm_abi STREQUAL "")
    message(STATUS "memopt: could not read LLVM's C++ ABI; assuming _GLIBCXX_USE_CXX11_ABI=1")
    set(llvm_abi 1)
  endif()

  message(STATUS "memopt: _GLIBCXX_USE_CXX11_ABI LibTorch=${torch_abi} LLVM=${llvm_abi}")
  if(NOT torch_abi EQUAL llvm_abi)
    message(FATAL_ERROR
      "memopt: LibTorch (${TORCH_INSTALL_PREFIX}) uses _GLIBCXX_USE_CXX11_ABI=${torch_abi} "
      "but LLVM/MLIR (${LLVM_LIBRARY_DIR}) uses _GLIBCXX_USE_CXX11_ABI=${llvm_abi}; the compiler "
      "links both into one process. Use a LibTorch built with the same ABI (PyTorch >= 2.7 "
      "wheels, Debian's libtorch-dev, or the cxx11-ABI LibTorch archive), or build only the "
      "runtime against this one with -DMEMOPT_BUILD_COMPILER=OFF.")
  endif()
endfunction()
