#pragma once
/// @file
/// Thread count of darkbert's one thread pool (OpenMP), used for the products too (see core/blas.hpp), and
/// the shares of it that workers running at once hold (ThreadShares).

#include <omp.h>  // omp_set_num_threads, omp_get_max_threads, omp_in_parallel

#include <algorithm>  // std::min, std::max
#include <atomic>     // std::atomic

#include "matrix.hpp"  // Index

namespace darkbert {

/// Uses n threads (n <= 0: leave the default, all cores or OMP_NUM_THREADS).
inline void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

/// Threads darkbert's parallel phases use.
inline int num_threads() { return omp_get_max_threads(); }

/// The threads each of `workers` workers gets of `threads`: an equal share, at least one.
inline int equal_thread_share(int threads, int workers) { return std::max(1, threads / std::max(1, workers)); }

/// The threads of workers that run at once (the study's units, two models pretraining): each worker holds
/// an equal share of `threads` (at least one), and a worker that is done gives its share back to those
/// still working, which take it at their next step (adopt_thread_share). A step's bits do not depend on
/// its thread count, so a result does not depend on when the share grew.
class ThreadShares {
 public:
  /// `threads` shared by `workers`, all working from the start.
  ThreadShares(int threads, int workers) : threads_(std::max(1, threads)), working_(std::max(1, workers)) {}
  ThreadShares(const ThreadShares&) = delete;
  ThreadShares& operator=(const ThreadShares&) = delete;

  /// The threads each working worker may use now.
  int share() const { return equal_thread_share(threads_, working_.load()); }
  /// A worker is done: its threads go to the others.
  void leave() { working_.fetch_sub(1); }

 private:
  int threads_;
  std::atomic<int> working_;
};

namespace detail {
inline thread_local const ThreadShares* thread_shares = nullptr;  // the shares this thread works under, if any
}  // namespace detail

/// Between steps of a long loop (pretraining, fine-tuning, evaluation batches): a thread that works under
/// ThreadShares sets its OpenMP thread count to its share now. Elsewhere, and inside a parallel region, a
/// no-op.
inline void adopt_thread_share() {
  const ThreadShares* shares = detail::thread_shares;
  if (shares == nullptr || omp_in_parallel()) return;
  const int n = shares->share();
  if (n != omp_get_max_threads()) omp_set_num_threads(n);
}

/// This thread is one of `shares`' workers while the scope lasts: it starts on its share, and on leaving
/// gives it back and restores the thread count it had.
class ThreadShareScope {
 public:
  /// Joins `shares` and takes this thread's share.
  explicit ThreadShareScope(ThreadShares& shares)
      : shares_(shares), previous_(detail::thread_shares), previous_threads_(omp_get_max_threads()) {
    detail::thread_shares = &shares;
    adopt_thread_share();
  }
  ThreadShareScope(const ThreadShareScope&) = delete;
  ThreadShareScope& operator=(const ThreadShareScope&) = delete;
  ~ThreadShareScope() {
    shares_.leave();
    detail::thread_shares = previous_;
    omp_set_num_threads(previous_threads_);
  }

 private:
  ThreadShares& shares_;
  const ThreadShares* previous_;
  int previous_threads_;
};

/// Calls f(first, end) for blocks of 64 columns covering [0, cols), in parallel over blocks when
/// `parallel` (and not already inside a parallel region). A thread owns whole blocks, so a per-column sum
/// over rows keeps its order whatever the thread count: reductions stay bit-identical.
template <class F>
void for_column_blocks(Index cols, bool parallel, F&& f) {
  constexpr Index block = 64;
  const Index blocks = (cols + block - 1) / block;
#pragma omp parallel for schedule(static) if (parallel && !omp_in_parallel())
  for (Index k = 0; k < blocks; ++k) f(k * block, std::min(cols, (k + 1) * block));
}

}  // namespace darkbert
