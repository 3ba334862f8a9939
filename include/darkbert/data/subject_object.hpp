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

/// What lies strictly between positions a < b: N nominal, A adposition, P punctuation, C coordinator,
/// S subordinator, V verb/aux.
inline std::string between_flags(const std::vector<std::string>& tags, std::size_t a, std::size_t b) {
  bool n = false, ad = false, p = false, c = false, s = false, v = false;
  for (std::size_t k = a + 1; k < b; ++k) {
    const auto& t = tags[k];
    n = n || is_nominal(t);
    ad = ad || t == "ADP";
    p = p || t == "PUNCT";
    c = c || t == "CCONJ";
    s = s || t == "SCONJ";
    v = v || is_verbal(t);
  }
  std::string out;
  if (n) out += 'N';
  if (ad) out += 'A';
  if (p) out += 'P';
  if (c) out += 'C';
  if (s) out += 'S';
  if (v) out += 'V';
  return out.empty() ? "-" : out;
}

struct LabellerInput {
  std::vector<std::vector<std::string>> features;  ///< static, per word
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
  auto in_np = [&](const std::string& t) {
    return t == "DET" || t == "ADJ" || t == "NOUN" || t == "PROPN" || t == "NUM" || t == "PRON";
  };
  auto np_tail = [&](const std::string& t) { return t == "NOUN" || t == "PROPN" || t == "NUM"; };
  LabellerInput in;
  in.features.resize(n);
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
    // Noun phrase around i.
    std::ptrdiff_t start = i, end = i;
    if (in_np(t)) {
      while (start > 0 && in_np(tags[static_cast<std::size_t>(start - 1)])) --start;
      while (end + 1 < static_cast<std::ptrdiff_t>(n) && np_tail(tags[static_cast<std::size_t>(end + 1)])) ++end;
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
    std::ptrdiff_t lv = i - 1;
    while (lv >= 0 && !is_verbal(tags[static_cast<std::size_t>(lv)])) --lv;
    if (lv >= 0) {
      const auto lvu = static_cast<std::size_t>(lv);
      const auto flags = between_flags(tags, lvu, u);
      f.push_back("lvd=" + distance_bucket(i - lv));
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
    std::ptrdiff_t rv = i + 1;
    while (rv < static_cast<std::ptrdiff_t>(n) && !is_verbal(tags[static_cast<std::size_t>(rv)])) ++rv;
    if (rv < static_cast<std::ptrdiff_t>(n)) {
      const auto rvu = static_cast<std::size_t>(rv);
      const auto flags = between_flags(tags, u, rvu);
      f.push_back("rvd=" + distance_bucket(rv - i));
      f.push_back("rvw=" + low[rvu]);
      f.push_back("rvt=" + tags[rvu]);
      f.push_back("rvb=" + flags);
      f.push_back("rvbt=" + flags + " " + t);
      std::string chain;
      std::size_t k = rvu;
      while (k < n && (tags[k] == "AUX" || tags[k] == "PART" || tags[k] == "ADV")) {
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
  return in;
}

inline void labeller_dynamic_features(const std::vector<std::string>& tags, std::size_t i,
                                      const std::vector<int>& labels, std::vector<std::string>& f) {
  const auto& classes = subject_object_classes();
  f.clear();
  const std::string l1 = i >= 1 ? classes[static_cast<std::size_t>(labels[i - 1])] : "<s>";
  f.push_back("l-1=" + l1 + " " + tags[i]);
  // Labels given since the nearest verb on the left (a clause already has its subject?).
  std::ptrdiff_t k = static_cast<std::ptrdiff_t>(i) - 1;
  std::string seen;
  while (k >= 0 && !is_verbal(tags[static_cast<std::size_t>(k)])) {
    if (labels[static_cast<std::size_t>(k)] != 0) seen = classes[static_cast<std::size_t>(labels[static_cast<std::size_t>(k)])];
    --k;
  }
  f.push_back("seen=" + (seen.empty() ? std::string("-") : seen) + " " + tags[i]);
  // Last label before that verb (subject of the clause the verb belongs to?).
  std::string before;
  if (k >= 0) {
    for (std::ptrdiff_t j = k - 1; j >= 0; --j)
      if (labels[static_cast<std::size_t>(j)] != 0) {
        before = classes[static_cast<std::size_t>(labels[static_cast<std::size_t>(j)])];
        break;
      }
  }
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
    for (std::size_t s = 0; s < words.size(); ++s) {
      require(tags[s].size() == words[s].size() && labels[s].size() == words[s].size(),
              "SubjectObjectLabeller::train: sentence ", s, " has ", words[s].size(), " words, ", tags[s].size(),
              " tags, ", labels[s].size(), " labels");
      auto in = detail::labeller_input(words[s], tags[s]);
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
        for (std::size_t i = 0; i < words[s].size(); ++i) {
          x = ids[s][i];
          detail::labeller_dynamic_features(tags[s], i, predicted, dyn);
          for (const auto& f : dyn) x.push_back(model.intern(f));
          const int guess = model.predict(x);
          model.update(x, gold[s][i], guess);
          model.tick();
          predicted[i] = guess;
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
    std::vector<std::string> dyn;
    std::vector<int> x;
    for (std::size_t i = 0; i < words.size(); ++i) {
      x.clear();
      for (const auto& f : in.features[i]) x.push_back(model_.lookup(f));
      detail::labeller_dynamic_features(tags, i, predicted, dyn);
      for (const auto& f : dyn) x.push_back(model_.lookup(f));
      predicted[i] = model_.predict(x);
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
