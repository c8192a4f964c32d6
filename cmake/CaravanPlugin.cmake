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
  install(TARGETS ${target} LIBRARY DESTINATION ${CARAVAN_PLUGIN_INSTALL_DIR})
endfunction()

# caravan_plugin_option(VAR DESCRIPTION): a tri-state AUTO/ON/OFF switch.
# AUTO builds the backend when its dependency is found; ON makes a missing
# dependency a configure error.
function(caravan_plugin_option var description)
  set(${var} AUTO CACHE STRING "${description} (AUTO, ON or OFF)")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
endfunction()
