#pragma once
/// @file
/// Subject / object labeller: marks the words a UD parser would attach as nsubj, nsubj:pass or obj, from
/// words and UPOS tags alone (no parse). A greedy left-to-right averaged perceptron (perceptron.hpp) with
/// four classes: "_" (neither), "nsubj", "nsubj:pass", "obj".
///
/// Features of word i: its word, tag and suffix; tags and words of its neighbours; the noun phrase around
/// it (the tag and word just before the phrase starts and just after it ends; whether i is the phrase's
/// last word); the nearest verb or auxiliary on each side (distance bucket, word, tag, and which kinds of
/// words lie in between: nominals, prepositions, punctuation, conjunctions, subordinators); the auxiliaries
/// before the verb on the right (passive cue: "was" + "-ed"); and the labels already given to the left.
///
/// @code
/// auto labeller = darkbert::SubjectObjectLabeller::train(words, tags, labels);
/// auto roles = labeller.label({"The", "dog", "chased", "a", "cat"}, {"DET", "NOUN", "VERB", "DET", "NOUN"});
/// // _ nsubj _ _ obj
/// @endcode

#include <algorithm>    // std::min
#include <array>        // std::array
#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <cstdint>      // std::uint64_t
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/perceptron.hpp"
#include "darkbert/data/pos_tagger.hpp"  // detail::lower_word
#include "darkbert/data/seeded_shuffle.hpp"

namespace darkbert {

/// The labeller's classes, in class-index order.
inline const std::vector<std::string>& subject_object_classes() {
  static const std::vector<std::string> classes = {"_", "nsubj", "nsubj:pass", "obj"};
  return classes;
}

/// Maps a UD DEPREL to the labeller's class: nsubj, nsubj:pass and obj keep their name, all else is "_".
inline std::string subject_object_class(std::string_view deprel) {
  if (deprel == "nsubj" || deprel == "nsubj:pass" || deprel == "obj") return std::string(deprel);
  return "_";
}

/// Training settings of the subject/object labeller.
struct LabellerTrainOptions {
  int iterations = 8;  ///<  passes over the training sentences
  std::uint64_t seed = 2;  ///<  seed of the visiting order
};

namespace detail {

inline bool is_verbal(const std::string& t) { return t == "VERB" || t == "AUX"; }
inline bool is_nominal(const std::string& t) { return t == "NOUN" || t == "PROPN" || t == "PRON" || t == "NUM"; }

inline std::string distance_bucket(std::ptrdiff_t d) {
  if (d <= 4) return std::to_string(d);
  if (d <= 6) return "5-6";
  if (d <= 10) return "7-10";
  return "11+";
}

/// The sentence-wide facts the labeller's features look up, computed once in O(n): nearest verbs, the
/// flags of what lies between two positions (prefix counts), noun-phrase extents, auxiliary chains. The
/// features used to rescan the sentence from every word, so a 10,000-word "sentence" took minutes.
struct SentenceIndex {
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  /// The auxiliary chain after a verb reads at most this many words (real chains have 1 to 4).
  static constexpr std::size_t max_chain_words = 16;
  /// Categories of between_flags, in output order: N nominal, A adposition, P punctuation, C coordinator,
  /// S subordinator, V verb/aux.
  static constexpr const char* flag_letters = "NAPCSV";

  std::vector<std::size_t> prev_verbal, next_verbal;  ///< nearest VERB/AUX strictly left / right, or none
  std::vector<std::array<std::uint32_t, 6>> below;    ///< below[k][c]: words of category c among [0, k)
  std::vector<std::size_t> np_start;  ///< first word of the DET/ADJ/NOUN/PROPN/NUM/PRON run ending at i
  std::vector<std::size_t> tail_end;  ///< last word of the NOUN/PROPN/NUM run starting at i (i - 1 if none)

  explicit SentenceIndex(const std::vector<std::string>& tags) {
    const std::size_t n = tags.size();
    prev_verbal.assign(n, none);
    next_verbal.assign(n, none);
    below.assign(n + 1, {});
    np_start.assign(n, 0);
    tail_end.assign(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& t = tags[i];
      if (i > 0) prev_verbal[i] = is_verbal(tags[i - 1]) ? i - 1 : prev_verbal[i - 1];
      const bool flags[6] = {is_nominal(t), t == "ADP", t == "PUNCT", t == "CCONJ", t == "SCONJ", is_verbal(t)};
      for (int c = 0; c < 6; ++c) below[i + 1][static_cast<std::size_t>(c)] = below[i][static_cast<std::size_t>(c)] + flags[c];
      np_start[i] = i > 0 && in_np(tags[i - 1]) && in_np(t) ? np_start[i - 1] : i;
    }
    tail_end[n] = n - 1;  // n >= 1 whenever this is read
    for (std::size_t i = n; i-- > 0;) {
      if (i + 1 < n) next_verbal[i] = is_verbal(tags[i + 1]) ? i + 1 : next_verbal[i + 1];
      tail_end[i] = np_tail(tags[i]) ? tail_end[i + 1] : i - 1;
    }
  }
  static bool in_np(const std::string& t) {
    return t == "DET" || t == "ADJ" || t == "NOUN" || t == "PROPN" || t == "NUM" || t == "PRON";
  }
  static bool np_tail(const std::string& t) { return t == "NOUN" || t == "PROPN" || t == "NUM"; }

