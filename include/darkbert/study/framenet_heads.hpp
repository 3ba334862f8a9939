#pragma once
/// @file
/// §3.2 of the paper, relation-specific heads: do some heads attend from a FrameNet frame-evoking target to
/// its core frame elements? Select short annotated sentences, run the model, and for every head take the
/// largest weight between the target and its core-element tokens; average over the sentences, and single
/// out the heads above the 99th percentile.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto release = darkbert::study::locate_framenet(root);           // full release if present, else the sample
/// darkbert::FrameNet fn(release.dir);
/// auto selections = darkbert::study::select_framenet_sentences(fn, release);   // both selections, counted
/// auto result = darkbert::study::run_framenet_heads(model, tokenizer, selections, {.max_sentences = 500});
/// result.save("out/framenet");                                      // JSON + CSV/.npy, loadable
/// darkbert::study::write_framenet_figures(result, "out/framenet");  // heatmap + the example sentence
/// @endcode
///
/// **The selection as the paper's released code makes it** (`visualize_attention.ipynb`, section "BaseBERT
/// study", over NLTK's FrameNet 1.7; 473 sentences there). An exemplar annotation set is kept when, in order:
///  1. the sentence has at most 12 tokens;
///  2. it has exactly one Target label, and that target is one token (the code looks the target's text up
///     as one token and drops the sentence when it is not found);
///  3. every overt frame element of the first FE layer, core or not, spans at most 3 tokens;
///  4. no token of those frame elements lies within ±2 tokens of the target (distance 0, 1 or 2);
///  5. at least one of them is a core element.
/// "Core" in that code means a member of one of the frame's `FEcoreSet` groups (NLTK's `FEcoreSets`), not
/// FrameNet's coreType: frames without core sets contribute nothing. CoreElements::core_sets reproduces it;
/// CoreElements::core_type counts the same selection with coreType Core / Core-Unexpressed. The paper's
/// code splits with NLTK's word_tokenize; FrameNet exemplar text is already split with spaces, and darkbert
/// uses those whitespace tokens (the two differ only on quotes and clitics inside a token).
///
/// **darkbert's earlier selection** (data/framenet.hpp, `select_framenet_examples`, used by
/// `darkbert_framenet_selection`) reads the paper's prose instead: at most 12 tokens, 1 to 3 overt core
/// elements (coreType) of any length, each at least 2 tokens from the target. Both are counted.
///
/// **The measure** (analysis/link_attention.hpp): for each selected sentence and head, the maximum of
/// a[target token][core-element token] over every word piece of the target and of every core element
/// (query = target, as the paper reads its example: "while processing 'agitated' both heads attend to
/// 'He'"); the mean over sentences; the heads strictly above the 99th percentile (numpy's linear rule,
/// analysis/percentile.hpp). The paper's code pairs the pieces with `zip`, which compares only the i-th
/// target piece with the i-th element piece, and finds positions by the first equal token string; darkbert
/// takes every pair at its true position, as the paper's text describes. Causal models (GPT-2): a core
/// element after the target is invisible from it, and a sentence with no visible pair is skipped (counted).

#include <algorithm>    // std::min, std::sort, std::find
#include <cctype>       // std::isspace
#include <cmath>        // std::isnan, std::numeric_limits
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream
#include <limits>       // std::numeric_limits
#include <map>          // std::map (rejection counts)
#include <optional>     // std::optional
#include <ostream>      // std::ostream
#include <set>          // std::set
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include <nlohmann/json.hpp>  // the result's summary file

#include "darkbert/analysis/link_attention.hpp"
#include "darkbert/analysis/percentile.hpp"
#include "darkbert/analysis/results.hpp"
#include "darkbert/analysis/token_annotation.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/data/framenet.hpp"
#include "darkbert/data/projection.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/seeded_shuffle.hpp"
#include "darkbert/io/npy.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/study/task_inputs.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "darkbert/viz/attention_grid.hpp"
#include "darkbert/viz/heatmap.hpp"

namespace darkbert::study {

// ---------------------------------------------------------------- where FrameNet is

/// Which FrameNet the study reads.
enum class FrameNetSource {
  automatic,     ///< the full release when one is in the data root (folder or archive), else the sample
  full_release,  ///< the full release; an error naming where it was looked for when absent
  sample,        ///< `framenet/sample/fndata-1.x`: 200 lexical units chosen by rule (data README)
};

/// The FrameNet folder a study read, and what it is.
struct FrameNetRelease {
  std::filesystem::path dir;    ///< the release folder (frame/ and lu/)
  std::string kind;             ///< "full release", "200-LU sample" or "folder given"
  std::string version;          ///< "1.5", "1.7" (from the folder name) or "unknown"
  std::size_t frames = 0;        ///< frame files
  std::size_t lexical_units = 0;  ///< lu files

