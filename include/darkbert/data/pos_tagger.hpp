#pragma once
/// @file
/// Universal POS tagger: two greedy left-to-right averaged perceptrons (perceptron.hpp) trained on UD
/// English EWT. The first pass sees the words and the tags it already predicted on the left; the second
/// pass also sees the first pass's tags on the right (i+1, i+2). The second pass is trained on first-pass
/// tags produced by jackknifing (each fold tagged by a first pass trained on the other folds), so it learns
/// how far to trust them.
///
/// Features of word i: the word (as written and lower-cased), prefixes 1-3 and suffixes 1-4, a shape
/// ("Xxxx" -> "Xx", "1,000" -> "d,d"), hyphen/digit/capital flags, the words of i-2..i+2, suffixes and shapes
/// of i-1 and i+1, word bigrams, the ambiguity classes of i-1..i+2 (TagLexicon), and the predicted tags of
/// i-1 and i-2 (plus i+1, i+2 in the second pass).
///
/// @code
/// darkbert::PosTagger tagger = darkbert::PosTagger::train(words, tags);
/// std::vector<std::string> upos = tagger.tag({"The", "dog", "barks", "."});  // DET NOUN VERB PUNCT
/// @endcode

#include <algorithm>    // std::sort, std::find
#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <cstdint>      // std::uint64_t
#include <map>          // std::map (tag lexicon)
#include <optional>     // std::optional (second pass)
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map (training cache)
#include <utility>      // std::move
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/perceptron.hpp"
#include "darkbert/data/seeded_shuffle.hpp"

namespace darkbert {

/// Training settings of the POS tagger.
struct TaggerTrainOptions {
  int iterations = 8;      ///< passes over the training sentences (each model)
  int folds = 2;           ///< jackknife folds for the second pass; 0 = first pass only
  std::uint64_t seed = 1;  ///< pass p visits sentences in seeded_permutation(n, seed + p) order
};

/// The tags each frequent word was seen with in training ("that" -> "DET|PRON|SCONJ"): a view of the words
/// to the right, whose tags are not predicted yet. Words seen fewer than min_count times map to "?"; a tag
/// counts when it covers at least min_share of the word's occurrences.
class TagLexicon {
 public:
  /// Fewest occurrences for a word to get an entry.
  static constexpr std::size_t min_count = 3;
  /// Smallest share of a word's occurrences for a tag to count.
  static constexpr double min_share = 0.05;

  /// Builds the lexicon from lower-cased training sentences and their tags.
  static TagLexicon build(const std::vector<std::vector<std::string>>& lower_words,
                          const std::vector<std::vector<std::string>>& tags) {
    std::map<std::string, std::map<std::string, std::size_t>> counts;
    for (std::size_t s = 0; s < lower_words.size(); ++s)
      for (std::size_t i = 0; i < lower_words[s].size(); ++i) ++counts[lower_words[s][i]][tags[s][i]];
    TagLexicon lex;
    for (const auto& [word, by_tag] : counts) {
      std::size_t total = 0;
      for (const auto& [tag, c] : by_tag) total += c;
      if (total < min_count) continue;
      std::string cls;
      for (const auto& [tag, c] : by_tag)
        if (static_cast<double>(c) >= min_share * static_cast<double>(total)) cls += (cls.empty() ? "" : "|") + tag;
      lex.classes_.emplace(word, cls);
    }
    return lex;
  }
  /// The word's tags joined by '|', or "?" for a rare word.
  const std::string& ambiguity_class(const std::string& lower_word) const {
    static const std::string unknown = "?";
    auto it = classes_.find(lower_word);
    return it == classes_.end() ? unknown : it->second;
  }
  /// Every word and its ambiguity class.
  const std::map<std::string, std::string>& entries() const { return classes_; }
  /// Adds one entry (used when loading a saved model).
  void add(std::string word, std::string cls) { classes_.emplace(std::move(word), std::move(cls)); }

