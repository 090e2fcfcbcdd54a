# ctest script: installs the tilejit build into a fresh prefix, then configures, builds and runs tests/consumer.
# Variables: TILEJIT_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR CONFIG GENERATOR MAKE_PROGRAM CXX_COMPILER CUDA_ROOT
foreach(var TILEJIT_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  string(REPLACE ";" " " text "${ARGN}")
  message(STATUS "$ ${text}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${text}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
run("${CMAKE_COMMAND}" --install "${TILEJIT_BUILD_DIR}" --prefix "${prefix}" ${config_args})

set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}")
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CUDA_ROOT)
  get_filename_component(cuda_root "${CUDA_ROOT}" ABSOLUTE)
  list(APPEND configure_args "-DCUDAToolkit_ROOT=${cuda_root}")
endif()
if(CONFIG)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
endif()
run("${CMAKE_COMMAND}" ${configure_args})
run("${CMAKE_COMMAND}" --build "${build}" ${config_args})

find_program(consumer NAMES consumer PATHS "${build}" "${build}/${CONFIG}" NO_DEFAULT_PATH REQUIRED)
run("${consumer}")
# What the package links must not make the consumer need libcuda (nor spdlog / fmt).
run("${CMAKE_COMMAND}" "-DFILES=${consumer}" -P "${CMAKE_CURRENT_LIST_DIR}/../unit/check_dependencies.cmake")