  /// One line: "FrameNet 1.5 full release (11829 lexical units, 1019 frames) at <dir>".
  std::string describe() const {
    return "FrameNet " + version + " " + kind + " (" + std::to_string(lexical_units) + " lexical units, " +
           std::to_string(frames) + " frames) at " + dir.string();
  }
};

namespace detail {

inline std::string framenet_version(const std::filesystem::path& dir) {
  for (auto p = dir; !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    const auto name = p.filename().string();
    if (name.find("1.7") != std::string::npos || name.find("v17") != std::string::npos) return "1.7";
    if (name.find("1.5") != std::string::npos || name.find("v15") != std::string::npos) return "1.5";
  }
  return "unknown";
}

inline FrameNetRelease describe_release(const FrameNet& fn, std::string kind) {
  FrameNetRelease r;
  r.dir = fn.dir();
  r.kind = std::move(kind);
  r.version = framenet_version(fn.dir());
  r.frames = fn.frame_count();
  r.lexical_units = fn.lexical_unit_files().size();
  return r;
}

}  // namespace detail

/// Finds the FrameNet to read: the full release (data/framenet.hpp framenet_release_dir: an unpacked folder,
/// else `framenet/fndata-1.5-lu-frame.tar.xz` in the data root, unpacked once into `<cache>/framenet/`),
/// or the 200-LU sample (`framenet/sample/fndata-1.5`). `automatic` takes the full release when there is
/// one and says so in FrameNetRelease::kind. The counts are filled by select_framenet_sentences.
inline FrameNetRelease locate_framenet(const DataRoot& root, FrameNetSource source = FrameNetSource::automatic,
                                       std::ostream* log = nullptr) {
  FrameNetRelease r;
  if (source != FrameNetSource::sample) {
    try {
      r.dir = framenet_release_dir(root, log);
      r.kind = "full release";
    } catch (const error&) {
      if (source == FrameNetSource::full_release) throw;
    }
  }
  if (r.dir.empty()) {
    r.dir = framenet_sample_dir(root);
    r.kind = "200-LU sample";
  }
  r.version = detail::framenet_version(r.dir);
  return r;
}

// ---------------------------------------------------------------- the paper's selection

/// Which frame elements count as core.
enum class CoreElements {
  core_sets,  ///< members of the frame's FEcoreSet groups: what the paper's released code reads as core
  core_type,  ///< coreType Core or Core-Unexpressed (FrameNet's own definition)
};

/// The selection of the paper's released code (see the top of this header).
struct PaperSelectionOptions {
  std::size_t max_tokens = 12;          ///< rule 1: sentence length in whitespace tokens
  std::size_t max_element_tokens = 3;   ///< rule 3: longest frame element, in tokens
  std::size_t window = 2;               ///< rule 4: no frame-element token within ±window tokens of the target
  CoreElements core = CoreElements::core_sets;  ///< rule 5 and the links scored
};

/// What the rules say about one annotation set (the first rule that fails, or selected).
enum class PaperSelectionVerdict {
  selected,
  too_long,              ///< rule 1
  not_one_target,        ///< rule 2: no or several Target labels
  target_not_one_token,  ///< rule 2: the target covers several tokens (or none)
  element_too_long,      ///< rule 3
  element_near_target,   ///< rule 4
  no_core_element,       ///< rule 5
};

/// "selected", "too_long", ... (the keys of the rejection counts in the result files).
inline std::string_view to_string(PaperSelectionVerdict v) {
  switch (v) {
    case PaperSelectionVerdict::selected: return "selected";
    case PaperSelectionVerdict::too_long: return "too_long";
    case PaperSelectionVerdict::not_one_target: return "not_one_target";
    case PaperSelectionVerdict::target_not_one_token: return "target_not_one_token";
    case PaperSelectionVerdict::element_too_long: return "element_too_long";
    case PaperSelectionVerdict::element_near_target: return "element_near_target";
    case PaperSelectionVerdict::no_core_element: return "no_core_element";
  }
  return "?";
}

/// The verdict on one annotation set and, when selected, the example (target and core elements as
/// whitespace tokens and byte spans).
struct PaperSelectionCheck {
  PaperSelectionVerdict verdict = PaperSelectionVerdict::selected;  ///< first failing rule, or selected
  std::optional<FrameNetExample> example;                           ///< set when selected
};

namespace detail {

inline bool is_core(const FrameInfo& frame, std::string_view name, CoreElements core) {
  if (core == CoreElements::core_sets) return frame.in_core_set(name);
  const auto* info = frame.element(name);
  return info != nullptr && info->is_core();
}

inline FrameNetExample example_header(const LexicalUnit& lu, const FrameNetSentence& sentence,
                                      const FrameAnnotationSet& set) {
  FrameNetExample ex;
  ex.lu_id = lu.id;
  ex.lu_name = lu.name;
  ex.frame = lu.frame;
  ex.sentence_id = sentence.id;
  ex.annotation_id = set.id;
  ex.text = sentence.text;
  ex.tokens = whitespace_tokens(sentence.text);
  ex.target = set.target;
  return ex;
}

}  // namespace detail

/// Applies the paper's rules (top of this header) to one annotation set of `lu` (whose frame is `frame`).
/// @code
/// auto check = darkbert::study::check_paper_selection(lu, frame, lu.sentences[0], lu.sentences[0].annotations[0]);
/// if (check.verdict == darkbert::study::PaperSelectionVerdict::selected) use(*check.example);
/// @endcode
inline PaperSelectionCheck check_paper_selection(const LexicalUnit& lu, const FrameInfo& frame,
                                                 const FrameNetSentence& sentence, const FrameAnnotationSet& set,
                                                 const PaperSelectionOptions& options = {}) {
  using V = PaperSelectionVerdict;
  PaperSelectionCheck out;
  FrameNetExample ex = detail::example_header(lu, sentence, set);
  if (ex.tokens.empty() || ex.tokens.size() > options.max_tokens) return {V::too_long, std::nullopt};
  if (set.target.size() != 1) return {V::not_one_target, std::nullopt};
  ex.target_tokens = darkbert::detail::tokens_overlapping(ex.tokens, set.target.front());
  if (ex.target_tokens.size() != 1) return {V::target_not_one_token, std::nullopt};
  std::vector<FrameNetLink> elements;
  for (const auto& e : set.elements) {
    if (!e.overt() || e.layer_rank != 1) continue;
    FrameNetLink link;
    link.element = e.name;
    link.span = e.span;
    link.tokens = darkbert::detail::tokens_overlapping(ex.tokens, e.span);
    link.distance = link.tokens.empty() ? 0 : darkbert::detail::token_distance(ex.target_tokens, link.tokens);
    elements.push_back(std::move(link));
  }
  for (const auto& l : elements)
    if (l.tokens.size() > options.max_element_tokens) return {V::element_too_long, std::nullopt};
  for (const auto& l : elements)
    if (!l.tokens.empty() && l.distance <= options.window) return {V::element_near_target, std::nullopt};
  for (auto& l : elements)
    if (!l.tokens.empty() && detail::is_core(frame, l.element, options.core)) ex.core_elements.push_back(std::move(l));
  if (ex.core_elements.empty()) return {V::no_core_element, std::nullopt};
  out.example = std::move(ex);
  return out;
}

/// How many annotation sets a selection kept, from how many sentences and lexical units.
struct SelectionCount {
  std::size_t annotation_sets = 0;  ///< selected examples (one per annotation set)
  std::size_t sentences = 0;        ///< distinct sentence IDs among them
  std::size_t lexical_units = 0;    ///< distinct lexical units among them

