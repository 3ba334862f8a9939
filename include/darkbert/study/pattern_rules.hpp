#pragma once
/// @file
/// §3.1 of "Revealing the Dark Secrets of BERT": the transparent classifier. One head's attention map on
/// one example is put into one of the paper's five classes — vertical, diagonal, vertical + diagonal,
/// block, heterogeneous — by a few named rules on per-map summaries, each summary compared with its value
/// on the uniform map of the same shape (the paper's "disabled" head: every query attends equally to every
/// key it may see).
///
/// The summaries of one map (rows = queries i, allowed keys only: j < n, and j <= i for causal models):
/// @code
/// anchors     special tokens ([CLS], [SEP], <|endoftext|>), and for causal models also the first token
///             (GPT-2 heads park their attention there the way BERT heads park it on [SEP])
/// vertical    mean over rows of the mass on the k most-attended columns, k = anchors + 1
///             (room for the special tokens and one more stripe, such as a full stop)
/// anchor      mean over rows of the mass on the anchors (reported, not used: says what a vertical is on)
/// diagonal    mean over rows of the mass on keys j with |i - j| <= 1 that are not anchors
///             (previous, own and next token; the anchors belong to the vertical measure, so a head that
///             only looks at [CLS]/[SEP] does not count as diagonal on the rows next to them)
/// block       of the mass that ordinary tokens put on ordinary tokens (anchors left out as queries and as
///             keys), the share that stays inside the query's own segment; only for two-segment inputs
/// spread      mean |i - j| of that own-segment mass, divided by the same for the uniform map
///             (a block spreads over its sentence; a narrow window around the diagonal does not)
/// first       mean over rows of the mass on segment 0 (reported, not used by the rules)
/// second_on_first  mean over the second sentence's ordinary queries of the mass on the first sentence's
///             ordinary tokens (anchors left out as keys, so a head parked on the first token is not
///             counted); only for two-segment inputs. The GPT-2 replication's "majority in sentence 1"
/// entropy     mean over rows with >= 2 allowed keys of the row entropy divided by ln(allowed keys)
///             (1 = uniform; reported, not used by the paper's rules)
/// @endcode
/// Each share is turned into an excess over the uniform map, scaled to the room above it:
/// `excess = (value - uniform) / (1 - uniform)`, 0 for the uniform map, 1 for a map that puts all its mass
/// there. So one threshold means the same for a 12-token and a 128-token input, and for a causal map, whose
/// uniform version already puts much of its mass on the first columns and the diagonal.
///
/// @code
/// auto view = ...;                                               // AttentionView<float> of one example
/// darkbert::study::PatternSummary s = darkbert::study::summarize_pattern(view, layer, head, tokens);
/// darkbert::study::PatternRules rules;                            // the paper's five classes
/// int c = rules.classify(s);                                      // index into rules.scheme().names
/// std::cout << rules.scheme().names[c] << ": " << rules.explain(s) << "\n";
/// @endcode
///
/// The GPT-2 replication's four classes (diagonal, block, overall, majority in the first sentence) are a
/// second PatternScheme (replication_pattern_scheme) with their own rules over the same PatternSummary
/// (ReplicationPatternRules); nothing here assumes five classes. Each scheme carries a one-sentence written
/// definition per class, saved with every result that uses it.

#include <algorithm>    // std::sort, std::min
#include <cmath>        // std::log, std::abs
#include <cstddef>      // std::size_t
#include <cstdio>       // std::snprintf
#include <cstdlib>      // std::abs (integers)
#include <functional>   // std::function
#include <numeric>      // std::iota
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/analysis/attention_view.hpp"    // darkbert::AttentionView
#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation
#include "darkbert/core/error.hpp"                 // darkbert::require, darkbert::fail
#include "darkbert/core/matrix.hpp"                // darkbert::Index

