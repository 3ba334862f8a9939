// The paper's §3.4 measure, attention received by a token class, on hand-computed maps: column sums over valid
// queries, divided by the length (or by the visible queries for causal models), maximum over the class members,
// mean over the examples containing the class.

#include <doctest/doctest.h>

#include <cmath>   // NAN
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/token_class_attention.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::check_near;
using darkbert::test::message_of;
using darkbert::test::tok;

namespace {
// One head, L = 4, valid n = 3 given row-major; padding row and column hold NaN.
template <class T>
std::vector<T> padded_3x3(const std::vector<T>& m) {
  const T N = T(NAN);
  return {m[0], m[1], m[2], N, m[3], m[4], m[5], N, m[6], m[7], m[8], N, N, N, N, N};
}
}  // namespace

TEST_CASE_TEMPLATE("bidirectional: column sums / n, max over the class", T, float, double) {
  // tokens: [CLS] cat [SEP]; rows: [.5 .25 .25], [.2 .2 .6], [.1 .3 .6]
  // received: [CLS] .8, cat .75, [SEP] 1.45; divided by n = 3
  const auto maps = padded_3x3<T>({.5, .25, .25, .2, .2, .6, .1, .3, .6});
  const auto view = AttentionView<T>::contiguous(maps.data(), 1, 1, 4, 3, false);
  const std::vector<TokenAnnotation> tokens = {tok("[CLS]", true), tok("cat", false, "NOUN"), tok("[SEP]", true)};
  TokenClassAttention<T> acc(1, 1, {token_class::cls_token(), token_class::sep_token(), token_class::upos("NOUN"),
                                    token_class::special(), token_class::negation()});
  acc.add(view, tokens);
  const auto r = acc.result();
  REQUIRE(r.size() == 5);
  CHECK(r[0].name == "attention_to_[CLS]");
  check_near(r[0](0, 0), 0.8 / 3);
  check_near(r[1](0, 0), 1.45 / 3);
  check_near(r[2](0, 0), 0.75 / 3);
  check_near(r[3](0, 0), 1.45 / 3);  // special = {[CLS], [SEP]}: the larger
  CHECK(std::isnan(r[4](0, 0)));      // no negation in any example
  CHECK(acc.examples_with(4) == 0);
  CHECK(r[4].examples == 0);

  // A second example without a noun: [CLS] [SEP] with rows [.9 .1], [.4 .6] (L = 4, n = 2).
  const T N = T(NAN);
  const std::vector<T> second = {.9, .1, N, N, .4, .6, N, N, N, N, N, N, N, N, N, N};
  acc.add(AttentionView<T>::contiguous(second.data(), 1, 1, 4, 2, false),
          std::vector<TokenAnnotation>{tok("[CLS]", true), tok("[SEP]", true)});
  const auto r2 = acc.result();
  CHECK(acc.examples() == 2);
  CHECK(acc.examples_with(0) == 2);
  CHECK(acc.examples_with(2) == 1);
  check_near(r2[0](0, 0), (0.8 / 3 + 1.3 / 2) / 2);   // [CLS]: mean over both examples
  check_near(r2[1](0, 0), (1.45 / 3 + 0.7 / 2) / 2);  // [SEP]
  check_near(r2[2](0, 0), 0.75 / 3);                  // NOUN: only the first example counts
  CHECK(r2[2].examples == 1);

  // The plain per-example function.
  const auto one = attention_to_class(view, tokens, token_class::upos("NOUN"));
  REQUIRE(one.has_value());
  check_near((*one)(0, 0), 0.75 / 3);
  CHECK_FALSE(attention_to_class(view, tokens, token_class::negation()).has_value());
}

