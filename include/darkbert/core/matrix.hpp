#pragma once
// Eigen aliases used throughout darkbert. Activations are row-major [rows = tokens, cols = features],
// so a batch [B, L, H] is a Matrix with B*L rows and a Map over any contiguous buffer is free.

#include <Eigen/Core>  // Eigen::Matrix, Eigen::Map

namespace darkbert {

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;
template <class T>
using VectorMap = Eigen::Map<Vector<T>>;
template <class T>
using ConstVectorMap = Eigen::Map<const Vector<T>>;

using Index = Eigen::Index;

}  // namespace darkbert
