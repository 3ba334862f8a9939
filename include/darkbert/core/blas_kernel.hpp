#pragma once
/// @file
/// OpenBLAS picks its kernels once, when the library loads: from OPENBLAS_CORETYPE if set, else from the
/// CPU it recognises. OpenBLAS 0.3.21 (Debian 12) does not recognise AVX-512 AMD CPUs (Zen 4 and 5, reported as
/// "AMD EPYC") and falls back to its Haswell (AVX2) kernels; some machines also export
/// OPENBLAS_CORETYPE=Haswell globally. On an AVX-512 CPU the SkylakeX kernels run SGEMM twice as fast
/// (measured here: 204 vs 390 GFLOP/s on 2 threads). Because the choice is made at load time, a program
/// that wants the fast kernels must be (re)started with the variable set; `restart_with_fast_blas_kernel`
/// does that at the top of main():
///
/// @code
/// int main(int argc, char** argv) {
///   darkbert::restart_with_fast_blas_kernel(argv);  // may re-exec this program once
/// @endcode
///
/// It re-executes the program with the kernel set that matches the path darkbert runs, when OpenBLAS
/// would use another: SkylakeX on a CPU with AVX-512; Haswell on a CPU with AVX2 and FMA but no AVX-512,
/// and under DARKBERT_KERNEL=avx2, which stands for such a CPU. OpenBLAS 0.3.21 falls back to its SSE3
/// "Prescott" kernels on CPUs newer than it knows (an Intel Xeon of family 6 model 207, for one), which
/// run SGEMM several times slower than the AVX2 kernels that CPU can run. Set DARKBERT_KEEP_BLAS_CORETYPE=1
/// to keep whatever OPENBLAS_CORETYPE says.

#include <unistd.h>  // execv

#include <cstdlib>  // std::getenv, setenv
#include <string>   // std::string

#include "blas.hpp"             // blas_core_name, is_avx512_core, is_avx2_core
#include "kernel_dispatch.hpp"  // cpu_has_avx512, cpu_has_avx2

namespace darkbert {

namespace detail {
/// The kernel set to restart with, or null to keep OpenBLAS's: `cpu_avx512` / `cpu_avx2` say what the CPU
/// runs (kernel_dispatch.hpp), `kernel_env` is DARKBERT_KERNEL (or null), `core` OpenBLAS's pick.
inline const char* blas_core_to_restart_with(bool cpu_avx512, bool cpu_avx2, const char* kernel_env,
                                             const std::string& core) {
  const bool forced_avx2 = kernel_env != nullptr && std::string(kernel_env) == "avx2";
  if (cpu_avx512 && !forced_avx2) return is_avx512_core(core) ? nullptr : "SkylakeX";
  if (cpu_avx2) return is_avx2_core(core) ? nullptr : "Haswell";
  return nullptr;
}
}  // namespace detail

/// Re-executes the program once with the OpenBLAS kernel set that matches darkbert's kernel path, when
/// OpenBLAS picked another (see the top of this header); call it first thing in main().
inline void restart_with_fast_blas_kernel(char** argv) {
  if (std::getenv("DARKBERT_KEEP_BLAS_CORETYPE") != nullptr) return;
  if (std::getenv("DARKBERT_BLAS_RESTARTED") != nullptr) return;  // never loop
  const char* core = detail::blas_core_to_restart_with(cpu_has_avx512(), cpu_has_avx2(), std::getenv("DARKBERT_KERNEL"),
                                                       blas_core_name());
  if (core == nullptr) return;
  ::setenv("OPENBLAS_CORETYPE", core, 1);
  ::setenv("DARKBERT_BLAS_RESTARTED", "1", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then carry on with the slower kernels
}

}  // namespace darkbert
