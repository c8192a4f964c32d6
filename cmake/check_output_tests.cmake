# Fails naming every PASS_REGULAR_EXPRESSION in the project's CMake files:
# CTest then ignores the exit status, so a test whose command printed the
# right words and crashed passed. caravan_output_test
# (cmake/CaravanOutputTest.cmake) checks both.
#
#   cmake -DSOURCE_DIR=<repository> [-DPRETEND=<file>] -P check_output_tests.cmake
#
# PRETEND adds such a line to one file, as if written there: the check's own
# test shows with it that one is found. Build folders (build*) are skipped.

cmake_minimum_required(VERSION 3.22)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_output_tests.cmake: pass -DSOURCE_DIR=<repository root>")
endif()
set(property "PASS_REGULAR")
string(APPEND property "_EXPRESSION")  # so this file does not find itself

set(files ${SOURCE_DIR}/CMakeLists.txt)
file(GLOB tops LIST_DIRECTORIES true RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/*)
foreach(top IN LISTS tops)
  if(NOT IS_DIRECTORY ${SOURCE_DIR}/${top} OR top MATCHES "^(build|\\.)")
    continue()
  endif()
  file(GLOB_RECURSE found ${SOURCE_DIR}/${top}/CMakeLists.txt ${SOURCE_DIR}/${top}/*.cmake)
  list(APPEND files ${found})
endforeach()

set(bad)
foreach(path IN LISTS files)
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${path})
  file(READ ${path} content)
  if(PRETEND STREQUAL rel)
    string(APPEND content "set_tests_properties(T PROPERTIES ${property} \"words\")\n")
  endif()
  # One list element a line, empty lines kept (file(STRINGS) drops them,
  # and the line numbers with them); a semicolon would split a line, and an
  # unmatched square bracket join it to the next ones.
  string(REPLACE ";" "," content "${content}")
  string(REPLACE "[" "(" content "${content}")
  string(REPLACE "]" ")" content "${content}")
  string(REPLACE "\n" ";" lines "${content}")
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "#.*" "" code "${line}")
    if(code MATCHES "${property}")
      list(APPEND bad "${rel}:${n}: ${property} ignores the exit status: use caravan_output_test")
    endif()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n" text)
  message(FATAL_ERROR "${text}")
endif()
