#pragma once
/// @file
/// Which code computes the float work: darkbert's AVX-512 kernels, its AVX2 + FMA kernels, or BLAS (and
/// plain loops), chosen at run time.
///
/// The tile kernels (core/detail/xwt_kernel_avx512.hpp, core/detail/xwt_kernel_avx2.hpp) and the vector
/// loops of softmax, GELU and LayerNorm are compiled with function target attributes, so they exist in
/// every build on x86-64 whatever flags the consumer uses (plain `-O2` included); the CPU is asked once,
/// on first use, which of them it can run. `auto` takes AVX-512 where it runs, else AVX2 + FMA (Zen 2/3,
/// Intel client CPUs), else BLAS. The environment variable `DARKBERT_KERNEL` (read once per process,
/// before the first product) forces a path: `blas` (on any CPU), `avx2` or `avx512` (an error where the
/// CPU cannot run it, rather than a silent fallback), or `auto` (the default). Every path keeps the same
/// numerical promises (README, "Correctness": reproducibility), and the test suite runs its float tests under each path
/// the machine can run (tests/CMakeLists.txt). Paths may differ from each other in the last bits.
///
/// @code
/// if (darkbert::kernel_path() == darkbert::KernelPath::avx2) std::puts("8-wide tile kernel");
/// std::puts(darkbert::kernel_path_name(darkbert::kernel_path()));  // "avx512", "avx2" or "blas"
/// @endcode

#include <cstdlib>      // std::getenv
#include <string_view>  // std::string_view

#include "error.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// 1 when the AVX-512 tile kernel is compiled in (x86-64 with GCC or Clang), else 0.
#define DARKBERT_HAS_AVX512_KERNEL 1
/// Compiles one function for AVX-512 (and FMA) whatever the translation unit's own -m flags are.
#define DARKBERT_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
/// 1 when the AVX2 + FMA kernels are compiled in (the same condition), else 0.
#define DARKBERT_HAS_AVX2_KERNEL 1
/// Compiles one function for AVX2 and FMA whatever the translation unit's own -m flags are.
#define DARKBERT_AVX2_TARGET __attribute__((target("avx2,fma")))
#else
#define DARKBERT_HAS_AVX512_KERNEL 0
#define DARKBERT_AVX512_TARGET
#define DARKBERT_HAS_AVX2_KERNEL 0
#define DARKBERT_AVX2_TARGET
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

/// The implementation of the float products (Linear layers and the per-head attention products) and of the
/// float softmax, GELU and LayerNorm loops.
enum class KernelPath {
  avx512,  ///< darkbert's register-tiled AVX-512 kernel (BLAS still takes double and very long K)
  avx2,    ///< darkbert's register-tiled AVX2 + FMA kernel and AVX2 loops (BLAS still takes double and the backward products)
  blas,    ///< OpenBLAS (and plain loops) for everything
};

/// "avx512", "avx2" or "blas": the value of DARKBERT_KERNEL that forces the path.
inline const char* kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::avx512: return "avx512";
    case KernelPath::avx2: return "avx2";
    case KernelPath::blas: return "blas";
  }
  return "blas";
}

/// Whether this CPU can run the tile kernel (AVX-512 F/BW/DQ/VL and FMA); false off x86-64.
inline bool cpu_has_avx512() {
#if DARKBERT_HAS_AVX512_KERNEL
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/// Whether this CPU can run the AVX2 kernels (AVX2 and FMA); false off x86-64.
inline bool cpu_has_avx2() {
#if DARKBERT_HAS_AVX2_KERNEL
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

namespace detail {
// The choice itself, apart from the process state so tests can call it: `compiled` says whether the
// vector kernels are in this build (x86-64 with GCC or Clang), `cpu_avx512` / `cpu_avx2` what the CPU
// runs, `env` is DARKBERT_KERNEL (or null when unset).
inline KernelPath choose_kernel_path(bool compiled, bool cpu_avx512, bool cpu_avx2, const char* env) {
  const std::string_view request = env != nullptr ? env : "";
  if (request == "blas") return KernelPath::blas;
  if (request == "avx512") {
    require(compiled, "DARKBERT_KERNEL='avx512': the AVX-512 kernels are not compiled into this build ",
            "(they need x86-64 and GCC or Clang); use 'auto' or 'blas'");
    require(cpu_avx512, "DARKBERT_KERNEL='avx512': this CPU cannot run the AVX-512 kernels (they need ",
            "AVX-512 F, BW, DQ, VL and FMA); use 'auto'", cpu_avx2 ? ", 'avx2'" : "", " or 'blas'");
    return KernelPath::avx512;
  }
  if (request == "avx2") {
    require(compiled, "DARKBERT_KERNEL='avx2': the AVX2 kernels are not compiled into this build ",
            "(they need x86-64 and GCC or Clang); use 'auto' or 'blas'");
    require(cpu_avx2, "DARKBERT_KERNEL='avx2': this CPU cannot run the AVX2 kernels (they need AVX2 and FMA); ",
            "use 'auto' or 'blas'");
    return KernelPath::avx2;
  }
  require(request.empty() || request == "auto", "DARKBERT_KERNEL='", request,
          "': expected 'auto' (the fastest path this CPU runs), 'avx512', 'avx2' or 'blas'");
  if (compiled && cpu_avx512) return KernelPath::avx512;
  if (compiled && cpu_avx2) return KernelPath::avx2;
  return KernelPath::blas;
}
}  // namespace detail

/// The path this process uses, decided on the first call and then fixed (a function-local constant).
/// Throws darkbert::error when DARKBERT_KERNEL holds something other than "auto", "avx512", "avx2" or
/// "blas", or asks for a path the CPU cannot run.
inline KernelPath kernel_path() {
  static const KernelPath path = detail::choose_kernel_path(DARKBERT_HAS_AVX512_KERNEL, cpu_has_avx512(),
                                                            cpu_has_avx2(), std::getenv("DARKBERT_KERNEL"));
  return path;
}

}  // namespace darkbert
