# memopt_add_model(<target> MODEL <model.pt> INPUT_SHAPE <spec>...
#                  [SPEC <signature>...] [BUDGET <b> | PREFER <p>]
#                  [DEVICE cpu|cuda] [THREADS <n>|auto] [NO_STUBS]
#                  [COST_MODEL <fit>]
#                  [LIBRARIES <target or path.so>...]
#                  [OPTIONS <memopt-compile arguments>...])
#
# Runs memopt-compile at build time (an ahead-of-time compile step):
#   ${CMAKE_CURRENT_BINARY_DIR}/<target>.memopt.pt    the compiled module
#   ${CMAKE_CURRENT_BINARY_DIR}/<target>.report.json  its report
#   ${CMAKE_CURRENT_BINARY_DIR}/<target>_memopt.h     what a training
#       program needs: the compiled module's path, its signatures, the
#       predicted baseline and planned peaks
#   ${CMAKE_CURRENT_BINARY_DIR}/<target>_stubs/<model>.stubs.cpp  the
#       launch stubs of its plan sites (memopt-compile --emit-stubs)
# and makes <target> a shared library of the compiled stubs that links
# memopt::runtime and puts the header on the include path. Linking it loads
# the runtime (a program must, before torch::jit::load of the module) and
# registers the stubs, which the compiled module then calls instead of the
# generic compression kernels (docs/launch-stubs.md). The stubs are CUDA
# sources too when the project enabled CUDA and DEVICE is cuda. NO_STUBS
# makes <target> an INTERFACE library with the runtime and the header only.
# THREADS is the intra-op thread count CPU training runs with (it picks the
# convolution kernels); auto, the default, takes what a PyTorch process
# started in the build's environment gets, and the header says which.
# LIBRARIES are the libraries that register operators the model calls (a
# C++ extension built by this project, torchvision's ops): SHARED library
# targets defined before the call, or paths; memopt-compile
# loads them (--load-library), and <target> links them so that a program
# linking <target> has them registered before it loads the module.
# COST_MODEL is a cost-model fit of the machine that will train
# (bench/cost_model_calibration.py --write there; memopt-compile
# --cost-model), which prices recompute instead of the built-in fit.
# The compile re-runs when the model, the options, a library, the fit or
# memopt-compile change, and not otherwise.
include_guard(GLOBAL)

set(_memopt_header_script "${CMAKE_CURRENT_LIST_DIR}/memoptModelHeader.cmake")