namespace darkbert::study {

/// A list of attention-pattern classes: names used in files, labels used in figures. Class indices are
/// positions in this list.
/// @code
/// const auto scheme = darkbert::study::paper_pattern_scheme();
/// int block = scheme.index_of("block", "labels.csv:3");   // 3
/// @endcode
struct PatternScheme {
  std::string name;                 ///< which list: "kovaleva2019" for the paper's five
  std::vector<std::string> names;   ///< file names of the classes: "vertical", "vertical_diagonal", ...
  std::vector<std::string> labels;  ///< figure labels: "vertical", "vertical + diagonal", ...
  std::vector<bool> two_segments;   ///< whether a class exists only on two-segment inputs (block)
  std::vector<std::string> definitions;  ///< one sentence per class saying what a map of it shows

  /// Number of classes.
  int size() const { return static_cast<int>(names.size()); }
  /// Index of the class called `name`; throws naming `where` (a file and line) and the known names.
  int index_of(std::string_view name, const std::string& where) const {
    for (std::size_t k = 0; k < names.size(); ++k)
      if (names[k] == name) return static_cast<int>(k);
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    fail(where, ": unknown class '", name, "' (expected one of ", known, ")");
  }
  /// Throws unless names, labels and the two-segment flags line up and the names are distinct.
  void check() const {
    require(!names.empty() && labels.size() == names.size() && two_segments.size() == names.size() &&
                definitions.size() == names.size(),
            "pattern scheme '", name, "': ", names.size(), " names, ", labels.size(), " labels, ", two_segments.size(),
            " two-segment flags, ", definitions.size(), " definitions");
    for (std::size_t a = 0; a < names.size(); ++a)
      for (std::size_t b = a + 1; b < names.size(); ++b)
        require(names[a] != names[b], "pattern scheme '", name, "': class '", names[a], "' appears twice");
  }
  /// Same name and classes.
  friend bool operator==(const PatternScheme&, const PatternScheme&) = default;
};

/// The paper's five classes, in the order of its Figure 1 (and of the head_classes.csv columns).
enum class AttentionPattern : int { vertical = 0, diagonal = 1, vertical_diagonal = 2, block = 3, heterogeneous = 4 };

/// The paper's classes as a PatternScheme (indices = AttentionPattern values).
inline PatternScheme paper_pattern_scheme() {
  return {"kovaleva2019",
          {"vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous"},
          {"vertical", "diagonal", "vertical + diagonal", "block", "heterogeneous"},
          {false, false, false, true, false},
          {"most attention goes to a few columns: the special tokens ([CLS], [SEP]; the first token of a causal "
           "model) and perhaps one more, such as a full stop",
           "most attention goes to the previous, own or next token: a line along the diagonal",
           "both at once: columns on the special tokens and a line along the diagonal, each plainly visible",
           "on a pair of sentences, each token attends within its own sentence, spread over it: two squares on "
           "the diagonal",
           "none of the above: attention varies with the input and shows no distinct structure"}};
}

/// The GPT-2 replication's four classes (its §6.1.1: D, B, O, M1), in the order it lists them
/// (indices = ReplicationPattern values). Read on causal maps of `<|endoftext|> a.. <|endoftext|> b..`:
/// @code
/// diagonal                 D   most attention on the previous or own token (a line along the diagonal)
/// block                    B   on a pair, the second sentence's tokens attend within their own sentence,
///                              spread over it: beside the first sentence's triangle, a second block on the
///                              diagonal ("heavy blocks of attention in both sentences")
/// overall                  O   attention spread over the map, whatever its darkness: no diagonal, block or
///                              first-sentence majority. Heads parked on the first token or on the first
///                              sentence's last token belong here, as the replication put them
/// majority_first_sentence  M1  on a pair, the second sentence's tokens put most of their attention on the
///                              first sentence's tokens (a dark band over the first sentence's columns)
/// @endcode
/// Block and M1 exist only on two-segment inputs. The replication has no vertical class: a GPT-2 head on the
/// first token alone is "overall" here.
inline PatternScheme replication_pattern_scheme() {
  return {"gpt2_replication",
          {"diagonal", "block", "overall", "majority_first_sentence"},
          {"diagonal (D)", "block (B)", "overall (O)", "majority in sentence 1 (M1)"},
          {false, true, false, true},
          {"most attention goes to the previous or own token: a line along the diagonal",
           "on a pair of sentences, the second sentence's tokens attend within their own sentence, spread over "
           "it: beside the first sentence's triangle, a second block on the diagonal",
           "attention spread over the map, whatever its darkness, with no diagonal, block or first-sentence "
           "majority (heads parked on the first token or on the first sentence's last token included)",
           "on a pair of sentences, the second sentence's tokens put most of their attention on the first "
           "sentence's tokens: a dark band over the first sentence's columns"}};
}

/// Which list of classes a classifier, a prototype set or a section run uses.
enum class PatternClasses { paper, replication };

/// The scheme of a class list.
inline PatternScheme pattern_scheme(PatternClasses classes) {
  return classes == PatternClasses::paper ? paper_pattern_scheme() : replication_pattern_scheme();
}

/// "paper" or "replication" (as a command line spells it); throws naming both.
inline PatternClasses parse_pattern_classes(std::string_view text) {
  if (text == "paper") return PatternClasses::paper;
  if (text == "replication") return PatternClasses::replication;
  fail("pattern classes '", text, "': expected 'paper' (the paper's five) or 'replication' (the GPT-2 "
       "replication's four)");
}

/// The GPT-2 replication's classes (indices into replication_pattern_scheme()).
enum class ReplicationPattern : int { diagonal = 0, block = 1, overall = 2, majority_first_sentence = 3 };

/// A share of one map's attention and the same share on the uniform map of the same shape.
struct PatternShare {
  double value = 0;    ///< on the head's map
  double uniform = 0;  ///< on the uniform map (every query attends equally to its allowed keys)

