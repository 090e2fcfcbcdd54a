# Compiles one snippet with -fsyntax-only at test time and checks the outcome (cmake -P script).
#
# Variables: COMPILER, SOURCE, INCLUDES (a |-separated list), MODE (fail | pass).
# MODE fail: the compiler must reject SOURCE, and its output must contain a static assertion
# whose message holds the text of SOURCE's "// expect: <text>" line. MODE pass: it must compile.
foreach(v COMPILER SOURCE INCLUDES MODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_compile_check.cmake: ${v} is not set")
  endif()
endforeach()

string(REPLACE "|" ";" include_list "${INCLUDES}")
set(args -std=c++20 -fsyntax-only)
foreach(dir IN LISTS include_list)
  list(APPEND args "-I${dir}")
endforeach()

execute_process(
  COMMAND ${COMPILER} ${args} ${SOURCE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

if(MODE STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} to compile, but the compiler failed (${rc}):\n${out}")
  endif()
  message(STATUS "compiled as expected: ${SOURCE}")
  return()
endif()

# Read without list handling: the messages contain semicolons.
file(READ ${SOURCE} source_text)
string(FIND "${source_text}" "// expect: " first)
string(FIND "${source_text}" "// expect: " last REVERSE)
if(first EQUAL -1 OR NOT first EQUAL last)
  message(FATAL_ERROR "${SOURCE} must have exactly one '// expect: <message>' line")
endif()
string(REGEX MATCH "// expect: [^\n]*" expected "${source_text}")
string(REPLACE "// expect: " "" expected "${expected}")

if(rc EQUAL 0)
  message(FATAL_ERROR "expected ${SOURCE} NOT to compile, but it compiled")
endif()

# The message must come from a static assertion (GCC: "static assertion failed: <msg>";
# Clang: "static assertion failed due to requirement '...': <msg>"), not from, say, a missing header.
set(found FALSE)
foreach(marker "static assertion failed" "static_assert failed")
  set(rest "${out}")
  while(NOT found)
    string(FIND "${rest}" "${marker}" pos)
    if(pos EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" ${pos} -1 rest)
    string(FIND "${rest}" "\n" eol)
    string(SUBSTRING "${rest}" 0 ${eol} line)
    string(FIND "${line}" "${expected}" hit)
    if(NOT hit EQUAL -1)
      set(found TRUE)
    endif()
    string(LENGTH "${marker}" skip)
    string(SUBSTRING "${rest}" ${skip} -1 rest)
  endwhile()
endforeach()
if(NOT found)
  message(FATAL_ERROR "${SOURCE} failed to compile, but not with the static assertion\n  '${expected}'\n"
                      "compiler output:\n${out}")
endif()
message(STATUS "rejected as expected (${expected}): ${SOURCE}")
