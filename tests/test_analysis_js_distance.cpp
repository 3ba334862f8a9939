// Jensen–Shannon distance between heads, by hand / numpy on tiny maps: symmetric, zero diagonal, identical rows
// exactly 0, causal rows restricted to keys <= i, padding ignored.
//
// numpy (1.24.2), js(p, q) = sqrt((KL(p||m) + KL(q||m)) / 2), m = (p + q) / 2, natural log:
//   (js([1,0],[0,1]) + js([.5,.5],[.5,.5])) / 2   = 0.41627730557884884   (= sqrt(ln 2) / 2)
//   (js([1,0],[.5,.5]) + js([.5,.5],[1,0])) / 2   = 0.46450140402245893
//   (0 + js([.5,.5],[1,0])) / 2                   = 0.23225070201122947

#include <doctest/doctest.h>

#include <cmath>   // NAN, std::sqrt, std::log
#include <random>  // std::mt19937_64
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/js_distance.hpp"
#include "darkbert/analysis/synthetic_attention.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;

namespace {
// Square roots of sums of x log x terms: float results get 2e-6, double 1e-14.
template <class T>
void check_js_near(T got, double want) {
  test::check_near(got, want, 2e-6, 1e-14);
}

// 1 layer, 3 heads, L = 3, n = 2 (padding NaN):
//   head 0 rows [1 0] [.5 .5];  head 1 rows [0 1] [.5 .5];  head 2 rows [.5 .5] [1 0]
template <class T>
std::vector<T> js_maps() {
  const T N = T(NAN);
  return {1, 0, N, .5, .5, N, N, N, N, 0, 1, N, .5, .5, N, N, N, N, .5, .5, N, 1, 0, N, N, N, N};
}
}  // namespace

TEST_CASE_TEMPLATE("hand-checked pairwise distances", T, float, double) {
  const auto m = js_maps<T>();
  const auto d = head_js_distance(AttentionView<T>::contiguous(m.data(), 1, 3, 3, 2, false));
  CHECK(d.rows() == 3);
  CHECK(d.row_names == std::vector<std::string>{"0.0", "0.1", "0.2"});
  CHECK(d.name == "head_js_distance");
  for (Index a = 0; a < 3; ++a) {
    CHECK(d(a, a) == T(0));
    for (Index b = 0; b < 3; ++b) CHECK(d(a, b) == d(b, a));
  }
  check_js_near(d(0, 1), 0.41627730557884884);  // row 0 disjoint (ln 2), row 1 identical (exactly 0)
  check_js_near(d(0, 1), std::sqrt(std::log(2.0)) / 2);
  check_js_near(d(0, 2), 0.46450140402245893);
  check_js_near(d(1, 2), 0.46450140402245893);
}

TEST_CASE_TEMPLATE("causal rows and dataset mean", T, float, double) {
  // Causal maps (n = 2): row 0 has one allowed key, so every pair agrees there.
  //   head 0 rows [1 .] [.5 .5];  head 1 rows [1 .] [.5 .5];  head 2 rows [1 .] [1 0]
  // The cell above the diagonal (.) holds 0 for heads 0 and 2 but 1 for head 1: not an allowed key, so ignored.
  const T N = T(NAN);
  const std::vector<T> c = {1, 0, N, .5, .5, N, N, N, N, 1, 1, N, .5, .5, N, N, N, N, 1, 0, N, 1, 0, N, N, N, N};
  HeadDistanceAccumulator<T> acc(1, 3);
  acc.add(AttentionView<T>::contiguous(c.data(), 1, 3, 3, 2, true));
  auto d = acc.result();
  check_js_near(d(0, 1), 0.0);
  check_js_near(d(0, 2), 0.23225070201122947);
  check_js_near(d(1, 2), 0.23225070201122947);
  const auto m = js_maps<T>();  // the bidirectional example above as a second example
  acc.add(AttentionView<T>::contiguous(m.data(), 1, 3, 3, 2, false));
  d = acc.result();
  CHECK(d.examples == 2);
  check_js_near(d(0, 1), 0.41627730557884884 / 2);
  check_js_near(d(0, 2), (0.23225070201122947 + 0.46450140402245893) / 2);
}

TEST_CASE("properties on random maps: bounded by sqrt(ln 2), symmetric, triangle inequality per example") {
  std::mt19937_64 rng(5);
  std::vector<double> m(2 * 3 * 6 * 6);
  fill_random_attention<double>(m, 2, 3, 6, 5, false, rng);
  const auto d = head_js_distance(AttentionView<double>::contiguous(m.data(), 2, 3, 6, 5, false));
  const double bound = std::sqrt(std::log(2.0));
  for (Index a = 0; a < 6; ++a)
    for (Index b = 0; b < 6; ++b) {
      CHECK(d(a, b) >= 0);
      CHECK(d(a, b) <= bound);
      CHECK(d(a, b) == d(b, a));
      for (Index c = 0; c < 6; ++c) CHECK(d(a, c) <= d(a, b) + d(b, c) + 1e-12);  // mean of metrics is a metric
    }
}

TEST_CASE("wrong shape is refused") {
  const auto m = js_maps<double>();
  HeadDistanceAccumulator<double> acc(2, 3);
  try {
    acc.add(AttentionView<double>::contiguous(m.data(), 1, 3, 3, 2, false));
    FAIL("no error");
  } catch (const darkbert::error& e) {
    CHECK(std::string(e.what()) == "head JS distance: attention maps have 1 layers x 3 heads, expected 2 x 3");
  }
}
