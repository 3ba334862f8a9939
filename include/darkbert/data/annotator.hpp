#pragma once
/// @file
/// Token-level linguistic labels for the paper's sec. 4.3 analysis (attention to nouns, verbs, pronouns,
/// subjects, objects and negation): word tokenizer (word_tokenizer.hpp) -> UPOS tagger (pos_tagger.hpp) ->
/// subject/object labeller (subject_object.hpp) -> negation lexicon (negation.hpp). Trained with darkbert's
/// own code on UD English EWT train, saved to and reloaded from one text file.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// darkbert::Annotator a = darkbert::default_annotator(root);  // cached; trains once on first use
/// for (const auto& w : a.annotate("The committee did not approve the plan."))
///   if (w.is_object()) use(w.form, w.span);                  // "plan", bytes [34, 38)
/// @endcode
///
/// Feature definitions (AnnotatedWord): noun = UPOS NOUN or PROPN; verb = UPOS VERB (auxiliaries are AUX,
/// not verbs); pronoun = UPOS PRON; subject = nsubj or nsubj:pass; object = obj; negation = negation.hpp.
///
/// Model file (text, UTF-8, line-oriented; load errors name the file and line):
/// @code
/// darkbert-annotator 1
/// provenance <one line of free text: training file, sentences, options>
/// lexicon <N>                 then N lines "<lower-cased word>\t<tag>|<tag>..."  (TagLexicon)
/// tagger <P>                  P = 1 or 2 passes, then P perceptron sections (perceptron.hpp)
/// labeller                    then one perceptron section with classes _ nsubj nsubj:pass obj
/// end
/// @endcode
/// Version 1 = the feature templates of this release; a feature change must bump the version.


#include <charconv>     // std::from_chars
#include <chrono>       // std::chrono::steady_clock (training time in the provenance)
#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream
#include <iostream>     // std::clog
#include <optional>     // std::optional
#include <ostream>      // std::ostream
#include <sstream>      // std::ostringstream
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <system_error> // std::error_code
#include <vector>       // std::vector

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/core/file_lock.hpp"
#include "darkbert/data/conllu.hpp"
#include "darkbert/data/negation.hpp"
#include "darkbert/data/perceptron.hpp"
#include "darkbert/data/pos_tagger.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/subject_object.hpp"
#include "darkbert/data/word_tokenizer.hpp"

namespace darkbert {

namespace detail {

/// `word` itself when at most `limit` bytes long, else its first and last limit/2 bytes (cut at UTF-8
/// character boundaries), which keeps the prefixes and suffixes the tagger's features read.
inline std::string clip_word(const std::string& word, std::size_t limit) {
  if (word.size() <= limit) return word;
  auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(word[i]) & 0xC0) == 0x80; };
  std::size_t head = limit / 2, tail = word.size() - limit / 2;
  while (head > 0 && continuation(head)) --head;
  while (tail < word.size() && continuation(tail)) ++tail;
  return word.substr(0, head) + word.substr(tail);
}

}  // namespace detail

/// The word-level features the paper's §3.4 measures attention to.
enum class LinguisticFeature { noun, verb, pronoun, subject, object, negation };

/// "noun", "verb", "pronoun", "subject", "object" or "negation".
inline std::string_view to_string(LinguisticFeature f) {
  switch (f) {
    case LinguisticFeature::noun: return "noun";
    case LinguisticFeature::verb: return "verb";
    case LinguisticFeature::pronoun: return "pronoun";
    case LinguisticFeature::subject: return "subject";
    case LinguisticFeature::object: return "object";
    case LinguisticFeature::negation: return "negation";
  }
  return "?";
}

/// One word with the annotator's labels.
struct AnnotatedWord {
  std::string form;  ///<  the word as written
  Span span;                ///< bytes of the annotated text ({0,0} when words were given without text)
  std::string upos;         ///< predicted Universal POS tag
  std::string role = "_";  ///< predicted "_", "nsubj", "nsubj:pass" or "obj"
  bool negation = false;    ///< in the negation lexicon