TEST_CASE_TEMPLATE("causal: only later queries see a token; two normalisations", T, float, double) {
  // rows [1], [.4 .6], [.1 .3 .6]: received [CLS] 1.5, a .9, [SEP] .6
  //   sequence_length: /3 -> .5, .3, .2        visible_queries: /(n - j) -> 1.5/3, .9/2, .6/1
  const auto maps = padded_3x3<T>({1, 0, 0, .4, .6, 0, .1, .3, .6});
  const auto view = AttentionView<T>::contiguous(maps.data(), 1, 1, 4, 3, true);
  const std::vector<TokenAnnotation> tokens = {tok("[CLS]", true), tok("a", false, "DET"), tok("[SEP]", true)};
  TokenClassAttention<T> by_length(1, 1, {token_class::special(), token_class::upos("DET")});
  TokenClassAttention<T> by_visible(1, 1, {token_class::special(), token_class::upos("DET")},
                                    ReceivedNormalisation::visible_queries);
  by_length.add(view, tokens);
  by_visible.add(view, tokens);
  check_near(by_length.result()[0](0, 0), 0.5);   // max(.5, .2)
  check_near(by_length.result()[1](0, 0), 0.3);
  check_near(by_visible.result()[0](0, 0), 0.6);  // max(.5, .6): the last token is seen by itself only
  check_near(by_visible.result()[1](0, 0), 0.45);

  // One accumulator, a normalisation per class: each class as its own accumulator gives it.
  TokenClassAttention<T> mixed(1, 1, {token_class::special(), token_class::upos("DET")},
                               {ReceivedNormalisation::sequence_length, ReceivedNormalisation::visible_queries});
  mixed.add(view, tokens);
  CHECK(mixed.normalisation(1) == ReceivedNormalisation::visible_queries);
  check_near(mixed.result()[0](0, 0), 0.5);
  check_near(mixed.result()[1](0, 0), 0.45);
  // On a bidirectional map the two normalisations agree: every query sees every token.
  const auto square = padded_3x3<T>({.5, .25, .25, .2, .2, .6, .1, .3, .6});
  const auto bidirectional = AttentionView<T>::contiguous(square.data(), 1, 1, 4, 3, false);
  TokenClassAttention<T> both(1, 1, {token_class::sep_token(), token_class::sep_token()},
                              {ReceivedNormalisation::sequence_length, ReceivedNormalisation::visible_queries});
  both.add(bidirectional, tokens);
  CHECK(both.result()[0](0, 0) == both.result()[1](0, 0));
  check_near(both.result()[0](0, 0), (.25 + .6 + .6) / 3);
}

TEST_CASE_TEMPLATE("a one-token example receives all attention", T, float, double) {
  const T N = T(NAN);
  const std::vector<T> maps = {1, N, N, N};  // L = 2, n = 1
  TokenClassAttention<T> acc(1, 1, {token_class::cls_token()});
  acc.add(AttentionView<T>::contiguous(maps.data(), 1, 1, 2, 1, true), std::vector<TokenAnnotation>{tok("[CLS]", true)});
  check_near(acc.result()[0](0, 0), 1.0);
}

TEST_CASE("errors: annotations, classes, merging") {
  const std::vector<double> maps = padded_3x3<double>({.5, .25, .25, .2, .2, .6, .1, .3, .6});
  const auto view = AttentionView<double>::contiguous(maps.data(), 1, 1, 4, 3, false);
  TokenClassAttention<double> acc(1, 1, {token_class::cls_token()});
  CHECK(message_of([&] { acc.add(view, std::vector<TokenAnnotation>{tok("[CLS]", true), tok("a", false)}); }) ==
        "token class attention: 2 token annotations for an example of valid length 3 (padded 4); pass one annotation "
        "per valid token");
  // Annotations for all L positions are fine (only the first n are read).
  acc.add(view, std::vector<TokenAnnotation>(4, tok("[CLS]", true)));
  CHECK(acc.examples_with(0) == 1);
  CHECK(message_of([] { TokenClassAttention<double>(1, 1, {}); }) == "token class attention: no token classes given");
  TokenClassAttention<double> other(1, 1, {token_class::sep_token()});
  CHECK(message_of([&] { acc.merge(other); }) ==
        "token class attention: cannot merge class '[SEP]' into class '[CLS]'");
  TokenClassAttention<double> per_visible(1, 1, {token_class::cls_token()}, ReceivedNormalisation::visible_queries);
  CHECK(message_of([&] { acc.merge(per_visible); }) ==
        "token class attention: cannot merge class '[CLS]' measured with another normalisation");
  CHECK(message_of([] {
          TokenClassAttention<double>(1, 1, {token_class::cls_token()}, std::vector<ReceivedNormalisation>{});
        }) == "token class attention: 0 normalisations for 1 token classes");
  TokenClassAttention<double> wrong_shape(2, 1, {token_class::cls_token()});
  CHECK(message_of([&] { wrong_shape.add(view, std::vector<TokenAnnotation>(3, tok("[CLS]", true))); }) ==
        "token class attention: attention maps have 1 layers x 1 heads, expected 2 x 1");
}