  /// (value - uniform) / (1 - uniform): 0 for the uniform map, 1 for all of the mass; 0 when the uniform
  /// map already has all of it (nothing to tell apart).
  double excess() const { return 1 - uniform > 1e-9 ? (value - uniform) / (1 - uniform) : 0.0; }
};

/// The summaries of one head's map on one example (see the file comment for each definition).
struct PatternSummary {
  Index length = 0;            ///< n, valid tokens
  bool causal = false;         ///< keys after the query are masked
  bool two_segments = false;   ///< at least two ordinary tokens in each of two segments
  Index anchors = 0;           ///< special tokens (plus the first token when causal)
  Index columns = 0;           ///< k of the vertical measure: anchors + 1, at most n
  PatternShare vertical;       ///< mass on the k most-attended columns
  PatternShare anchor;         ///< mass on the anchors
  PatternShare diagonal;       ///< mass on |i - j| <= 1, anchors excluded
  PatternShare block;          ///< own-segment share of ordinary-to-ordinary mass (0/0 without two segments)
  PatternShare first_segment;  ///< mass on segment-0 keys
  PatternShare second_on_first;  ///< second sentence's queries: mass on first-sentence ordinary keys (0/0 on one)
  double spread = 0;           ///< mean |i - j| of own-segment mass over the uniform map's (1 = as spread)
  double entropy = 0;          ///< mean normalised row entropy (1 = uniform)
};

namespace detail {

/// The raw measures of one map, given its weights through w(i, j) (called for allowed keys only).
struct PatternMeasures {
  double vertical = 0, anchor = 0, diagonal = 0, own = 0, ordinary = 0, own_distance = 0, first = 0, entropy = 0;
  double second_on_first = 0, second_rows = 0;
  double block() const { return ordinary > 0 ? own / ordinary : 0.0; }
  double second_on_first_share() const { return second_rows > 0 ? second_on_first / second_rows : 0.0; }
  double distance() const { return own > 0 ? own_distance / own : 0.0; }
};

/// Per-example facts the measures need: which keys are anchors, segment ids, k.
struct PatternLayout {
  Index n = 0;
  bool causal = false;
  std::vector<char> anchor;  // [n]
  std::vector<int> segment;  // [n]
  Index anchors = 0, columns = 0;
  bool two_segments = false;
  int first_sentence = 0;  // segment of the first ordinary token

