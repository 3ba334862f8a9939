#pragma once
// The main() of every benchmark: restart once with OpenBLAS's AVX-512 kernels when the CPU has them
// (core/blas_kernel.hpp), then Google Benchmark, with the kernel sets in the report's context. --help
// first says what the benchmark measures and shows an example, then lists Google Benchmark's flags.
//
//   int main(int argc, char** argv) {
//     return darkbert::bench::main(argc, argv, "what it measures", "bench_x --benchmark_filter=...");
//   }

#include <benchmark/benchmark.h>

#include <cstdio>       // std::printf
#include <string_view>  // std::string_view

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/core/kernel_dispatch.hpp"

namespace darkbert::bench {

inline int main(int argc, char** argv, const char* what, const char* example) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h")
      std::printf("%s: %s\nExample: %s\n\n", argv[0], what, example);
  restart_with_fast_blas_kernel(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("openblas_core", blas_core_name());
  benchmark::AddCustomContext("darkbert_kernel", kernel_path_name(kernel_path()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace darkbert::bench
