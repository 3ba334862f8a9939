#pragma once
/// @file
/// Percentiles as numpy computes them (numpy.percentile, default method "linear"), and the paper's way of
/// singling out heads (§3.2): the heads whose score is greater than the 99th percentile over all heads.
///
/// @code
/// double p = percentile(std::span<const double>(values), 99.0);
/// PercentileHeads<double> top = heads_above_percentile(framenet_matrix, 99.0);
/// // top.threshold, top.heads = [{layer, head, value}, ...] strictly above the threshold, best first
/// @endcode

#include <algorithm>  // std::sort, std::stable_sort
#include <cmath>      // std::floor, std::isnan
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <vector>     // std::vector

#include "darkbert/analysis/results.hpp"  // darkbert::HeadMatrix
#include "darkbert/core/error.hpp"        // darkbert::require, darkbert::fail

namespace darkbert {

/// The q-th percentile (q in [0, 100]) with linear interpolation between closest ranks — numpy's default:
/// virtual index (N-1)*q/100, then numpy's lerp (a + (b-a)*t, computed as b - (b-a)*(1-t) when t >= 0.5).
/// Throws on empty input or NaN values.
template <class T>
T percentile(std::span<const T> values, double q) {
  require(!values.empty(), "percentile: no values");
  require(q >= 0.0 && q <= 100.0, "percentile: q = ", q, " is outside [0, 100]");
  std::vector<T> sorted(values.begin(), values.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (std::isnan(sorted[i])) fail("percentile: value ", i, " is NaN");
  std::sort(sorted.begin(), sorted.end());
  const double quantile = q / 100.0;
  const double virtual_index = static_cast<double>(sorted.size() - 1) * quantile;
  const double previous = std::floor(virtual_index);
  const double gamma = virtual_index - previous;
  const auto lo = static_cast<std::size_t>(previous);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double a = static_cast<double>(sorted[lo]), b = static_cast<double>(sorted[hi]);
  const double diff = b - a;
  return static_cast<T>(gamma >= 0.5 ? b - diff * (1.0 - gamma) : a + diff * gamma);
}

/// One head and its score.
template <class T>
struct ScoredHead {
  Index layer = 0;  ///<  layer, from 0
  Index head = 0;  ///<  head, from 0
  T value{};  ///<  the head's score
};

/// The heads whose score exceeds a percentile over all heads (§3.2), with the threshold.
template <class T>
struct PercentileHeads {
  double q = 99.0;                    ///< the percentile used
  T threshold{};                      ///< percentile of all head scores
  std::vector<ScoredHead<T>> heads;   ///< heads with score > threshold, highest first (ties: layer, head order)
};

/// The heads of a [layers, heads] matrix whose value is strictly greater than its q-th percentile.
/// @code
/// auto top = heads_above_percentile(framenet_max_attention, 99.0);
/// @endcode
template <class T>
PercentileHeads<T> heads_above_percentile(const HeadMatrix<T>& m, double q = 99.0) {
  m.check();
  std::vector<T> values(m.values.begin(), m.values.end());
  for (std::size_t k = 0; k < values.size(); ++k)
    if (std::isnan(values[k]))
      fail("heads_above_percentile: table '", m.name, "' has NaN at layer ", static_cast<Index>(k) / m.cols(),
           " head ", static_cast<Index>(k) % m.cols(), " (no example contributed?)");
  PercentileHeads<T> out;
  out.q = q;
  out.threshold = percentile(std::span<const T>(values), q);
  for (Index l = 0; l < m.rows(); ++l)
    for (Index h = 0; h < m.cols(); ++h)
      if (m(l, h) > out.threshold) out.heads.push_back({l, h, m(l, h)});
  std::stable_sort(out.heads.begin(), out.heads.end(),
                   [](const ScoredHead<T>& a, const ScoredHead<T>& b) { return a.value > b.value; });
  return out;
}

}  // namespace darkbert
