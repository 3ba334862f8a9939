#pragma once
/// @file
/// The dataset-level part of every streaming metric: a running mean of per-example values on a fixed
/// [rows, cols] grid (a per-head matrix, a head x head distance matrix, ...). Memory is rows*cols sums and
/// one counter, independent of how many examples are folded in. Sums are kept in double when T is float.
///
/// @code
/// RunningMean<float> mean(12, 12);
/// std::vector<float> one_example(144);  // filled by a metric kernel, row-major
/// mean.add(one_example);
/// HeadMatrix<float> m = make_head_matrix<float>("entropy", 12, 12);
/// mean.write_mean(m);                  // NaN everywhere when no example was added
/// @endcode

#include <cstddef>      // std::size_t
#include <limits>       // std::numeric_limits
#include <span>         // std::span
#include <vector>       // std::vector

#include "darkbert/analysis/accumulate_type.hpp"  // darkbert::detail::accumulate_t
#include "darkbert/analysis/results.hpp"          // darkbert::Table
#include "darkbert/core/error.hpp"        // darkbert::require
#include "darkbert/core/matrix.hpp"       // darkbert::Index

namespace darkbert {

/// Element-wise mean of [rows, cols] matrices, one per example, with sums in double for float.
/// @code
/// darkbert::RunningMean<float> mean(12, 12);
/// mean.add(example_scores);   // [12, 12] per example
/// auto table = mean.result();
/// @endcode
template <class T>
class RunningMean {
 public:
  /// The type sums are kept in.
  using accumulate_type = detail::accumulate_t<T>;

  /// An empty mean of [rows, cols] matrices.
  RunningMean(Index rows, Index cols) : rows_(rows), cols_(cols) {
    require(rows >= 1 && cols >= 1, "running mean: grid must be at least 1 x 1, got ", rows, " x ", cols);
    sums_.assign(static_cast<std::size_t>(rows * cols), accumulate_type(0));
  }

  /// Rows of each matrix.
  Index rows() const { return rows_; }
  /// Columns of each matrix.
  Index cols() const { return cols_; }
  /// Matrices added.
  std::size_t examples() const { return examples_; }

  /// Folds in one example's values (row-major [rows, cols]).
  void add(std::span<const T> values) {
    require(values.size() == sums_.size(), "running mean: example has ", values.size(), " values, expected ",
            sums_.size());
    for (std::size_t k = 0; k < sums_.size(); ++k) sums_[k] += static_cast<accumulate_type>(values[k]);
    ++examples_;
  }

  /// Adds the sums of another running mean over the same grid (e.g. one filled by another thread).
  void merge(const RunningMean& other) {
    require(other.rows_ == rows_ && other.cols_ == cols_, "running mean: cannot merge a ", other.rows_, " x ",
            other.cols_, " grid into a ", rows_, " x ", cols_, " grid");
    for (std::size_t k = 0; k < sums_.size(); ++k) sums_[k] += other.sums_[k];
    examples_ += other.examples_;
  }

  /// Mean of one cell; NaN when no example was added.
  T mean(Index r, Index c) const {
    if (examples_ == 0) return std::numeric_limits<T>::quiet_NaN();
    return static_cast<T>(sums_[static_cast<std::size_t>(r * cols_ + c)] /
                          static_cast<accumulate_type>(examples_));
  }

  /// Writes the means into a table of the same shape and records the example count.
  void write_mean(Table<T>& table) const {
    require(table.rows() == rows_ && table.cols() == cols_, "running mean: table '", table.name, "' is ",
            table.rows(), " x ", table.cols(), ", expected ", rows_, " x ", cols_);
    for (Index r = 0; r < rows_; ++r)
      for (Index c = 0; c < cols_; ++c) table(r, c) = mean(r, c);
    table.examples = examples_;
  }

  /// Bytes of heap memory held.
  std::size_t memory_bytes() const { return sums_.capacity() * sizeof(accumulate_type); }

 private:
  Index rows_;
  Index cols_;
  std::vector<accumulate_type> sums_;
  std::size_t examples_ = 0;
};

}  // namespace darkbert