  // What lies strictly between positions a < b, e.g. "NP" or "-" for nothing of note.
  std::string between_flags(std::size_t a, std::size_t b) const {
    std::string out;
    for (std::size_t c = 0; c < 6; ++c)
      if (below[b][c] > below[a + 1][c]) out += flag_letters[c];
    return out.empty() ? "-" : out;
  }
};

struct LabellerInput {
  std::vector<std::vector<std::string>> features;  ///< static, per word
  std::vector<std::size_t> prev_verbal;            ///< for the dynamic features
};

inline LabellerInput labeller_input(const std::vector<std::string>& words, const std::vector<std::string>& tags) {
  const std::size_t n = words.size();
  std::vector<std::string> low(n);
  for (std::size_t i = 0; i < n; ++i) low[i] = lower_word(words[i]);
  auto tag_at = [&](std::ptrdiff_t i) -> std::string {
    if (i < 0) return "<s>";
    if (i >= static_cast<std::ptrdiff_t>(n)) return "</s>";
    return tags[static_cast<std::size_t>(i)];
  };
  auto low_at = [&](std::ptrdiff_t i) -> std::string {
    if (i < 0) return "<s>";
    if (i >= static_cast<std::ptrdiff_t>(n)) return "</s>";
    return low[static_cast<std::size_t>(i)];
  };
  LabellerInput in;
  in.features.resize(n);
  if (n == 0) return in;
  const SentenceIndex index(tags);
  constexpr auto none = SentenceIndex::none;
  for (std::size_t u = 0; u < n; ++u) {
    const auto i = static_cast<std::ptrdiff_t>(u);
    const std::string& t = tags[u];
    const std::string& l = low[u];
    auto& f = in.features[u];
    f.reserve(48);
    f.push_back("b");
    f.push_back("t=" + t);
    f.push_back("w=" + l);
    f.push_back("tw=" + t + " " + l);
    f.push_back("s3=" + (l.size() <= 3 ? l : l.substr(l.size() - 3)));
    f.push_back("t-1=" + tag_at(i - 1));
    f.push_back("t+1=" + tag_at(i + 1));
    f.push_back("t-2t-1=" + tag_at(i - 2) + " " + tag_at(i - 1));
    f.push_back("t+1t+2=" + tag_at(i + 1) + " " + tag_at(i + 2));
    f.push_back("t-1t=" + tag_at(i - 1) + " " + t);
    f.push_back("tt+1=" + t + " " + tag_at(i + 1));
    f.push_back("w-1=" + low_at(i - 1));
    f.push_back("w+1=" + low_at(i + 1));
    f.push_back("w-1t=" + low_at(i - 1) + " " + t);
    f.push_back("tw+1=" + t + " " + low_at(i + 1));
    if (u == 0) f.push_back("first");
    // Noun phrase around i: back over DET/ADJ/NOUN/..., forward over NOUN/PROPN/NUM.
    std::ptrdiff_t start = i, end = i;
    if (SentenceIndex::in_np(t)) {
      start = static_cast<std::ptrdiff_t>(index.np_start[u]);
      end = static_cast<std::ptrdiff_t>(index.tail_end[u + 1]);  // u itself when no NOUN/PROPN/NUM follows
    }
    f.push_back("npL=" + tag_at(start - 1));
    f.push_back("npLw=" + low_at(start - 1));
    f.push_back("npR=" + tag_at(end + 1));
    f.push_back("npRw=" + low_at(end + 1));
    f.push_back(std::string("head=") + (end == i ? "y" : "n") + " " + t);
    f.push_back("npLt=" + tag_at(start - 1) + " " + t);
    // Names: UD heads a run of proper nouns on its FIRST word (flat), other noun phrases on the last.
    if (t == "PROPN") {
      const bool prev = tag_at(i - 1) == "PROPN", next = tag_at(i + 1) == "PROPN";
      f.push_back(std::string("prun=") + (prev ? (next ? "mid" : "last") : (next ? "first" : "single")));
      f.push_back(std::string("prunL=") + (prev ? "-" : tag_at(i - 1)) + (next ? " >" : " ."));
    }
    // Nearest verb/aux on the left.
    if (const std::size_t lvu = index.prev_verbal[u]; lvu != none) {
      const auto flags = index.between_flags(lvu, u);
      f.push_back("lvd=" + distance_bucket(i - static_cast<std::ptrdiff_t>(lvu)));
      f.push_back("lvw=" + low[lvu]);
      f.push_back("lvt=" + tags[lvu]);
      f.push_back("lvb=" + flags);
      f.push_back("lvbt=" + flags + " " + t);
      f.push_back("lvwb=" + low[lvu] + " " + flags);
    } else {
      f.push_back("lv=none");
      f.push_back("lvnone t=" + t);
    }
    // Nearest verb/aux on the right, and the auxiliary chain before the first main verb there.
    if (const std::size_t rvu = index.next_verbal[u]; rvu != none) {
      const auto flags = index.between_flags(u, rvu);
      f.push_back("rvd=" + distance_bucket(static_cast<std::ptrdiff_t>(rvu) - i));
      f.push_back("rvw=" + low[rvu]);
      f.push_back("rvt=" + tags[rvu]);
      f.push_back("rvb=" + flags);
      f.push_back("rvbt=" + flags + " " + t);
      std::string chain;
      std::size_t k = rvu;
      const std::size_t stop = std::min(n, rvu + SentenceIndex::max_chain_words);
      while (k < stop && (tags[k] == "AUX" || tags[k] == "PART" || tags[k] == "ADV")) {
        if (tags[k] == "AUX") chain += (chain.empty() ? "" : "+") + low[k];
        ++k;
      }
      if (k < n && tags[k] == "VERB") {
        const auto& v = low[k];
        f.push_back("rmv=" + chain + " " + (v.size() <= 2 ? v : v.substr(v.size() - 2)));
        f.push_back("rmvw=" + v);
      } else {
        f.push_back("rmv=none " + chain);
      }
    } else {
      f.push_back("rv=none");
      f.push_back("rvnone t=" + t);
    }
  }
  in.prev_verbal = index.prev_verbal;
  return in;
}

// The labels given so far in a left-to-right pass, kept so that each dynamic feature is O(1).
class LabelHistory {
 public:
  explicit LabelHistory(std::size_t n) : last_labelled_(n, SentenceIndex::none) {}
  // Records labels[i] (called for i = 0, 1, ... in order).
  void record(const std::vector<std::string>& tags, std::size_t i, int label) {
    const std::size_t before = i > 0 ? last_labelled_[i - 1] : SentenceIndex::none;
    last_labelled_[i] = label != 0 ? i : before;
    if (is_verbal(tags[i])) first_since_verbal_ = SentenceIndex::none;
    else if (label != 0 && first_since_verbal_ == SentenceIndex::none) first_since_verbal_ = i;
  }
  // Last labelled word at or before j (none if j is none or nothing is labelled).
  std::size_t last_labelled(std::size_t j) const { return j == SentenceIndex::none ? j : last_labelled_[j]; }
  // First labelled word after the nearest verb on the left of the next word.
  std::size_t first_since_verbal() const { return first_since_verbal_; }

