#pragma once
/// @file
/// Multi-class averaged perceptron over string features: the learner behind the POS tagger and the
/// subject/object labeller (Collins 2002; weights averaged over every training step).
///
/// @code
/// darkbert::AveragedPerceptron p({"NOUN", "VERB"});
/// std::vector<int> f = {p.intern("w=dog"), p.intern("suffix=og")};
/// int guess = p.predict(f);
/// p.update(f, /*truth=*/0, guess);  p.tick();   // once per training instance
/// p.finalize();                                 // average; then save(out) / load(in)
/// @endcode
///
/// File section (text, line-oriented, documented in annotator.hpp):
/// @code
/// perceptron 1
/// classes <C>\t<class 0>\t...\t<class C-1>
/// features <F>
/// <feature>\t<class>:<weight> <class>:<weight> ...     (F lines; only non-zero weights)
/// @endcode
/// Feature strings escape `\` tab and newline as `\\` `\t` `\n`. Weights are written in shortest round-trip form.

#include <array>          // std::array (score buffer)
#include <charconv>       // std::to_chars, std::from_chars
#include <cstddef>        // std::size_t
#include <istream>        // std::istream
#include <ostream>        // std::ostream
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <vector>         // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/core/string_map.hpp"  // StringMap (string_view lookups)

namespace darkbert {

namespace detail {

inline std::string escape_feature(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

inline bool unescape_feature(std::string_view s, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\')
      out.push_back('\\');
    else if (s[i] == 't')
      out.push_back('\t');
    else if (s[i] == 'n')
      out.push_back('\n');
    else
      return false;
  }
  return true;
}

/// Reads lines and knows where it is, so load errors can name file and line.
class LineReader {
 public:
  LineReader(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}
  /// Next line (without '\n'); throws at end of input, saying what was expected.
  std::string_view next(std::string_view expected) {
    if (!std::getline(in_, line_)) fail(name_, ":", line_no_ + 1, ": unexpected end of file, expected ", expected);
    ++line_no_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    return line_;
  }
  bool next_if_any(std::string_view& out) {
    if (!std::getline(in_, line_)) return false;
    ++line_no_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    out = line_;
    return true;
  }
  template <class... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail(name_, ":", line_no_, ": ", parts...);
  }
  const std::string& name() const { return name_; }
  std::size_t line() const { return line_no_; }

 private:
  std::istream& in_;
  std::string name_;
  std::string line_;
  std::size_t line_no_ = 0;
};

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

}  // namespace detail

/// Multi-class averaged perceptron over string features (the tagger's and labeller's model).
class AveragedPerceptron {
 public:
  AveragedPerceptron() = default;
  /// An untrained model over `classes` (at least one).
  explicit AveragedPerceptron(std::vector<std::string> classes) : classes_(std::move(classes)) {
    require(!classes_.empty(), "AveragedPerceptron: needs at least one class");
  }

  /// Number of classes.
  int num_classes() const { return static_cast<int>(classes_.size()); }
  /// The class names, index order.
  const std::vector<std::string>& classes() const { return classes_; }
  /// Number of distinct features seen.
  std::size_t num_features() const { return names_.size(); }
  /// Index of the class `name`; throws if unknown.
  int class_index(std::string_view name) const {
    for (std::size_t k = 0; k < classes_.size(); ++k)
      if (classes_[k] == name) return static_cast<int>(k);
    return -1;
  }

  /// Id of a feature, adding it if new (training only).
  int intern(std::string_view feature) {
    require(!finalized_, "AveragedPerceptron: cannot add features after finalize()");
    if (auto it = ids_.find(feature); it != ids_.end()) return it->second;
    const int id = static_cast<int>(names_.size());
    names_.emplace_back(feature);
    ids_.emplace(names_.back(), id);
    weights_.resize(weights_.size() + classes_.size(), 0.0f);
    accum_.resize(accum_.size() + classes_.size(), 0.0);
    return id;
  }
  /// The feature whose id is `id` (0 <= id < num_features()).
  const std::string& feature(int id) const { return names_[static_cast<std::size_t>(id)]; }
  /// Id of a known feature, -1 if unknown.
  int lookup(std::string_view feature) const {
    auto it = ids_.find(feature);
    return it == ids_.end() ? -1 : it->second;
  }

  /// scores[c] = sum of weights of the given features for class c (ids of -1 are skipped).
  void scores(const std::vector<int>& features, std::vector<float>& out) const {
    const std::size_t c = classes_.size();
    out.assign(c, 0.0f);
    for (int f : features) {
      if (f < 0) continue;
      const float* w = &weights_[static_cast<std::size_t>(f) * c];
      for (std::size_t k = 0; k < c; ++k) out[k] += w[k];
    }
  }
  /// Highest-scoring class; ties go to the lower class index (deterministic).
  int predict(const std::vector<int>& features) const {
    const std::size_t c = classes_.size();
    std::array<float, 64> small{};
    std::vector<float> large;
    float* s = small.data();
    if (c > small.size()) {
      large.assign(c, 0.0f);
      s = large.data();
    }
    for (int f : features) {
      if (f < 0) continue;
      const float* w = &weights_[static_cast<std::size_t>(f) * c];
      for (std::size_t k = 0; k < c; ++k) s[k] += w[k];
    }
    std::size_t best = 0;
    for (std::size_t k = 1; k < c; ++k)
      if (s[k] > s[best]) best = k;
    return static_cast<int>(best);
  }

