// The paper's §3.2 FrameNet measure: maximum attention over annotated token pairs, per head, averaged over
// sentences; multi-token spans, direction, self pairs, causal visibility and skipped sentences by hand.

#include <doctest/doctest.h>

#include <cmath>   // NAN
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/link_attention.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::check_near;
using darkbert::test::message_of;

namespace {
// 1 layer, 2 heads, L = 5, n = 4. Padding = NaN.
//   head 0 rows: [.1 .2 .3 .4] [.7 .1 .1 .1] [.25 .25 .25 .25] [.05 .8 .05 .1]
//   head 1 rows: [.4 .3 .2 .1] [.1 .1 .1 .7] [.6 .1 .2 .1]     [.3 .3 .3 .1]
template <class T>
std::vector<T> link_maps() {
  const T N = T(NAN);
  return {.1, .2,  .3,  .4,  N, .7, .1, .1, .1, N, .25, .25, .25, .25, N, .05, .8, .05, .1, N, N, N, N, N, N,
          .4, .3,  .2,  .1,  N, .1, .1, .1, .7, N, .6,  .1,  .2,  .1,  N, .3,  .3, .3,  .1, N, N, N, N, N, N};
}
}  // namespace

TEST_CASE_TEMPLATE("target -> frame element span: maximum over every token pair", T, float, double) {
  const auto m = link_maps<T>();
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 2, 5, 4, false);
  // Target token 3, frame element span {1, 2}.
  const std::vector<TokenLink> links = {{{3}, {1, 2}}};
  // from_to reads row 3: head 0 max(a31 .8, a32 .05) = .8; head 1 max(.3, .3) = .3
  // to_from reads column 3: head 0 max(a13 .1, a23 .25) = .25; head 1 max(.7, .1) = .7
  // either: the larger of both
  const auto f = max_link_attention(view, std::span<const TokenLink>(links), LinkDirection::from_to);
  const auto t = max_link_attention(view, std::span<const TokenLink>(links), LinkDirection::to_from);
  const auto e = max_link_attention(view, std::span<const TokenLink>(links), LinkDirection::either);
  REQUIRE(f.has_value());
  REQUIRE(t.has_value());
  REQUIRE(e.has_value());
  check_near((*f)(0, 0), .8);
  check_near((*f)(0, 1), .3);
  check_near((*t)(0, 0), .25);
  check_near((*t)(0, 1), .7);
  check_near((*e)(0, 0), .8);
  check_near((*e)(0, 1), .7);

  // Two links and multi-token spans on both sides: {2, 3} -> {0} and {0} -> {1}
  //   head 0: a20 .25, a30 .05, a01 .2 -> .25      head 1: a20 .6, a30 .3, a01 .3 -> .6
  const std::vector<TokenLink> two = {{{2, 3}, {0}}, {{0}, {1}}};
  const auto g = max_link_attention(view, std::span<const TokenLink>(two));
  check_near((*g)(0, 0), .25);
  check_near((*g)(0, 1), .6);
}

TEST_CASE_TEMPLATE("self pairs are ignored; a sentence without usable pairs is skipped", T, float, double) {
  const auto m = link_maps<T>();
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 2, 5, 4, false);
  // Overlapping spans {1} -> {1, 2}: the pair (1, 1) is dropped, leaving a12 (.1 / .1).
  const std::vector<TokenLink> overlap = {{{1}, {1, 2}}};
  const auto o = max_link_attention(view, std::span<const TokenLink>(overlap));
  check_near((*o)(0, 0), .1);
  check_near((*o)(0, 1), .1);

  LinkAttentionAccumulator<T> acc(1, 2);
  CHECK_FALSE(acc.add(view, std::vector<TokenLink>{}));             // no links
  CHECK_FALSE(acc.add(view, std::vector<TokenLink>{{{2}, {2}}}));   // only a self pair
  CHECK(acc.add(view, std::vector<TokenLink>{{{3}, {1, 2}}}));
  CHECK(acc.add(view, std::vector<TokenLink>{{{2, 3}, {0}}, {{0}, {1}}}));
  CHECK(acc.examples() == 2);
  CHECK(acc.skipped() == 2);
  const auto r = acc.result();
  CHECK(r.examples == 2);
  check_near(r(0, 0), (.8 + .25) / 2);
  check_near(r(0, 1), (.3 + .6) / 2);
}

TEST_CASE_TEMPLATE("causal: pairs whose key follows the query are invisible", T, float, double) {
  // Lower-triangular maps, 1 layer 1 head, n = 3: rows [1], [.3 .7], [.2 .5 .3]
  const std::vector<T> m = {1, 0, 0, .3, .7, 0, .2, .5, .3};
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 1, 3, 3, true);
  const std::vector<TokenLink> forward = {{{0}, {2}}};  // target before the frame element
  CHECK_FALSE(max_link_attention(view, std::span<const TokenLink>(forward), LinkDirection::from_to).has_value());
  check_near((*max_link_attention(view, std::span<const TokenLink>(forward), LinkDirection::to_from))(0, 0), .2);
  check_near((*max_link_attention(view, std::span<const TokenLink>(forward), LinkDirection::either))(0, 0), .2);
  const std::vector<TokenLink> mixed = {{{1}, {0, 2}}};  // a10 visible (.3), a12 not
  check_near((*max_link_attention(view, std::span<const TokenLink>(mixed)))(0, 0), .3);
}

TEST_CASE("link errors") {
  const auto m = link_maps<double>();
  const auto view = AttentionView<double>::contiguous(m.data(), 1, 2, 5, 4, false);
  LinkAttentionAccumulator<double> acc(1, 2);
  CHECK(message_of([&] { acc.add(view, std::vector<TokenLink>{{{1}, {2}}, {{4}, {0}}}); }) ==
        "link attention: link 1 'from' token 4 is outside the valid length 4");
  CHECK(message_of([&] { acc.add(view, std::vector<TokenLink>{{{1}, {-1}}}); }) ==
        "link attention: link 0 'to' token -1 is outside the valid length 4");
  LinkAttentionAccumulator<double> other(1, 2, LinkDirection::either);
  CHECK(message_of([&] { acc.merge(other); }) ==
        "link attention: cannot merge accumulators with different directions");
  CHECK(std::isnan(acc.result()(0, 0)));
}
