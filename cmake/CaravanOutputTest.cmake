# caravan_output_test(NAME <name> EXIT <code> OUTPUT <regex> COMMAND <command> [args...])
#
# A test that passes when its command exits with <code> and prints something
# that matches <regex> (stdout and stderr together; cmake/expect_output.cmake).
# Use it instead of PASS_REGULAR_EXPRESSION, which ignores the exit status:
# Tests.OutputChecksAlsoCheckTheExit fails on any PASS_REGULAR_EXPRESSION.
# Targets in COMMAND are written $<TARGET_FILE:...>; set other properties
# (TIMEOUT, LABELS, ENVIRONMENT) with set_tests_properties as usual.
function(caravan_output_test)
  cmake_parse_arguments(T "" "NAME;EXIT;OUTPUT" "COMMAND" ${ARGN})
  if(NOT T_NAME OR NOT DEFINED T_EXIT OR NOT DEFINED T_OUTPUT OR NOT T_COMMAND)
    message(FATAL_ERROR "caravan_output_test: NAME, EXIT, OUTPUT and COMMAND are required")
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${CMAKE_COMMAND} -DEXPECT_EXIT=${T_EXIT} "-DEXPECT_OUTPUT=${T_OUTPUT}"
                   -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake -- ${T_COMMAND})
endfunction()