  /// UPOS NOUN or PROPN.
  bool is_noun() const { return upos == "NOUN" || upos == "PROPN"; }
  /// UPOS VERB.
  bool is_verb() const { return upos == "VERB"; }
  /// UPOS PRON.
  bool is_pronoun() const { return upos == "PRON"; }
  /// Role nsubj or nsubj:pass.
  bool is_subject() const { return role == "nsubj" || role == "nsubj:pass"; }
  /// Role obj.
  bool is_object() const { return role == "obj"; }
  /// Whether the word has feature f.
  bool has(LinguisticFeature f) const {
    switch (f) {
      case LinguisticFeature::noun: return is_noun();
      case LinguisticFeature::verb: return is_verb();
      case LinguisticFeature::pronoun: return is_pronoun();
      case LinguisticFeature::subject: return is_subject();
      case LinguisticFeature::object: return is_object();
      case LinguisticFeature::negation: return negation;
    }
    return false;
  }
};

/// Training settings of both parts of the annotator.
struct AnnotatorTrainOptions {
  TaggerTrainOptions tagger;      ///< 8 iterations, 2 jackknife folds (two-pass tagger), seed 1
  LabellerTrainOptions labeller;  ///< 8 iterations, seed 2; trained on gold UPOS
};

/// POS tagger plus subject/object labeller, trained on UD EWT (see the top of this header).
/// @code
/// darkbert::Annotator annotator = darkbert::default_annotator(root);   // trained and cached on first use
/// auto words = annotator.annotate("The cat didn't sit.");                 // AnnotatedWord per word
/// @endcode
class Annotator {
 public:
  Annotator() = default;
  /// Combines trained parts; `provenance` says what they were trained on.
  Annotator(PosTagger tagger, SubjectObjectLabeller labeller, std::string provenance)
      : tagger_(std::move(tagger)), labeller_(std::move(labeller)), provenance_(std::move(provenance)) {}

  /// Trains both stages on CoNLL-U sentences (words, UPOS and DEPREL are used). Deterministic.
  static Annotator train(const std::vector<ConlluSentence>& sentences, const AnnotatorTrainOptions& options = {},
                         const std::string& source = "(sentences)", std::ostream* log = nullptr) {
    require(!sentences.empty(), "Annotator::train: no training sentences");
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<std::string>> words, tags, labels;
    std::size_t n_words = 0;
    for (const auto& s : sentences) {
      std::vector<std::string> w, t, l;
      for (const auto& x : s.words) {
        require(x.upos != "_" && !x.upos.empty(), source, ":", s.line, ": word ", x.id, " '", x.form,
                "' has no UPOS to train on");
        w.push_back(x.form);
        t.push_back(x.upos);
        l.push_back(subject_object_class(x.deprel));
      }
      n_words += w.size();
      words.push_back(std::move(w));
      tags.push_back(std::move(t));
      labels.push_back(std::move(l));
    }
    if (log) *log << "annotator: training the POS tagger on " << sentences.size() << " sentences (" << n_words
                  << " words)" << std::endl;
    auto tagger = PosTagger::train(words, tags, options.tagger);
    if (log) *log << "annotator: training the subject/object labeller" << std::endl;
    auto labeller = SubjectObjectLabeller::train(words, tags, labels, options.labeller);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream prov;
    prov << "trained on " << source << " (" << sentences.size() << " sentences, " << n_words
         << " words); tagger iterations " << options.tagger.iterations << ", folds " << options.tagger.folds
         << ", seed " << options.tagger.seed << "; labeller iterations " << options.labeller.iterations << ", seed "
         << options.labeller.seed << "; " << static_cast<long>(seconds + 0.5) << " s";
    if (log) *log << "annotator: done in " << seconds << " s" << std::endl;
    return Annotator(std::move(tagger), std::move(labeller), prov.str());
  }

  /// UPOS tags and subject/object classes for pre-split words.
  struct Prediction {
    /// @{
    /// one UPOS tag and one role ("_", "nsubj", "nsubj:pass", "obj") per word
    std::vector<std::string> upos, roles;
    /// @}
  };
  /// The longest word form the tagger's features see: longer words (never natural words: UD EWT's longest is
  /// a 140-byte URL) are cut to their first and last max_feature_word_bytes / 2 bytes, so prefix and suffix
  /// features keep their values and one huge word cannot cost time or memory in every feature string.
  static constexpr std::size_t max_feature_word_bytes = 256;

