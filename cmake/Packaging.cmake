# What an installed Caravan offers to applications (find_package(Caravan),
# caravan.pc) and its Debian packages (CPack, `bash scripts/package.sh`).
include(CMakePackageConfigHelpers)

if(TARGET caravan)
  set(CARAVAN_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Caravan)
  install(EXPORT CaravanTargets NAMESPACE Caravan:: DESTINATION ${CARAVAN_CMAKE_INSTALL_DIR}
          COMPONENT development)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/CaravanConfig.cmake.in
    ${PROJECT_BINARY_DIR}/CaravanConfig.cmake INSTALL_DESTINATION ${CARAVAN_CMAKE_INSTALL_DIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/CaravanConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/CaravanConfig.cmake ${PROJECT_BINARY_DIR}/CaravanConfigVersion.cmake
          DESTINATION ${CARAVAN_CMAKE_INSTALL_DIR} COMPONENT development)
  file(RELATIVE_PATH CARAVAN_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
       ${CMAKE_INSTALL_PREFIX})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/caravan.pc.in ${PROJECT_BINARY_DIR}/caravan.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/caravan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT development)
endif()

# One Debian package per component: libcaravan1 (the library), caravan-dev
# (headers, CMake packages, caravan.pc), caravan-tools (caravan-server,
# -launch, -info, -van-check, the benchmarks), python3-caravan (caravan.torch
# and byteps.torch, bpslaunch) and one per plugin (caravan-van-zmq, ...).
# Library dependencies come from dpkg-shlibdeps; the packages among
# themselves are declared below.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME caravan)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Caravan developers <caravan-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "parameter-server communication engine for distributed training")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcaravan.so.1 is in another of these packages (declared below), so
# dpkg-shlibdeps is shown where it lies in the build rather than told of it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME libcaravan1)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME caravan-dev)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME caravan-tools)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-caravan)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-torch")
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS library)
set(CPACK_COMPONENT_TOOLS_DEPENDS library)
set(CPACK_COMPONENT_PYTHON_DEPENDS library)
get_property(caravan_plugin_components GLOBAL PROPERTY CARAVAN_PLUGIN_COMPONENTS)
foreach(component IN LISTS caravan_plugin_components)
  string(TOUPPER ${component} upper)  # CPack's variables keep the dash
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME caravan-${component})
  set(CPACK_COMPONENT_${upper}_DEPENDS library)
endforeach()
# The library is of little use without the TCP van and the CPU reducer.
set(CPACK_DEBIAN_LIBRARY_PACKAGE_RECOMMENDS "caravan-van-zmq, caravan-reducer-cpu")
set(CPACK_COMPONENTS_ALL library development tools python ${caravan_plugin_components})
include(CPack)
