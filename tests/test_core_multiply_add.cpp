// core/multiply_add.hpp: one rounding where the build targets FMA, two where it does not, on inputs
// whose product is not exact in the type (so the two differ), in float and double.
#include <doctest/doctest.h>

#include <cmath>   // std::fma, std::ldexp
#include <limits>  // std::numeric_limits

#include "darkbert/core/multiply_add.hpp"

TEST_CASE_TEMPLATE("multiply_add is fused exactly when the build targets FMA", T, float, double) {
  // (1 + e)(1 - e) = 1 - e², which rounds to 1 in T; minus 1 that is 0 unfused and -e² fused.
  const T e = std::ldexp(T(1), -(std::numeric_limits<T>::digits / 2 + 2));
  volatile T a = T(1) + e, b = T(1) - e, c = T(-1);  // volatile: computed at run time, as in a kernel
  const T got = darkbert::multiply_add(T(a), T(b), T(c));
  const T fused = std::fma(T(a), T(b), T(c));
  REQUIRE(fused == -e * e);  // the test's premise: the fused result keeps what rounding drops
#if defined(__FMA__) || defined(__AVX512F__)  // GCC sets only the second for -mavx512f, which has FMA
  CHECK(got == fused);
#else
  CHECK(got == T(0));
#endif
}