  /// Labels pre-split words. A sentence of more than darkbert::max_sentence_words words is refused by name.
  Prediction predict(const std::vector<std::string>& words) const {
    Prediction p;
    if (words.empty()) return p;
    require(words.size() <= max_sentence_words, "Annotator: a sentence of ", words.size(),
            " words exceeds the limit of ", max_sentence_words, " (darkbert::max_sentence_words)");
    bool long_word = false;
    for (const auto& w : words) long_word = long_word || w.size() > max_feature_word_bytes;
    if (!long_word) {
      p.upos = tagger_.tag(words);
      p.roles = labeller_.label(words, p.upos);
      return p;
    }
    std::vector<std::string> clipped;
    clipped.reserve(words.size());
    for (const auto& w : words) clipped.push_back(detail::clip_word(w, max_feature_word_bytes));
    p.upos = tagger_.tag(clipped);
    p.roles = labeller_.label(clipped, p.upos);
    return p;
  }

  /// Annotates words that carry their spans (e.g. from tokenize_words).
  std::vector<AnnotatedWord> annotate_words(const std::vector<Word>& words) const {
    std::vector<std::string> forms;
    for (const auto& w : words) forms.push_back(w.form);
    const auto p = predict(forms);
    std::vector<AnnotatedWord> out(words.size());
    for (std::size_t i = 0; i < words.size(); ++i) {
      out[i].form = words[i].form;
      out[i].span = words[i].span;
      out[i].upos = p.upos[i];
      out[i].role = p.roles[i];
      out[i].negation = is_negation(words[i].form);
    }
    return out;
  }

  /// Raw text (one sentence works best): tokenize_words, then annotate.
  std::vector<AnnotatedWord> annotate(std::string_view text) const { return annotate_words(tokenize_words(text)); }

  /// A copy of a CoNLL-U sentence with UPOS set to the prediction and DEPREL set to the predicted class
  /// (nsubj, nsubj:pass, obj, else "_"); every other column, comment, multi-word token and empty node is kept.
  ConlluSentence annotate_conllu(const ConlluSentence& sentence) const {
    if (sentence.words.size() > max_sentence_words)
      fail("Annotator: the sentence at line ", sentence.line,
           sentence.sent_id.empty() ? std::string() : " (sent_id " + sentence.sent_id + ")", " has ",
           sentence.words.size(), " words, more than the limit of ", max_sentence_words,
           " (darkbert::max_sentence_words)");
    std::vector<std::string> forms;
    for (const auto& w : sentence.words) forms.push_back(w.form);
    const auto p = predict(forms);
    ConlluSentence out = sentence;
    for (std::size_t i = 0; i < out.words.size(); ++i) {
      out.words[i].upos = p.upos[i];
      out.words[i].deprel = p.roles[i];
    }
    return out;
  }

  /// Writes the model as text (load reads it back exactly).
  void save(std::ostream& out) const {
    out << "darkbert-annotator 1\n";
    std::string prov = provenance_;
    for (auto& c : prov)
      if (c == '\n' || c == '\r') c = ' ';
    out << "provenance " << prov << '\n';
    const auto& lex = tagger_.lexicon().entries();
    out << "lexicon " << lex.size() << '\n';
    for (const auto& [word, cls] : lex) out << detail::escape_feature(word) << '\t' << cls << '\n';
    out << "tagger " << (tagger_.second_pass() ? 2 : 1) << '\n';
    tagger_.first_pass().model().save(out);
    if (tagger_.second_pass()) tagger_.second_pass()->model().save(out);
    out << "labeller\n";
    labeller_.model().save(out);
    out << "end\n";
  }

  /// Writes to `file` crash-safely (core/atomic_file.hpp), so readers never see half a file.
  void save(const std::filesystem::path& file) const {
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    std::ostringstream text;
    save(text);
    write_file_atomically(file, text.view());
  }

