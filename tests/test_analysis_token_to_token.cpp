// Token-to-token attention (§3.5): class A -> class B share and maximum, and the query token's ([CLS]) attention
// split over categories — by hand, with padding, causal visibility, self pairs and skipped examples.

#include <doctest/doctest.h>

#include <cmath>   // NAN
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/token_to_token.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::check_near;
using darkbert::test::message_of;
using darkbert::test::tok;

namespace {
// [CLS] she likes dogs : PRON/nsubj, VERB, NOUN/obj
std::vector<TokenAnnotation> sentence() {
  return {tok("[CLS]", true), tok("she", false, "PRON", "nsubj"), tok("likes", false, "VERB", "root"),
          tok("dogs", false, "NOUN", "obj")};
}

// 1 layer 1 head, L = 5, n = 4: rows [.4 .3 .2 .1] [.1 .2 .3 .4] [.1 .6 .2 .1] [.25 .25 .25 .25]; padding NaN
template <class T>
std::vector<T> t2t_maps() {
  const T N = T(NAN);
  return {.4, .3, .2, .1, N, .1, .2, .3, .4, N, .1, .6, .2, .1, N, .25, .25, .25, .25, N, N, N, N, N, N};
}

// Causal version: rows [1] [.5 .5] [.1 .6 .3] [.25 .25 .25 .25]
template <class T>
std::vector<T> causal_maps() {
  const T N = T(NAN);
  return {1, 0, 0, 0, N, .5, .5, 0, 0, N, .1, .6, .3, 0, N, .25, .25, .25, .25, N, N, N, N, N, N};
}
}  // namespace

TEST_CASE_TEMPLATE("class A -> class B: share of A's attention on B and the largest weight", T, float, double) {
  const auto m = t2t_maps<T>();
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 1, 5, 4, false);
  const auto tokens = sentence();
  const std::span<const TokenAnnotation> t(tokens);

  // verb -> subject: a21 = .6
  const auto vs = class_to_class_attention(view, t, token_class::upos("VERB"), token_class::subject());
  REQUIRE(vs.has_value());
  CHECK(vs->mass.name == "upos=VERB_to_subject_mass");
  check_near(vs->mass(0, 0), .6);
  check_near(vs->max(0, 0), .6);
  // pronoun -> noun: a13 = .4
  const auto pn = class_to_class_attention(view, t, token_class::upos("PRON"), token_class::upos("NOUN"));
  check_near(pn->mass(0, 0), .4);
  // Several sources, several targets: non-special {1,2,3} -> special {0}: mean(.1, .1, .25) = .15, max .25
  const auto words = token_class::custom("word", [](const TokenAnnotation& a) { return !a.is_special; });
  const auto ws = class_to_class_attention(view, t, words, token_class::special());
  check_near(ws->mass(0, 0), .15);
  check_near(ws->max(0, 0), .25);
  // Same class on both sides: {1,2} -> {1,2} without self pairs: a12 .3, a21 .6 -> mass .45, max .6
  const auto pv = token_class::upos_any("pron_or_verb", {"PRON", "VERB"});
  const auto same = class_to_class_attention(view, t, pv, pv);
  check_near(same->mass(0, 0), .45);
  check_near(same->max(0, 0), .6);
  // Sum over several targets of one source: [CLS] -> content words {1,2,3}: .3 + .2 + .1 = .6
  const auto cw = class_to_class_attention(view, t, token_class::cls_token(), words);
  check_near(cw->mass(0, 0), .6);
  check_near(cw->max(0, 0), .3);
}

TEST_CASE_TEMPLATE("causal: a source counts only if it sees a target; examples without pairs are skipped", T, float,
                   double) {
  const auto m = causal_maps<T>();
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 1, 5, 4, true);
  const auto tokens = sentence();
  ClassToClassAttention<T> pn(1, 1, token_class::upos("PRON"), token_class::upos("NOUN"));
  CHECK_FALSE(pn.add(view, tokens));  // the noun (3) comes after the pronoun (1)
  CHECK(pn.skipped() == 1);
  CHECK(std::isnan(pn.result().mass(0, 0)));

  // words {1,2,3} -> {1,2,3}, no self pairs, keys <= query:
  //   source 1 sees nothing (only itself) -> dropped; source 2: a21 = .6; source 3: a31 + a32 = .5
  //   mass = mean(.6, .5) = .55, max = .6
  const auto words = token_class::custom("word", [](const TokenAnnotation& a) { return !a.is_special; });
  ClassToClassAttention<T> ww(1, 1, words, words);
  CHECK(ww.add(view, tokens));
  check_near(ww.result().mass(0, 0), .55);
  check_near(ww.result().max(0, 0), .6);

  // Averaging over examples: add the bidirectional sentence too (its value: mass = mean(a12+a13, a21+a23,
  // a31+a32) = mean(.7, .7, .5) = 1.9/3, max = .6).
  const auto b = t2t_maps<T>();
  ww.add(AttentionView<T>::contiguous(b.data(), 1, 1, 5, 4, false), tokens);
  CHECK(ww.examples() == 2);
  check_near(ww.result().mass(0, 0), (.55 + 1.9 / 3) / 2);
}

