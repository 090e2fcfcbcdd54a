# Runs `EMIT KERNEL | FILECHECK CHECK_FILE` and fails when either side fails.
execute_process(
  COMMAND ${EMIT} ${KERNEL}
  COMMAND ${FILECHECK} --dump-input=fail ${CHECK_FILE}
  RESULTS_VARIABLE _results
  ERROR_VARIABLE _errors)
list(GET _results 0 _emit)
list(GET _results 1 _check)
if(NOT _emit EQUAL 0)
  message(FATAL_ERROR "tilejit-emit ${KERNEL} failed (${_emit}):\n${_errors}")
endif()
if(NOT _check EQUAL 0)
  message(FATAL_ERROR "FileCheck ${CHECK_FILE} failed (${_check}):\n${_errors}")
endif()
