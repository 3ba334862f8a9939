# CI proof of the packaging (cmake -P; run by the `packaging` CTest test of the release build):
#   cmake -DSOURCE=<checkout> -DOUT=<scratch> -DSHARED=<../shared> [-DPROJECT_VERSION=x.y.z] -P packaging/check.cmake
# vcpkg and Conan cannot be fetched on the CI machines, so this performs each recipe's install steps with
# plain CMake into a staging prefix (the same options as portfile.cmake / conanfile.py, then the recipe's
# own post-install steps), checks the installed layout, and builds and runs the recipe's consumer against
# that prefix: the vcpkg usage example (packaging/vcpkg/example, a golden forward pass) and the Conan
# test_package. The manifests are linted first (packaging/lint.cmake).
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE OUT SHARED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "packaging/check.cmake needs -D${var}=...")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/lint.cmake")  # sets `version`

# A consumer built with default flags must still run the path the CPU allows (avx512, else avx2); under a
# forced path (`DARKBERT_KERNEL=avx2 ctest`, inherited by the consumers) that path.
include("${CMAKE_CURRENT_LIST_DIR}/../cmake/expected_kernel_path.cmake")
set(expect_kernel ${expected_kernel_path})
if("$ENV{DARKBERT_KERNEL}" MATCHES "^(blas|avx2|avx512)$")
  set(expect_kernel "$ENV{DARKBERT_KERNEL}")
endif()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${log}\n${err}")
  endif()
  set(run_output "${log}" PARENT_SCOPE)
endfunction()

function(require_file prefix relative)
  if(NOT EXISTS "${prefix}/${relative}")
    message(FATAL_ERROR "staged package: ${relative} is missing from ${prefix}")
  endif()
endfunction()

# Installs darkbert as `recipe` does into OUT/<recipe>/prefix and checks what every recipe must ship.
function(stage recipe)
  set(prefix "${OUT}/${recipe}/prefix")
  file(REMOVE_RECURSE "${OUT}/${recipe}")
  # The options both recipes pass: a header-only package, no tests, benchmarks or tools, no -march=native.
  run("configuring darkbert for ${recipe}" ${CMAKE_COMMAND} -S "${SOURCE}" -B "${OUT}/${recipe}/build"
      -DCMAKE_BUILD_TYPE=Release -DDARKBERT_BUILD_TESTS=OFF -DDARKBERT_BUILD_EXAMPLES=OFF
      -DDARKBERT_BUILD_BENCHMARKS=OFF -DDARKBERT_NATIVE=OFF)
  run("installing darkbert for ${recipe}" ${CMAKE_COMMAND} --install "${OUT}/${recipe}/build" --prefix "${prefix}")

  # Every public header, and nothing compiled.
  file(GLOB_RECURSE source_headers RELATIVE "${SOURCE}/include" "${SOURCE}/include/darkbert/*")
  file(GLOB_RECURSE staged_headers RELATIVE "${prefix}/include" "${prefix}/include/darkbert/*")
  if(NOT source_headers STREQUAL staged_headers)
    message(FATAL_ERROR "${recipe}: the installed headers differ from include/:\n${staged_headers}")
  endif()
  foreach(f darkbertConfig.cmake darkbertConfigVersion.cmake darkbertTargets.cmake darkbertDependencies.cmake)
    require_file("${prefix}" "share/darkbert/${f}")
  endforeach()
  file(READ "${prefix}/share/darkbert/darkbertConfigVersion.cmake" version_file)
  if(NOT version_file MATCHES "set\\(PACKAGE_VERSION \"${version}\"\\)")
    message(FATAL_ERROR "${recipe}: darkbertConfigVersion.cmake does not say ${version}")
  endif()
  foreach(dir lib lib64 bin)
    if(EXISTS "${prefix}/${dir}")
      message(FATAL_ERROR "${recipe}: a header-only package installed ${dir}/")
    endif()
  endforeach()
  list(LENGTH staged_headers n)
  message(STATUS "${recipe}: staged ${n} headers and share/darkbert (version ${version})")
endfunction()

# Builds the consumer project `dir` against OUT/<recipe>/prefix; no build type, so the consumer gets the
# compiler's default flags (no -march, no -O) as an unconfigured downstream project would.
function(build_consumer recipe dir)
  run("configuring ${dir} against the ${recipe} stage" ${CMAKE_COMMAND} -S "${dir}" -B "${OUT}/${recipe}/consumer"
      "-DCMAKE_PREFIX_PATH=${OUT}/${recipe}/prefix")
  run("building ${dir} against the ${recipe} stage" ${CMAKE_COMMAND} --build "${OUT}/${recipe}/consumer")
endfunction()

# ------------------------------------------------------------------ vcpkg (portfile.cmake)
stage(vcpkg)
set(prefix "${OUT}/vcpkg/prefix")
# portfile.cmake: vcpkg_cmake_config_fixup(CONFIG_PATH share/darkbert) has nothing to move; the license goes
# to share/darkbert/copyright, the usage file beside it, share/doc is removed.
file(REMOVE_RECURSE "${prefix}/share/doc")
file(COPY_FILE "${SOURCE}/LICENSE" "${prefix}/share/darkbert/copyright")
file(COPY "${SOURCE}/packaging/vcpkg/ports/darkbert/usage" DESTINATION "${prefix}/share/darkbert")
foreach(f copyright usage)
  require_file("${prefix}" "share/darkbert/${f}")
endforeach()
file(READ "${prefix}/share/darkbert/usage" usage)
if(NOT usage MATCHES "find_package\\(darkbert CONFIG REQUIRED\\)" OR NOT usage MATCHES "darkbert::darkbert")
  message(FATAL_ERROR "vcpkg usage file does not show find_package(darkbert CONFIG REQUIRED) and darkbert::darkbert")
endif()
build_consumer(vcpkg "${SOURCE}/packaging/vcpkg/example")
run("the vcpkg usage example" "${OUT}/vcpkg/consumer/consumer" "${SHARED}/golden")
if(NOT run_output MATCHES "darkbert ${version} \\(kernel: ${expect_kernel}\\)")
  message(FATAL_ERROR "the vcpkg usage example (default flags) should report darkbert ${version} on the ${expect_kernel} kernel:\n${run_output}")
endif()
message(STATUS "vcpkg usage example: ${run_output}")

# ------------------------------------------------------------------ Conan (conanfile.py)
stage(conan)
set(prefix "${OUT}/conan/prefix")
# conanfile.py package(): cmake.install(), then LICENSE into licenses/.
file(COPY "${SOURCE}/LICENSE" DESTINATION "${prefix}/licenses")
require_file("${prefix}" "licenses/LICENSE")
build_consumer(conan "${SOURCE}/packaging/conan/test_package")
# test_package's own CTest test checks its output line.
run("the Conan test_package" ${CMAKE_CTEST_COMMAND} --test-dir "${OUT}/conan/consumer" --output-on-failure)
run("the Conan test_package" "${OUT}/conan/consumer/test_package")
if(NOT run_output MATCHES "darkbert ${version} \\(kernel: ${expect_kernel}\\): ok")
  message(FATAL_ERROR "the Conan test_package should report darkbert ${version} on the ${expect_kernel} kernel:\n${run_output}")
endif()
message(STATUS "Conan test_package: ${run_output}")