  /// The most lexicon entries a model file may declare (UD EWT train has about 20,000 distinct words). Counts
  /// are checked before anything is read; the perceptron sections have their own bound
  /// (AveragedPerceptron::max_features), and neither count is trusted for an allocation.
  static constexpr std::size_t max_lexicon_entries = std::size_t{1} << 24;

  /// Reads a model written by save; `name` is used in error messages.
  static Annotator load(std::istream& in, const std::string& name) {
    detail::LineReader r(in, name);
    const std::string magic(r.next("'darkbert-annotator 1'"));
    if (magic.rfind("darkbert-annotator ", 0) != 0) r.error("not a darkbert annotator file (expected 'darkbert-annotator 1')");
    if (magic != "darkbert-annotator 1")
      r.error("unsupported annotator format '", magic, "' (this build reads version 1; retrain or delete the file)");
    const std::string prov(r.next("'provenance ...'"));
    if (prov.rfind("provenance ", 0) != 0) r.error("expected 'provenance <text>'");
    std::string provenance = prov.substr(11);
    auto lex_line = detail::split(r.next("'lexicon <N>'"), ' ');
    std::size_t n = 0;
    if (lex_line.size() != 2 || lex_line[0] != "lexicon" || !parse_count(lex_line[1], n)) r.error("expected 'lexicon <N>'");
    if (n > max_lexicon_entries)
      r.error("lexicon count ", n, " exceeds the limit of ", max_lexicon_entries,
              " (Annotator::max_lexicon_entries); the model file is corrupt");
    TagLexicon lexicon;
    std::string word;
    for (std::size_t k = 0; k < n; ++k) {
      auto line = r.next("a lexicon line");
      const auto tab = line.find('\t');
      if (tab == std::string_view::npos || tab + 1 == line.size()) r.error("expected '<word>\\t<tags>'");
      if (!detail::unescape_feature(line.substr(0, tab), word)) r.error("bad escape in lexicon word");
      lexicon.add(word, std::string(line.substr(tab + 1)));
    }
    const std::string tagger_line(r.next("'tagger <passes>'"));
    if (tagger_line != "tagger 1" && tagger_line != "tagger 2") r.error("expected 'tagger 1' or 'tagger 2'");
    auto first = AveragedPerceptron::load(r);
    std::optional<detail::GreedyTagger> second;
    if (tagger_line == "tagger 2") second = detail::GreedyTagger(AveragedPerceptron::load(r), true);
    if (r.next("'labeller'") != "labeller") r.error("expected 'labeller'");
    auto labeller_model = AveragedPerceptron::load(r);
    if (labeller_model.classes() != subject_object_classes())
      r.error("labeller classes must be _ nsubj nsubj:pass obj");
    if (r.next("'end'") != "end") r.error("expected 'end'");
    return Annotator(PosTagger(std::move(lexicon), detail::GreedyTagger(std::move(first), false), std::move(second)),
                     SubjectObjectLabeller(std::move(labeller_model)), std::move(provenance));
  }

  /// Reads a model file written by save.
  static Annotator load(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    require(static_cast<bool>(in), file.string(), ": cannot open annotator model for reading");
    return load(in, file.string());
  }

  /// What the model was trained on.
  const std::string& provenance() const { return provenance_; }
  /// The POS tagger.
  const PosTagger& tagger() const { return tagger_; }
  /// The subject/object labeller.
  const SubjectObjectLabeller& labeller() const { return labeller_; }

 private:
  static bool parse_count(std::string_view s, std::size_t& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  }

  PosTagger tagger_;
  SubjectObjectLabeller labeller_;
  std::string provenance_;
};

// ---------------------------------------------------------------- evaluation

