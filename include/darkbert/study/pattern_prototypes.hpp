#pragma once
/// @file
/// Seeded synthetic attention maps of each of the paper's five classes (§3.1), and of the GPT-2
/// replication's four: the default training and held-out set of the pattern CNN (study/pattern_cnn.hpp),
/// in place of the paper's ~400 hand-labelled maps.
///
/// The generator, per map:
/// @code
/// length     n uniform in [min_length, max_length]
/// tokens     bidirectional: [CLS] a.. [SEP] (b.. [SEP]);  causal (GPT-2 style): <|endoftext|> a.. (<|endoftext|> b..)
///            two segments with probability two_segment_share (block: always), each sentence >= 3 tokens
/// background every row a softmax of N(0, s^2) logits over its allowed keys, s ~ U[0.5, 2] per map
/// row       (1 - w) * background + w * pattern row, w ~ the class's strength range per map, jittered per row
///           by N(0, 0.05^2) and clipped to [0, 1]
/// vertical      pattern: stripes on the special tokens (each kept with p = 0.6, at least one; causal: the first
///               token always) and with p = 0.3 one ordinary column (a full stop); stripe weights ~ U[0.2, 1];
///               w ~ U[0.65, 0.95]
/// diagonal      pattern: previous / next / both / own token (causal: previous / own / both), the split of
///               two offsets ~ U[0.3, 0.7]; a row without the target (the first or last row) uses its own
///               token; w ~ U[0.65, 0.95]
/// vertical_diagonal  both patterns, w_v and w_d ~ U[0.4, 0.6] each (scaled to a sum <= 0.97)
/// block         pattern: a softmax of N(0, s_b^2) logits, s_b ~ U[0, 1], over the keys of the query's
///               own segment (its special tokens included); half of the maps textured inside the blocks, as
///               trained models' are: logits + U[0.5, 1.5] on keys 1-3 tokens away and + U[0.5, 1.5] on up to
///               three ordinary columns; w ~ U[0.75, 0.97]
/// heterogeneous one of: dense random logits with s ~ U[1, 3] (30%); 1-3 random keys per row with
///               w ~ U[0.5, 0.9] (30%); near-uniform, s ~ U[0.05, 0.5] (15%); smooth (25%): logits
///               c_j + b [same segment] + N(0, 0.3^2) with a column bias c_j ~ N(0, s_c^2) shared by all
///               rows, s_c ~ U[0.2, 1.2], and b ~ U[-0.6, 0.6] on two sentences — the faint stripes and
///               sentence halves of untrained and lightly trained heads, too weak to be a pattern
/// causal        every pattern and background row is restricted to keys j <= i and renormalised
/// @endcode
///
/// The GPT-2 replication's four classes (replication_pattern_prototype; meant for causal maps, where they were
/// defined, and drawn the same way on bidirectional ones):
/// @code
/// diagonal      the paper's diagonal; on half of the maps a first-token column of U[0.05, 0.2] beside it
///               (GPT-2 heads rarely leave the first token at zero)
/// block         always two sentences: a softmax of N(0, s_b^2) logits, s_b ~ U[0, 1], over the query's own
///               segment, half of the maps textured (+ U[0.5, 1.5] on up to three ordinary columns);
///               w ~ U[0.75, 0.97]; on half of the maps a first-token column of U[0.05, 0.2]
/// majority_first_sentence  always two sentences: every row that sees a first-sentence token spreads
///               w ~ U[0.7, 0.95] as a softmax of N(0, s_b^2) logits over the first sentence's ordinary
///               tokens it sees (half of the maps textured the same way, on first-sentence columns); no
///               first-token column, which would be overall's
/// overall       one of: dense random logits, s ~ U[1, 3] (25%); 1-3 random keys per row, w ~ U[0.5, 0.9]
///               (20%); near-uniform (15%); smooth column and sentence biases as the paper's heterogeneous
///               (20%); a first-token column, and each later special token (the first sentence's end) with
///               p = 0.5, w ~ U[0.3, 0.9] in all over the background (20%) — the replication's "weights on
///               the first token and last token of the first sentence, in addition to weights in other
///               regions", which it put in overall
/// @endcode
/// Limits of these: the replication's classes were defined by eye on its Figure 1a, which shows one map per
/// class; the generator draws what its one-sentence definitions say, not the variety of its 1294 labelled
/// maps (54% overall, 20% M1, 15% diagonal, 9% block there; balanced here). A first-token column over M1
/// or block maps of more than ~0.2, and M1 maps whose second sentence also keeps a diagonal, are not drawn.
///
/// Limits (what a CNN trained on the paper's prototypes has never seen): real heads mix three or more structures, put
/// stripes on several punctuation tokens, attend to the same word in the other sentence, give [SEP] rows a
/// pattern of their own, and have strengths anywhere between the ranges above; the strength ranges leave a
/// gap between a pattern and heterogeneous that real maps fill, so the CNN learns where the generator draws
/// the boundary, not where a human would. Lengths stop at max_length (real inputs reach 128). The classes
/// are balanced; the paper's hand-labelled set had 30% vertical.
///
/// Randomness: std::mt19937_64 with the draws spelled out (no implementation-defined std distributions),
/// so one seed gives the same maps with every standard library.
///
/// @code
/// auto maps = darkbert::study::pattern_prototypes(/*per_class=*/200, /*seed=*/1, {.causal = false});
/// // maps[k].weights: [n, n] row-major; maps[k].label: AttentionPattern index; maps[k].tokens: [n]
/// @endcode