  PatternLayout(Index length, bool is_causal, std::span<const TokenAnnotation> tokens)
      : n(length),
        causal(is_causal),
        anchor(static_cast<std::size_t>(length)),
        segment(static_cast<std::size_t>(length)) {
    require(n >= 1, "pattern summary: the map has no tokens");
    require(static_cast<Index>(tokens.size()) >= n, "pattern summary: ", tokens.size(),
            " token annotations for a map of ", n, " tokens");
    int first_segment = 0, other_segment = 0;
    Index in_first = 0, in_other = 0;
    bool seen_first = false, seen_other = false;
    for (Index j = 0; j < n; ++j) {
      const auto& t = tokens[static_cast<std::size_t>(j)];
      anchor[static_cast<std::size_t>(j)] = t.is_special || (causal && j == 0);
      segment[static_cast<std::size_t>(j)] = t.segment;
      anchors += anchor[static_cast<std::size_t>(j)];
      if (anchor[static_cast<std::size_t>(j)]) continue;
      if (!seen_first || t.segment == first_segment) {
        first_segment = t.segment, seen_first = true, ++in_first;
      } else if (!seen_other || t.segment == other_segment) {
        other_segment = t.segment, seen_other = true, ++in_other;
      }
    }
    columns = std::min(n, anchors + 1);
    two_segments = in_first >= 2 && in_other >= 2;
    this->first_sentence = first_segment;
  }
};

/// Measures of the map whose weight at (i, j) is w(i, j).
template <class Weight>
PatternMeasures measure_pattern(const PatternLayout& p, Weight&& w, std::vector<double>& column_sums,
                                std::vector<Index>& order) {
  const Index n = p.n;
  PatternMeasures m;
  column_sums.assign(static_cast<std::size_t>(n), 0.0);
  for (Index i = 0; i < n; ++i) {
    const Index keys = p.causal ? i + 1 : n;
    const bool ordinary_query = !p.anchor[static_cast<std::size_t>(i)];
    const bool second_query = ordinary_query && p.segment[static_cast<std::size_t>(i)] != p.first_sentence;
    m.second_rows += second_query;
    double h = 0;
    for (Index j = 0; j < keys; ++j) {
      const double a = static_cast<double>(w(i, j));
      column_sums[static_cast<std::size_t>(j)] += a;
      const bool anchor_key = p.anchor[static_cast<std::size_t>(j)];
      if (anchor_key) m.anchor += a;
      if (!anchor_key && std::abs(i - j) <= 1) m.diagonal += a;
      if (p.segment[static_cast<std::size_t>(j)] == 0) m.first += a;
      if (second_query && !anchor_key && p.segment[static_cast<std::size_t>(j)] == p.first_sentence)
        m.second_on_first += a;
      if (ordinary_query && !anchor_key) {
        m.ordinary += a;
        if (p.segment[static_cast<std::size_t>(j)] == p.segment[static_cast<std::size_t>(i)]) {
          m.own += a;
          m.own_distance += a * static_cast<double>(std::abs(i - j));
        }
      }
      if (a > 0) h -= a * std::log(a);
    }
    if (keys >= 2) m.entropy += h / std::log(static_cast<double>(keys));
  }
  // The k most-attended columns (ties: the earlier column), so equal sums give the same choice every time.
  order.resize(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index(0));
  std::partial_sort(order.begin(), order.begin() + p.columns, order.end(), [&](Index a, Index b) {
    const double sa = column_sums[static_cast<std::size_t>(a)], sb = column_sums[static_cast<std::size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  });
  for (Index k = 0; k < p.columns; ++k)
    m.vertical += column_sums[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])];
  const double rows = static_cast<double>(n);
  m.vertical /= rows, m.anchor /= rows, m.diagonal /= rows, m.first /= rows;
  const Index entropy_rows = p.causal ? n - 1 : (n >= 2 ? n : 0);
  m.entropy = entropy_rows > 0 ? m.entropy / static_cast<double>(entropy_rows) : 0.0;
  return m;
}

}  // namespace detail

/// The uniform map's measures of one example, shared by every head (they depend only on the tokens).
/// @code
/// darkbert::study::PatternBaseline base(n, causal, tokens);   // once per example
/// auto s = darkbert::study::summarize_pattern(map, L, base);   // per head
/// @endcode
class PatternBaseline {
 public:
  /// The layout of an example of `length` tokens annotated by `tokens` (at least `length` of them).
  PatternBaseline(Index length, bool causal, std::span<const TokenAnnotation> tokens)
      : layout_(length, causal, tokens) {
    uniform_ = detail::measure_pattern(
        layout_, [&](Index i, Index) { return 1.0 / static_cast<double>(causal ? i + 1 : length); }, sums_, order_);
  }
  /// Valid tokens.
  Index length() const { return layout_.n; }
  /// Whether the model is causal.
  bool causal() const { return layout_.causal; }
  /// Whether the example has two segments of at least two ordinary tokens each (block can be told).
  bool two_segments() const { return layout_.two_segments; }