/// Precision / recall / F1 counts of one category.
struct PrfCounts {
  /// @{
  /// true positives, false positives, false negatives
  std::size_t tp = 0, fp = 0, fn = 0;
  /// @}
  /// tp / (tp + fp), 0 when undefined.
  double precision() const { return tp + fp == 0 ? 0.0 : static_cast<double>(tp) / static_cast<double>(tp + fp); }
  /// tp / (tp + fn), 0 when undefined.
  double recall() const { return tp + fn == 0 ? 0.0 : static_cast<double>(tp) / static_cast<double>(tp + fn); }
  /// Harmonic mean of precision and recall, 0 when undefined.
  double f1() const {
    const double p = precision(), r = recall();
    return p + r == 0.0 ? 0.0 : 2.0 * p * r / (p + r);
  }
  /// Adds another category's counts.
  PrfCounts& operator+=(const PrfCounts& o) {
    tp += o.tp;
    fp += o.fp;
    fn += o.fn;
    return *this;
  }
};

/// Scores against gold CoNLL-U. With gold segmentation every gold word is predicted once, so UPOS precision
/// = recall = accuracy. On raw text (re-tokenized from "# text") a predicted word counts only when its byte
/// span equals a gold word's span (CoNLL 2018 style alignment), so tokenization errors cost recall and
/// precision. Subject = nsubj or nsubj:pass, object = obj; "subject_object" pools both categories
/// (micro-average); a word is a true positive when its predicted category equals the gold one.
struct AnnotatorScores {
  /// @{
  /// sentences scored, gold and predicted words, and predicted words aligned with a gold word
  std::size_t sentences = 0, gold_words = 0, predicted_words = 0, matched_words = 0;
  /// @}
  PrfCounts upos;  ///< tp = matched words with the gold UPOS
  /// @{
  /// subject (nsubj, nsubj:pass) and object (obj) counts
  PrfCounts subject, object;
  /// @}
  /// Subjects and objects pooled (micro-average).
  PrfCounts subject_object() const {
    PrfCounts c = subject;
    c += object;
    return c;
  }
  /// Share of gold words tagged with the gold UPOS.
  double upos_accuracy() const { return upos.recall(); }
};

namespace detail {

inline int role_category(std::string_view role) {
  if (role == "nsubj" || role == "nsubj:pass") return 0;
  if (role == "obj") return 1;
  return -1;
}

inline void score_word(AnnotatorScores& s, const std::string& gold_upos, const std::string& gold_deprel,
                       const std::string& upos, const std::string& role) {
  if (upos == gold_upos) ++s.upos.tp;
  const int g = role_category(subject_object_class(gold_deprel)), p = role_category(role);
  PrfCounts* cat[2] = {&s.subject, &s.object};
  if (p >= 0 && p == g) {
    ++cat[p]->tp;
    return;
  }
  if (p >= 0) ++cat[p]->fp;
  if (g >= 0) ++cat[g]->fn;
}

inline void finish_counts(AnnotatorScores& s) {
  s.upos.fp = s.predicted_words - s.upos.tp;
  s.upos.fn = s.gold_words - s.upos.tp;
}

/// Byte spans of the gold words inside the sentence's "# text"; nullopt if the text does not match the
/// tokens. Words of a multi-word token split its span when their forms spell it, else they all get the
/// token's span (and so can never be matched exactly).
inline std::optional<std::vector<Span>> gold_word_spans(const ConlluSentence& s) {
  std::vector<Span> spans(s.words.size());
  const auto tokens = surface_tokens(s);
  std::size_t pos = 0;
  const std::string* gap = nullptr;  // what the previous token says follows it
  for (const auto& t : tokens) {
    if (gap != nullptr && s.text.compare(pos, gap->size(), *gap) == 0) pos += gap->size();
    gap = &t.spaces_after;
    if (s.text.compare(pos, t.form.size(), t.form) != 0) return std::nullopt;
    const Span token{pos, pos + t.form.size()};
    pos = token.end;
    std::string joined;
    for (std::size_t w = t.first_word; w <= t.last_word; ++w) joined += s.words[w].form;
    std::size_t at = token.begin;
    for (std::size_t w = t.first_word; w <= t.last_word; ++w) {
      if (joined == t.form) {
        spans[w] = {at, at + s.words[w].form.size()};
        at += s.words[w].form.size();
      } else {
        spans[w] = token;
      }
    }
  }
  return spans;
}

}  // namespace detail

