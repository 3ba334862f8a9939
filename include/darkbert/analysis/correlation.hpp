#pragma once
/// @file
/// Task metrics for regression (STS-B): Pearson and Spearman correlation with scipy 1.10's conventions.
///
/// @code
/// double r   = pearson(gold, predicted);     // NaN when either input is constant
/// double rho = spearman(gold, predicted);    // Pearson of average ranks (ties share their mean rank)
/// @endcode
///
/// @code
/// PearsonAccumulator<double> acc;            // streaming Pearson: O(1) memory (co-moments, Welford)
/// for (each example) acc.add(gold, predicted);
/// double r2 = acc.result();
/// @endcode
///
/// Conventions (scipy.stats.pearsonr / spearmanr):
///   - Pearson: NaN when x or y is constant (all values equal); exactly ±1 (sign of the slope) for two points;
///     otherwise dot((x - mean x)/|x - mean x|, (y - mean y)/|y - mean y|) clipped to [-1, 1]. Fewer than
///     two values throws (scipy raises ValueError).
///   - Spearman: fractional ranks (1-based, average for ties), then the correlation of the ranks as numpy's
///     corrcoef computes it, clipped to [-1, 1]; NaN when either input is constant or has fewer than 2 values.
///   - Different lengths, empty input to pearson, or non-finite values throw darkbert::error.
/// Spearman needs every value (ranks are global), so it has no constant-memory streaming form.

#include <algorithm>  // std::clamp, std::sort, std::all_of
#include <cmath>      // std::sqrt, std::isfinite
#include <cstddef>    // std::size_t
#include <limits>     // std::numeric_limits
#include <numeric>    // std::iota
#include <span>       // std::span
#include <vector>     // std::vector

#include "darkbert/analysis/accumulate_type.hpp"  // darkbert::detail::accumulate_t
#include "darkbert/core/error.hpp"             // darkbert::require, darkbert::fail

namespace darkbert {

namespace detail {
template <class T>
void require_pair(std::span<const T> x, std::span<const T> y, const char* metric) {
  require(x.size() == y.size(), metric, ": x has ", x.size(), " values but y has ", y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) fail(metric, ": x[", i, "] = ", x[i], " is not finite");
    if (!std::isfinite(y[i])) fail(metric, ": y[", i, "] = ", y[i], " is not finite");
  }
}

template <class T>
bool is_constant(std::span<const T> v) {
  return std::all_of(v.begin(), v.end(), [&](T a) { return a == v[0]; });
}

template <class T>
int sign(T v) {
  return (v > T(0)) - (v < T(0));
}
}  // namespace detail

/// Pearson correlation coefficient (scipy.stats.pearsonr statistic).
template <class T>
T pearson(std::span<const T> x, std::span<const T> y) {
  detail::require_pair(x, y, "pearson");
  require(x.size() >= 2, "pearson: needs at least 2 values, got ", x.size());
  if (detail::is_constant(x) || detail::is_constant(y)) return std::numeric_limits<T>::quiet_NaN();
  if (x.size() == 2) return static_cast<T>(detail::sign(x[1] - x[0]) * detail::sign(y[1] - y[0]));
  using A = detail::accumulate_t<T>;
  const auto n = static_cast<A>(x.size());
  A mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += static_cast<A>(x[i]);
    my += static_cast<A>(y[i]);
  }
  mx /= n;
  my /= n;
  A sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const A dx = static_cast<A>(x[i]) - mx, dy = static_cast<A>(y[i]) - my;
    sxx += dx * dx;
    syy += dy * dy;
  }
  const A nx = std::sqrt(sxx), ny = std::sqrt(syy);
  A r = 0;
  for (std::size_t i = 0; i < x.size(); ++i) r += ((static_cast<A>(x[i]) - mx) / nx) * ((static_cast<A>(y[i]) - my) / ny);
  return static_cast<T>(std::clamp(r, A(-1), A(1)));
}

/// Pearson correlation of x and y, as scipy.stats.pearsonr (NaN when either is constant).
template <class T>
T pearson(const std::vector<T>& x, const std::vector<T>& y) {
  return pearson(std::span<const T>(x), std::span<const T>(y));
}

/// Fractional ranks, 1-based; tied values get the mean of the ranks they span (scipy.stats.rankdata "average").
/// @code
/// average_ranks({10, 20, 20, 5}) -> {2, 3.5, 3.5, 1}
/// @endcode
template <class T>
std::vector<double> average_ranks(std::span<const T> v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (std::size_t start = 0; start < order.size();) {
    std::size_t end = start + 1;
    while (end < order.size() && v[order[end]] == v[order[start]]) ++end;
    // positions start..end-1 hold ranks start+1..end; their mean is (start + 1 + end) / 2
    const double rank = 0.5 * static_cast<double>(start + 1 + end);
    for (std::size_t k = start; k < end; ++k) ranks[order[k]] = rank;
    start = end;
  }
  return ranks;
}

