// Tests for study/pattern_rules.hpp: the summaries of hand-built maps against hand-computed values, the
// class of each of the paper's patterns (bidirectional and causal), the rules' edges (short maps, a local
// window that is neither diagonal nor block, block only on two segments), and errors that name the problem.
#include <doctest/doctest.h>

#include <cmath>   // std::abs
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/study/pattern_rules.hpp"
#include "test_support.hpp"

using darkbert::Index;
using darkbert::TokenAnnotation;
using darkbert::study::AttentionPattern;
using darkbert::study::PatternBaseline;
using darkbert::study::PatternRules;
using darkbert::study::PatternSummary;

namespace {

// Tokens from a spelling, one letter each: C = [CLS], S = [SEP], E = <|endoftext|> (special), a = a token of
// segment 0, b = of segment 1; special tokens keep the previous token's segment (as annotations_from_encoding).
std::vector<TokenAnnotation> tokens_of(const std::string& spelling) {
  std::vector<TokenAnnotation> out;
  int segment = 0;
  for (char c : spelling) {
    TokenAnnotation t;
    t.is_special = c == 'C' || c == 'S' || c == 'E';
    t.token = c == 'C' ? "[CLS]" : c == 'S' ? "[SEP]" : c == 'E' ? "<|endoftext|>" : std::string(1, c);
    if (c == 'a') segment = 0;
    if (c == 'b') segment = 1;
    t.segment = segment;
    out.push_back(t);
  }
  return out;
}

// An n x n map whose row i is weight(i, j) over the allowed keys (j <= i when causal), normalised to sum 1.
template <class Weight>
std::vector<double> pattern_map_of(Index n, bool causal, Weight&& weight) {
  std::vector<double> m(static_cast<std::size_t>(n * n), 0.0);
  for (Index i = 0; i < n; ++i) {
    const Index keys = causal ? i + 1 : n;
    double total = 0;
    for (Index j = 0; j < keys; ++j) total += weight(i, j);
    REQUIRE(total > 0);
    for (Index j = 0; j < keys; ++j) m[static_cast<std::size_t>(i * n + j)] = weight(i, j) / total;
  }
  return m;
}

PatternSummary summarize(const std::string& spelling, bool causal, const std::vector<double>& map) {
  const auto tokens = tokens_of(spelling);
  const auto n = static_cast<Index>(tokens.size());
  REQUIRE(map.size() == static_cast<std::size_t>(n * n));
  return PatternBaseline(n, causal, tokens).summarize(map.data(), n);
}

AttentionPattern classify(const std::string& spelling, bool causal, const std::vector<double>& map) {
  return PatternRules{}.pattern(summarize(spelling, causal, map));
}

const std::string one =
    "Caaaaaa"
    "S";  // n = 8, anchors 0 and 7
const std::string two =
    "Caaaaaaaaaaaaa"
    "S"
    "bbbbbbbbbbbbb"
    "S";  // n = 29: 13 + 13 ordinary tokens

}  // namespace

TEST_CASE("the uniform map: shares by hand, every excess 0, heterogeneous") {
  const Index n = 8;
  const auto uniform = pattern_map_of(n, false, [](Index, Index) { return 1.0; });
  const auto s = summarize(one, false, uniform);
  CHECK(s.anchors == 2);
  CHECK(s.columns == 3);  // the two specials and one more stripe
  CHECK(s.vertical.uniform == doctest::Approx(3.0 / 8));
  CHECK(s.anchor.uniform == doctest::Approx(2.0 / 8));
  // |i - j| <= 1 without the anchors: rows 0..7 have 1, 2, 3, 3, 3, 3, 2, 1 such keys of 8.
  CHECK(s.diagonal.uniform == doctest::Approx(18.0 / 64));
  CHECK(s.vertical.value == doctest::Approx(s.vertical.uniform));
  CHECK(s.diagonal.excess() == doctest::Approx(0.0));
  CHECK(s.entropy == doctest::Approx(1.0));
  CHECK_FALSE(s.two_segments);
  CHECK(PatternRules{}.pattern(s) == AttentionPattern::heterogeneous);
}