  /// {"annotation_sets": .., "sentences": .., "lexical_units": ..}
  nlohmann::json to_json() const {
    return {{"annotation_sets", annotation_sets}, {"sentences", sentences}, {"lexical_units", lexical_units}};
  }
};

/// The sentence drawn in full for the paper's figure ("He was becoming agitated", Emotion_directed: both top
/// heads attend from "agitated" to "He"). When FrameNet has an annotation set whose text starts with
/// `text` and whose target is `target`, that set is used; otherwise the sentence is encoded from these
/// fields (target and core elements as whitespace tokens).
struct FigureSentence {
  std::string text = "He was becoming agitated .";  ///< whitespace-tokenized, as FrameNet writes it
  std::string target = "agitated";                  ///< the frame-evoking token
  std::vector<std::string> core = {"He"};           ///< core-element tokens (Experiencer)
  std::string frame = "Emotion_directed";           ///< for the record
};

/// What select_framenet_sentences reads and counts.
struct FrameNetSelectionsOptions {
  PaperSelectionOptions paper;          ///< the paper's code
  FrameNetSelectionOptions darkbert;    ///< darkbert's earlier selection (data/framenet.hpp defaults)
  FigureSentence figure;                ///< the sentence of the figure
};

/// Both selections over one pass of a release.
struct FrameNetSelections {
  FrameNetRelease release;                    ///< what was read
  PaperSelectionOptions paper_options;        ///< the options of `paper`
  FrameNetSelectionOptions darkbert_options;  ///< the options of `darkbert_count`
  std::vector<FrameNetExample> paper;         ///< the paper's code, in lexical-unit ID order
  SelectionCount paper_count;                 ///< counts of `paper`
  SelectionCount paper_core_type_count;       ///< the same rules with the other CoreElements reading
  SelectionCount darkbert_count;              ///< darkbert's earlier selection
  std::map<std::string, std::size_t> paper_verdicts;  ///< annotation sets per PaperSelectionVerdict
  std::optional<FrameNetExample> figure;      ///< the figure sentence as FrameNet annotates it, when found
};

namespace detail {

inline std::string collapse_spaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

struct SelectionCounter {
  SelectionCount count;
  std::set<int> sentences, lus;
  void add(int lu, int sentence) {
    ++count.annotation_sets;
    sentences.insert(sentence);
    lus.insert(lu);
    count.sentences = sentences.size();
    count.lexical_units = lus.size();
  }
};

// The figure sentence as FrameNet annotates it: the annotation set of a sentence starting with the figure's
// text whose one target is the figure's target word; every overt core element of the first FE layer.
inline std::optional<FrameNetExample> figure_example(const LexicalUnit& lu, const FrameInfo& frame,
                                                     const FrameNetSentence& s, const FrameAnnotationSet& set,
                                                     const FigureSentence& figure, CoreElements core) {
  const std::string text = collapse_spaces(s.text), wanted = collapse_spaces(figure.text);
  std::string prefix = wanted;
  while (!prefix.empty() && (prefix.back() == '.' || prefix.back() == ' ')) prefix.pop_back();
  if (prefix.empty() || text.rfind(prefix, 0) != 0 || set.target.size() != 1) return std::nullopt;
  const Span t = set.target.front();
  if (s.text.compare(t.begin, t.end - t.begin, figure.target) != 0) return std::nullopt;
  FrameNetExample ex = example_header(lu, s, set);
  ex.target_tokens = darkbert::detail::tokens_overlapping(ex.tokens, t);
  for (const auto& e : set.elements) {
    if (!e.overt() || e.layer_rank != 1 || !is_core(frame, e.name, core)) continue;
    FrameNetLink link{e.name, e.span, darkbert::detail::tokens_overlapping(ex.tokens, e.span), 0};
    if (link.tokens.empty()) continue;
    link.distance = darkbert::detail::token_distance(ex.target_tokens, link.tokens);
    ex.core_elements.push_back(std::move(link));
  }
  if (ex.target_tokens.empty() || ex.core_elements.empty()) return std::nullopt;
  return ex;
}

}  // namespace detail

/// Reads every lexical unit of `fn` once and applies both selections (and the paper's with the other core
/// reading, counted only); finds the figure sentence on the way. `progress` (may be null) gets a line every
/// 1000 lexical units. A lexical unit whose frame file is missing is an error naming both files.
/// @code
/// darkbert::FrameNet fn(release.dir);
/// auto s = darkbert::study::select_framenet_sentences(fn, release, {}, &std::cerr);
/// std::cout << s.paper_count.annotation_sets << " sentences (paper's code), "
///           << s.darkbert_count.annotation_sets << " (darkbert's earlier selection)\n";
/// @endcode
inline FrameNetSelections select_framenet_sentences(const FrameNet& fn, const FrameNetRelease& release = {},
                                                    const FrameNetSelectionsOptions& options = {},
                                                    std::ostream* progress = nullptr) {
  FrameNetSelections out;
  out.release = release.dir.empty() ? detail::describe_release(fn, "folder given") : release;
  out.release.dir = fn.dir();
  out.release.frames = fn.frame_count();
  out.release.lexical_units = fn.lexical_unit_files().size();
  if (out.release.version.empty()) out.release.version = detail::framenet_version(fn.dir());
  if (out.release.kind.empty()) out.release.kind = "folder given";
  out.paper_options = options.paper;
  out.darkbert_options = options.darkbert;
  PaperSelectionOptions other = options.paper;
  other.core = options.paper.core == CoreElements::core_sets ? CoreElements::core_type : CoreElements::core_sets;
  detail::SelectionCounter paper, paper_other, current;
  std::size_t done = 0;
  const std::size_t total = fn.lexical_unit_files().size();
  fn.for_each_lexical_unit([&](const LexicalUnit& lu) {
    const FrameInfo& frame = fn.frame_of(lu);
    for (const auto& s : lu.sentences)
      for (const auto& a : s.annotations) {
        auto check = check_paper_selection(lu, frame, s, a, options.paper);
        ++out.paper_verdicts[std::string(to_string(check.verdict))];
        if (check.example) {
          paper.add(lu.id, s.id);
          out.paper.push_back(std::move(*check.example));
        }
        if (check_paper_selection(lu, frame, s, a, other).example) paper_other.add(lu.id, s.id);
        if (select_framenet_example(lu, frame, s, a, options.darkbert)) current.add(lu.id, s.id);
        if (!out.figure) out.figure = detail::figure_example(lu, frame, s, a, options.figure, options.paper.core);
      }
    if (progress != nullptr && (++done % 1000 == 0 || done == total))
      *progress << "framenet: " << done << "/" << total << " lexical units, " << paper.count.annotation_sets
                << " selected by the paper's rules" << std::endl;
  });
  out.paper_count = paper.count;
  out.paper_core_type_count = paper_other.count;
  out.darkbert_count = current.count;
  return out;
}

/// The figure sentence encoded from its FigureSentence fields (for a FrameNet that lacks it): whitespace
/// tokens, the target token and each core token as one core element.
inline FrameNetExample figure_example_from_fields(const FigureSentence& f) {
  FrameNetExample ex;
  ex.text = f.text;
  ex.frame = f.frame;
  ex.tokens = whitespace_tokens(f.text);
  for (std::size_t k = 0; k < ex.tokens.size(); ++k) {
    const auto word = std::string_view(f.text).substr(ex.tokens[k].begin, ex.tokens[k].end - ex.tokens[k].begin);
    if (word == f.target && ex.target_tokens.empty()) {
      ex.target_tokens.push_back(k);
      ex.target.push_back(ex.tokens[k]);
    }
    for (const auto& c : f.core)
      if (word == c) ex.core_elements.push_back({c, ex.tokens[k], {k}, 0});
  }
  require(!ex.target_tokens.empty(), "figure sentence '", f.text, "': its target '", f.target,
          "' is not one of its whitespace tokens");
  require(!ex.core_elements.empty(), "figure sentence '", f.text, "': none of its core elements is one of its tokens");
  for (auto& c : ex.core_elements) c.distance = darkbert::detail::token_distance(ex.target_tokens, c.tokens);
  return ex;
}

// ---------------------------------------------------------------- model inputs

/// Selected sentences encoded for one model: one example per sentence with its links (target word pieces
/// -> each core element's word pieces, as token positions of the encoding).
struct FrameNetModelInputs {
  TaskInputs inputs;                          ///< encodings and token annotations (for for_each_attention)
  std::vector<std::vector<TokenLink>> links;  ///< per example: one link per core element that kept a token
  std::vector<std::size_t> source;            ///< per example: its index in the selection
  std::size_t dropped = 0;                    ///< sentences whose target or every core element lost its tokens
};

/// Encodes `examples` with `tokenizer` for a model with `config` (one sentence per example, [CLS] s [SEP]
/// for BERT, the bare pieces for GPT-2), projecting the target and core-element byte spans onto the pieces.
inline FrameNetModelInputs encode_framenet_examples(const Tokenizer& tokenizer, const std::vector<FrameNetExample>& examples,
                                                    const ModelConfig& config, std::size_t max_length = 64) {
  FrameNetModelInputs out;
  out.inputs.causal = config.causal;
  out.inputs.pad_id = tokenizer.pad_id();
  out.inputs.texts.num_labels = 1;
  for (std::size_t k = 0; k < examples.size(); ++k) {
    const auto& ex = examples[k];
    Encoding e = tokenizer.encode(ex.text, {.max_length = max_length});
    std::vector<Index> target;
    for (const auto& span : ex.target) {
      const auto r = tokens_in_span(e, span, 0);
      for (std::size_t t = r.begin; t < r.end; ++t) target.push_back(static_cast<Index>(t));
    }
    std::vector<TokenLink> links;
    for (const auto& c : ex.core_elements) {
      const auto r = tokens_in_span(e, c.span, 0);
      if (r.empty() || target.empty()) continue;
      TokenLink link{target, {}};
      for (std::size_t t = r.begin; t < r.end; ++t) link.to.push_back(static_cast<Index>(t));
      links.push_back(std::move(link));
    }
    if (links.empty()) {
      ++out.dropped;
      continue;
    }
    out.inputs.tokens.push_back(annotations_from_encoding(e));
    out.inputs.texts.encodings.push_back(std::move(e));
    out.inputs.texts.labels.push_back(0);
    out.links.push_back(std::move(links));
    out.source.push_back(k);
  }
  out.inputs.provenance = std::to_string(out.inputs.size()) + " FrameNet sentences";
  return out;
}

// ---------------------------------------------------------------- the result

/// One head of the figure: where it is, its score, and whether it is above the percentile.
struct FigureHead {
  Index layer = 0;     ///< from 0
  Index head = 0;      ///< from 0
  double score = 0;    ///< its FrameNet score
  bool above = false;  ///< above the percentile threshold (else shown as the next best)
};

/// The figure sentence as the model sees it, with every head's full map.
struct FrameNetFigure {
  std::string sentence;             ///< the text
  std::string source;               ///< "FrameNet lexical unit N, sentence M, annotation set K" or "encoded from ..."
  std::string frame;                ///< its frame
  std::vector<std::string> tokens;  ///< [n] the model's tokens
  std::vector<Index> target;        ///< token positions of the target
  std::vector<Index> core;          ///< token positions of the core elements
  std::vector<FigureHead> heads;    ///< the heads drawn in full (top heads, at least two)
  Index layers = 0;                 ///< of `maps`
  Index heads_per_layer = 0;        ///< of `maps`
  std::vector<double> maps;         ///< [layers, heads, n, n] every head's map on the sentence
  /// Map of (layer, head) as an n x n matrix (rows = queries).
  Matrix<double> map(Index layer, Index head) const {
    const auto n = static_cast<Index>(tokens.size());
    require(layer >= 0 && layer < layers && head >= 0 && head < heads_per_layer, "framenet figure: head ", layer,
            ":", head, " is outside ", layers, " x ", heads_per_layer);
    Matrix<double> m(n, n);
    const double* p = maps.data() + (layer * heads_per_layer + head) * n * n;
    for (Index i = 0; i < n; ++i)
      for (Index j = 0; j < n; ++j) m(i, j) = p[i * n + j];
    return m;
  }
};

/// The §3.2 result: both selections' counts, the per-head scores, the heads above the percentile and the
/// figure sentence. Saved as `framenet_heads.json` (every scalar), `framenet_max_attention.{csv,json,npy}`
/// ([layers, heads]) and `framenet_figure_maps.npy` ([layers, heads, n, n]).
struct FrameNetHeadsResult {
  std::string model;                      ///< what was analysed (a folder, or a description)
  bool causal = false;                    ///< the model attends only to earlier tokens
  FrameNetRelease release;                ///< the FrameNet read
  PaperSelectionOptions paper_options;    ///< the paper's rules as applied
  FrameNetSelectionOptions darkbert_options;  ///< darkbert's earlier selection as applied
  SelectionCount paper;                   ///< the paper's code
  SelectionCount paper_core_type;         ///< the paper's rules with the other CoreElements reading
  SelectionCount darkbert;                ///< darkbert's earlier selection
  std::map<std::string, std::size_t> paper_verdicts;  ///< annotation sets per verdict
  std::size_t sampled = 0;                ///< sentences given to the model (all, or a seeded sample)
  std::uint64_t seed = 0;                 ///< of that sample
  std::size_t dropped = 0;                ///< sentences whose spans lost every token to truncation
  std::size_t scored = 0;                 ///< sentences with a usable (target, core) pair
  std::size_t skipped = 0;                ///< sentences without one (causal models: every element after the target)
  LinkDirection direction = LinkDirection::from_to;  ///< which weight of a pair counts
  HeadMatrix<double> scores;              ///< [layers, heads] mean over sentences of the maximum link weight
  double q = 99;                          ///< the percentile
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< the q-th percentile of `scores`
  std::vector<ScoredHead<double>> top;    ///< heads strictly above the threshold, best first
  FrameNetFigure figure;                  ///< the example sentence

