#pragma once
// The main() of every benchmark that runs products: restart once with OpenBLAS's AVX-512 kernels when the
// CPU has them (core/blas_kernel.hpp), then Google Benchmark, with the kernel set in the report's context.
//
//   int main(int argc, char** argv) { return darkbert::bench::main(argc, argv); }

#include <benchmark/benchmark.h>

#include "darkbert/core/blas_kernel.hpp"

namespace darkbert::bench {

inline int main(int argc, char** argv) {
  restart_with_fast_blas_kernel(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("openblas_core", blas_core_name());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace darkbert::bench