function(memopt_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_STUBS" "MODEL;BUDGET;PREFER;DEVICE;THREADS;COST_MODEL"
                        "INPUT_SHAPE;SPEC;LIBRARIES;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memopt_add_model(${target}): unknown arguments "
                        "${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "memopt_add_model(${target}): MODEL <model.pt> is required")
  endif()
  if(NOT arg_INPUT_SHAPE AND NOT arg_SPEC)
    message(FATAL_ERROR "memopt_add_model(${target}): give INPUT_SHAPE or SPEC")
  endif()
  if(arg_BUDGET AND arg_PREFER)
    message(FATAL_ERROR "memopt_add_model(${target}): BUDGET and PREFER exclude each other")
  endif()
  if(NOT TARGET memopt::compile)
    message(FATAL_ERROR "memopt_add_model(${target}): this memopt has no "
                        "compiler (a runtime-only installation)")
  endif()
  get_filename_component(model "${arg_MODEL}" ABSOLUTE)

  set(args "${model}")
  foreach(spec IN LISTS arg_INPUT_SHAPE)
    list(APPEND args --input-shape "${spec}")
  endforeach()
  foreach(spec IN LISTS arg_SPEC)
    list(APPEND args --spec "${spec}")
  endforeach()
  if(arg_BUDGET)
    list(APPEND args --budget "${arg_BUDGET}")
  endif()
  if(arg_PREFER)
    list(APPEND args --prefer "${arg_PREFER}")
  endif()
  if(arg_DEVICE)
    list(APPEND args --device "${arg_DEVICE}")
  endif()
  if(arg_THREADS)
    list(APPEND args --intra-op-threads "${arg_THREADS}")
  endif()
  set(cost_model_depends "")
  if(arg_COST_MODEL)
    get_filename_component(cost_model "${arg_COST_MODEL}" ABSOLUTE)
    list(APPEND args --cost-model "${cost_model}")
    set(cost_model_depends "${cost_model}")
  endif()
  set(library_depends "")
  set(library_links "")
  foreach(library IN LISTS arg_LIBRARIES)
    if(TARGET "${library}")
      get_target_property(type "${library}" TYPE)
      if(type STREQUAL "MODULE_LIBRARY")
        message(FATAL_ERROR "memopt_add_model(${target}): LIBRARIES "
                            "'${library}' is a MODULE library, which a "
                            "program cannot link; make it SHARED")
      endif()
      set(file "$<TARGET_FILE:${library}>")
    else()
      get_filename_component(library "${library}" ABSOLUTE)
      set(file "${library}")
    endif()
    list(APPEND args --load-library "${file}")
    # A target: built first, and the compile re-runs when it is rebuilt.
    list(APPEND library_depends "${library}")
    # Nothing calls its functions: kept whatever --as-needed LibTorch's
    # link flags turn on around it.
    list(APPEND library_links "${library}"
         "-Wl,--push-state,--no-as-needed,${file},--pop-state")
  endforeach()
  list(APPEND args ${arg_OPTIONS})

  set(dir "${CMAKE_CURRENT_BINARY_DIR}")
  set(compiled "${dir}/${target}.memopt.pt")
  set(report "${dir}/${target}.report.json")
  set(header "${dir}/${target}_memopt.h")
  # The options as a file whose content changes only when they do: the
  # compile depends on it (configure_file leaves an unchanged file alone).
  set(stamp "${dir}/${target}.memopt-options")
  string(REPLACE ";" "\n" options_text "${args}")
  file(CONFIGURE OUTPUT "${stamp}" CONTENT "${options_text}\n")

  set(outputs "${compiled}" "${report}" "${header}")
  set(stub_args "")
  if(NOT arg_NO_STUBS)
    # memopt-compile names the source after the model file.
    get_filename_component(model_stem "${model}" NAME_WE)
    set(stubs "${dir}/${target}_stubs/${model_stem}.stubs.cpp")
    list(APPEND outputs "${stubs}")
    set(stub_args --emit-stubs "${dir}/${target}_stubs")
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND memopt::compile ${args} -o "${compiled}" --report "${report}"
            ${stub_args}
    COMMAND "${CMAKE_COMMAND}" -DREPORT=${report} -DHEADER=${header}
            -DCOMPILED=${compiled} -DNAME=${target}
            -P "${_memopt_header_script}"
    DEPENDS "${model}" "${stamp}" memopt::compile "${_memopt_header_script}"
            ${library_depends} ${cost_model_depends}
    COMMENT "memopt: compiling ${arg_MODEL} for ${target}"
    VERBATIM)
  add_custom_target(${target}_memopt_compile DEPENDS "${compiled}" "${header}")
  if(arg_NO_STUBS)
    add_library(${target} INTERFACE)
    set(usage INTERFACE)
  else()
    add_library(${target} SHARED "${stubs}")
    set(usage PUBLIC)
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("${arg_DEVICE}" STREQUAL "cuda" AND "CUDA" IN_LIST languages)
      set_source_files_properties("${stubs}" PROPERTIES LANGUAGE CUDA)
      find_package(CUDAToolkit REQUIRED)
      target_link_libraries(${target} PRIVATE CUDA::cudart)
    endif()
  endif()
  add_dependencies(${target} ${target}_memopt_compile)
  target_include_directories(${target} ${usage} "${dir}")
  target_link_libraries(${target} ${usage} memopt::runtime ${library_links})
  # The runtime and the LIBRARIES register their ops when loaded, the stubs
  # their sites; a program that calls none of their functions would lose
  # them to --as-needed and fail at torch::jit::load (or not use the stubs).
  target_link_options(${target} INTERFACE "LINKER:--no-as-needed")
  set_target_properties(${target} PROPERTIES
    MEMOPT_COMPILED_MODULE "${compiled}" MEMOPT_REPORT "${report}")
endfunction()