 private:
  std::map<std::string, std::string> classes_;
};

namespace detail {

inline std::string word_shape(std::string_view w) {
  std::string out;
  for (char ch : w) {
    const unsigned char c = static_cast<unsigned char>(ch);
    char s;
    if (c >= 'A' && c <= 'Z')
      s = 'X';
    else if (c >= 'a' && c <= 'z')
      s = 'x';
    else if (c >= '0' && c <= '9')
      s = 'd';
    else if (c >= 0x80)
      s = 'u';
    else
      s = static_cast<char>(c);
    if (out.empty() || out.back() != s) out.push_back(s);
  }
  return out;
}

inline std::string lower_word(std::string_view w) {
  std::string out(w);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// One sentence prepared for a tagger: lower-cased words and their static (tag-independent) features.
struct TaggerInput {
  std::vector<std::string> lower;
  std::vector<std::vector<std::string>> features;
};

/// The features a second pass adds to word u's static ones (last in its list): the first-pass tags
/// `right` of words u + 1 and u + 2, and of u itself.
inline void tagger_right_features(const std::vector<std::string>& low, const std::vector<std::string>& right,
                                  std::size_t u, std::vector<std::string>& f) {
  const auto at = [&](std::size_t i) -> std::string { return i < right.size() ? right[i] : "</s>"; };
  f.push_back("r+1=" + at(u + 1));
  f.push_back("r+2=" + at(u + 2));
  f.push_back("r+1r+2=" + at(u + 1) + " " + at(u + 2));
  f.push_back("r+1w=" + at(u + 1) + " " + low[u]);
  f.push_back("r0=" + right[u]);
}

/// `right_tags`, when given, are first-pass tags; their i+1 / i+2 values become features.
inline TaggerInput tagger_input(const std::vector<std::string>& words, const TagLexicon& lexicon,
                                const std::vector<std::string>* right_tags) {
  const std::size_t n = words.size();
  TaggerInput in;
  std::vector<std::string> shape(n), amb(n);
  in.lower.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    in.lower[i] = lower_word(words[i]);
    shape[i] = word_shape(words[i]);
    amb[i] = lexicon.ambiguity_class(in.lower[i]);
  }
  const auto& low = in.lower;
  auto at = [&](const std::vector<std::string>& v, std::ptrdiff_t i) -> std::string {
    if (i < 0) return "<s>";
    if (i >= static_cast<std::ptrdiff_t>(n)) return "</s>";
    return v[static_cast<std::size_t>(i)];
  };
  auto suffix = [](const std::string& s, std::size_t k) { return s.size() <= k ? s : s.substr(s.size() - k); };
  in.features.resize(n);
  for (std::size_t u = 0; u < n; ++u) {
    const auto i = static_cast<std::ptrdiff_t>(u);
    const std::string& w = words[u];
    const std::string& l = low[u];
    auto& f = in.features[u];
    f.reserve(40);
    f.push_back("b");
    f.push_back("w=" + l);
    f.push_back("W=" + w);
    for (std::size_t k = 1; k <= 4; ++k) f.push_back("s" + std::to_string(k) + "=" + suffix(l, k));
    for (std::size_t k = 1; k <= 3; ++k) f.push_back("p" + std::to_string(k) + "=" + l.substr(0, k));
    f.push_back("sh=" + shape[u]);
    if (w.find('-') != std::string::npos) f.push_back("hy");
    bool digit = false, upper = false, lower = false;
    for (char c : w) {
      digit = digit || (c >= '0' && c <= '9');
      upper = upper || (c >= 'A' && c <= 'Z');
      lower = lower || (c >= 'a' && c <= 'z');
    }
    if (digit) f.push_back("dg");
    if (upper && !lower) f.push_back("allcap");
    if (!w.empty() && w[0] >= 'A' && w[0] <= 'Z') f.push_back(u == 0 ? "cap0" : "cap");
    f.push_back("w-1=" + at(low, i - 1));
    f.push_back("w-2=" + at(low, i - 2));
    f.push_back("w+1=" + at(low, i + 1));
    f.push_back("w+2=" + at(low, i + 2));
    f.push_back("s3-1=" + suffix(at(low, i - 1), 3));
    f.push_back("s3+1=" + suffix(at(low, i + 1), 3));
    f.push_back("sh-1=" + at(shape, i - 1));
    f.push_back("sh+1=" + at(shape, i + 1));
    f.push_back("w-1w=" + at(low, i - 1) + " " + l);
    f.push_back("ww+1=" + l + " " + at(low, i + 1));
    f.push_back("w+1w+2=" + at(low, i + 1) + " " + at(low, i + 2));
    f.push_back("a=" + amb[u]);
    f.push_back("a-1=" + at(amb, i - 1));
    f.push_back("a+1=" + at(amb, i + 1));
    f.push_back("a+2=" + at(amb, i + 2));
    f.push_back("aa+1=" + amb[u] + " " + at(amb, i + 1));
    f.push_back("a-1a=" + at(amb, i - 1) + " " + amb[u]);
    f.push_back("w-1a=" + at(low, i - 1) + " " + amb[u]);
    f.push_back("aw+1=" + amb[u] + " " + at(low, i + 1));
    if (right_tags != nullptr) tagger_right_features(low, *right_tags, u, f);
  }
  return in;
}

/// Features that depend on the tags predicted so far (left context).
inline void tagger_dynamic_features(const std::vector<std::string>& low, std::size_t i,
                                    const std::vector<std::string>& tags, const std::vector<std::string>* right_tags,
                                    std::vector<std::string>& f) {
  const std::string t1 = i >= 1 ? tags[i - 1] : "<s>";
  const std::string t2 = i >= 2 ? tags[i - 2] : "<s>";
  f.clear();
  f.push_back("t-1=" + t1);
  f.push_back("t-2t-1=" + t2 + " " + t1);
  f.push_back("t-1w=" + t1 + " " + low[i]);
  f.push_back("t-1w+1=" + t1 + " " + (i + 1 < low.size() ? low[i + 1] : std::string("</s>")));
  if (right_tags != nullptr)
    f.push_back("t-1r+1=" + t1 + " " + (i + 1 < low.size() ? (*right_tags)[i + 1] : std::string("</s>")));
}

/// The first-pass static features of every training sentence, interned once into a reference model:
/// ids[s][i] lists word i's features as ids of `names`, in tagger_input's order. A pass trained later
/// maps them to its own ids instead of building and hashing the strings again.
struct InternedFeatures {
  const AveragedPerceptron* names = nullptr;
  std::vector<std::vector<std::vector<int>>> ids;
};

/// One greedy left-to-right perceptron tagger.
class GreedyTagger {
 public:
  GreedyTagger() = default;
  GreedyTagger(AveragedPerceptron model, bool uses_right_tags)
      : model_(std::move(model)), uses_right_tags_(uses_right_tags) {}