#include <algorithm>  // std::clamp, std::min, std::max, std::find
#include <cmath>      // std::exp, std::log, std::sqrt, std::cos
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <cstdlib>    // std::abs (integers)
#include <numbers>    // std::numbers::pi
#include <random>     // std::mt19937_64
#include <string>     // std::string
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation
#include "darkbert/core/error.hpp"                 // darkbert::require
#include "darkbert/core/matrix.hpp"                // darkbert::Index
#include "darkbert/data/seeded_shuffle.hpp"        // darkbert::uniform_below
#include "darkbert/study/pattern_rules.hpp"        // AttentionPattern

namespace darkbert::study {

/// One attention map with its class and tokens: a prototype, or a map a user labelled.
struct LabelledPatternMap {
  int label = -1;                       ///< class index (AttentionPattern for the paper's scheme)
  Index length = 0;                     ///< n
  bool causal = false;                  ///< lower-triangular map
  std::vector<float> weights;           ///< [n, n] row-major, rows = queries, each row sums to 1
  std::vector<TokenAnnotation> tokens;  ///< [n]: is_special and segment filled
};

/// Sizes of the generated maps.
struct PrototypeOptions {
  Index min_length = 12;           ///< shortest map (>= 9: two sentences of >= 3 tokens and the specials)
  Index max_length = 96;           ///< longest map
  bool causal = false;             ///< GPT-2 style: lower-triangular, first token as BOS
  double two_segment_share = 0.5;  ///< share of non-block maps built on two sentences
};

namespace detail {

inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
inline double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }
/// Box-Muller: a standard normal from two uniforms.
inline double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}
/// Integer in [lo, hi].
inline Index uniform_index(std::mt19937_64& rng, Index lo, Index hi) {
  return lo + static_cast<Index>(uniform_below(rng, static_cast<std::uint64_t>(hi - lo + 1)));
}

/// [CLS] a.. [SEP] (b.. [SEP]) or, causal, <|endoftext|> a.. (<|endoftext|> b..).
inline std::vector<TokenAnnotation> prototype_tokens(Index n, bool causal, bool two, std::mt19937_64& rng) {
  const std::string open = causal ? "<|endoftext|>" : "[CLS]", sep = causal ? "<|endoftext|>" : "[SEP]";
  const Index specials = (causal ? 1 : 2) + (two ? 1 : 0);
  const Index content = n - specials;
  const Index first = two ? uniform_index(rng, 3, content - 3) : content;
  std::vector<TokenAnnotation> t;
  auto push = [&](const std::string& s, bool special, int segment) {
    TokenAnnotation a;
    a.token = s;
    a.is_special = special;
    a.segment = segment;
    t.push_back(a);
  };
  push(open, true, 0);
  for (Index k = 0; k < first; ++k) push("a", false, 0);
  if (two) {
    push(sep, true, 0);
    for (Index k = 0; k < content - first; ++k) push("b", false, 1);
  }
  if (!causal) push(sep, true, two ? 1 : 0);
  return t;
}

