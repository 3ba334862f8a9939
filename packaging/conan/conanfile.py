# Conan 2 recipe for darkbert, a header-only library.
#   conan create packaging/conan --build=missing          (from the repository root)
# gives find_package(darkbert CONFIG) with the targets darkbert::darkbert and darkbert::viz (option viz).
import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy

required_conan_version = ">=2.0"


class DarkbertConan(ConanFile):
    name = "darkbert"
    version = "0.1.0"  # must equal include/darkbert/version.hpp (checked by packaging/lint.cmake)
    description = ("Header-only C++20 library for looking inside transformers: exact BERT/GPT-2 forward "
                   "passes with hooks, attention metrics, head ablation and training")
    license = "MIT"
    url = "https://github.com/darkbert/darkbert"
    homepage = "https://github.com/darkbert/darkbert"
    topics = ("transformers", "bert", "gpt-2", "interpretability", "attention", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"viz": [True, False]}
    default_options = {"viz": True}

    def export_sources(self):
        # The recipe sits in packaging/conan of the repository it packages.
        root = os.path.join(self.recipe_folder, "..", "..")
        for pattern in ("CMakeLists.txt", "LICENSE", "CHANGELOG.md", "cmake/*", "include/*"):
            copy(self, pattern, root, self.export_sources_folder)

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # The same dependencies as cmake/darkbertDependencies.cmake (OpenMP comes with the compiler).
        self.requires("eigen/3.4.0")
        self.requires("xtensor/0.24.7")
        self.requires("nlohmann_json/3.11.3")
        self.requires("pugixml/1.14")
        self.requires("openblas/0.3.25")
        if self.options.viz:
            self.requires("cairo/1.18.0")

    def package_id(self):
        self.info.clear()  # headers only: one package for every configuration

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["DARKBERT_BUILD_TESTS"] = False
        tc.cache_variables["DARKBERT_BUILD_EXAMPLES"] = False
        tc.cache_variables["DARKBERT_BUILD_BENCHMARKS"] = False
        tc.cache_variables["DARKBERT_NATIVE"] = False
        tc.generate()
        CMakeDeps(self).generate()  # darkbert's own CMakeLists finds its dependencies when it installs

    def build(self):
        pass  # nothing to compile

    def package(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))

    def package_info(self):
        # Conan's CMakeDeps writes its own darkbert-config.cmake from this, so the targets are declared
        # here under the same names as the installed darkbertConfig.cmake gives.
        self.cpp_info.set_property("cmake_file_name", "darkbert")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "darkbert::darkbert")
        core.requires = ["eigen::eigen", "xtensor::xtensor", "nlohmann_json::nlohmann_json", "pugixml::pugixml",
                         "openblas::openblas"]
        core.bindirs = []
        core.libdirs = []
        if self.settings.compiler in ("gcc", "clang"):  # OpenMP: darkbert's one thread pool
            core.cxxflags = ["-fopenmp"]
            core.exelinkflags = core.sharedlinkflags = ["-fopenmp"]
        if self.options.viz:
            viz = self.cpp_info.components["viz"]
            viz.set_property("cmake_target_name", "darkbert::viz")
            viz.requires = ["core", "cairo::cairo"]
            viz.bindirs = []
            viz.libdirs = []