  /// The numbers a report states (also the body of framenet_heads.json, minus the figure's maps).
  nlohmann::json summary() const;
  /// Writes the result into `dir` (created): framenet_heads.json, framenet_max_attention.{csv,json,npy},
  /// framenet_figure_maps.npy.
  void save(const std::filesystem::path& dir) const;
  /// Reads a result written by save; errors name the file and what is wrong.
  static FrameNetHeadsResult load(const std::filesystem::path& dir);
  /// Adds another run's sentences (same model and selection, e.g. another shard of the sentences): the
  /// scores become the mean over both sets of scored sentences and the percentile is recomputed. The
  /// figure stays this one's.
  void merge(const FrameNetHeadsResult& other);
  /// Recomputes `threshold` and `top` from `scores` (done by the runner, load and merge).
  void rank();
};

namespace detail {

inline std::string_view to_string(LinkDirection d) {
  switch (d) {
    case LinkDirection::from_to: return "target_to_element";
    case LinkDirection::to_from: return "element_to_target";
    case LinkDirection::either: return "either";
  }
  return "?";
}

inline LinkDirection parse_direction(std::string_view s, const std::string& where) {
  if (s == "target_to_element") return LinkDirection::from_to;
  if (s == "element_to_target") return LinkDirection::to_from;
  if (s == "either") return LinkDirection::either;
  fail(where, ": direction '", s, "' is not target_to_element, element_to_target or either");
}

inline std::string_view to_string(CoreElements c) { return c == CoreElements::core_sets ? "core_sets" : "core_type"; }

inline CoreElements parse_core_elements(std::string_view s, const std::string& where) {
  if (s == "core_sets") return CoreElements::core_sets;
  if (s == "core_type") return CoreElements::core_type;
  fail(where, ": core '", s, "' is not core_sets or core_type");
}

/// Reads a JSON file; errors name it.
inline nlohmann::json read_study_json(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file.string(), ": cannot open (is this a result folder written by save()?)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(file.string(), ": not valid JSON: ", e.what());
  }
}

/// The value at `key` of object `j`, or an error naming the file and the key.
inline const nlohmann::json& json_at(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail(where, ": key '", key, "' missing");
  return j.at(key);
}

template <class V>
V json_get(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_at(j, key, where);
  try {
    return v.get<V>();
  } catch (const nlohmann::json::exception&) {
    fail(where, ": key '", key, "' is ", v.dump(), ", not the expected type");
  }
}

inline double json_double(const nlohmann::json& j, const char* key, const std::string& where) {
  return darkbert::detail::json_value<double>(json_at(j, key, where), where + ": " + key);
}

/// Mean of two means over na and nb examples, cell by cell (NaN cells take the other side's value).
inline void merge_means(HeadMatrix<double>& a, std::size_t na, const HeadMatrix<double>& b, std::size_t nb) {
  require(a.rows() == b.rows() && a.cols() == b.cols(), "merge: tables '", a.name, "' are ", a.rows(), " x ", a.cols(),
          " and ", b.rows(), " x ", b.cols());
  for (Index r = 0; r < a.rows(); ++r)
    for (Index c = 0; c < a.cols(); ++c) {
      const double x = a(r, c), y = b(r, c);
      if (nb == 0 || std::isnan(y)) continue;
      if (na == 0 || std::isnan(x)) {
        a(r, c) = y;
        continue;
      }
      a(r, c) = (x * static_cast<double>(na) + y * static_cast<double>(nb)) / static_cast<double>(na + nb);
    }
  a.examples = na + nb;
}

template <class T>
HeadMatrix<double> to_double(const HeadMatrix<T>& m) {
  auto out = make_table<double>(m.name, m.row_axis, m.row_names, m.col_axis, m.col_names);
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c) out(r, c) = static_cast<double>(m(r, c));
  out.examples = m.examples;
  return out;
}