/// Adds w * p (a distribution over keys [0, keys)) to row.
inline void add_scaled(std::vector<double>& row, const std::vector<double>& p, double w, Index keys) {
  for (Index j = 0; j < keys; ++j) row[static_cast<std::size_t>(j)] += w * p[static_cast<std::size_t>(j)];
}

/// p := softmax(sigma * z) over keys [0, keys) where mask(j), 0 elsewhere (uniform if no key is in the mask).
template <class Mask>
void random_softmax(std::vector<double>& p, Index keys, double sigma, std::mt19937_64& rng, Mask&& mask) {
  std::fill(p.begin(), p.end(), 0.0);
  double total = 0;
  for (Index j = 0; j < keys; ++j) {
    if (!mask(j)) continue;
    const double w = std::exp(sigma * standard_normal(rng));
    p[static_cast<std::size_t>(j)] = w;
    total += w;
  }
  if (total <= 0) {
    for (Index j = 0; j < keys; ++j) p[static_cast<std::size_t>(j)] = 1.0 / static_cast<double>(keys);
    return;
  }
  for (Index j = 0; j < keys; ++j) p[static_cast<std::size_t>(j)] /= total;
}

/// p := the given (key, weight) targets among keys [0, keys), renormalised; own token when none is visible.
inline void point_mass(std::vector<double>& p, Index i, Index keys,
                       const std::vector<std::pair<Index, double>>& targets) {
  std::fill(p.begin(), p.end(), 0.0);
  double total = 0;
  for (const auto& [j, w] : targets)
    if (j >= 0 && j < keys) p[static_cast<std::size_t>(j)] += w, total += w;
  if (total <= 0) {
    p[static_cast<std::size_t>(std::min(i, keys - 1))] = 1.0;
    return;
  }
  for (Index j = 0; j < keys; ++j) p[static_cast<std::size_t>(j)] /= total;
}

/// The offsets (key = query + offset, weight) of a diagonal: previous / next / both / own token (causal:
/// previous / own / both), the split of two offsets ~ U[0.3, 0.7].
inline std::vector<std::pair<Index, double>> diagonal_offsets(std::mt19937_64& rng, bool causal) {
  const double r = uniform01(rng), split = uniform(rng, 0.3, 0.7);
  if (causal) {
    if (r < 0.6) return {{-1, 1.0}};
    if (r < 0.8) return {{0, 1.0}};
    return {{-1, split}, {0, 1 - split}};
  }
  if (r < 0.3) return {{-1, 1.0}};
  if (r < 0.6) return {{1, 1.0}};
  if (r < 0.85) return {{-1, split}, {1, 1 - split}};
  return {{0, 1.0}};
}

inline void check_prototype_options(const PrototypeOptions& o) {
  require(o.min_length >= 9 && o.max_length >= o.min_length, "pattern prototypes: lengths [", o.min_length, ", ",
          o.max_length, "] must satisfy 9 <= min_length <= max_length");
  require(o.two_segment_share >= 0 && o.two_segment_share <= 1, "pattern prototypes: two_segment_share ",
          o.two_segment_share, " is not in [0, 1]");
}

}  // namespace detail