  /// Trains on the sentences in `subset`. With `interned` (the first-pass features of every sentence), the
  /// static features come from it; the pass interns them in the same order as from the strings, so every
  /// feature gets the same id. `to_own`, when given, receives the map from `interned` ids to this
  /// model's (-1: a feature it never saw), for tag_interned. `static_ids`, when given, receives the
  /// static features of subset[k] as this model's ids (an InternedFeatures' ids when subset is 0 .. n-1).
  static GreedyTagger train(const std::vector<std::vector<std::string>>& words,
                            const std::vector<std::vector<std::string>>& tags, const std::vector<std::size_t>& subset,
                            const std::vector<std::string>& classes, const TagLexicon& lexicon,
                            const std::vector<std::vector<std::string>>* right_tags, int iterations,
                            std::uint64_t seed, const InternedFeatures* interned = nullptr,
                            std::vector<int>* to_own = nullptr,
                            std::vector<std::vector<std::vector<int>>>* static_ids = nullptr) {
    AveragedPerceptron model(classes);
    std::vector<std::vector<std::vector<int>>> ids(subset.size());
    std::vector<std::vector<std::string>> lows(subset.size());
    std::vector<std::vector<int>> gold(subset.size());
    std::vector<int> own(interned ? interned->names->num_features() : 0, -1);
    std::vector<std::string> right_features;
    for (std::size_t k = 0; k < subset.size(); ++k) {
      const std::size_t s = subset[k];
      if (interned) {
        for (const auto& w : words[s]) lows[k].push_back(lower_word(w));
        ids[k].resize(words[s].size());
        for (std::size_t i = 0; i < words[s].size(); ++i) {
          for (int g : interned->ids[s][i]) {
            int& id = own[static_cast<std::size_t>(g)];
            if (id < 0) id = model.intern(interned->names->feature(g));
            ids[k][i].push_back(id);
          }
          if (right_tags) {
            right_features.clear();
            tagger_right_features(lows[k], (*right_tags)[s], i, right_features);
            for (const auto& f : right_features) ids[k][i].push_back(model.intern(f));
          }
        }
      } else {
        auto in = tagger_input(words[s], lexicon, right_tags ? &(*right_tags)[s] : nullptr);
        ids[k].resize(in.features.size());
        for (std::size_t i = 0; i < in.features.size(); ++i)
          for (const auto& f : in.features[i]) ids[k][i].push_back(model.intern(f));
        lows[k] = std::move(in.lower);
      }
      for (const auto& t : tags[s]) gold[k].push_back(model.class_index(t));
    }
    // Dynamic features repeat endlessly (tag x word combinations): cache their ids by an integer key so the
    // training loop does not rebuild and hash strings. Key = (word id, tag i-1, tag i-2, right tag i+1).
    std::unordered_map<std::string, std::uint32_t> word_ids;
    std::vector<std::vector<std::uint32_t>> wid(subset.size());
    for (std::size_t k = 0; k < subset.size(); ++k)
      for (const auto& w : lows[k]) wid[k].push_back(word_ids.emplace(w, static_cast<std::uint32_t>(word_ids.size())).first->second);
    const std::uint64_t nc = classes.size() + 2;  // + "<s>" and "</s>"
    std::unordered_map<std::uint64_t, std::vector<int>> cache;
    std::vector<std::string> dyn, predicted;
    std::vector<int> x, pred_ids;
    for (int it = 0; it < iterations; ++it) {
      for (auto k : seeded_permutation(subset.size(), seed + static_cast<std::uint64_t>(it))) {
        const std::size_t s = subset[k];
        const auto* right = right_tags ? &(*right_tags)[s] : nullptr;
        const std::size_t n = words[s].size();
        predicted.assign(n, std::string());
        pred_ids.assign(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
          x = ids[k][i];
          const std::uint64_t t1 = i >= 1 ? static_cast<std::uint64_t>(pred_ids[i - 1]) : nc - 2;
          const std::uint64_t t2 = i >= 2 ? static_cast<std::uint64_t>(pred_ids[i - 2]) : nc - 2;
          std::uint64_t r1 = 0;
          if (right) r1 = i + 1 < n ? static_cast<std::uint64_t>(model.class_index((*right)[i + 1])) : nc - 1;
          const std::uint64_t w1 = i + 1 < n ? wid[k][i + 1] : 0xFFFFFFFFull;
          const std::uint64_t key = ((((static_cast<std::uint64_t>(wid[k][i]) * nc + t1) * nc + t2) * (nc + 1) + r1) << 32) ^ w1;
          auto [slot, inserted] = cache.try_emplace(key);
          if (inserted) {
            tagger_dynamic_features(lows[k], i, predicted, right, dyn);
            for (const auto& f : dyn) slot->second.push_back(model.intern(f));
          }
          x.insert(x.end(), slot->second.begin(), slot->second.end());
          const int guess = model.predict(x);
          model.update(x, gold[k][i], guess);
          model.tick();
          pred_ids[i] = guess;
          predicted[i] = model.classes()[static_cast<std::size_t>(guess)];
        }
      }
    }
    model.finalize();
    if (to_own) *to_own = std::move(own);
    if (static_ids) *static_ids = std::move(ids);
    return GreedyTagger(std::move(model), right_tags != nullptr);
  }