TEST_CASE("vertical, diagonal, vertical + diagonal on one sentence") {
  const Index n = 8;
  // Half of every row on [CLS], half on [SEP].
  const auto vertical = pattern_map_of(n, false, [&](Index, Index j) { return j == 0 || j == n - 1 ? 1.0 : 0.0; });
  const auto sv = summarize(one, false, vertical);
  CHECK(sv.vertical.value == doctest::Approx(1.0));
  CHECK(sv.anchor.value == doctest::Approx(1.0));
  CHECK(sv.vertical.excess() == doctest::Approx(1.0));
  CHECK(sv.diagonal.value == doctest::Approx(0.0));
  CHECK(PatternRules{}.pattern(sv) == AttentionPattern::vertical);
  CHECK(PatternRules{}.explain(sv).rfind("vertical:", 0) == 0);

  // Every row on the next token (the last on the previous one): the row before [SEP] lands on an anchor.
  const auto next = pattern_map_of(n, false, [&](Index i, Index j) { return j == (i + 1 < n ? i + 1 : i - 1) ? 1.0 : 0.0; });
  const auto sd = summarize(one, false, next);
  CHECK(sd.diagonal.value == doctest::Approx(7.0 / 8));
  CHECK(sd.diagonal.excess() == doctest::Approx((7.0 / 8 - 18.0 / 64) / (1 - 18.0 / 64)));
  CHECK(PatternRules{}.pattern(sd) == AttentionPattern::diagonal);

  // Half on the specials, half on the next token (20 tokens: on 8 the uniform map already puts 28% on the
  // band, and the half that goes there is only 22% of the room above it).
  const std::string twenty = "C" + std::string(18, 'a') + "S";
  const Index m = 20;
  const auto both = pattern_map_of(m, false, [&](Index i, Index j) {
    return (j == 0 || j == m - 1 ? 0.5 : 0.0) + (j == (i + 1 < m ? i + 1 : i - 1) ? 1.0 : 0.0);
  });
  const auto sb = summarize(twenty, false, both);
  CHECK(sb.vertical.excess() >= 0.25);
  CHECK(sb.diagonal.excess() >= 0.25);
  CHECK(PatternRules{}.pattern(sb) == AttentionPattern::vertical_diagonal);
  CHECK(classify(one, false, pattern_map_of(n, false, [&](Index i, Index j) {
                   return (j == 0 || j == n - 1 ? 0.5 : 0.0) + (j == (i + 1 < n ? i + 1 : i - 1) ? 1.0 : 0.0);
                 })) == AttentionPattern::vertical);
  // A weak diagonal beside strong stripes stays vertical: 10% of each row on the next token.
  const auto faint = pattern_map_of(m, false, [&](Index i, Index j) {
    return (j == 0 || j == m - 1 ? 0.45 : 0.0) + (j == (i + 1 < m ? i + 1 : i - 1) ? 0.1 : 0.0);
  });
  CHECK(classify(twenty, false, faint) == AttentionPattern::vertical);
}

