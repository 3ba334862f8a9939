// Which OpenBLAS kernel set a program restarts with: the one matching darkbert's kernel path. The case that
// made it matter: OpenBLAS 0.3.21 runs its SSE3 "Prescott" kernels on an AVX-512 Xeon it does not know
// (family 6 model 207), so DARKBERT_KERNEL=avx2 there timed OpenBLAS's slowest products, not a Haswell's.
#include <doctest/doctest.h>

#include <string>  // std::string

#include "darkbert/core/blas_kernel.hpp"

namespace {
// The decision as a string ("" = keep OpenBLAS's pick), for readable checks.
std::string restart_core(bool avx512, bool avx2, const char* kernel_env, const std::string& core) {
  const char* wanted = darkbert::detail::blas_core_to_restart_with(avx512, avx2, kernel_env, core);
  return wanted != nullptr ? wanted : "";
}
}  // namespace

TEST_CASE("blas_kernel: an AVX-512 CPU gets the SkylakeX kernels unless the avx2 path is forced") {
  for (const char* env : {static_cast<const char*>(nullptr), "auto", "avx512", "blas"}) {
    CHECK(restart_core(true, true, env, "Prescott") == "SkylakeX");
    CHECK(restart_core(true, true, env, "Haswell") == "SkylakeX");  // Zen 4 and 5, which OpenBLAS 0.3.21 calls Haswell
    CHECK(restart_core(true, true, env, "SkylakeX").empty());
    CHECK(restart_core(true, true, env, "Cooperlake").empty());
    CHECK(restart_core(true, true, env, "SapphireRapids").empty());
  }
}

TEST_CASE("blas_kernel: the avx2 path, forced or chosen, gets AVX2 kernels: Haswell unless OpenBLAS runs Haswell or Zen") {
  // Forced on an AVX-512 CPU, it stands for a CPU without AVX-512: neither AVX-512 nor SSE3 kernels.
  CHECK(restart_core(true, true, "avx2", "Prescott") == "Haswell");
  CHECK(restart_core(true, true, "avx2", "SkylakeX") == "Haswell");
  CHECK(restart_core(true, true, "avx2", "Cooperlake") == "Haswell");
  CHECK(restart_core(true, true, "avx2", "Haswell").empty());
  CHECK(restart_core(true, true, "avx2", "Zen").empty());
  // An AVX2 CPU: Zen 3 is recognised as Zen; one OpenBLAS does not know falls back to Prescott.
  CHECK(restart_core(false, true, nullptr, "Zen").empty());
  CHECK(restart_core(false, true, nullptr, "Haswell").empty());
  CHECK(restart_core(false, true, nullptr, "Prescott") == "Haswell");
  CHECK(restart_core(false, true, "blas", "Sandybridge") == "Haswell");
}

TEST_CASE("blas_kernel: a CPU without AVX2 keeps OpenBLAS's pick") {
  for (const std::string core : {"Prescott", "Sandybridge", "Nehalem"}) CHECK(restart_core(false, false, nullptr, core).empty());
  CHECK(darkbert::is_avx2_core("Zen"));
  CHECK(darkbert::is_avx2_core("Haswell"));
  CHECK_FALSE(darkbert::is_avx2_core("SkylakeX"));
  CHECK(darkbert::is_avx512_core("SapphireRapids"));
  CHECK_FALSE(darkbert::is_avx512_core("Prescott"));
}
