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
/// It re-executes the program with OPENBLAS_CORETYPE=SkylakeX when the CPU has AVX-512 and OpenBLAS would
/// use an older kernel set. Set DARKBERT_KEEP_BLAS_CORETYPE=1 to keep whatever OPENBLAS_CORETYPE says.
/// Under DARKBERT_KERNEL=avx2 it keeps it too: that path stands for a CPU without AVX-512, so its BLAS
/// calls (the backward products) run the AVX2 kernels such a CPU would (`OPENBLAS_CORETYPE=Haswell`).

#include <cblas.h>   // openblas_get_corename
#include <unistd.h>  // execv

#include <cstdlib>  // std::getenv, setenv
#include <string>   // std::string

#include "kernel_dispatch.hpp"  // cpu_has_avx512

namespace darkbert {

/// The name of the kernel set OpenBLAS uses ("Haswell", "SkylakeX", ...).
inline std::string blas_core_name() { return openblas_get_corename(); }

/// Whether an OpenBLAS kernel-set name (blas_core_name()) is one of its AVX-512 sets.
/// @code
/// if (!darkbert::is_avx512_core(darkbert::blas_core_name())) std::puts("OpenBLAS runs AVX2 kernels");
/// @endcode
inline bool is_avx512_core(const std::string& core) {
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

/// Re-executes the program once with OPENBLAS_CORETYPE=SkylakeX when the CPU has AVX-512, the kernel path
/// is not forced to avx2, and OpenBLAS would use an older kernel set; call it first thing in main() (see
/// the top of this header).
inline void restart_with_fast_blas_kernel(char** argv) {
  if (std::getenv("DARKBERT_KEEP_BLAS_CORETYPE") != nullptr || !cpu_has_avx512()) return;
  const char* path = std::getenv("DARKBERT_KERNEL");
  if (path != nullptr && std::string(path) == "avx2") return;
  if (is_avx512_core(blas_core_name())) return;
  if (std::getenv("DARKBERT_BLAS_RESTARTED") != nullptr) return;  // never loop
  ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  ::setenv("DARKBERT_BLAS_RESTARTED", "1", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then carry on with the slower kernels
}

}  // namespace darkbert
