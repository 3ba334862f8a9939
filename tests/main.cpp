// The suite runs on the OpenBLAS kernels the darkbert programs run on: restarted, as they are, with the
// kernel set that matches the kernel path (core/blas_kernel.hpp), so DARKBERT_KERNEL=avx2 also means
// OpenBLAS's Haswell kernels, whose sums depend on the blocking (core/blas.hpp, gemm_blocks).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "darkbert/core/blas_kernel.hpp"

int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);
  return doctest::Context(argc, argv).run();
}