  std::vector<std::string> tag(const std::vector<std::string>& words, const TagLexicon& lexicon,
                               const std::vector<std::string>* right_tags) const {
    const auto in = tagger_input(words, lexicon, right_tags);
    return tag_left_to_right(in.lower, right_tags, [&](std::size_t i, std::vector<int>& x) {
      for (const auto& f : in.features[i]) x.push_back(model_.lookup(f));
    });
  }

  /// tag() of a first pass (no right tags) on a sentence whose static features are given as ids of an
  /// InternedFeatures (`interned_ids`, its words' entries) with `to_own` from train: the same tags, without
  /// building the feature strings again.
  std::vector<std::string> tag_interned(const std::vector<std::string>& words,
                                        const std::vector<std::vector<int>>& interned_ids,
                                        const std::vector<int>& to_own) const {
    std::vector<std::string> low;
    for (const auto& w : words) low.push_back(lower_word(w));
    return tag_left_to_right(low, nullptr, [&](std::size_t i, std::vector<int>& x) {
      for (int g : interned_ids[i]) x.push_back(to_own[static_cast<std::size_t>(g)]);
    });
  }

  const AveragedPerceptron& model() const { return model_; }
  bool uses_right_tags() const { return uses_right_tags_; }

 private:
  // Greedy decoding of one sentence: word i's features are its static ids (static_ids(i, x) appends
  // them to x) followed by the dynamic features of the tags given so far.
  template <class StaticIds>
  std::vector<std::string> tag_left_to_right(const std::vector<std::string>& low,
                                             const std::vector<std::string>* right_tags, StaticIds&& static_ids) const {
    std::vector<std::string> out(low.size()), dyn;
    std::vector<int> x;
    for (std::size_t i = 0; i < low.size(); ++i) {
      x.clear();
      static_ids(i, x);
      tagger_dynamic_features(low, i, out, right_tags, dyn);
      for (const auto& f : dyn) x.push_back(model_.lookup(f));
      out[i] = model_.classes()[static_cast<std::size_t>(model_.predict(x))];
    }
    return out;
  }