/// Spearman rank correlation (scipy.stats.spearmanr statistic).
template <class T>
T spearman(std::span<const T> x, std::span<const T> y) {
  detail::require_pair(x, y, "spearman");
  if (x.size() < 2 || detail::is_constant(x) || detail::is_constant(y)) return std::numeric_limits<T>::quiet_NaN();
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  // numpy.corrcoef: covariance matrix, divided by the outer product of the standard deviations.
  const double n = static_cast<double>(rx.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    mx += rx[i];
    my += ry[i];
  }
  mx /= n;
  my /= n;
  double cxy = 0, cxx = 0, cyy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    const double dx = rx[i] - mx, dy = ry[i] - my;
    cxy += dx * dy;
    cxx += dx * dx;
    cyy += dy * dy;
  }
  const double r = (cxy / (n - 1)) / std::sqrt(cxx / (n - 1)) / std::sqrt(cyy / (n - 1));
  return static_cast<T>(std::clamp(r, -1.0, 1.0));
}

/// Spearman rank correlation (Pearson of average ranks), as scipy.stats.spearmanr.
template <class T>
T spearman(const std::vector<T>& x, const std::vector<T>& y) {
  return spearman(std::span<const T>(x), std::span<const T>(y));
}

/// Streaming Pearson correlation: counts, means and co-moments updated per pair (Welford), so memory does
/// not depend on the number of pairs. Same conventions as pearson().
template <class T>
class PearsonAccumulator {
 public:
  /// The type sums are kept in (double for float).
  using A = detail::accumulate_t<T>;

  /// Adds one pair.
  void add(T x, T y) {
    if (!std::isfinite(x) || !std::isfinite(y))
      fail("pearson accumulator: pair ", count_, " = (", x, ", ", y, ") is not finite");
    if (count_ == 0) {
      first_x_ = x;
      first_y_ = y;
    }
    x_constant_ = x_constant_ && x == first_x_;
    y_constant_ = y_constant_ && y == first_y_;
    ++count_;
    const A n = static_cast<A>(count_);
    const A dx = static_cast<A>(x) - mean_x_;
    const A dy = static_cast<A>(y) - mean_y_;
    mean_x_ += dx / n;
    mean_y_ += dy / n;
    m2x_ += dx * (static_cast<A>(x) - mean_x_);
    m2y_ += dy * (static_cast<A>(y) - mean_y_);
    cxy_ += dx * (static_cast<A>(y) - mean_y_);
  }

  /// Adds the pairs (x[i], y[i]).
  void add(std::span<const T> x, std::span<const T> y) {
    require(x.size() == y.size(), "pearson accumulator: x has ", x.size(), " values but y has ", y.size());
    for (std::size_t i = 0; i < x.size(); ++i) add(x[i], y[i]);
  }

  /// Combines with another accumulator (Chan et al. pairwise update).
  void merge(const PearsonAccumulator& o) {
    if (o.count_ == 0) return;
    if (count_ == 0) {
      *this = o;
      return;
    }
    x_constant_ = x_constant_ && o.x_constant_ && o.first_x_ == first_x_;
    y_constant_ = y_constant_ && o.y_constant_ && o.first_y_ == first_y_;
    const A na = static_cast<A>(count_), nb = static_cast<A>(o.count_), n = na + nb;
    const A dx = o.mean_x_ - mean_x_, dy = o.mean_y_ - mean_y_;
    m2x_ += o.m2x_ + dx * dx * na * nb / n;
    m2y_ += o.m2y_ + dy * dy * na * nb / n;
    cxy_ += o.cxy_ + dx * dy * na * nb / n;
    mean_x_ += dx * nb / n;
    mean_y_ += dy * nb / n;
    count_ += o.count_;
  }

  /// Pairs added.
  std::size_t count() const { return count_; }

  /// The correlation of the pairs added so far.
  T result() const {
    require(count_ >= 2, "pearson accumulator: needs at least 2 values, got ", count_);
    if (x_constant_ || y_constant_) return std::numeric_limits<T>::quiet_NaN();
    return static_cast<T>(std::clamp(cxy_ / std::sqrt(m2x_ * m2y_), A(-1), A(1)));
  }

 private:
  std::size_t count_ = 0;
  T first_x_{}, first_y_{};
  bool x_constant_ = true, y_constant_ = true;
  A mean_x_ = 0, mean_y_ = 0, m2x_ = 0, m2y_ = 0, cxy_ = 0;
};

}  // namespace darkbert