  /// Perceptron step: +1 to truth, -1 to guess on every feature (nothing when they agree).
  void update(const std::vector<int>& features, int truth, int guess) {
    if (truth == guess) return;
    const std::size_t c = classes_.size();
    const double t = static_cast<double>(instances_);
    for (int f : features) {
      if (f < 0) continue;
      const std::size_t base = static_cast<std::size_t>(f) * c;
      weights_[base + static_cast<std::size_t>(truth)] += 1.0f;
      accum_[base + static_cast<std::size_t>(truth)] += t;
      weights_[base + static_cast<std::size_t>(guess)] -= 1.0f;
      accum_[base + static_cast<std::size_t>(guess)] -= t;
    }
  }
  /// Counts one training instance (call after each update, hit or miss).
  void tick() { ++instances_; }

  /// Replaces the weights by their average over all instances and drops the training state.
  /// An update made while instance t (0-based) was processed counts for T - t of the T instances, so the
  /// average is w - accum / T with accum = sum of t * delta.
  void finalize() {
    if (finalized_) return;
    if (instances_ > 0) {
      const double total = static_cast<double>(instances_);
      for (std::size_t i = 0; i < weights_.size(); ++i)
        weights_[i] = static_cast<float>(static_cast<double>(weights_[i]) - accum_[i] / total);
    }
    accum_.clear();
    accum_.shrink_to_fit();
    finalized_ = true;
  }
  /// Whether the weights have been averaged (training is over).
  bool finalized() const { return finalized_; }

  /// Writes the model as text (load reads it back exactly).
  void save(std::ostream& out) const {
    require(finalized_, "AveragedPerceptron::save: call finalize() first");
    const std::size_t c = classes_.size();
    out << "perceptron 1\nclasses " << c;
    for (const auto& k : classes_) out << '\t' << k;
    std::size_t kept = 0;
    for (std::size_t f = 0; f < names_.size(); ++f) kept += has_weight(f);
    out << "\nfeatures " << kept << '\n';
    char buffer[64];
    for (std::size_t f = 0; f < names_.size(); ++f) {
      if (!has_weight(f)) continue;
      out << detail::escape_feature(names_[f]) << '\t';
      bool first = true;
      for (std::size_t k = 0; k < c; ++k) {
        const float w = weights_[f * c + k];
        if (w == 0.0f) continue;
        auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, w);
        (void)ec;
        out << (first ? "" : " ") << k << ':' << std::string_view(buffer, static_cast<std::size_t>(end - buffer));
        first = false;
      }
      out << '\n';
    }
  }

  /// The most features a model file may declare (the annotator trained on UD EWT has about a million). A
  /// larger count is refused by name instead of being trusted for an allocation.
  static constexpr std::size_t max_features = std::size_t{1} << 26;

  /// Reads a model written by save.
  static AveragedPerceptron load(detail::LineReader& in) {
    auto header = in.next("'perceptron 1'");
    if (header != "perceptron 1") in.error("expected 'perceptron 1', got '", header, "'");
    auto classes_line = detail::split(in.next("'classes <C> ...'"), '\t');
    auto head = detail::split(classes_line[0], ' ');
    std::size_t c = 0;
    if (head.size() != 2 || head[0] != "classes" || !parse_size(head[1], c) || c == 0 || classes_line.size() != c + 1)
      in.error("expected 'classes <C>' followed by C tab-separated class names");
    AveragedPerceptron p(std::vector<std::string>(classes_line.begin() + 1, classes_line.end()));
    auto features_line = detail::split(in.next("'features <F>'"), ' ');
    std::size_t n = 0;
    if (features_line.size() != 2 || features_line[0] != "features" || !parse_size(features_line[1], n))
      in.error("expected 'features <F>'");
    if (n > max_features)
      in.error("feature count ", n, " exceeds the limit of ", max_features,
               " (AveragedPerceptron::max_features); the model file is corrupt");
    // Nothing is reserved from the count: storage grows with the feature lines actually read, so a count
    // larger than the file costs no memory and ends at the first line that is not a feature.
    std::string name;
    for (std::size_t f = 0; f < n; ++f) {
      auto line = in.next("a feature line");
      p.weights_.resize((f + 1) * c, 0.0f);
      const auto tab = line.find('\t');
      if (tab == std::string_view::npos) in.error("expected '<feature>\\t<class>:<weight> ...'");
      if (!detail::unescape_feature(line.substr(0, tab), name)) in.error("bad escape in feature name");
      for (auto item : detail::split(line.substr(tab + 1), ' ')) {
        const auto colon = item.find(':');
        std::size_t k = 0;
        float w = 0;
        if (colon == std::string_view::npos || !parse_size(item.substr(0, colon), k) || k >= c)
          in.error("bad weight entry '", item, "' (expected <class index below ", c, ">:<weight>)");
        auto value = item.substr(colon + 1);
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), w);
        if (ec != std::errc() || end != value.data() + value.size()) in.error("bad weight '", value, "'");
        p.weights_[f * c + k] = w;
      }
      if (p.ids_.count(name) != 0) in.error("feature '", name, "' appears twice");
      p.names_.push_back(name);
      p.ids_.emplace(p.names_.back(), static_cast<int>(f));
    }
    p.finalized_ = true;
    return p;
  }

 private:
  static bool parse_size(std::string_view s, std::size_t& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  }
  bool has_weight(std::size_t f) const {
    const std::size_t c = classes_.size();
    for (std::size_t k = 0; k < c; ++k)
      if (weights_[f * c + k] != 0.0f) return true;
    return false;
  }

  std::vector<std::string> classes_;
  std::vector<std::string> names_;  ///< feature strings by id
  StringMap<int> ids_;               ///< feature string -> id, searched with string_views
  std::vector<float> weights_;      ///< [feature][class]
  std::vector<double> accum_;       ///< [feature][class], training only
  long long instances_ = 0;
  bool finalized_ = false;
};

}  // namespace darkbert
