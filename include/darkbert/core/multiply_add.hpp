#pragma once
/// @file
/// a·b + c with one rounding where the build targets FMA and two where it does not, whatever the compiler
/// decides to contract: a sum written as a chain of these has one meaning per build, so a kernel and a
/// reference written with it agree bit for bit (with `acc += a * b`, GCC's -ffp-contract=fast fuses some
/// products and not others, depending on how each loop happens to be vectorised).

#include <cmath>  // std::fma

namespace darkbert {

/// a·b + c: std::fma where the build targets FMA (a single instruction), else a product then a sum.
template <class T>
inline T multiply_add(T a, T b, T c) {
#if defined(__FMA__) || defined(__AVX512F__)  // GCC sets only the second for -mavx512f, which has FMA
  return std::fma(a, b, c);  // one instruction here: GCC and Clang lower it inline
#else
  return a * b + c;  // nothing to contract to without FMA in the target
#endif
}

}  // namespace darkbert