/// One seeded prototype of class `cls` (see the file comment for the generator).
inline LabelledPatternMap pattern_prototype(AttentionPattern cls, std::mt19937_64& rng,
                                            const PrototypeOptions& o = {}) {
  detail::check_prototype_options(o);
  using detail::uniform;
  const Index n = detail::uniform_index(rng, o.min_length, o.max_length);
  const bool two = cls == AttentionPattern::block || detail::uniform01(rng) < o.two_segment_share;
  LabelledPatternMap out;
  out.label = static_cast<int>(cls);
  out.length = n;
  out.causal = o.causal;
  out.tokens = detail::prototype_tokens(n, o.causal, two, rng);
  const auto& tokens = out.tokens;
  auto keys_of = [&](Index i) { return o.causal ? i + 1 : n; };

  // Per-map choices.
  double sigma_background = uniform(rng, 0.5, 2.0);
  double strength = 0, strength_v = 0, strength_d = 0, sigma_block = 0, band_bias = 0, stripe_bias = 0;
  std::vector<Index> block_stripes;               // textured blocks: ordinary columns with extra weight
  std::vector<std::pair<Index, double>> stripes;  // (column, weight)
  std::vector<std::pair<Index, double>> offsets;  // (i - j offset as key = i + offset, weight)
  int heterogeneous_kind = 0;
  std::vector<double> column_bias;  // smooth heterogeneous maps: [n]
  double segment_bias = 0;
  auto choose_stripes = [&] {
    for (Index j = 0; j < n; ++j)
      if (tokens[static_cast<std::size_t>(j)].is_special && ((o.causal && j == 0) || detail::uniform01(rng) < 0.6))
        stripes.push_back({j, uniform(rng, 0.2, 1.0)});
    if (detail::uniform01(rng) < 0.3) {
      Index j = detail::uniform_index(rng, 0, n - 1);
      while (tokens[static_cast<std::size_t>(j)].is_special) j = detail::uniform_index(rng, 0, n - 1);
      stripes.push_back({j, uniform(rng, 0.2, 1.0)});
    }
    if (stripes.empty()) stripes.push_back({n - 1, 1.0});  // the final [SEP]
  };
  auto choose_offsets = [&] { offsets = detail::diagonal_offsets(rng, o.causal); };
  switch (cls) {
    case AttentionPattern::vertical:
      strength = uniform(rng, 0.65, 0.95);
      choose_stripes();
      break;
    case AttentionPattern::diagonal:
      strength = uniform(rng, 0.65, 0.95);
      choose_offsets();
      break;
    case AttentionPattern::vertical_diagonal: {
      strength_v = uniform(rng, 0.4, 0.6), strength_d = uniform(rng, 0.4, 0.6);
      const double sum = strength_v + strength_d;
      if (sum > 0.97) strength_v *= 0.97 / sum, strength_d *= 0.97 / sum;
      choose_stripes();
      choose_offsets();
      break;
    }
    case AttentionPattern::block:
      strength = uniform(rng, 0.75, 0.97);
      sigma_block = uniform(rng, 0.0, 1.0);
      if (detail::uniform01(rng) < 0.5) {  // texture inside the blocks: a local band and a few stripes
        band_bias = uniform(rng, 0.5, 1.5);
        stripe_bias = uniform(rng, 0.5, 1.5);
        for (int k = 0; k < 3; ++k) {
          const Index j = detail::uniform_index(rng, 0, n - 1);
          if (!tokens[static_cast<std::size_t>(j)].is_special) block_stripes.push_back(j);
        }
      }
      break;
    case AttentionPattern::heterogeneous: {
      const double r = detail::uniform01(rng);
      heterogeneous_kind = r < 0.3 ? 0 : r < 0.6 ? 1 : r < 0.75 ? 2 : 3;
      if (heterogeneous_kind == 0) sigma_background = uniform(rng, 1.0, 3.0), strength = 0;
      if (heterogeneous_kind == 1) strength = uniform(rng, 0.5, 0.9);
      if (heterogeneous_kind == 2) sigma_background = uniform(rng, 0.05, 0.5), strength = 0;
      if (heterogeneous_kind == 3) {
        const double sigma_columns = uniform(rng, 0.2, 1.2);
        column_bias.resize(static_cast<std::size_t>(n));
        for (double& c : column_bias) c = sigma_columns * detail::standard_normal(rng);
        segment_bias = two ? uniform(rng, -0.6, 0.6) : 0.0;
        sigma_background = 0.3, strength = 0;
      }
      break;
    }
  }

  std::vector<double> row(static_cast<std::size_t>(n)), background(row.size()), p(row.size());
  std::vector<std::pair<Index, double>> targets;
  out.weights.assign(static_cast<std::size_t>(n * n), 0.0f);
  for (Index i = 0; i < n; ++i) {
    const Index keys = keys_of(i);
    const auto jitter = [&](double w) {
      return w > 0 ? std::clamp(w + 0.05 * detail::standard_normal(rng), 0.0, 1.0) : 0.0;
    };
    std::fill(row.begin(), row.end(), 0.0);
    detail::random_softmax(background, keys, sigma_background, rng, [](Index) { return true; });
    if (!column_bias.empty()) {  // smooth heterogeneous: shared column and sentence biases on the noise
      double total = 0;
      for (Index j = 0; j < keys; ++j) {
        const bool same = tokens[static_cast<std::size_t>(j)].segment == tokens[static_cast<std::size_t>(i)].segment;
        background[static_cast<std::size_t>(j)] *=
            std::exp(column_bias[static_cast<std::size_t>(j)] + (same ? segment_bias : 0.0));
        total += background[static_cast<std::size_t>(j)];
      }
      for (Index j = 0; j < keys; ++j) background[static_cast<std::size_t>(j)] /= total;
    }
    double used = 0;  // pattern mass of this row
    auto add_pattern = [&](double w) {
      detail::add_scaled(row, p, w, keys);
      used += w;
    };
    auto stripe_row = [&] { detail::point_mass(p, i, keys, stripes); };
    auto offset_row = [&] {
      targets.clear();
      for (const auto& [offset, w] : offsets) targets.push_back({i + offset, w});
      detail::point_mass(p, i, keys, targets);
    };
    switch (cls) {
      case AttentionPattern::vertical:
        stripe_row();
        add_pattern(jitter(strength));
        break;
      case AttentionPattern::diagonal:
        offset_row();
        add_pattern(jitter(strength));
        break;
      case AttentionPattern::vertical_diagonal: {
        const double wv = jitter(strength_v), wd = jitter(strength_d), scale = wv + wd > 1 ? 1 / (wv + wd) : 1.0;
        stripe_row();
        add_pattern(wv * scale);
        offset_row();
        add_pattern(wd * scale);
        break;
      }
      case AttentionPattern::block: {
        const int segment = tokens[static_cast<std::size_t>(i)].segment;
        detail::random_softmax(p, keys, sigma_block, rng,
                               [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment == segment; });
        if (band_bias > 0 || stripe_bias > 0) {
          double total = 0;
          for (Index j = 0; j < keys; ++j) {
            const Index d = std::abs(i - j);
            const bool stripe = std::find(block_stripes.begin(), block_stripes.end(), j) != block_stripes.end();
            p[static_cast<std::size_t>(j)] *=
                std::exp((d >= 1 && d <= 3 ? band_bias : 0.0) + (stripe ? stripe_bias : 0.0));
            total += p[static_cast<std::size_t>(j)];
          }
          for (Index j = 0; j < keys; ++j) p[static_cast<std::size_t>(j)] /= total;
        }
        add_pattern(jitter(strength));
        break;
      }
      case AttentionPattern::heterogeneous:
        if (heterogeneous_kind == 1) {
          targets.clear();
          const Index picks = detail::uniform_index(rng, 1, 3);
          for (Index k = 0; k < picks; ++k)
            targets.push_back({detail::uniform_index(rng, 0, keys - 1), uniform(rng, 0.2, 1.0)});
          detail::point_mass(p, i, keys, targets);
          add_pattern(jitter(strength));
        }
        break;
    }
    detail::add_scaled(row, background, std::max(0.0, 1.0 - used), keys);  // used may round to 1 + 1e-16
    for (Index j = 0; j < keys; ++j)
      out.weights[static_cast<std::size_t>(i * n + j)] = static_cast<float>(row[static_cast<std::size_t>(j)]);
  }
  return out;
}