TEST_CASE("block: two sentences, own-segment attention spread over the sentence") {
  const auto tokens = tokens_of(two);
  const auto n = static_cast<Index>(tokens.size());
  auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };
  const auto block = pattern_map_of(n, false, [&](Index i, Index j) { return segment(i) == segment(j) ? 1.0 : 0.0; });
  const auto s = summarize(two, false, block);
  CHECK(s.two_segments);
  CHECK(s.block.value == doctest::Approx(1.0));
  // Uniform: 13 ordinary rows per sentence, 13 of the 26 ordinary keys in the own sentence.
  CHECK(s.block.uniform == doctest::Approx((13.0 * 13 + 13.0 * 13) / (26.0 * 26)));
  CHECK(s.spread == doctest::Approx(1.0).epsilon(0.05));  // as spread as uniform-within-sentence
  CHECK(PatternRules{}.pattern(s) == AttentionPattern::block);

  // The same picture on one sentence (no second segment) cannot be a block.
  const std::string single = "C" + std::string(27, 'a') + "S";
  REQUIRE(single.size() == two.size());
  const auto s1 = summarize(single, false, block);
  CHECK_FALSE(s1.two_segments);
  CHECK(s1.block.excess() == 0.0);
  CHECK(PatternRules{}.pattern(s1) != AttentionPattern::block);

  // A window of +-3 tokens keeps to its sentence too but is local: the spread rule refuses it, and three of
  // its seven keys on the diagonal band are not enough for diagonal.
  const auto window = pattern_map_of(n, false, [&](Index i, Index j) { return std::abs(i - j) <= 3 ? 1.0 : 0.0; });
  const auto sw = summarize(two, false, window);
  CHECK(sw.block.excess() >= 0.5);
  CHECK(sw.spread < 0.5);
  CHECK(PatternRules{}.pattern(sw) == AttentionPattern::heterogeneous);
}

TEST_CASE("causal maps: uniform prefix, previous token, first token, block of the second sentence") {
  const std::string spelling =
      "Eaaaaaaaaaaaa"
      "E"
      "bbbbbbbbbbbb";  // GPT-2 style, n = 26
  const auto tokens = tokens_of(spelling);
  const auto n = static_cast<Index>(tokens.size());

  const auto uniform = pattern_map_of(n, true, [](Index, Index) { return 1.0; });
  const auto su = summarize(spelling, true, uniform);
  CHECK(su.causal);
  CHECK(su.anchors == 2);  // the first token and the separator
  CHECK(su.vertical.excess() == doctest::Approx(0.0));
  CHECK(su.diagonal.excess() == doctest::Approx(0.0));
  CHECK(su.block.excess() == doctest::Approx(0.0));
  // The first column of a uniform causal map holds sum_i 1/(i+1) = H_n of the n rows.
  double harmonic = 0;
  for (Index i = 1; i <= n; ++i) harmonic += 1.0 / static_cast<double>(i);
  CHECK(su.anchor.uniform > harmonic / static_cast<double>(n));
  CHECK(PatternRules{}.pattern(su) == AttentionPattern::heterogeneous);

  const auto previous = pattern_map_of(n, true, [](Index i, Index j) { return j == (i > 0 ? i - 1 : 0) ? 1.0 : 0.0; });
  CHECK(classify(spelling, true, previous) == AttentionPattern::diagonal);

  // Everything on the first token: vertical, though no [CLS]/[SEP] is involved.
  const auto first = pattern_map_of(n, true, [](Index, Index j) { return j == 0 ? 1.0 : 0.0; });
  const auto sf = summarize(spelling, true, first);
  CHECK(sf.anchor.value == doctest::Approx(1.0));
  CHECK(PatternRules{}.pattern(sf) == AttentionPattern::vertical);

  auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };
  const auto block = pattern_map_of(n, true, [&](Index i, Index j) { return segment(i) == segment(j) ? 1.0 : 0.0; });
  const auto sb = summarize(spelling, true, block);
  CHECK(sb.two_segments);
  CHECK(sb.block.excess() == doctest::Approx(1.0));
  CHECK(PatternRules{}.pattern(sb) == AttentionPattern::block);

  // Weights on future keys are never read.
  auto leaky = previous;
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) leaky[static_cast<std::size_t>(i * n + j)] = 5.0;
  CHECK(summarize(spelling, true, leaky).diagonal.value ==
        doctest::Approx(summarize(spelling, true, previous).diagonal.value));
}