  AveragedPerceptron model_;
  bool uses_right_tags_ = false;
};

}  // namespace detail

/// Greedy averaged-perceptron UPOS tagger, with an optional second pass that sees the first pass's tags.
class PosTagger {
 public:
  PosTagger() = default;
  /// Combines trained parts.
  PosTagger(TagLexicon lexicon, detail::GreedyTagger first, std::optional<detail::GreedyTagger> second)
      : lexicon_(std::move(lexicon)), first_(std::move(first)), second_(std::move(second)) {}

  /// Trains on sentences of words with gold tags. Deterministic for given options. With options.folds = k,
  /// the training sentences are cut into k folds (seeded_permutation(n, seed) order, fold = position % k);
  /// each fold is tagged by a first pass trained on the other folds, and the second pass learns from those
  /// tags. Cost: (k + 2) single-pass trainings.
  /// `jackknifed` (optional) receives, per training sentence, the tags of the first pass that did not see it
  /// (empty when folds = 0): realistic predicted tags for training a later stage.
  static PosTagger train(const std::vector<std::vector<std::string>>& words,
                         const std::vector<std::vector<std::string>>& tags, const TaggerTrainOptions& options = {},
                         std::vector<std::vector<std::string>>* jackknifed_out = nullptr) {
    require(words.size() == tags.size(), "PosTagger::train: ", words.size(), " sentences but ", tags.size(),
            " tag sequences");
    require(options.iterations >= 1, "PosTagger::train: iterations must be >= 1");
    require(options.folds == 0 || options.folds >= 2, "PosTagger::train: folds must be 0 or >= 2");
    std::vector<std::string> classes;
    std::vector<std::vector<std::string>> lows(words.size());
    for (std::size_t s = 0; s < tags.size(); ++s) {
      require(tags[s].size() == words[s].size(), "PosTagger::train: sentence ", s, " has ", words[s].size(),
              " words but ", tags[s].size(), " tags");
      for (const auto& t : tags[s])
        if (std::find(classes.begin(), classes.end(), t) == classes.end()) classes.push_back(t);
      for (const auto& w : words[s]) lows[s].push_back(detail::lower_word(w));
    }
    require(!classes.empty(), "PosTagger::train: no training words");
    std::sort(classes.begin(), classes.end());
    TagLexicon lexicon = TagLexicon::build(lows, tags);
    std::vector<std::size_t> all(words.size());
    for (std::size_t s = 0; s < all.size(); ++s) all[s] = s;
    // The first pass sees every sentence: its static feature ids serve every later pass.
    detail::InternedFeatures interned;
    auto first = detail::GreedyTagger::train(words, tags, all, classes, lexicon, nullptr, options.iterations,
                                             options.seed, nullptr, nullptr, &interned.ids);
    if (options.folds == 0) return PosTagger(std::move(lexicon), std::move(first), std::nullopt);
    interned.names = &first.model();

    std::vector<std::vector<std::string>> jackknifed(words.size());
    const auto order = seeded_permutation(words.size(), options.seed);
    const auto k = static_cast<std::size_t>(options.folds);
    for (std::size_t fold = 0; fold < k; ++fold) {
      std::vector<std::size_t> in_fold, rest;
      for (std::size_t p = 0; p < order.size(); ++p) (p % k == fold ? in_fold : rest).push_back(order[p]);
      std::sort(rest.begin(), rest.end());
      std::vector<int> to_own;
      auto model = detail::GreedyTagger::train(words, tags, rest, classes, lexicon, nullptr, options.iterations,
                                               options.seed + 1000 * (fold + 1), &interned, &to_own);
      for (auto s : in_fold) jackknifed[s] = model.tag_interned(words[s], interned.ids[s], to_own);
    }
    auto second = detail::GreedyTagger::train(words, tags, all, classes, lexicon, &jackknifed, options.iterations,
                                              options.seed + 1, &interned);
    if (jackknifed_out != nullptr) *jackknifed_out = std::move(jackknifed);
    return PosTagger(std::move(lexicon), std::move(first), std::move(second));
  }

  /// Tags one sentence of words.
  std::vector<std::string> tag(const std::vector<std::string>& words) const {
    require(first_.model().finalized(), "PosTagger: not trained or loaded");
    auto tags = first_.tag(words, lexicon_, nullptr);
    if (second_) tags = second_->tag(words, lexicon_, &tags);
    return tags;
  }

  /// The tag lexicon.
  const TagLexicon& lexicon() const { return lexicon_; }
  /// The first-pass model.
  const detail::GreedyTagger& first_pass() const { return first_; }
  /// The second-pass model, if trained.
  const std::optional<detail::GreedyTagger>& second_pass() const { return second_; }

 private:
  TagLexicon lexicon_;
  detail::GreedyTagger first_;
  std::optional<detail::GreedyTagger> second_;
};

}  // namespace darkbert