inline nlohmann::json count_json(const SelectionCount& c) { return c.to_json(); }

inline SelectionCount count_from_json(const nlohmann::json& j, const std::string& where) {
  SelectionCount c;
  c.annotation_sets = json_get<std::size_t>(j, "annotation_sets", where);
  c.sentences = json_get<std::size_t>(j, "sentences", where);
  c.lexical_units = json_get<std::size_t>(j, "lexical_units", where);
  return c;
}

}  // namespace detail

inline void FrameNetHeadsResult::rank() {
  top.clear();
  threshold = std::numeric_limits<double>::quiet_NaN();
  if (scored == 0 || scores.values.size() == 0) return;
  const auto p = heads_above_percentile(scores, q);
  threshold = p.threshold;
  top = p.heads;
}

inline nlohmann::json FrameNetHeadsResult::summary() const {
  using darkbert::detail::json_number;
  nlohmann::json j;
  j["format"] = "darkbert-framenet-heads/1";
  j["model"] = model;
  j["causal"] = causal;
  j["framenet"] = {{"dir", release.dir.string()}, {"kind", release.kind}, {"version", release.version},
                   {"frames", release.frames}, {"lexical_units", release.lexical_units},
                   {"description", release.describe()}};
  j["selection"] = {
      {"paper_code",
       {{"count", detail::count_json(paper)},
        {"max_tokens", paper_options.max_tokens},
        {"max_element_tokens", paper_options.max_element_tokens},
        {"window", paper_options.window},
        {"core", detail::to_string(paper_options.core)},
        {"verdicts", paper_verdicts},
        {"paper_reported", 473},
        {"paper_framenet", "1.7"}}},
      {"paper_code_other_core",
       {{"count", detail::count_json(paper_core_type)},
        {"core", detail::to_string(paper_options.core == CoreElements::core_sets ? CoreElements::core_type
                                                                                 : CoreElements::core_sets)}}},
      {"darkbert_earlier",
       {{"count", detail::count_json(darkbert)},
        {"max_tokens", darkbert_options.max_tokens},
        {"min_core_elements", darkbert_options.min_core_elements},
        {"max_core_elements", darkbert_options.max_core_elements},
        {"max_element_tokens", darkbert_options.max_element_tokens},
        {"min_distance", darkbert_options.min_distance}}}};
  j["sentences"] = {{"sampled", sampled}, {"seed", seed}, {"dropped", dropped}, {"scored", scored}, {"skipped", skipped}};
  j["direction"] = detail::to_string(direction);
  j["percentile"] = q;
  j["threshold"] = json_number(threshold);
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& h : top) heads.push_back({{"layer", h.layer}, {"head", h.head}, {"score", json_number(h.value)}});
  j["top_heads"] = heads;
  double best = std::numeric_limits<double>::quiet_NaN(), mean = 0;
  std::size_t finite = 0;
  for (double v : scores.values)
    if (!std::isnan(v)) {
      best = std::isnan(best) ? v : std::max(best, v);
      mean += v;
      ++finite;
    }
  j["score_max"] = json_number(best);
  j["score_mean"] = json_number(finite ? mean / static_cast<double>(finite) : std::numeric_limits<double>::quiet_NaN());
  nlohmann::json fig_heads = nlohmann::json::array();
  for (const auto& h : figure.heads)
    fig_heads.push_back({{"layer", h.layer}, {"head", h.head}, {"score", json_number(h.score)}, {"above", h.above}});
  j["figure"] = {{"sentence", figure.sentence}, {"source", figure.source}, {"frame", figure.frame},
                 {"tokens", figure.tokens},     {"target", figure.target}, {"core", figure.core},
                 {"heads", fig_heads},          {"layers", figure.layers}, {"heads_per_layer", figure.heads_per_layer}};
  return j;
}