/// Gold word segmentation: the annotator sees exactly the gold words.
inline AnnotatorScores evaluate_annotator(const Annotator& annotator, const std::vector<ConlluSentence>& gold) {
  AnnotatorScores s;
  for (const auto& sentence : gold) {
    std::vector<std::string> forms;
    for (const auto& w : sentence.words) forms.push_back(w.form);
    const auto p = annotator.predict(forms);
    for (std::size_t i = 0; i < forms.size(); ++i)
      detail::score_word(s, sentence.words[i].upos, sentence.words[i].deprel, p.upos[i], p.roles[i]);
    ++s.sentences;
    s.gold_words += forms.size();
    s.predicted_words += forms.size();
    s.matched_words += forms.size();
  }
  detail::finish_counts(s);
  return s;
}

/// Raw text: each sentence's "# text" goes through tokenize_words and the annotator; predicted words are
/// aligned to gold words by identical byte spans. Sentences without a usable "# text" are an error.
inline AnnotatorScores evaluate_annotator_raw(const Annotator& annotator, const std::vector<ConlluSentence>& gold,
                                              const std::string& name = "(gold)") {
  AnnotatorScores s;
  for (const auto& sentence : gold) {
    auto spans = detail::gold_word_spans(sentence);
    if (!spans)
      fail(name, ":", sentence.line, ": '# text' of sentence ", sentence.sent_id, " does not match its tokens");
    const auto words = annotator.annotate(sentence.text);
    const std::size_t n_gold = sentence.words.size();
    std::vector<char> gold_hit(n_gold, 0);
    std::size_t g = 0;
    for (const auto& w : words) {
      while (g < n_gold && (*spans)[g].begin < w.span.begin) ++g;
      std::size_t k = g;
      bool matched = false;
      while (k < n_gold && (*spans)[k].begin == w.span.begin) {
        if ((*spans)[k] == w.span && !gold_hit[k]) {
          matched = true;
          break;
        }
        ++k;
      }
      const int p = detail::role_category(w.role);
      if (!matched) {
        if (p == 0) ++s.subject.fp;
        if (p == 1) ++s.object.fp;
        continue;
      }
      gold_hit[k] = 1;
      ++s.matched_words;
      detail::score_word(s, sentence.words[k].upos, sentence.words[k].deprel, w.upos, w.role);
    }
    for (std::size_t k = 0; k < n_gold; ++k) {
      if (gold_hit[k]) continue;
      const int gcat = detail::role_category(subject_object_class(sentence.words[k].deprel));
      if (gcat == 0) ++s.subject.fn;
      if (gcat == 1) ++s.object.fn;
    }
    ++s.sentences;
    s.gold_words += n_gold;
    s.predicted_words += words.size();
  }
  detail::finish_counts(s);
  return s;
}

// ---------------------------------------------------------------- the default, cached annotator

/// Where default_annotator keeps its model: `<cache>/models/annotator-en_ewt-v1.txt`.
inline std::filesystem::path default_annotator_path(const DataRoot& root) {
  return root.cache_dir() / "models" / "annotator-en_ewt-v1.txt";
}

/// Loads the cached annotator, or trains it on ud/en_ewt-ud-train.conllu from the data root (default
/// options) and caches it first. Progress goes to `log` (may be null).
inline Annotator default_annotator(const DataRoot& root, std::ostream* log = &std::clog) {
  const auto path = default_annotator_path(root);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return Annotator::load(path);
  // Processes sharing the cache, and the workers of one study, take turns: one trains, the others load it.
  std::filesystem::create_directories(path.parent_path(), ec);
  const FileLock lock(std::filesystem::path(path.string() + ".lock"));
  if (std::filesystem::is_regular_file(path, ec)) return Annotator::load(path);
  const auto train_file = root.find("ud/en_ewt-ud-train.conllu", "UD English EWT train (to train the annotator)", ud_hint);
  if (log) *log << "annotator: no cached model at " << path.string() << "; training on " << train_file.string()
                << " (first use only)" << std::endl;
  auto annotator = Annotator::train(read_conllu(train_file), {}, train_file.filename().string(), log);
  annotator.save(path);
  if (log) *log << "annotator: saved " << path.string() << std::endl;
  return annotator;
}

}  // namespace darkbert
