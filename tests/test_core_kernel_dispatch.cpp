// kernel_dispatch: the choice between the AVX-512 kernels, the AVX2 kernels and BLAS, from the CPU and
// DARKBERT_KERNEL (auto, avx512, avx2, blas), for every combination of what is compiled in and what the
// CPU runs.
// (That the paths give the same forward pass is checked end to end by tests/cli_kernel_paths.cmake.)
#include <doctest/doctest.h>

#include <cstdlib>  // std::getenv
#include <string>   // std::string

#include "darkbert/core/kernel_dispatch.hpp"

using darkbert::KernelPath;
using darkbert::detail::choose_kernel_path;

TEST_CASE("kernel_dispatch: auto takes AVX-512 where it runs, else AVX2 where it runs, else BLAS") {
  for (const char* env : {static_cast<const char*>(nullptr), "", "auto"}) {
    CAPTURE(env ? env : "(unset)");
    // compiled, cpu_avx512, cpu_avx2
    CHECK(choose_kernel_path(true, true, true, env) == KernelPath::avx512);
    CHECK(choose_kernel_path(true, true, false, env) == KernelPath::avx512);
    CHECK(choose_kernel_path(true, false, true, env) == KernelPath::avx2);
    CHECK(choose_kernel_path(true, false, false, env) == KernelPath::blas);
    for (bool avx512 : {false, true})
      for (bool avx2 : {false, true}) CHECK(choose_kernel_path(false, avx512, avx2, env) == KernelPath::blas);
  }
}

TEST_CASE("kernel_dispatch: DARKBERT_KERNEL=blas forces BLAS; anything else unknown is an error") {
  for (bool compiled : {false, true})
    for (bool avx512 : {false, true})
      for (bool avx2 : {false, true}) CHECK(choose_kernel_path(compiled, avx512, avx2, "blas") == KernelPath::blas);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, true, "avx3"), doctest::Contains("DARKBERT_KERNEL='avx3'"),
                       darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, true, "AVX512"), doctest::Contains("expected 'auto'"),
                       darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, true, true, "AVX2"), doctest::Contains("'avx512', 'avx2' or 'blas'"),
                       darkbert::error);
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::avx512)) == "avx512");
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::avx2)) == "avx2");
  CHECK(std::string(darkbert::kernel_path_name(KernelPath::blas)) == "blas");
}

TEST_CASE("kernel_dispatch: DARKBERT_KERNEL=avx512 forces the AVX-512 kernels, and is refused by name where they cannot run") {
  CHECK(choose_kernel_path(true, true, true, "avx512") == KernelPath::avx512);
  CHECK(choose_kernel_path(true, true, false, "avx512") == KernelPath::avx512);
  // Never a silent fallback: a run that asked for AVX-512 must not measure or test something else.
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, false, true, "avx512"),
                       doctest::Contains("DARKBERT_KERNEL='avx512': this CPU cannot run"), darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, false, true, "avx512"), doctest::Contains("'avx2'"), darkbert::error);
  CHECK_THROWS_WITH_AS(choose_kernel_path(true, false, false, "avx512"),
                       doctest::Contains("DARKBERT_KERNEL='avx512': this CPU cannot run"), darkbert::error);
  for (bool avx512 : {false, true})
    for (bool avx2 : {false, true})
      CHECK_THROWS_WITH_AS(choose_kernel_path(false, avx512, avx2, "avx512"),
                           doctest::Contains("DARKBERT_KERNEL='avx512': the AVX-512 kernels are not compiled"),
                           darkbert::error);
}

TEST_CASE("kernel_dispatch: DARKBERT_KERNEL=avx2 forces the AVX2 kernels, also on an AVX-512 CPU, and is refused by name where they cannot run") {
  CHECK(choose_kernel_path(true, true, true, "avx2") == KernelPath::avx2);
  CHECK(choose_kernel_path(true, false, true, "avx2") == KernelPath::avx2);
  for (bool avx512 : {false, true})
    CHECK_THROWS_WITH_AS(choose_kernel_path(true, avx512, false, "avx2"),
                         doctest::Contains("DARKBERT_KERNEL='avx2': this CPU cannot run the AVX2 kernels"),
                         darkbert::error);
  for (bool avx512 : {false, true})
    for (bool avx2 : {false, true})
      CHECK_THROWS_WITH_AS(choose_kernel_path(false, avx512, avx2, "avx2"),
                           doctest::Contains("DARKBERT_KERNEL='avx2': the AVX2 kernels are not compiled"),
                           darkbert::error);
}

TEST_CASE("kernel_dispatch: this process follows the CPU and the environment") {
  // The suite runs its numerical tests once per path (tests/CMakeLists.txt, entries named <test>@<path>):
  // each must really run on the path it names.
  const char* env = std::getenv("DARKBERT_KERNEL");
  const std::string request = env != nullptr ? env : "";
  const bool can_run_avx512 = DARKBERT_HAS_AVX512_KERNEL && darkbert::cpu_has_avx512();
  const bool can_run_avx2 = DARKBERT_HAS_AVX2_KERNEL && darkbert::cpu_has_avx2();
  if ((request == "avx512" && !can_run_avx512) || (request == "avx2" && !can_run_avx2)) {
    CHECK_THROWS_AS(darkbert::kernel_path(), darkbert::error);
    return;
  }
  KernelPath expected = can_run_avx512 ? KernelPath::avx512 : can_run_avx2 ? KernelPath::avx2 : KernelPath::blas;
  if (request == "avx512") expected = KernelPath::avx512;
  if (request == "avx2") expected = KernelPath::avx2;
  if (request == "blas") expected = KernelPath::blas;
  CHECK(darkbert::kernel_path() == expected);
  CHECK(darkbert::kernel_path() == darkbert::kernel_path());  // decided once
  // Every CPU with the AVX-512 kernels' features has the AVX2 ones too.
  if (darkbert::cpu_has_avx512()) CHECK(darkbert::cpu_has_avx2());
}