  /// The summary of a map of this example: `map` is [n, n] with rows `stride` elements apart.
  template <class T>
  PatternSummary summarize(const T* map, Index stride) const {
    require(map != nullptr && stride >= layout_.n, "pattern summary: no map, or row stride ", stride,
            " < n = ", layout_.n);
    const auto m = detail::measure_pattern(
        layout_, [&](Index i, Index j) { return map[i * stride + j]; }, sums_, order_);
    PatternSummary s;
    s.length = layout_.n;
    s.causal = layout_.causal;
    s.two_segments = layout_.two_segments;
    s.anchors = layout_.anchors;
    s.columns = layout_.columns;
    s.vertical = {m.vertical, uniform_.vertical};
    s.anchor = {m.anchor, uniform_.anchor};
    s.diagonal = {m.diagonal, uniform_.diagonal};
    s.block = layout_.two_segments ? PatternShare{m.block(), uniform_.block()} : PatternShare{};
    s.first_segment = {m.first, uniform_.first};
    s.second_on_first = layout_.two_segments
                            ? PatternShare{m.second_on_first_share(), uniform_.second_on_first_share()}
                            : PatternShare{};
    s.spread = layout_.two_segments && uniform_.distance() > 0 ? m.distance() / uniform_.distance() : 0.0;
    s.entropy = m.entropy;
    return s;
  }

 private:
  detail::PatternLayout layout_;
  detail::PatternMeasures uniform_;
  mutable std::vector<double> sums_;  // scratch
  mutable std::vector<Index> order_;  // scratch
};

/// The summary of head (layer, head) of one example; `tokens` annotates its n valid tokens.
template <class T>
PatternSummary summarize_pattern(const AttentionView<T>& view, Index layer, Index head,
                                 std::span<const TokenAnnotation> tokens) {
  darkbert::detail::require_annotations(view, tokens, "pattern summary");
  const PatternBaseline base(view.length(), view.causal(), tokens);
  return base.summarize(view.map(layer, head), view.padded_length());
}

/// A rule classifier: a map's summary to a class index of its PatternScheme.
using PatternRule = std::function<int(const PatternSummary&)>;

/// The thresholds of the paper's rules, each with the reason for its value. All are on the excess scale
/// (0 = as the uniform map, 1 = all of the mass), except min_length.
struct PatternThresholds {
  /// Vertical and diagonal structure (v + d) "is" the map when it holds at least half of the mass a perfect
  /// instance would add over the uniform map: then it is the largest single thing in the map, and in a
  /// heatmap scaled to its maximum it is what one sees first. (Uniform maps score 0; the pretrained heads
  /// the paper calls vertical put 0.6-0.9 of every row on [CLS]/[SEP].)
  double pattern = 0.5;
  /// Each half of vertical + diagonal must hold at least a quarter of the map's excess: a band of three
  /// cells holding a quarter of a row, beside columns holding three quarters, is drawn at one third of the
  /// columns' colour or more — plainly visible, as in the paper's Figure 1 example.
  double mix = 0.25;
  /// Block: the head sends at most half of the cross-segment attention the uniform map sends (excess of
  /// the own-segment share >= 0.5). For two equal segments that is <= 25% of ordinary-token mass across
  /// against >= 75% inside: a contrast of 3 to 1 between the blocks and the rest.
  double block = 0.5;
  /// Block: the own-segment mass must spread at least half as far (mean |i - j|) as a uniform map's does
  /// inside the segment. A window of +-3 tokens in a 20-token sentence reaches about 0.3: local, not a block.
  double block_spread = 0.5;
  /// Maps of fewer tokens are heterogeneous: with five or fewer keys per row the uniform map already puts a
  /// third or more of its mass on any structure, and a pattern cannot be told from chance.
  Index min_length = 6;
};

