#pragma once
/// @file
/// Eigen aliases used throughout darkbert. Activations are row-major [rows = tokens, cols = features],
/// so a batch [B, L, H] is a Matrix with B*L rows and a Map over any contiguous buffer is free.

#include <Eigen/Core>  // Eigen::Matrix, Eigen::Map

namespace darkbert {

/// Dynamic row-major matrix: `Matrix<float> m(rows, cols);`
template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Dynamic column vector.
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
/// A Matrix view of a contiguous buffer: `MatrixMap<float>(ptr, rows, cols) *= 2;`
template <class T>
using MatrixMap = Eigen::Map<Matrix<T>>;
/// A read-only Matrix view of a contiguous buffer.
template <class T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;
/// A Vector view of a contiguous buffer.
template <class T>
using VectorMap = Eigen::Map<Vector<T>>;
/// A read-only Vector view of a contiguous buffer.
template <class T>
using ConstVectorMap = Eigen::Map<const Vector<T>>;

/// Signed index and size type of every darkbert shape (Eigen's, std::ptrdiff_t).
using Index = Eigen::Index;

}  // namespace darkbert
