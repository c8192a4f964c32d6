# Runs a test's command and passes only when it exits with EXPECT_EXIT and
# its output (stdout and stderr together) matches EXPECT_OUTPUT, a CMake
# regular expression. CTest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status, so a command that printed the right line and then crashed passed.
#
#   cmake -DEXPECT_EXIT=<code> -DEXPECT_OUTPUT=<regex> -P expect_output.cmake -- <command> [args...]
#
# A process ended by a signal has no exit code (execute_process gives its
# name, "Segmentation fault"), so it never matches. An argument of the
# command must not contain a semicolon (CMake would split it).

cmake_minimum_required(VERSION 3.22)

if(NOT DEFINED EXPECT_EXIT OR NOT DEFINED EXPECT_OUTPUT)
  message(FATAL_ERROR "expect_output.cmake: pass -DEXPECT_EXIT=<code> and -DEXPECT_OUTPUT=<regex>")
endif()
set(command)
set(after_dashes FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_dashes)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_dashes TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_output.cmake: no command after --")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
message("${output}")
list(JOIN command " " shown)
if(NOT status STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "expect_output: '${shown}' ended with '${status}', expected exit status "
                      "${EXPECT_EXIT}")
endif()
if(NOT output MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "expect_output: the output of '${shown}' (above) does not match "
                      "'${EXPECT_OUTPUT}'")
endif()
