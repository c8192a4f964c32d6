set(CARAVAN_PLUGIN_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/plugin_exports.map)

# caravan_add_plugin(KIND NAME SOURCES ... [LIBS ...])
# Builds libcaravan-<kind>-<name>.so as a MODULE with hidden visibility that
# exports only the entry symbol and resolves every symbol at link time.
function(caravan_add_plugin kind name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  set(target caravan-${kind}-${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE caravan_plugin_abi ${P_LIBS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME ${target}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${CARAVAN_PLUGIN_OUTPUT_DIR})
  # Hidden visibility cannot hide std:: template instantiations, so a
  # version script keeps everything but the entry symbol local.
  target_link_options(${target} PRIVATE -Wl,--no-undefined
    -Wl,--version-script=${CARAVAN_PLUGIN_EXPORTS_MAP})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CARAVAN_PLUGIN_EXPORTS_MAP})
  # One Debian package per plugin (caravan-van-zmq, ...): a machine without
  # RDMA or CUDA installs none of what it cannot load.
  install(TARGETS ${target} LIBRARY DESTINATION ${CARAVAN_PLUGIN_INSTALL_DIR} COMPONENT ${kind}-${name})
  set_property(GLOBAL APPEND PROPERTY CARAVAN_PLUGIN_COMPONENTS ${kind}-${name})
endfunction()

# caravan_plugin_option(VAR DESCRIPTION): a tri-state AUTO/ON/OFF switch.
# AUTO builds the backend when its dependency is found; ON makes a missing
# dependency a configure error.
function(caravan_plugin_option var description)
  set(${var} AUTO CACHE STRING "${description} (AUTO, ON or OFF)")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
endfunction()

# caravan_plugin_find(VAR LABEL RESULT WHAT "rdma-core" HINT "apt-get install ..."
#                     PKG PREFIX MODULE [PREFIX MODULE ...])
# Whether the backend switched by VAR (caravan_plugin_option) is built: not
# when VAR is OFF; otherwise each pkg-config MODULE is looked up (its
# PkgConfig::PREFIX target and PREFIX_VERSION come back to the caller). A
# missing one skips the backend under AUTO, saying what to install, and is
# a configure error under ON. RESULT is set TRUE or FALSE.
function(caravan_plugin_find var label result)
  cmake_parse_arguments(F "" "WHAT;HINT" "PKG" ${ARGN})
  set(${result} FALSE PARENT_SCOPE)
  string(TOUPPER "${${var}}" mode)
  if(NOT mode STREQUAL "AUTO" AND NOT ${var})
    message(STATUS "${label}: skipped: ${var}=${${var}}")
    return()
  endif()
  find_package(PkgConfig QUIET)
  set(found ${PKG_CONFIG_FOUND})
  set(prefixes "")
  while(F_PKG)
    list(POP_FRONT F_PKG prefix module)
    list(APPEND prefixes ${prefix})
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
    endif()
    if(NOT ${prefix}_FOUND)
      set(found FALSE)
    endif()
  endwhile()
  if(NOT found)
    if(NOT mode STREQUAL "AUTO")
      message(FATAL_ERROR "${label}: ${var}=${${var}} but ${F_WHAT} was not found (${F_HINT})")
    endif()
    message(STATUS "${label}: skipped: ${F_WHAT} not found (${F_HINT})")
    return()
  endif()
  foreach(prefix IN LISTS prefixes)
    set(${prefix}_VERSION ${${prefix}_VERSION} PARENT_SCOPE)
  endforeach()
  set(${result} TRUE PARENT_SCOPE)
endfunction()

# caravan_van_conformance(NAME TARGET plugin-target [ENVIRONMENT VAR=VALUE ...])
# Registers the CTest VanConformance.<NAME>: caravan-van-check over the van,
# with the whole-job test when caravan-launch and sum_check_worker are built.
# Call it from the van's own CMakeLists.txt, for example
#   caravan_van_conformance(efa TARGET caravan-van-efa ENVIRONMENT FI_PROVIDER=tcp)
# ARGS go to caravan-van-check (a --gtest_filter, for example).
# The registration is deferred to the end of the top-level directory, where
# every tool and test program is known whatever order folders are added in.
function(caravan_van_conformance name)
  cmake_parse_arguments(C "" "TARGET" "ENVIRONMENT;ARGS" ${ARGN})
  if(NOT CARAVAN_BUILD_TESTS)
    return()
  endif()
  # A deferred call reads variables when it runs, so bake the values in now.
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${PROJECT_SOURCE_DIR}]]
    CALL _caravan_van_conformance_add [[${name}]] [[${C_TARGET}]] [[${C_ENVIRONMENT}]] [[${C_ARGS}]])")
endfunction()

function(_caravan_van_conformance_add name target environment args)
  if(NOT TARGET caravan-van-check)
    return()
  endif()
  set(job_args "")
  if(TARGET caravan-launch AND TARGET sum_check_worker AND TARGET caravan-server)
    set(job_args --launcher $<TARGET_FILE:caravan-launch> --worker $<TARGET_FILE:sum_check_worker>)
  endif()
  add_test(NAME VanConformance.${name}
    COMMAND $<TARGET_FILE:caravan-van-check> --van $<TARGET_FILE:${target}> ${job_args} ${args})
  set_tests_properties(VanConformance.${name} PROPERTIES
    TIMEOUT 300 LABELS van_conformance ENVIRONMENT "${environment}" SKIP_RETURN_CODE 77)
endfunction()
