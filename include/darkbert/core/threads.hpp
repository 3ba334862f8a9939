#pragma once
// Thread count of darkbert's one thread pool (OpenMP), used for the products too (see core/blas.hpp).

#include <omp.h>  // omp_set_num_threads, omp_get_max_threads

namespace darkbert {

// Uses n threads (n <= 0: leave the default, all cores or OMP_NUM_THREADS).
inline void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

inline int num_threads() { return omp_get_max_threads(); }

}  // namespace darkbert
