# vcpkg overlay port of darkbert, a header-only library: headers, the CMake package in share/darkbert,
# the license as share/darkbert/copyright, and with the "tools" feature the `darkbert` command line.
#   vcpkg install darkbert --overlay-ports=<darkbert checkout>/packaging/vcpkg/ports
#
# Used as an overlay from inside a darkbert checkout, the port builds that checkout (so a clone can be
# consumed before it is tagged). Copied into a registry, it downloads the tagged release: SHA512 is the
# hash of that release's tarball and must be updated with each version (vcpkg prints the right value
# when it does not match).
get_filename_component(checkout "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(EXISTS "${checkout}/include/darkbert/version.hpp" AND EXISTS "${checkout}/CMakeLists.txt")
  set(SOURCE_PATH "${checkout}")
else()
  vcpkg_from_github(
    OUT_SOURCE_PATH SOURCE_PATH
    REPO darkbert/darkbert
    REF "v${VERSION}"
    SHA512 0
    HEAD_REF main
  )
endif()

vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    tools DARKBERT_BUILD_EXAMPLES
)
if(NOT "tools" IN_LIST FEATURES)
  set(VCPKG_BUILD_TYPE release)  # headers only: one configuration is enough
endif()

# Tests and benchmarks need the golden fixtures (../shared), doctest and Google Benchmark: never in a port.
# DARKBERT_NATIVE=OFF: nothing may depend on the build machine's CPU (the AVX-512 kernel is chosen at
# run time).
vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${FEATURE_OPTIONS}
    -DDARKBERT_BUILD_TESTS=OFF
    -DDARKBERT_BUILD_BENCHMARKS=OFF
    -DDARKBERT_NATIVE=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH share/darkbert)

if("tools" IN_LIST FEATURES)
  vcpkg_copy_tools(TOOL_NAMES darkbert AUTO_CLEAN)
endif()

# Header-only: no debug tree, no lib/; the license goes to copyright, not share/doc.
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/lib" "${CURRENT_PACKAGES_DIR}/share/doc")

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