inline void FrameNetHeadsResult::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  HeadMatrix<double> m = scores;
  m.name = "framenet_max_attention";
  write_table(m, dir);
  const auto n = figure.tokens.size();
  auto maps = xt::xtensor<double, 4>::from_shape(
      {static_cast<std::size_t>(figure.layers), static_cast<std::size_t>(figure.heads_per_layer), n, n});
  require(figure.maps.size() == maps.size(), "FrameNetHeadsResult::save: the figure holds ", figure.maps.size(),
          " values for [", figure.layers, ", ", figure.heads_per_layer, ", ", n, ", ", n, "] maps");
  std::copy(figure.maps.begin(), figure.maps.end(), maps.begin());
  write_npy(dir / "framenet_figure_maps.npy", maps);
  write_file_atomically(dir / "framenet_heads.json", summary().dump(1) + "\n");  // written last: the marker
}

inline FrameNetHeadsResult FrameNetHeadsResult::load(const std::filesystem::path& dir) {
  const auto file = dir / "framenet_heads.json";
  const std::string where = file.string();
  const auto j = detail::read_study_json(file);
  require(j.value("format", "") == "darkbert-framenet-heads/1", where, ": format is ",
          j.contains("format") ? j["format"].dump() : "missing", ", expected \"darkbert-framenet-heads/1\"");
  FrameNetHeadsResult r;
  r.model = detail::json_get<std::string>(j, "model", where);
  r.causal = detail::json_get<bool>(j, "causal", where);
  const auto& fn = detail::json_at(j, "framenet", where);
  r.release.dir = detail::json_get<std::string>(fn, "dir", where);
  r.release.kind = detail::json_get<std::string>(fn, "kind", where);
  r.release.version = detail::json_get<std::string>(fn, "version", where);
  r.release.frames = detail::json_get<std::size_t>(fn, "frames", where);
  r.release.lexical_units = detail::json_get<std::size_t>(fn, "lexical_units", where);
  const auto& sel = detail::json_at(j, "selection", where);
  const auto& paper = detail::json_at(sel, "paper_code", where);
  r.paper = detail::count_from_json(detail::json_at(paper, "count", where), where + ": paper_code");
  r.paper_options.max_tokens = detail::json_get<std::size_t>(paper, "max_tokens", where);
  r.paper_options.max_element_tokens = detail::json_get<std::size_t>(paper, "max_element_tokens", where);
  r.paper_options.window = detail::json_get<std::size_t>(paper, "window", where);
  r.paper_options.core = detail::parse_core_elements(detail::json_get<std::string>(paper, "core", where), where);
  r.paper_verdicts = detail::json_get<std::map<std::string, std::size_t>>(paper, "verdicts", where);
  r.paper_core_type = detail::count_from_json(
      detail::json_at(detail::json_at(sel, "paper_code_other_core", where), "count", where), where);
  const auto& earlier = detail::json_at(sel, "darkbert_earlier", where);
  r.darkbert = detail::count_from_json(detail::json_at(earlier, "count", where), where + ": darkbert_earlier");
  r.darkbert_options.max_tokens = detail::json_get<std::size_t>(earlier, "max_tokens", where);
  r.darkbert_options.min_core_elements = detail::json_get<std::size_t>(earlier, "min_core_elements", where);
  r.darkbert_options.max_core_elements = detail::json_get<std::size_t>(earlier, "max_core_elements", where);
  r.darkbert_options.max_element_tokens = detail::json_get<std::size_t>(earlier, "max_element_tokens", where);
  r.darkbert_options.min_distance = detail::json_get<std::size_t>(earlier, "min_distance", where);
  const auto& s = detail::json_at(j, "sentences", where);
  r.sampled = detail::json_get<std::size_t>(s, "sampled", where);
  r.seed = detail::json_get<std::uint64_t>(s, "seed", where);
  r.dropped = detail::json_get<std::size_t>(s, "dropped", where);
  r.scored = detail::json_get<std::size_t>(s, "scored", where);
  r.skipped = detail::json_get<std::size_t>(s, "skipped", where);
  r.direction = detail::parse_direction(detail::json_get<std::string>(j, "direction", where), where);
  r.q = detail::json_double(j, "percentile", where);
  r.scores = read_json_table<double>(dir / "framenet_max_attention.json");
  r.scores.name = "framenet_max_attention";
  r.rank();
  const auto& f = detail::json_at(j, "figure", where);
  r.figure.sentence = detail::json_get<std::string>(f, "sentence", where);
  r.figure.source = detail::json_get<std::string>(f, "source", where);
  r.figure.frame = detail::json_get<std::string>(f, "frame", where);
  r.figure.tokens = detail::json_get<std::vector<std::string>>(f, "tokens", where);
  r.figure.target = detail::json_get<std::vector<Index>>(f, "target", where);
  r.figure.core = detail::json_get<std::vector<Index>>(f, "core", where);
  r.figure.layers = detail::json_get<Index>(f, "layers", where);
  r.figure.heads_per_layer = detail::json_get<Index>(f, "heads_per_layer", where);
  for (const auto& h : detail::json_at(f, "heads", where)) {
    FigureHead fh;
    fh.layer = detail::json_get<Index>(h, "layer", where);
    fh.head = detail::json_get<Index>(h, "head", where);
    fh.score = detail::json_double(h, "score", where);
    fh.above = detail::json_get<bool>(h, "above", where);
    r.figure.heads.push_back(fh);
  }
  const auto maps_file = dir / "framenet_figure_maps.npy";
  const auto maps = read_npy<double>(maps_file);
  const auto n = r.figure.tokens.size();
  require(maps.dimension() == 4 && maps.shape(0) == static_cast<std::size_t>(r.figure.layers) &&
              maps.shape(1) == static_cast<std::size_t>(r.figure.heads_per_layer) && maps.shape(2) == n &&
              maps.shape(3) == n,
          maps_file.string(), ": expected [", r.figure.layers, ", ", r.figure.heads_per_layer, ", ", n, ", ", n,
          "] figure maps");
  r.figure.maps.assign(maps.begin(), maps.end());
  require((r.scores.rows() == r.figure.layers && r.scores.cols() == r.figure.heads_per_layer) || r.figure.layers == 0,
          where, ": the scores are ", r.scores.rows(), " x ", r.scores.cols(), " but the figure's maps are ",
          r.figure.layers, " x ", r.figure.heads_per_layer);
  return r;
}