/// The paper's rule classifier (thresholds in PatternThresholds):
/// @code
/// n < min_length                                            -> heterogeneous
/// v + d >= pattern, v >= mix and d >= mix                   -> vertical + diagonal
/// v + d >= pattern, otherwise                               -> vertical if v >= d, else diagonal
/// two segments, block >= block and spread >= block_spread   -> block
/// otherwise                                                 -> heterogeneous
/// @endcode
/// v, d: the vertical and diagonal excesses of PatternSummary, negative values taken as 0 (a map can hold
/// less than the uniform map's share); block: the block excess. A mixture's excess is the weighted sum of
/// its parts' excesses, and a part holding none of a structure has a negative excess on it (it displaces
/// the uniform share), so v + d, not v or d alone, says how structured a map is.
struct PatternRules {
  PatternThresholds thresholds;  ///< the cut-offs

  /// The classes it returns indices into.
  static PatternScheme scheme() { return paper_pattern_scheme(); }

  /// The class of a map.
  AttentionPattern pattern(const PatternSummary& s) const {
    const auto& t = thresholds;
    if (s.length < t.min_length) return AttentionPattern::heterogeneous;
    const double v = std::max(0.0, s.vertical.excess()), d = std::max(0.0, s.diagonal.excess());
    if (v + d >= t.pattern) {
      if (v >= t.mix && d >= t.mix) return AttentionPattern::vertical_diagonal;
      return v >= d ? AttentionPattern::vertical : AttentionPattern::diagonal;
    }
    if (s.two_segments && s.block.excess() >= t.block && s.spread >= t.block_spread) return AttentionPattern::block;
    return AttentionPattern::heterogeneous;
  }
  /// The class index (into scheme()).
  int classify(const PatternSummary& s) const { return static_cast<int>(pattern(s)); }
  /// The rule as a PatternRule.
  PatternRule rule() const {
    return [rules = *this](const PatternSummary& s) { return rules.classify(s); };
  }

  /// One line saying which rule decided and on which numbers, e.g.
  /// "vertical: vertical excess 0.82 >= 0.5 (k = 4 columns, 0.79 on special tokens); diagonal excess 0.03".
  std::string explain(const PatternSummary& s) const {
    const auto& t = thresholds;
    auto f = [](double x) {
      char b[32];
      std::snprintf(b, sizeof b, "%.2f", x);
      return std::string(b);
    };
    const double v = s.vertical.excess(), d = s.diagonal.excess();
    const std::string numbers =
        "vertical excess " + f(v) + " (k = " + std::to_string(s.columns) + " columns, " + f(s.anchor.value) +
        " on anchors), diagonal excess " + f(d) +
        (s.two_segments ? ", block excess " + f(s.block.excess()) + ", spread " + f(s.spread) : ", one segment");
    switch (pattern(s)) {
      case AttentionPattern::vertical_diagonal:
        return "vertical + diagonal: both >= " + f(t.mix) + " and their sum >= " + f(t.pattern) + "; " + numbers;
      case AttentionPattern::vertical:
        return "vertical: vertical + diagonal excess >= " + f(t.pattern) + ", diagonal < " + f(t.mix) +
               " or below vertical; " + numbers;
      case AttentionPattern::diagonal:
        return "diagonal: vertical + diagonal excess >= " + f(t.pattern) + ", vertical < " + f(t.mix) +
               " or below diagonal; " + numbers;
      case AttentionPattern::block:
        return "block: block excess >= " + f(t.block) + " and spread >= " + f(t.block_spread) + "; " + numbers;
      case AttentionPattern::heterogeneous:
        if (s.length < t.min_length)
          return "heterogeneous: " + std::to_string(s.length) + " tokens < " + std::to_string(t.min_length);
        return "heterogeneous: no rule fired; " + numbers;
    }
    return "";
  }
};

