#pragma once
// Thread count of darkbert's one thread pool (OpenMP), used for the products too (see core/blas.hpp).

#include <omp.h>  // omp_set_num_threads, omp_get_max_threads, omp_in_parallel

#include <algorithm>  // std::min

#include "matrix.hpp"  // Index

namespace darkbert {

// Uses n threads (n <= 0: leave the default, all cores or OMP_NUM_THREADS).
inline void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

inline int num_threads() { return omp_get_max_threads(); }

// Calls f(first, end) for blocks of 64 columns covering [0, cols), in parallel over blocks when
// `parallel` (and not already inside a parallel region). A thread owns whole blocks, so a per-column sum
// over rows keeps its order whatever the thread count: reductions stay bit-identical.
template <class F>
void for_column_blocks(Index cols, bool parallel, F&& f) {
  constexpr Index block = 64;
  const Index blocks = (cols + block - 1) / block;
#pragma omp parallel for schedule(static) if (parallel && !omp_in_parallel())
  for (Index k = 0; k < blocks; ++k) f(k * block, std::min(cols, (k + 1) * block));
}

}  // namespace darkbert