TEST_CASE("a map shorter than min_length is heterogeneous whatever it shows") {
  const std::string spelling = "CaaS";
  const auto vertical = pattern_map_of(4, false, [](Index, Index j) { return j == 0 ? 1.0 : 0.0; });
  const auto s = summarize(spelling, false, vertical);
  CHECK(PatternRules{}.pattern(s) == AttentionPattern::heterogeneous);
  CHECK(PatternRules{}.explain(s) == "heterogeneous: 4 tokens < 6");
  PatternRules lenient;
  lenient.thresholds.min_length = 3;
  CHECK(lenient.pattern(s) == AttentionPattern::vertical);
}

TEST_CASE("summaries through an attention view; the scheme; errors name the problem") {
  const auto tokens = tokens_of(one);
  const Index n = 8, L = 10;
  std::vector<float> maps(static_cast<std::size_t>(2 * L * L), 0.0f);  // 1 layer, 2 heads, padded to 10
  for (Index i = 0; i < n; ++i) {
    maps[static_cast<std::size_t>(i * L + 0)] = 1.0f;                                    // head 0: all on [CLS]
    maps[static_cast<std::size_t>(L * L + i * L + (i + 1 < n ? i + 1 : i - 1))] = 1.0f;  // head 1: next token
  }
  const auto view = darkbert::AttentionView<float>::contiguous(maps.data(), 1, 2, L, n, false);
  CHECK(PatternRules{}.pattern(darkbert::study::summarize_pattern(view, 0, 0, tokens)) == AttentionPattern::vertical);
  CHECK(PatternRules{}.pattern(darkbert::study::summarize_pattern(view, 0, 1, tokens)) == AttentionPattern::diagonal);
  CHECK(darkbert::test::message_of([&] {
          darkbert::study::summarize_pattern(view, 0, 0, std::span(tokens).first(5));
        }).find("5 token annotations for an example of valid length 8") != std::string::npos);
  CHECK(darkbert::test::message_of([&] {
          PatternBaseline(8, false, std::span(tokens).first(3));
        }).find("3 token annotations for a map of 8 tokens") != std::string::npos);

  const auto scheme = darkbert::study::paper_pattern_scheme();
  CHECK(scheme.size() == 5);
  CHECK(scheme.index_of("vertical_diagonal", "x") == static_cast<int>(AttentionPattern::vertical_diagonal));
  CHECK(darkbert::test::message_of([&] { scheme.index_of("diagnol", "labels.csv:4"); }) ==
        "labels.csv:4: unknown class 'diagnol' (expected one of vertical, diagonal, vertical_diagonal, block, "
        "heterogeneous)");
  auto twice = scheme;
  twice.names[1] = "vertical";
  CHECK(darkbert::test::message_of([&] { twice.check(); }).find("class 'vertical' appears twice") != std::string::npos);
  // Rules are functions of the summary, usable wherever a PatternRule is expected.
  const darkbert::study::PatternRule rule = PatternRules{}.rule();
  CHECK(rule(darkbert::study::summarize_pattern(view, 0, 1, tokens)) == 1);
}

