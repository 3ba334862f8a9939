// Per-head summaries (entropy, mean distance, special / self / neighbour / own-segment shares) by hand on a padded
// bidirectional map, a causal map (a row with a single allowed key has entropy 0; garbage above the diagonal is
// ignored), and a one-token example.

#include <doctest/doctest.h>

#include <cmath>   // NAN, std::log
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/head_summary.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

namespace {
TokenAnnotation tok(const char* token, bool special, int segment) {
  TokenAnnotation a;
  a.token = token;
  a.is_special = special;
  a.segment = segment;
  return a;
}

// Entropies and shares sum a whole row: float results get 2e-6.
template <class T>
void check_summary_near(T got, double want) {
  test::check_near(got, want, 2e-6, 1e-15);
}
}  // namespace

TEST_CASE_TEMPLATE("bidirectional map with padding", T, float, double) {
  // tokens [CLS](seg 0) a(seg 0) [SEP](seg 1); L = 4, n = 3; rows r0 = [.5 .5 0], r1 = [.25 .5 .25], r2 = [0 0 1]
  const T N = T(NAN);
  const std::vector<T> m = {.5, .5, 0, N, .25, .5, .25, N, 0, 0, 1, N, N, N, N, N};
  const std::vector<TokenAnnotation> tokens = {tok("[CLS]", true, 0), tok("a", false, 0), tok("[SEP]", true, 1)};
  const auto s = head_summary(AttentionView<T>::contiguous(m.data(), 1, 1, 4, 3, false), tokens);
  // entropy: r0 ln 2, r1 .5 ln 4 + .5 ln 2 = 1.5 ln 2, r2 0 -> 2.5 ln 2 / 3 = 0.5776226504666211
  check_summary_near(s.entropy(0, 0), 0.5776226504666211);
  // distance: r0 .5*1, r1 .25 + .25, r2 0 -> 1/3
  check_summary_near(s.mean_distance(0, 0), 1.0 / 3);
  // special keys {0, 2}: r0 .5, r1 .5, r2 1 -> 2/3
  check_summary_near(s.special_share(0, 0), 2.0 / 3);
  // self: .5, .5, 1 -> 2/3
  check_summary_near(s.self_share(0, 0), 2.0 / 3);
  // neighbours: r0 a01 = .5, r1 a10 + a12 = .5, r2 a21 = 0 -> 1/3
  check_summary_near(s.neighbour_share(0, 0), 1.0 / 3);
  // own segment: r0 keys {0,1} = 1, r1 {0,1} = .75, r2 {2} = 1 -> 2.75/3
  check_summary_near(s.segment_share(0, 0), 2.75 / 3);
  CHECK(s.entropy.name == "entropy");
  CHECK(s.tables().size() == 6);
  CHECK(s.tables()[5].name == "segment_share");
}

TEST_CASE_TEMPLATE("causal map: only keys <= i count; a single-key row has entropy 0", T, float, double) {
  // rows r0 = [1], r1 = [.5 .5], r2 = [.2 .3 .5]; the cells above the diagonal hold 7 (garbage that must be ignored)
  const std::vector<T> m = {1, 7, 7, .5, .5, 7, .2, .3, .5};
  const std::vector<TokenAnnotation> tokens = {tok("a", false, 0), tok("b", false, 0), tok("c", false, 0)};
  const auto s = head_summary(AttentionView<T>::contiguous(m.data(), 1, 1, 3, 3, true), tokens);
  // entropy: 0, ln 2, -(.2 ln .2 + .3 ln .3 + .5 ln .5) -> numpy 0.5742667315415062
  check_summary_near(s.entropy(0, 0), 0.5742667315415062);
  // distance: 0, .5, .2*2 + .3*1 = .7 -> 1.2/3 = .4
  check_summary_near(s.mean_distance(0, 0), 0.4);
  check_summary_near(s.self_share(0, 0), 2.0 / 3);        // 1, .5, .5
  check_summary_near(s.neighbour_share(0, 0), 0.8 / 3);   // 0 (row 0 has no allowed neighbour), .5, .3
  check_summary_near(s.special_share(0, 0), 0.0);
  check_summary_near(s.segment_share(0, 0), 1.0);
}

TEST_CASE_TEMPLATE("one-token example and dataset averaging", T, float, double) {
  const T N = T(NAN);
  const std::vector<T> one = {1, N, N, N};  // L = 2, n = 1
  const std::vector<TokenAnnotation> cls = {tok("[CLS]", true, 0)};
  HeadSummaryAccumulator<T> acc(1, 1);
  acc.add(AttentionView<T>::contiguous(one.data(), 1, 1, 2, 1, false), cls);
  auto s = acc.result();
  check_summary_near(s.entropy(0, 0), 0.0);
  check_summary_near(s.mean_distance(0, 0), 0.0);
  check_summary_near(s.self_share(0, 0), 1.0);
  check_summary_near(s.neighbour_share(0, 0), 0.0);
  check_summary_near(s.special_share(0, 0), 1.0);
  check_summary_near(s.segment_share(0, 0), 1.0);

  // Add the causal example above: every statistic is now the mean of both examples.
  const std::vector<T> m = {1, 0, 0, .5, .5, 0, .2, .3, .5};
  const std::vector<TokenAnnotation> tokens = {tok("a", false, 0), tok("b", false, 0), tok("c", false, 0)};
  acc.add(AttentionView<T>::contiguous(m.data(), 1, 1, 3, 3, true), tokens);
  s = acc.result();
  CHECK(s.entropy.examples == 2);
  check_summary_near(s.entropy(0, 0), 0.5742667315415062 / 2);
  check_summary_near(s.mean_distance(0, 0), 0.2);
  check_summary_near(s.special_share(0, 0), 0.5);
}

TEST_CASE("head summary errors") {
  const std::vector<double> m = {1, 0, 0, 1};
  HeadSummaryAccumulator<double> acc(1, 2);
  CHECK(message_of([&] {
          acc.add(AttentionView<double>::contiguous(m.data(), 1, 1, 2, 2, false),
                  std::vector<TokenAnnotation>(2));
        }) == "head summary: attention maps have 1 layers x 1 heads, expected 1 x 2");
  HeadSummaryAccumulator<double> ok(1, 1);
  CHECK(message_of([&] {
          ok.add(AttentionView<double>::contiguous(m.data(), 1, 1, 2, 2, false), std::vector<TokenAnnotation>(3));
        }) ==
        "head summary: 3 token annotations for an example of valid length 2 (padded 2); pass one annotation per valid "
        "token");
}