 private:
  std::vector<std::size_t> last_labelled_;
  std::size_t first_since_verbal_ = SentenceIndex::none;
};

inline void labeller_dynamic_features(const std::vector<std::string>& tags, std::size_t i,
                                      const std::vector<int>& labels, const std::vector<std::size_t>& prev_verbal,
                                      const LabelHistory& history, std::vector<std::string>& f) {
  constexpr auto none = SentenceIndex::none;
  const auto& classes = subject_object_classes();
  f.clear();
  const std::string l1 = i >= 1 ? classes[static_cast<std::size_t>(labels[i - 1])] : "<s>";
  f.push_back("l-1=" + l1 + " " + tags[i]);
  // The first label given since the nearest verb on the left (a clause already has its subject?).
  const std::size_t verb = prev_verbal[i];
  const std::size_t first = history.first_since_verbal();
  const std::string seen = first != none ? classes[static_cast<std::size_t>(labels[first])] : "";
  f.push_back("seen=" + (seen.empty() ? std::string("-") : seen) + " " + tags[i]);
  // Last label before that verb (subject of the clause the verb belongs to?).
  std::string before;
  if (verb != none && verb > 0)
    if (const std::size_t j = history.last_labelled(verb - 1); j != none)
      before = classes[static_cast<std::size_t>(labels[j])];
  f.push_back("before=" + (before.empty() ? std::string("-") : before) + " " + (seen.empty() ? "-" : "x"));
}

}  // namespace detail

/// Labels each word "_", "nsubj", "nsubj:pass" or "obj" from words and UPOS tags (averaged perceptron).
class SubjectObjectLabeller {
 public:
  SubjectObjectLabeller() = default;
  /// Wraps a trained model (its classes must be the four labels).
  explicit SubjectObjectLabeller(AveragedPerceptron model) : model_(std::move(model)) {
    require(model_.classes() == subject_object_classes(), "SubjectObjectLabeller: model classes must be _ nsubj nsubj:pass obj");
  }

