#pragma once
/// @file
/// Which code computes the float products: darkbert's AVX-512 tile kernel or BLAS, chosen at run time.
///
/// The tile kernel (core/detail/xwt_kernel_avx512.hpp) is compiled with a function target attribute, so it
/// exists in every build on x86-64 whatever flags the consumer uses (plain `-O2` included); the CPU is
/// asked once, on first use, whether it can run it. CPUs without AVX-512 take the BLAS path. The
/// environment variable `DARKBERT_KERNEL` (read once per process, before the first product) forces a
/// path: `blas` (on any CPU), `avx512` (an error where the CPU cannot run it, rather than a silent
/// fallback), or `auto` (the default: the fastest path this CPU runs). Every path keeps the same numerical
/// promises (README, "Correctness": reproducibility), and the test suite runs its float tests under each
/// path the machine can run (tests/CMakeLists.txt).
///
/// @code
/// if (darkbert::kernel_path() == darkbert::KernelPath::avx512) std::puts("tile kernel");
/// std::puts(darkbert::kernel_path_name(darkbert::kernel_path()));  // "avx512" or "blas"
/// @endcode

#include <cstdlib>      // std::getenv
#include <string_view>  // std::string_view

#include "error.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// 1 when the AVX-512 tile kernel is compiled in (x86-64 with GCC or Clang), else 0.
#define DARKBERT_HAS_AVX512_KERNEL 1
/// Compiles one function for AVX-512 (and FMA) whatever the translation unit's own -m flags are.
#define DARKBERT_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#else
#define DARKBERT_HAS_AVX512_KERNEL 0
#define DARKBERT_AVX512_TARGET
#endif

// GCC 12's unmasked AVX-512 intrinsics pass _mm512_undefined_ps() as the merge source, which
// -Wmaybe-uninitialized misreports once they are inlined (GCC bug 105593, fixed in GCC 13): code using
// intrinsics or Eigen's vectorised exp/tanh sits between these two.
#if defined(__GNUC__) && !defined(__clang__)
/// Starts a region where GCC 12's false -Wmaybe-uninitialized on AVX-512 intrinsics is off.
#define DARKBERT_INTRINSICS_WARNINGS_OFF \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
/// Ends that region.
#define DARKBERT_INTRINSICS_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define DARKBERT_INTRINSICS_WARNINGS_OFF
#define DARKBERT_INTRINSICS_WARNINGS_ON
#endif

namespace darkbert {

/// The implementation of the float products (Linear layers and the per-head attention products).
enum class KernelPath {
  avx512,  ///< darkbert's register-tiled AVX-512 kernel (BLAS still takes double and very long K)
  blas,    ///< OpenBLAS (and Eigen for the per-head products) for everything
};

/// "avx512" or "blas".
inline const char* kernel_path_name(KernelPath path) { return path == KernelPath::avx512 ? "avx512" : "blas"; }

/// Whether this CPU can run the tile kernel (AVX-512 F/BW/DQ/VL and FMA); false off x86-64.
inline bool cpu_has_avx512() {
#if DARKBERT_HAS_AVX512_KERNEL
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

namespace detail {
// The choice itself, apart from the process state so tests can call it: `env` is DARKBERT_KERNEL (or
// null when unset).
inline KernelPath choose_kernel_path(bool kernel_compiled, bool cpu_can_run, const char* env) {
  const std::string_view request = env != nullptr ? env : "";
  if (request == "blas") return KernelPath::blas;
  if (request == "avx512") {
    require(kernel_compiled, "DARKBERT_KERNEL='avx512': the AVX-512 kernels are not compiled into this build ",
            "(they need x86-64 and GCC or Clang); use 'auto' or 'blas'");
    require(cpu_can_run, "DARKBERT_KERNEL='avx512': this CPU cannot run the AVX-512 kernels (they need ",
            "AVX-512 F, BW, DQ, VL and FMA); use 'auto' or 'blas'");
    return KernelPath::avx512;
  }
  require(request.empty() || request == "auto", "DARKBERT_KERNEL='", request,
          "': expected 'auto' (the fastest path this CPU runs), 'avx512' or 'blas'");
  return kernel_compiled && cpu_can_run ? KernelPath::avx512 : KernelPath::blas;
}
}  // namespace detail

/// The path this process uses, decided on the first call and then fixed (a function-local constant).
/// Throws darkbert::error when DARKBERT_KERNEL holds something other than "auto", "avx512" or "blas", or
/// asks for "avx512" where it cannot run.
inline KernelPath kernel_path() {
  static const KernelPath path =
      detail::choose_kernel_path(DARKBERT_HAS_AVX512_KERNEL, cpu_has_avx512(), std::getenv("DARKBERT_KERNEL"));
  return path;
}

}  // namespace darkbert
