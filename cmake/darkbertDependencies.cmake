# Dependencies of the darkbert headers, shared by the build tree and the installed darkbertConfig.cmake.
# All come from Debian packages (see README.md).
include(CMakeFindDependencyMacro)

find_dependency(Eigen3 3.4 NO_MODULE)   # dense math (matrices, maps over raw buffers)
find_dependency(xtensor)                # n-d arrays for outputs, .npy I/O
find_dependency(nlohmann_json 3)        # config.json, safetensors headers, golden cases
find_dependency(pugixml)                # FrameNet XML
find_dependency(OpenMP)                 # threads for the non-GEMM passes
find_dependency(OpenBLAS)               # SGEMM/DGEMM for the large products

# Debian's OpenBLASConfig.cmake gives variables; vcpkg's and Conan's give the OpenBLAS::OpenBLAS target.
if(NOT TARGET darkbert_openblas)
  add_library(darkbert_openblas INTERFACE IMPORTED)
  if(TARGET OpenBLAS::OpenBLAS)
    target_link_libraries(darkbert_openblas INTERFACE OpenBLAS::OpenBLAS)
  else()
    target_include_directories(darkbert_openblas INTERFACE ${OpenBLAS_INCLUDE_DIRS})
    target_link_libraries(darkbert_openblas INTERFACE ${OpenBLAS_LIBRARIES})
  endif()
endif()

function(darkbert_link_dependencies target)
  target_link_libraries(${target} INTERFACE Eigen3::Eigen xtensor nlohmann_json::nlohmann_json
    pugixml::pugixml OpenMP::OpenMP_CXX darkbert_openblas)
endfunction()

# cairo (figures, optional): through pkg-config, wrapped in a plain interface target (empty without cairo,
# and then darkbert::viz does not link).
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(DARKBERT_CAIRO QUIET IMPORTED_TARGET cairo)
endif()
if(NOT TARGET darkbert_cairo AND NOT TARGET darkbert::darkbert_cairo)
  add_library(darkbert_cairo INTERFACE)
  if(DARKBERT_CAIRO_FOUND)
    target_link_libraries(darkbert_cairo INTERFACE PkgConfig::DARKBERT_CAIRO)
  endif()
endif()