  /// Trains on sentences of words, their UPOS tags (better: predicted tags, as at test time) and gold
  /// classes ("_", "nsubj", "nsubj:pass", "obj"; see subject_object_class).
  static SubjectObjectLabeller train(const std::vector<std::vector<std::string>>& words,
                                     const std::vector<std::vector<std::string>>& tags,
                                     const std::vector<std::vector<std::string>>& labels,
                                     const LabellerTrainOptions& options = {}) {
    require(words.size() == tags.size() && words.size() == labels.size(), "SubjectObjectLabeller::train: ",
            words.size(), " sentences, ", tags.size(), " tag sequences, ", labels.size(), " label sequences");
    require(options.iterations >= 1, "SubjectObjectLabeller::train: iterations must be >= 1");
    AveragedPerceptron model(subject_object_classes());
    std::vector<std::vector<std::vector<int>>> ids(words.size());
    std::vector<std::vector<int>> gold(words.size());
    std::vector<std::vector<std::size_t>> prev_verbal(words.size());
    for (std::size_t s = 0; s < words.size(); ++s) {
      require(tags[s].size() == words[s].size() && labels[s].size() == words[s].size(),
              "SubjectObjectLabeller::train: sentence ", s, " has ", words[s].size(), " words, ", tags[s].size(),
              " tags, ", labels[s].size(), " labels");
      auto in = detail::labeller_input(words[s], tags[s]);
      prev_verbal[s] = std::move(in.prev_verbal);
      ids[s].resize(in.features.size());
      for (std::size_t i = 0; i < in.features.size(); ++i)
        for (const auto& f : in.features[i]) ids[s][i].push_back(model.intern(f));
      for (const auto& l : labels[s]) {
        const int k = model.class_index(l);
        require(k >= 0, "SubjectObjectLabeller::train: sentence ", s, ": unknown class '", l,
                "' (expected _, nsubj, nsubj:pass or obj)");
        gold[s].push_back(k);
      }
    }
    std::vector<std::string> dyn;
    std::vector<int> x, predicted;
    for (int it = 0; it < options.iterations; ++it) {
      for (auto s : seeded_permutation(words.size(), options.seed + static_cast<std::uint64_t>(it))) {
        predicted.assign(words[s].size(), 0);
        detail::LabelHistory history(words[s].size());
        for (std::size_t i = 0; i < words[s].size(); ++i) {
          x = ids[s][i];
          detail::labeller_dynamic_features(tags[s], i, predicted, prev_verbal[s], history, dyn);
          for (const auto& f : dyn) x.push_back(model.intern(f));
          const int guess = model.predict(x);
          model.update(x, gold[s][i], guess);
          model.tick();
          predicted[i] = guess;
          history.record(tags[s], i, guess);
        }
      }
    }
    model.finalize();
    return SubjectObjectLabeller(std::move(model));
  }

  /// Classes for one sentence ("_", "nsubj", "nsubj:pass", "obj").
  std::vector<std::string> label(const std::vector<std::string>& words, const std::vector<std::string>& tags) const {
    require(model_.finalized(), "SubjectObjectLabeller: not trained or loaded");
    require(words.size() == tags.size(), "SubjectObjectLabeller::label: ", words.size(), " words but ", tags.size(),
            " tags");
    const auto in = detail::labeller_input(words, tags);
    std::vector<int> predicted(words.size(), 0);
    detail::LabelHistory history(words.size());
    std::vector<std::string> dyn;
    std::vector<int> x;
    for (std::size_t i = 0; i < words.size(); ++i) {
      x.clear();
      for (const auto& f : in.features[i]) x.push_back(model_.lookup(f));
      detail::labeller_dynamic_features(tags, i, predicted, in.prev_verbal, history, dyn);
      for (const auto& f : dyn) x.push_back(model_.lookup(f));
      predicted[i] = model_.predict(x);
      history.record(tags, i, predicted[i]);
    }
    std::vector<std::string> out;
    for (int k : predicted) out.push_back(subject_object_classes()[static_cast<std::size_t>(k)]);
    return out;
  }

  /// The model.
  const AveragedPerceptron& model() const { return model_; }

 private:
  AveragedPerceptron model_;
};

}  // namespace darkbert
