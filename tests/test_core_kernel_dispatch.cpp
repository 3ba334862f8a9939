// kernel_dispatch: the choice between the AVX-512 tile kernel and BLAS, from the CPU and DARKBERT_KERNEL
// (auto, avx512, blas).
// (That both paths give the same forward pass is checked end to end by tests/cli_kernel_paths.cmake.)
#include <doctest/doctest.h>

#include <cstdlib>  // std::getenv
#include <string>   // std::string

#include "darkbert/core/kernel_dispatch.hpp"

using darkbert::KernelPath;
using darkbert::detail::choose_kernel_path;

TEST_CASE("kernel_dispatch: the tile kernel runs only when compiled in and the CPU has AVX-512") {
  CHECK(choose_kernel_path(true, true, nullptr) == KernelPath::avx512);
  CHECK(choose_kernel_path(true, true, "") == KernelPath::avx512);
  CHECK(choose_kernel_path(true, true, "auto") == KernelPath::avx512);
  CHECK(choose_kernel_path(true, false, nullptr) == KernelPath::blas);
  CHECK(choose_kernel_path(false, true, nullptr) == KernelPath::blas);
}

TEST_CASE("kernel_dispatch: DARKBERT_KERNEL=blas forces BLAS; anything else unknown is an error") {
  CHECK(choose_kernel_path(true, true, "blas") == KernelPath::blas);
  CHECK(choose_kernel_path(false, false, "blas") == KernelPath::blas);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, "avx3"), doctest::Contains("DARKBERT_KERNEL='avx3'"),
                       darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, "AVX512"), doctest::Contains("expected 'auto'"), darkbert::error);
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::avx512)) == "avx512");
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::blas)) == "blas");
}

TEST_CASE("kernel_dispatch: DARKBERT_KERNEL=avx512 forces the tile kernel, and is refused by name where it cannot run") {
  CHECK(choose_kernel_path(true, true, "avx512") == KernelPath::avx512);
  // Never a silent fallback to BLAS: a run that asked for AVX-512 must not measure or test something else.
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, false, "avx512"),
                       doctest::Contains("DARKBERT_KERNEL='avx512': this CPU cannot run"), darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(false, true, "avx512"),
                       doctest::Contains("DARKBERT_KERNEL='avx512': the AVX-512 kernels are not compiled"),
                       darkbert::error);
}

TEST_CASE("kernel_dispatch: this process follows the CPU and the environment") {
  // The suite runs its numerical tests once per path (tests/CMakeLists.txt, entries named <test>@<path>):
  // each must really run on the path it names.
  const char* env = std::getenv("DARKBERT_KERNEL");
  const std::string request = env != nullptr ? env : "";
  const bool can_run_tile = DARKBERT_HAS_AVX512_KERNEL && darkbert::cpu_has_avx512();
  if (request == "avx512" && !can_run_tile) {
    CHECK_THROWS_AS(darkbert::kernel_path(), darkbert::error);
    return;
  }
  const bool expect_tile = request == "avx512" || (request != "blas" && can_run_tile);
  CHECK(darkbert::kernel_path() == (expect_tile ? KernelPath::avx512 : KernelPath::blas));
  CHECK(darkbert::kernel_path() == darkbert::kernel_path());  // decided once
}
