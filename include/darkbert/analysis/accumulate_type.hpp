#pragma once
/// @file
/// The precision of dataset-level sums in the analysis: at least double, so folding many float examples does not
/// lose digits (float maps are summed in double; double and long double keep their own type).
///
/// @code
/// detail::accumulate_t<float>  -> double
/// detail::accumulate_t<double> -> double
/// @endcode

#include <type_traits>  // std::conditional_t

namespace darkbert::detail {

template <class T>
using accumulate_t = std::conditional_t<(sizeof(T) < sizeof(double)), double, T>;

}  // namespace darkbert::detail