/// The thresholds of the replication's rules (ReplicationPatternRules), on the excess scale like the paper's,
/// each with the reason for its value.
struct ReplicationThresholds {
  /// Diagonal: the band |i - j| <= 1 (anchors left out) holds at least half of the mass a perfect diagonal
  /// adds over the uniform map — the paper's `pattern` cut-off, for the one structure the replication keeps
  /// of the paper's three: then the line is the largest thing in the map.
  double diagonal = 0.5;
  /// M1: the second sentence's tokens put at least half of the room above the uniform map on the first
  /// sentence. The uniform map of a causal pair already gives the first sentence its length's share of each
  /// later row (often most of it), so a plain "> 50% of the mass" would call a uniform head M1; the excess
  /// asks for a majority the head adds, the same contrast as the block cut-off below.
  double first_sentence = 0.5;
  /// Block and its spread: the paper's cut-offs (PatternThresholds::block, block_spread), as the replication's
  /// block is the paper's on causal maps.
  double block = 0.5;
  double block_spread = 0.5;  ///< see block
  /// Shorter maps are overall: the paper's min_length, for the same reason (no pattern can be told from chance).
  Index min_length = 6;
};

/// The replication's rule classifier (thresholds in ReplicationThresholds; classes in
/// replication_pattern_scheme):
/// @code
/// n < min_length                                            -> overall
/// d >= diagonal                                             -> diagonal
/// two segments, m1 >= first_sentence                        -> majority in sentence 1 (M1)
/// two segments, block >= block and spread >= block_spread   -> block
/// otherwise                                                 -> overall
/// @endcode
/// d: PatternSummary's diagonal excess; m1: its second_on_first excess; block, spread: as the paper's rules.
/// M1 and block ask opposite things of the second sentence's tokens (look back at the first sentence, or
/// stay in their own), so at most one of them holds; the order only matters for diagonal maps, whose band
/// keeps the second sentence in its own sentence too.
/// @code
/// darkbert::study::ReplicationPatternRules rules;
/// int c = rules.classify(summary);   // index into darkbert::study::replication_pattern_scheme().names
/// @endcode
struct ReplicationPatternRules {
  ReplicationThresholds thresholds;  ///< the cut-offs

  /// The classes it returns indices into.
  static PatternScheme scheme() { return replication_pattern_scheme(); }

  /// The class of a map.
  ReplicationPattern pattern(const PatternSummary& s) const {
    const auto& t = thresholds;
    if (s.length < t.min_length) return ReplicationPattern::overall;
    if (s.diagonal.excess() >= t.diagonal) return ReplicationPattern::diagonal;
    if (s.two_segments && s.second_on_first.excess() >= t.first_sentence)
      return ReplicationPattern::majority_first_sentence;
    if (s.two_segments && s.block.excess() >= t.block && s.spread >= t.block_spread) return ReplicationPattern::block;
    return ReplicationPattern::overall;
  }
  /// The class index (into scheme()).
  int classify(const PatternSummary& s) const { return static_cast<int>(pattern(s)); }
  /// The rule as a PatternRule.
  PatternRule rule() const {
    return [rules = *this](const PatternSummary& s) { return rules.classify(s); };
  }

  /// One line saying which rule decided and on which numbers.
  std::string explain(const PatternSummary& s) const {
    const auto& t = thresholds;
    auto f = [](double x) {
      char b[32];
      std::snprintf(b, sizeof b, "%.2f", x);
      return std::string(b);
    };
    const std::string numbers =
        "diagonal excess " + f(s.diagonal.excess()) +
        (s.two_segments ? ", sentence-1 excess " + f(s.second_on_first.excess()) + ", block excess " +
                              f(s.block.excess()) + ", spread " + f(s.spread)
                        : ", one segment");
    switch (pattern(s)) {
      case ReplicationPattern::diagonal:
        return "diagonal: diagonal excess >= " + f(t.diagonal) + "; " + numbers;
      case ReplicationPattern::majority_first_sentence:
        return "majority in sentence 1: sentence-1 excess >= " + f(t.first_sentence) + "; " + numbers;
      case ReplicationPattern::block:
        return "block: block excess >= " + f(t.block) + " and spread >= " + f(t.block_spread) + "; " + numbers;
      case ReplicationPattern::overall:
        if (s.length < t.min_length)
          return "overall: " + std::to_string(s.length) + " tokens < " + std::to_string(t.min_length);
        return "overall: no rule fired; " + numbers;
    }
    return "";
  }
};

}  // namespace darkbert::study