TEST_CASE("the replication's classes on causal maps: diagonal, M1, block, overall") {
  using darkbert::study::ReplicationPattern;
  using darkbert::study::ReplicationPatternRules;
  const std::string spelling =
      "Eaaaaaaaaaaaa"
      "E"
      "bbbbbbbbbbbb";  // GPT-2 style, n = 26: ordinary tokens 1..12 (sentence 1) and 14..25 (sentence 2)
  const auto tokens = tokens_of(spelling);
  const auto n = static_cast<Index>(tokens.size());
  auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };
  auto ordinary = [&](Index j) { return !tokens[static_cast<std::size_t>(j)].is_special && j != 0; };
  auto replication = [&](const std::vector<double>& map) {
    return ReplicationPatternRules{}.pattern(summarize(spelling, true, map));
  };

  const auto uniform = pattern_map_of(n, true, [](Index, Index) { return 1.0; });
  const auto su = summarize(spelling, true, uniform);
  // Uniform: row i of sentence 2 puts 12 / (i + 1) on sentence 1's ordinary tokens; the mean over rows 14..25.
  double by_hand = 0;
  for (Index i = 14; i < 26; ++i) by_hand += 12.0 / static_cast<double>(i + 1);
  CHECK(su.second_on_first.uniform == doctest::Approx(by_hand / 12));
  CHECK(su.second_on_first.excess() == doctest::Approx(0.0));
  CHECK(replication(uniform) == ReplicationPattern::overall);

  CHECK(replication(pattern_map_of(n, true, [](Index i, Index j) { return j == (i > 0 ? i - 1 : 0) ? 1.0 : 0.0; })) ==
        ReplicationPattern::diagonal);
  // M1: every row that can see the first sentence spreads over it.
  const auto m1 = pattern_map_of(n, true, [&](Index i, Index j) { return i < 1 || (segment(j) == 0 && ordinary(j)) ? 1.0 : 0.0; });
  const auto sm = summarize(spelling, true, m1);
  CHECK(sm.second_on_first.value == doctest::Approx(1.0));
  CHECK(sm.second_on_first.excess() == doctest::Approx(1.0));
  CHECK(replication(m1) == ReplicationPattern::majority_first_sentence);
  CHECK(ReplicationPatternRules{}.explain(sm).rfind("majority in sentence 1: sentence-1 excess >= 0.50; ", 0) == 0);
  // Block: each sentence within itself.
  CHECK(replication(pattern_map_of(n, true, [&](Index i, Index j) { return segment(i) == segment(j) ? 1.0 : 0.0; })) ==
        ReplicationPattern::block);
  // Everything on the first token: the paper's vertical, the replication's overall (it has no vertical class,
  // and the first token is not part of sentence 1's tokens).
  const auto first = pattern_map_of(n, true, [](Index, Index j) { return j == 0 ? 1.0 : 0.0; });
  CHECK(PatternRules{}.pattern(summarize(spelling, true, first)) == AttentionPattern::vertical);
  CHECK(replication(first) == ReplicationPattern::overall);
  CHECK(summarize(spelling, true, first).second_on_first.value == 0.0);

  // One sentence: neither M1 nor block can be told; a first-sentence-only map is overall.
  const std::string single = "Eaaaaaaaaaaa";
  const auto one_sentence = pattern_map_of(12, true, [](Index, Index) { return 1.0; });
  const auto s1 = summarize(single, true, one_sentence);
  CHECK_FALSE(s1.two_segments);
  CHECK(s1.second_on_first.value == 0.0);
  CHECK(ReplicationPatternRules{}.pattern(s1) == ReplicationPattern::overall);
  CHECK(ReplicationPatternRules{}.explain(s1) == "overall: no rule fired; diagonal excess 0.00, one segment");
}

TEST_CASE("the replication's scheme: four classes with definitions; the class lists by name") {
  const auto scheme = darkbert::study::replication_pattern_scheme();
  scheme.check();
  CHECK(scheme.names == std::vector<std::string>{"diagonal", "block", "overall", "majority_first_sentence"});
  CHECK(scheme.two_segments == std::vector<bool>{false, true, false, true});
  for (const auto& d : scheme.definitions) CHECK(d.size() > 40);
  CHECK(darkbert::study::ReplicationPatternRules::scheme() == scheme);
  CHECK(darkbert::study::pattern_scheme(darkbert::study::parse_pattern_classes("replication")) == scheme);
  CHECK(darkbert::study::pattern_scheme(darkbert::study::parse_pattern_classes("paper")) ==
        darkbert::study::paper_pattern_scheme());
  CHECK(darkbert::test::message_of([] { darkbert::study::parse_pattern_classes("gpt2"); }) ==
        "pattern classes 'gpt2': expected 'paper' (the paper's five) or 'replication' (the GPT-2 replication's four)");
  auto missing = scheme;
  missing.definitions.pop_back();
  CHECK(darkbert::test::message_of([&] { missing.check(); }) ==
        "pattern scheme 'gpt2_replication': 4 names, 4 labels, 4 two-segment flags, 3 definitions");
}