inline void FrameNetHeadsResult::merge(const FrameNetHeadsResult& other) {
  require(other.scores.rows() == scores.rows() && other.scores.cols() == scores.cols(),
          "FrameNetHeadsResult::merge: ", scores.rows(), " x ", scores.cols(), " heads against ", other.scores.rows(),
          " x ", other.scores.cols());
  require(other.direction == direction && other.q == q, "FrameNetHeadsResult::merge: the runs differ in direction or percentile");
  detail::merge_means(scores, scored, other.scores, other.scored);
  sampled += other.sampled;
  dropped += other.dropped;
  scored += other.scored;
  skipped += other.skipped;
  rank();
}

// ---------------------------------------------------------------- running it

/// How run_framenet_heads samples, scores and draws.
struct FrameNetHeadsOptions {
  std::size_t max_sentences = 0;   ///< score at most this many selected sentences (0 = all), a seeded sample
  std::uint64_t seed = 0;          ///< of that sample
  std::size_t max_length = 64;     ///< tokens per sentence (FrameNet sentences of <= 12 words never reach it)
  double percentile = 99;          ///< heads strictly above this percentile of the scores are the top heads
  LinkDirection direction = LinkDirection::from_to;  ///< which weight of a (target, element) pair counts
  std::size_t figure_heads = 2;    ///< draw at least this many heads (the top ones, then the next best)
  std::size_t max_figure_heads = 4;  ///< and at most this many
  std::size_t batch_size = 16;     ///< sentences per forward pass
  std::string model;               ///< recorded in the result (e.g. the model folder)
  FigureSentence figure;           ///< used when the selections did not find the figure sentence
};

