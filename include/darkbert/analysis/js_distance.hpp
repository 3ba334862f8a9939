#pragma once
/// @file
/// How different the heads are from each other (paper question 3; the pairwise head distance of Clark et al.
/// 2019): the Jensen–Shannon distance between the attention distributions of every pair of heads.
///
/// For heads a and b and valid query row i (allowed keys only), with p = a's row, q = b's row, m = (p + q)/2:
/// @code
/// JSD_i = H(m) - (H(p) + H(q)) / 2          (natural log; = (KL(p||m) + KL(q||m)) / 2, in [0, ln 2])
/// d_i   = sqrt(JSD_i)                       (scipy.spatial.distance.jensenshannon(p, q), base e)
/// @endcode
/// Per example: the mean of d_i over the n valid rows. Dataset: the mean over examples. The result is a
/// symmetric [layers*heads, layers*heads] table with zero diagonal; rows and columns are named "layer.head".
///
/// Accuracy: JSD is a difference of entropies, so its absolute error is about eps * ln n (eps of T); for nearly
/// identical rows the distance sqrt(JSD) therefore carries an error near sqrt(eps ln n) — ~1e-8 in double,
/// ~5e-4 in float. Exactly identical rows (e.g. two uniform "disabled" heads) give exactly 0.
/// Cost: (layers*heads)^2/2 * n^2 logarithms per example — about 1.7e8 for BERT-base (144 heads, n = 128),
/// far more than every other metric; the kernels are vectorised (xlogx.hpp) and the query rows are split over
/// the OpenMP threads (each with its own [heads^2] pair buffer). Fold a subsample of a dataset if time matters.
///
/// @code
/// HeadDistanceAccumulator<float> acc(12, 12);
/// for (each example) acc.add(view);
/// Table<float> d = acc.result();               // d(3*12+5, 7*12+0) = distance of head 3.5 to head 7.0
/// @endcode

#include <algorithm>  // std::max, std::equal, std::fill
#include <cmath>      // std::sqrt
#include <cstddef>    // std::size_t
#include <string>     // std::string, std::to_string
#include <utility>    // std::move
#include <vector>     // std::vector

#ifdef _OPENMP
#include <omp.h>  // omp_get_max_threads, omp_get_thread_num
#endif

#include "darkbert/analysis/attention_view.hpp"  // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"         // darkbert::Table
#include "darkbert/analysis/running_mean.hpp"    // darkbert::RunningMean
#include "darkbert/analysis/xlogx.hpp"           // detail::xlogx_sum, detail::mixture_xlogx_sum
#include "darkbert/core/error.hpp"               // darkbert::require
#include "darkbert/core/matrix.hpp"              // darkbert::Index

namespace darkbert {

/// Streaming mean Jensen–Shannon distance between every pair of heads (see the top of this header).
template <class T>
class HeadDistanceAccumulator {
 public:
  /// Empty means for every pair of `layers` × `heads` heads; `name` labels the result table.
  HeadDistanceAccumulator(Index layers, Index heads, std::string name = "head_js_distance")
      : layers_(layers), heads_(heads), name_(std::move(name)), mean_(layers * heads, layers * heads),
        example_(static_cast<std::size_t>(layers * heads * layers * heads)) {}

