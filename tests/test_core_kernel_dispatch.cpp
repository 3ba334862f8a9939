// kernel_dispatch: the choice between the AVX-512 tile kernel and BLAS, from the CPU and DARKBERT_KERNEL.
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
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, "avx2"), doctest::Contains("DARKBERT_KERNEL='avx2'"),
                       darkbert::error);
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::avx512)) == "avx512");
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::blas)) == "blas");
}

TEST_CASE("kernel_dispatch: this process follows the CPU and the environment") {
  const char* env = std::getenv("DARKBERT_KERNEL");
  const bool forced_blas = env != nullptr && std::string(env) == "blas";
  const bool expect_tile = DARKBERT_HAS_AVX512_KERNEL && darkbert::cpu_has_avx512() && !forced_blas;
  CHECK(darkbert::kernel_path() == (expect_tile ? KernelPath::avx512 : KernelPath::blas));
  CHECK(darkbert::kernel_path() == darkbert::kernel_path());  // decided once
}