TEST_CASE_TEMPLATE("query category attention: the [CLS] row split over categories", T, float, double) {
  const auto m = t2t_maps<T>();
  const auto view = AttentionView<T>::contiguous(m.data(), 1, 1, 5, 4, false);
  const auto tokens = sentence();
  // [CLS] row [.4 .3 .2 .1] -> [CLS] .4, [SEP] 0, NOUN (dogs) .1, other (she, likes) .5
  QueryCategoryAttention<T> acc(1, 1, token_class::cls_token(),
                                {token_class::cls_token(), token_class::sep_token(), token_class::upos("NOUN")});
  CHECK(acc.add(view, tokens));
  const auto r = acc.result();
  REQUIRE(r.size() == 4);
  CHECK(r[0].name == "[CLS]_attention_to_[CLS]");
  CHECK(r[3].name == "[CLS]_attention_to_other");
  check_near(r[0](0, 0), .4);
  check_near(r[1](0, 0), 0);
  check_near(r[2](0, 0), .1);
  check_near(r[3](0, 0), .5);
  CHECK(acc.category_names() == std::vector<std::string>{"[CLS]", "[SEP]", "upos=NOUN", "other"});

  // Categories are exclusive, first match wins: "special" before "[CLS]" takes the [CLS] weight.
  QueryCategoryAttention<T> order(1, 1, token_class::cls_token(), {token_class::special(), token_class::cls_token()});
  order.add(view, tokens);
  check_near(order.result()[0](0, 0), .4);
  check_near(order.result()[1](0, 0), 0);

  // Explicit query position (e.g. the last token of GPT-2): row 3 -> [CLS] .25, NOUN .25, other .5
  QueryCategoryAttention<T> last(1, 1, token_class::cls_token(), {token_class::cls_token(), token_class::upos("NOUN")});
  last.add(view, tokens, 3);
  check_near(last.result()[0](0, 0), .25);
  check_near(last.result()[1](0, 0), .25);
  check_near(last.result()[2](0, 0), .5);

  // Causal: the first token sees only itself.
  const auto c = causal_maps<T>();
  QueryCategoryAttention<T> causal(1, 1, token_class::cls_token(), {token_class::cls_token()});
  causal.add(AttentionView<T>::contiguous(c.data(), 1, 1, 5, 4, true), tokens);
  check_near(causal.result()[0](0, 0), 1.0);
  check_near(causal.result()[1](0, 0), 0.0);

  // No query token: skipped.
  const std::vector<TokenAnnotation> no_cls = {tok("a", false), tok("b", false), tok("c", false), tok("d", false)};
  CHECK_FALSE(acc.add(view, no_cls));
  CHECK(acc.skipped() == 1);
  CHECK(acc.examples() == 1);
}

TEST_CASE("query category layer table: heads x categories of one layer") {
  // 2 layers x 2 heads, L = n = 2, [CLS] row of (l, h) = [x, 1 - x] with x = .1 (l=0,h=0) .2 .3 .4 (l=1,h=1)
  std::vector<double> m;
  for (double x : {.1, .2, .3, .4}) m.insert(m.end(), {x, 1 - x, .5, .5});
  const auto view = AttentionView<double>::contiguous(m.data(), 2, 2, 2, 2, false);
  const std::vector<TokenAnnotation> tokens = {tok("[CLS]", true), tok("[SEP]", true)};
  QueryCategoryAttention<double> acc(2, 2, token_class::cls_token(), {token_class::cls_token()});
  acc.add(view, tokens);
  const auto t = acc.layer_table(1);
  CHECK(t.name == "[CLS]_attention_layer_1");
  CHECK(t.row_axis == "head");
  CHECK(t.col_names == std::vector<std::string>{"[CLS]", "other"});
  CHECK(t(0, 0) == .3);
  CHECK(t(1, 0) == .4);
  CHECK(t(1, 1) == .6);
  CHECK(t.examples == 1);
}

TEST_CASE("token-to-token errors") {
  const auto m = t2t_maps<double>();
  const auto view = AttentionView<double>::contiguous(m.data(), 1, 1, 5, 4, false);
  QueryCategoryAttention<double> acc(1, 1, token_class::cls_token(), {});
  CHECK(message_of([&] { acc.add(view, sentence(), 4); }) ==
        "query category attention: query position 4 is outside the valid length 4");
  CHECK(message_of([&] { acc.layer_table(1); }) == "query category attention: layer 1 is outside [0, 1)");
  ClassToClassAttention<double> a(1, 1, token_class::upos("VERB"), token_class::subject());
  ClassToClassAttention<double> b(1, 1, token_class::upos("PRON"), token_class::subject());
  CHECK(message_of([&] { a.merge(b); }) ==
        "class-to-class attention: cannot merge 'upos=PRON' -> 'subject' into 'upos=VERB' -> 'subject'");
  CHECK(message_of([&] { a.add(view, std::vector<TokenAnnotation>(2)); }) ==
        "class-to-class attention: 2 token annotations for an example of valid length 4 (padded 5); pass one "
        "annotation per valid token");
}