  /// Adds one example.
  void add(const AttentionView<T>& view) {
    detail::require_shape(view, layers_, heads_, "head JS distance");
    const Index n = view.length(), L = view.padded_length(), total = layers_ * heads_;
    const auto cells = static_cast<std::size_t>(total * total);
    auto row = [&](Index g, Index i) { return view.map(g / heads_, g % heads_) + i * L; };
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    // One pair-sum buffer per thread (upper triangle used); sized by the thread count, never by the data.
    thread_sums_.resize(static_cast<std::size_t>(threads) * cells);
    std::fill(thread_sums_.begin(), thread_sums_.end(), T(0));
    if (entropy_.size() < static_cast<std::size_t>(threads)) entropy_.resize(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) entropy_[static_cast<std::size_t>(t)].resize(static_cast<std::size_t>(total));

    // Threads take whole query rows: the rows i of all heads (144 x 128 floats for BERT-base) stay in cache
    // while every pair of heads is compared on them, and the only synchronisation is the end of the loop.
    // Threads only pay off for big maps (BERT-base: ~1e8 terms); a parallel region costs microseconds when the
    // cores are idle and can cost a scheduler time slice when they are not.
    const double terms = 0.5 * double(total) * double(total) * double(n) * double(n);
#pragma omp parallel num_threads(threads) if (threads > 1 && terms > 4e6)
    {
#ifdef _OPENMP
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
#else
      const std::size_t thread = 0;
#endif
      T* sums = thread_sums_.data() + thread * cells;
      std::vector<T>& entropy = entropy_[thread];
#pragma omp for schedule(dynamic, 1)
      for (Index i = 0; i < n; ++i) {
        const Index k = view.allowed_keys(i);
        for (Index g = 0; g < total; ++g) entropy[static_cast<std::size_t>(g)] = -detail::xlogx_sum(row(g, i), k);
        for (Index a = 0; a < total - 1; ++a) {
          const T* p = row(a, i);
          const T ha = entropy[static_cast<std::size_t>(a)];
          T* out = sums + a * total;
          for (Index b = a + 1; b < total; ++b) {
            const T* q = row(b, i);
            if (std::equal(p, p + k, q)) continue;  // identical rows: distance exactly 0
            const T jsd = -detail::mixture_xlogx_sum(p, q, k) - T(0.5) * (ha + entropy[static_cast<std::size_t>(b)]);
            out[b] += std::sqrt(std::max(jsd, T(0)));  // rounding can make a tiny JSD negative
          }
        }
      }
    }
    for (Index a = 0; a < total; ++a) {
      example_[static_cast<std::size_t>(a * total + a)] = T(0);
      for (Index b = a + 1; b < total; ++b) {
        T sum = 0;
        for (int t = 0; t < threads; ++t) sum += thread_sums_[static_cast<std::size_t>(t) * cells + a * total + b];
        const T d = sum / T(n);
        example_[static_cast<std::size_t>(a * total + b)] = d;
        example_[static_cast<std::size_t>(b * total + a)] = d;
      }
    }
    mean_.add(example_);
  }

  /// Adds another accumulator's examples.
  void merge(const HeadDistanceAccumulator& other) { mean_.merge(other.mean_); }

  /// [layers*heads, layers*heads], names "layer.head"; NaN when no example was added.
  Table<T> result() const {
    std::vector<std::string> names;
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) names.push_back(std::to_string(l) + "." + std::to_string(h));
    auto t = make_table<T>(name_, "head", names, "head", names);
    mean_.write_mean(t);
    return t;
  }

  /// Examples added.
  std::size_t examples() const { return mean_.examples(); }
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    std::size_t bytes = mean_.memory_bytes() + (example_.capacity() + thread_sums_.capacity()) * sizeof(T);
    for (const auto& e : entropy_) bytes += e.capacity() * sizeof(T);
    return bytes + entropy_.capacity() * sizeof(std::vector<T>);
  }

 private:
  Index layers_;
  Index heads_;
  std::string name_;
  RunningMean<T> mean_;  ///< [layers*heads, layers*heads]
  std::vector<T> example_;
  std::vector<T> thread_sums_;           ///< [threads, total, total]
  std::vector<std::vector<T>> entropy_;  ///< per thread: row entropies of every head for the current row
};

/// The head-by-head JS distance matrix of one example.
template <class T>
Table<T> head_js_distance(const AttentionView<T>& view) {
  HeadDistanceAccumulator<T> acc(view.layers(), view.heads());
  acc.add(view);
  return acc.result();
}

}  // namespace darkbert
