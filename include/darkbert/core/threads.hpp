#pragma once
// Thread count for both pools darkbert uses: OpenBLAS (large products) and OpenMP (everything else).

#include <cblas.h>  // openblas_set_num_threads (declared by OpenBLAS's cblas.h)
#include <omp.h>    // omp_set_num_threads, omp_get_max_threads

namespace darkbert {

// Sets both pools to n threads (n <= 0: leave the defaults, i.e. all cores).
inline void set_num_threads(int n) {
  if (n <= 0) return;
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

inline int num_threads() { return omp_get_max_threads(); }

}  // namespace darkbert