/// Scores every head on the selected sentences (`selections.paper`), ranks them, and runs the figure
/// sentence. `forward` may add hooks or masking policies (tests plant a head that way).
/// @code
/// auto r = darkbert::study::run_framenet_heads(model, tokenizer, selections, {.max_sentences = 1000, .seed = 1});
/// for (const auto& h : r.top) std::cout << h.layer << ":" << h.head << " " << h.value << "\n";
/// @endcode
template <class T>
FrameNetHeadsResult run_framenet_heads(const Transformer<T>& model, const Tokenizer& tokenizer,
                                       const FrameNetSelections& selections, const FrameNetHeadsOptions& options = {},
                                       ForwardOptions<T> forward = attention_only_options<T>()) {
  require(options.percentile >= 0 && options.percentile <= 100, "run_framenet_heads: percentile ",
          options.percentile, " is outside [0, 100]");
  const auto& config = model.config();
  FrameNetHeadsResult r;
  r.model = options.model;
  r.causal = config.causal;
  r.release = selections.release;
  r.paper_options = selections.paper_options;
  r.darkbert_options = selections.darkbert_options;
  r.paper = selections.paper_count;
  r.paper_core_type = selections.paper_core_type_count;
  r.darkbert = selections.darkbert_count;
  r.paper_verdicts = selections.paper_verdicts;
  r.seed = options.seed;
  r.direction = options.direction;
  r.q = options.percentile;

  // The sentences: all, or a seeded sample kept in selection order.
  std::vector<FrameNetExample> chosen;
  const std::size_t total = selections.paper.size();
  if (options.max_sentences > 0 && options.max_sentences < total) {
    auto order = seeded_permutation(total, options.seed);
    order.resize(options.max_sentences);
    std::sort(order.begin(), order.end());
    for (std::size_t i : order) chosen.push_back(selections.paper[i]);
  } else {
    chosen = selections.paper;
  }
  r.sampled = chosen.size();
  const auto encoded = encode_framenet_examples(tokenizer, chosen, config, options.max_length);
  r.dropped = encoded.dropped;
  const auto layers = static_cast<Index>(config.num_layers), heads = static_cast<Index>(config.num_heads);
  LinkAttentionAccumulator<T> acc(layers, heads, options.direction, "framenet_max_attention");
  if (encoded.inputs.size() > 0)
    for_each_attention(
        model, encoded.inputs,
        [&](std::size_t i, const AttentionView<T>& view) { acc.add(view, encoded.links[i]); }, options.batch_size,
        forward);
  r.scores = detail::to_double(acc.result());
  r.scored = acc.examples();
  r.skipped = acc.skipped();
  r.rank();

  // The figure sentence: FrameNet's annotation of it when the release has it, else its fields.
  FrameNetExample fig = selections.figure ? *selections.figure : figure_example_from_fields(options.figure);
  auto& f = r.figure;
  f.sentence = detail::collapse_spaces(fig.text);
  f.frame = fig.frame;
  f.source = selections.figure ? "FrameNet lexical unit " + std::to_string(fig.lu_id) + " (" + fig.lu_name +
                                     "), sentence " + std::to_string(fig.sentence_id) + ", annotation set " +
                                     std::to_string(fig.annotation_id)
                               : "not in this FrameNet; encoded from its words (target '" + options.figure.target +
                                     "', frame " + options.figure.frame + ")";
  const auto fig_in = encode_framenet_examples(tokenizer, {fig}, config, options.max_length);
  require(fig_in.inputs.size() == 1, "run_framenet_heads: the figure sentence '", fig.text,
          "' lost its target or core elements in encoding");
  f.tokens = fig_in.inputs.texts.encodings[0].tokens;
  std::set<Index> core;
  for (const auto& link : fig_in.links[0]) core.insert(link.to.begin(), link.to.end());
  f.target = fig_in.links[0].front().from;
  f.core.assign(core.begin(), core.end());
  f.layers = layers;
  f.heads_per_layer = heads;
  for_each_attention(
      model, fig_in.inputs,
      [&](std::size_t, const AttentionView<T>& view) {
        const Index n = view.length();
        f.tokens.resize(static_cast<std::size_t>(n));
        f.maps.assign(static_cast<std::size_t>(layers * heads * n * n), 0.0);
        for (Index l = 0; l < layers; ++l)
          for (Index h = 0; h < heads; ++h)
            for (Index i = 0; i < n; ++i)
              for (Index j = 0; j < n; ++j)
                f.maps[static_cast<std::size_t>(((l * heads + h) * n + i) * n + j)] = static_cast<double>(view(l, h, i, j));
      },
      1, forward);
  // The top heads, topped up with the next best to at least figure_heads.
  std::vector<ScoredHead<double>> ranked;
  for (Index l = 0; l < layers; ++l)
    for (Index h = 0; h < heads; ++h)
      if (!std::isnan(r.scores(l, h))) ranked.push_back({l, h, r.scores(l, h)});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.value > b.value; });
  const std::size_t wanted =
      std::min(options.max_figure_heads, std::max(options.figure_heads, r.top.size()));
  for (std::size_t k = 0; k < ranked.size() && k < wanted; ++k)
    f.heads.push_back({ranked[k].layer, ranked[k].head, ranked[k].value, k < r.top.size()});
  return r;
}

// ---------------------------------------------------------------- figures

/// Writes the section's figures into `dir`, each as PNG and SVG: `framenet_heads` (the layer x head
/// heatmap of the scores, as the paper's Figure 3), `framenet_example_L<l>_H<h>` (each figure head's full
/// map on the example sentence, its tokens on both axes) and `framenet_example_all_heads` (every head's map
/// on that sentence, layers x heads). Layers and heads are counted from 0, as in the CSV files.
inline void write_framenet_figures(const FrameNetHeadsResult& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  HeatmapOptions o;
  o.title = "Max attention target -> core frame element (" + std::to_string(r.scored) + " FrameNet " +
            r.release.version + " sentences)";
  o.x = {"head", {}, 0};
  o.y = {"layer", {}, 0};
  o.value_label = "mean max attention";
  Matrix<double> m(r.scores.rows(), r.scores.cols());
  for (Index l = 0; l < m.rows(); ++l)
    for (Index h = 0; h < m.cols(); ++h) m(l, h) = r.scores(l, h);
  for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (std::string("framenet_heads") + ext), m, o);

  const auto& f = r.figure;
  if (f.tokens.empty() || f.layers == 0) return;
  for (const auto& h : f.heads) {
    HeatmapOptions e;
    e.title = "Head " + std::to_string(h.layer) + ":" + std::to_string(h.head) + " on \"" + f.sentence + "\"" +
              (h.above ? "" : " (not above the percentile)");
    e.x = {"key token", f.tokens, 0};
    e.y = {"query token", f.tokens, 0};
    e.value_label = "attention weight";
    e.vmin = 0;
    e.vmax = 1;
    const auto stem = "framenet_example_L" + std::to_string(h.layer) + "_H" + std::to_string(h.head);
    for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (stem + ext), f.map(h.layer, h.head), e);
  }
  AttentionGridOptions g;
  g.title = "Every head on \"" + f.sentence + "\"";
  g.vmin = 0;
  g.vmax = 1;
  const auto n = static_cast<Index>(f.tokens.size());
  for (const char* ext : {".png", ".svg"})
    write_attention_grid(dir / (std::string("framenet_example_all_heads") + ext), f.layers, f.heads_per_layer, n, n,
                         f.maps.data(), g);
}

/// Writes the selected sentences as JSON lines (one per annotation set: ids, text, target and core-element
/// token indices and spans), the data behind the counts.
inline void write_framenet_selection(const std::vector<FrameNetExample>& examples, const std::filesystem::path& file) {
  std::string text;
  for (const auto& ex : examples) {
    nlohmann::json j;
    j["lu_id"] = ex.lu_id;
    j["lu"] = ex.lu_name;
    j["frame"] = ex.frame;
    j["sentence_id"] = ex.sentence_id;
    j["annotation_id"] = ex.annotation_id;
    j["text"] = ex.text;
    j["target_tokens"] = ex.target_tokens;
    nlohmann::json links = nlohmann::json::array();
    for (const auto& l : ex.core_elements)
      links.push_back({{"element", l.element}, {"bytes", {l.span.begin, l.span.end}}, {"tokens", l.tokens},
                       {"distance", l.distance}});
    j["core_elements"] = links;
    text += j.dump() + "\n";
  }
  write_file_atomically(file, text);
}

}  // namespace darkbert::study