/// One seeded prototype of the GPT-2 replication's class `cls` (see the file comment for the generator).
inline LabelledPatternMap replication_pattern_prototype(ReplicationPattern cls, std::mt19937_64& rng,
                                                        const PrototypeOptions& o = {}) {
  detail::check_prototype_options(o);
  using detail::uniform;
  using R = ReplicationPattern;
  const Index n = detail::uniform_index(rng, o.min_length, o.max_length);
  const bool two =
      cls == R::block || cls == R::majority_first_sentence || detail::uniform01(rng) < o.two_segment_share;
  LabelledPatternMap out;
  out.label = static_cast<int>(cls);
  out.length = n;
  out.causal = o.causal;
  out.tokens = detail::prototype_tokens(n, o.causal, two, rng);
  const auto& tokens = out.tokens;
  auto keys_of = [&](Index i) { return o.causal ? i + 1 : n; };
  auto special = [&](Index j) { return tokens[static_cast<std::size_t>(j)].is_special; };
  auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };

  // Per-map choices.
  double sigma_background = uniform(rng, 0.5, 2.0), strength = 0, sink = 0, sigma_pattern = 0;
  std::vector<std::pair<Index, double>> offsets, stripes;
  std::vector<Index> favoured;  // textured blocks and first-sentence bands: columns with extra weight
  double favour = 0;
  int overall_kind = 0;
  std::vector<double> column_bias;
  double segment_bias = 0;
  auto choose_texture = [&](bool first_sentence_only) {
    if (detail::uniform01(rng) >= 0.5) return;
    favour = uniform(rng, 0.5, 1.5);
    for (int k = 0; k < 3; ++k) {
      const Index j = detail::uniform_index(rng, 0, n - 1);
      if (!special(j) && (!first_sentence_only || segment(j) == 0)) favoured.push_back(j);
    }
  };
  switch (cls) {
    case R::diagonal:
      strength = uniform(rng, 0.65, 0.95);
      if (detail::uniform01(rng) < 0.5) sink = uniform(rng, 0.05, 0.2);
      offsets = detail::diagonal_offsets(rng, o.causal);
      break;
    case R::block:
      strength = uniform(rng, 0.75, 0.97);
      if (detail::uniform01(rng) < 0.5) sink = uniform(rng, 0.05, 0.2);
      sigma_pattern = uniform(rng, 0.0, 1.0);
      choose_texture(false);
      break;
    case R::majority_first_sentence:
      strength = uniform(rng, 0.7, 0.95);
      sigma_pattern = uniform(rng, 0.0, 1.0);
      choose_texture(true);
      break;
    case R::overall: {
      const double r = detail::uniform01(rng);
      overall_kind = r < 0.25 ? 0 : r < 0.45 ? 1 : r < 0.6 ? 2 : r < 0.8 ? 3 : 4;
      if (overall_kind == 0) sigma_background = uniform(rng, 1.0, 3.0);
      if (overall_kind == 1) strength = uniform(rng, 0.5, 0.9);
      if (overall_kind == 2) sigma_background = uniform(rng, 0.05, 0.5);
      if (overall_kind == 3) {
        const double sigma_columns = uniform(rng, 0.2, 1.2);
        column_bias.resize(static_cast<std::size_t>(n));
        for (double& c : column_bias) c = sigma_columns * detail::standard_normal(rng);
        segment_bias = two ? uniform(rng, -0.6, 0.6) : 0.0;
        sigma_background = 0.3;
      }
      if (overall_kind == 4) {  // the first token, and on pairs often the first sentence's last token
        strength = uniform(rng, 0.3, 0.9);
        stripes.push_back({0, 1.0});
        for (Index j = 1; j < n; ++j)
          if (special(j) && detail::uniform01(rng) < 0.5) stripes.push_back({j, uniform(rng, 0.2, 1.0)});
      }
      break;
    }
  }

  std::vector<double> row(static_cast<std::size_t>(n)), background(row.size()), p(row.size());
  std::vector<std::pair<Index, double>> targets;
  const std::vector<std::pair<Index, double>> first_token = {{0, 1.0}};
  out.weights.assign(static_cast<std::size_t>(n * n), 0.0f);
  for (Index i = 0; i < n; ++i) {
    const Index keys = keys_of(i);
    const auto jitter = [&](double w) {
      return w > 0 ? std::clamp(w + 0.05 * detail::standard_normal(rng), 0.0, 1.0) : 0.0;
    };
    std::fill(row.begin(), row.end(), 0.0);
    detail::random_softmax(background, keys, sigma_background, rng, [](Index) { return true; });
    if (!column_bias.empty()) {
      double total = 0;
      for (Index j = 0; j < keys; ++j) {
        background[static_cast<std::size_t>(j)] *=
            std::exp(column_bias[static_cast<std::size_t>(j)] + (segment(j) == segment(i) ? segment_bias : 0.0));
        total += background[static_cast<std::size_t>(j)];
      }
      for (Index j = 0; j < keys; ++j) background[static_cast<std::size_t>(j)] /= total;
    }
    double used = 0;
    auto add_pattern = [&](double w) {
      w = std::min(w, 1.0 - used);
      detail::add_scaled(row, p, w, keys);
      used += w;
    };
    // A softmax of N(0, sigma_pattern^2) logits over the keys `allowed` picks, favoured columns raised.
    auto spread_over = [&](auto&& allowed) {
      detail::random_softmax(p, keys, sigma_pattern, rng, allowed);
      if (favoured.empty()) return;
      double total = 0;
      for (Index j = 0; j < keys; ++j) {
        if (std::find(favoured.begin(), favoured.end(), j) != favoured.end())
          p[static_cast<std::size_t>(j)] *= std::exp(favour);
        total += p[static_cast<std::size_t>(j)];
      }
      for (Index j = 0; j < keys; ++j) p[static_cast<std::size_t>(j)] /= total;
    };
    if (sink > 0) {
      detail::point_mass(p, i, keys, first_token);
      add_pattern(sink);
    }
    switch (cls) {
      case R::diagonal:
        targets.clear();
        for (const auto& [offset, w] : offsets) targets.push_back({i + offset, w});
        detail::point_mass(p, i, keys, targets);
        add_pattern(jitter(strength));
        break;
      case R::block:
        spread_over([&](Index j) { return segment(j) == segment(i); });
        add_pattern(jitter(strength));
        break;
      case R::majority_first_sentence: {
        bool any = false;
        for (Index j = 0; j < keys && !any; ++j) any = segment(j) == 0 && !special(j);
        if (!any) break;  // the first token's row: nothing of the first sentence is visible yet
        spread_over([&](Index j) { return segment(j) == 0 && !special(j); });
        add_pattern(jitter(strength));
        break;
      }
      case R::overall:
        if (overall_kind == 1) {
          targets.clear();
          const Index picks = detail::uniform_index(rng, 1, 3);
          for (Index k = 0; k < picks; ++k)
            targets.push_back({detail::uniform_index(rng, 0, keys - 1), uniform(rng, 0.2, 1.0)});
          detail::point_mass(p, i, keys, targets);
          add_pattern(jitter(strength));
        }
        if (overall_kind == 4) {
          detail::point_mass(p, i, keys, stripes);
          add_pattern(jitter(strength));
        }
        break;
    }
    detail::add_scaled(row, background, std::max(0.0, 1.0 - used), keys);
    for (Index j = 0; j < keys; ++j)
      out.weights[static_cast<std::size_t>(i * n + j)] = static_cast<float>(row[static_cast<std::size_t>(j)]);
  }
  return out;
}

/// `per_class` prototypes of each class of `classes` (the paper's five, or the GPT-2 replication's four),
/// interleaved (vertical, diagonal, ..., heterogeneous, vertical, ...), from one seed.
inline std::vector<LabelledPatternMap> pattern_prototypes(std::size_t per_class, std::uint64_t seed,
                                                          const PrototypeOptions& o = {},
                                                          PatternClasses classes = PatternClasses::paper) {
  std::mt19937_64 rng(seed);
  const int K = pattern_scheme(classes).size();
  std::vector<LabelledPatternMap> out;
  out.reserve(per_class * static_cast<std::size_t>(K));
  for (std::size_t k = 0; k < per_class; ++k)
    for (int c = 0; c < K; ++c)
      out.push_back(classes == PatternClasses::paper
                        ? pattern_prototype(static_cast<AttentionPattern>(c), rng, o)
                        : replication_pattern_prototype(static_cast<ReplicationPattern>(c), rng, o));
  return out;
}

}  // namespace darkbert::study
