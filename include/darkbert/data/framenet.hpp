#pragma once
/// @file
/// FrameNet releases in the fndata-1.x layout (1.5 and 1.7 share it): `frame/<Frame>.xml` defines a frame's
/// elements and whether each is core; `lu/lu<ID>.xml` holds a lexical unit with its exemplar sentences, each
/// with a Target layer (the frame-evoking word) and FE layers (frame-element spans).
///
/// @code
/// darkbert::FrameNet fn(darkbert::framenet_sample_dir(root));
/// fn.for_each_lexical_unit([&](const darkbert::LexicalUnit& lu) {
///   for (const auto& s : lu.sentences) for (const auto& a : s.annotations) use(s.text, a.target, a.elements);
/// });
/// auto picked = darkbert::select_framenet_examples(fn);   // the paper's selection (see below)
/// @endcode
///
/// Offsets: FrameNet counts characters with an inclusive end; this reader converts them to half-open UTF-8
/// byte spans (darkbert::Span) into the sentence text, ready for projection onto tokenizer offsets.

#include <pugixml.hpp>  // pugi::xml_document (XML parsing)

#include <algorithm>    // std::sort, std::min
#include <charconv>     // std::from_chars
#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <filesystem>   // std::filesystem::path, directory_iterator
#include <functional>   // std::function
#include <iostream>     // std::clog
#include <map>          // std::map
#include <optional>     // std::optional
#include <ostream>      // std::ostream
#include <set>          // std::set
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/tsv.hpp"
#include "darkbert/tokenizer/encoding.hpp"

namespace darkbert {

/// FrameNet's coreType of a frame element. Core and Core-Unexpressed count as core.
enum class CoreType { core, core_unexpressed, peripheral, extra_thematic, other };

/// A frame element as its frame defines it.
struct FrameElementInfo {
  int id = 0;  ///<  FrameNet's ID
  /// @{
  /// full and abbreviated name
  std::string name, abbrev;
  /// @}
  CoreType core_type = CoreType::other;  ///<  core, peripheral, …
  /// Core or core-unexpressed.
  bool is_core() const { return core_type == CoreType::core || core_type == CoreType::core_unexpressed; }
};

/// A frame: its name and elements.
struct FrameInfo {
  int id = 0;  ///<  FrameNet's ID
  std::string name;  ///<  e.g. "Birth_scenario"
  std::vector<FrameElementInfo> elements;  ///<  every element of the frame
  /// The frame's `<FEcoreSet>` groups (element names): core elements of which one suffices, e.g. Stimulus or
  /// Topic in Emotion_directed. Many frames have none. NLTK calls them `FEcoreSets`.
  std::vector<std::vector<std::string>> core_sets;
  /// The element named `fe_name`, or null.
  const FrameElementInfo* element(std::string_view fe_name) const {
    for (const auto& e : elements)
      if (e.name == fe_name) return &e;
    return nullptr;
  }
  /// Whether `fe_name` belongs to one of the frame's core sets.
  bool in_core_set(std::string_view fe_name) const {
    for (const auto& set : core_sets)
      for (const auto& n : set)
        if (n == fe_name) return true;
    return false;
  }
};

/// One frame-element label of an annotation set.
struct FrameElementSpan {
  std::string name;  ///<  the element's name
  int fe_id = 0;  ///<  the element's FrameNet ID
  Span span;                       ///< UTF-8 bytes of the sentence text; {0,0} when not overt
  std::string null_instantiation;  ///< "" when overt, else FrameNet's itype (INI, DNI, CNI, INC)
  int layer_rank = 1;              ///< 1 = the main FE layer; 2+ = secondary FE layers
  /// Whether the element is expressed in the text.
  bool overt() const { return null_instantiation.empty(); }
};

/// One annotationSet with a Target layer: the frame-evoking target (possibly discontinuous) and its FEs.
struct FrameAnnotationSet {
  int id = 0;  ///<  FrameNet's annotationSet ID
  std::string status;            ///< MANUAL, AUTO_EDITED, ...
  std::vector<Span> target;      ///< one span per Target label, in text order
  std::vector<FrameElementSpan> elements;  ///<  the frame-element labels
};

/// An exemplar sentence of a lexical unit and its annotation sets.
struct FrameNetSentence {
  int id = 0;  ///<  FrameNet's sentence ID
  std::string text;  ///<  the sentence, UTF-8
  std::vector<FrameAnnotationSet> annotations;  ///< only sets with a Target layer (POS-only sets are skipped)
};

/// A lexical unit (a word in one of its frames) with its exemplar sentences.
struct LexicalUnit {
  int id = 0;  ///<  FrameNet's ID
  std::string name;   ///< e.g. "neonate.n"
  std::string pos;    ///< e.g. "N"
  std::string frame;  ///< frame name
  int frame_id = 0;  ///<  ID of the frame
  std::string status;  ///<  FrameNet's status, e.g. "Finished_Initial"
  std::vector<FrameNetSentence> sentences;  ///<  the exemplar sentences
  std::filesystem::path file;  ///<  the lu file it was read from
};

namespace detail {

inline std::size_t line_of_offset(std::string_view buffer, std::ptrdiff_t offset) {
  if (offset < 0) return 0;
  std::size_t line = 1;
  const auto end = std::min<std::size_t>(static_cast<std::size_t>(offset), buffer.size());
  for (std::size_t i = 0; i < end; ++i) line += buffer[i] == '\n';
  return line;
}

/// An XML file loaded with errors that name the file and line.
class XmlFile {
 public:
  explicit XmlFile(std::filesystem::path file) : file_(std::move(file)) {
    buffer_ = read_whole_file(file_);
    auto result = doc_.load_buffer(buffer_.data(), buffer_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!result)
      fail(file_.string(), ":", line_of_offset(buffer_, result.offset), ": XML error: ", result.description());
  }
  const pugi::xml_document& doc() const { return doc_; }
  std::string where(const pugi::xml_node& node) const {
    return file_.string() + ":" + std::to_string(line_of_offset(buffer_, node.offset_debug()));
  }
  int int_attribute(const pugi::xml_node& node, const char* name) const {
    const auto attr = node.attribute(name);
    if (!attr) fail(where(node), ": <", node.name(), "> has no ", name, " attribute");
    int value = 0;
    std::string_view text(attr.value());
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      fail(where(node), ": <", node.name(), "> attribute ", name, "=\"", text, "\" is not an integer");
    return value;
  }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::string buffer_;
  pugi::xml_document doc_;
};

inline CoreType parse_core_type(std::string_view text) {
  if (text == "Core") return CoreType::core;
  if (text == "Core-Unexpressed") return CoreType::core_unexpressed;
  if (text == "Peripheral") return CoreType::peripheral;
  if (text == "Extra-Thematic") return CoreType::extra_thematic;
  return CoreType::other;
}

/// Byte offset of every code point start, plus the text size at the end (index = character offset).
inline std::vector<std::size_t> char_to_byte(std::string_view text) {
  std::vector<std::size_t> starts;
  starts.reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  starts.push_back(text.size());
  return starts;
}

}  // namespace detail

/// Reads `frame/<Frame>.xml`.
inline FrameInfo read_frame_file(const std::filesystem::path& file) {
  detail::XmlFile xml(file);
  const auto root = xml.doc().child("frame");
  if (!root) fail(file.string(), ": not a FrameNet frame file (no <frame> root element)");
  FrameInfo frame;
  frame.id = xml.int_attribute(root, "ID");
  frame.name = root.attribute("name").value();
  for (auto fe : root.children("FE")) {
    FrameElementInfo e;
    e.id = xml.int_attribute(fe, "ID");
    e.name = fe.attribute("name").value();
    e.abbrev = fe.attribute("abbrev").value();
    if (!fe.attribute("coreType")) fail(xml.where(fe), ": <FE name=\"", e.name, "\"> has no coreType attribute");
    e.core_type = detail::parse_core_type(fe.attribute("coreType").value());
    frame.elements.push_back(std::move(e));
  }
  for (auto set : root.children("FEcoreSet")) {
    std::vector<std::string> members;
    for (auto m : set.children("memberFE")) members.emplace_back(m.attribute("name").value());
    if (!members.empty()) frame.core_sets.push_back(std::move(members));
  }
  return frame;
}

/// Reads `lu/lu<ID>.xml`: the lexical unit and its exemplar sentences with Target and FE spans.
inline LexicalUnit read_lexical_unit_file(const std::filesystem::path& file) {
  detail::XmlFile xml(file);
  const auto root = xml.doc().child("lexUnit");
  if (!root) fail(file.string(), ": not a FrameNet lexical-unit file (no <lexUnit> root element)");
  LexicalUnit lu;
  lu.file = file;
  lu.id = xml.int_attribute(root, "ID");
  lu.name = root.attribute("name").value();
  lu.pos = root.attribute("POS").value();
  lu.frame = root.attribute("frame").value();
  lu.frame_id = root.attribute("frameID").as_int();
  lu.status = root.attribute("status").value();
  for (auto sub : root.children("subCorpus")) {
    for (auto sn : sub.children("sentence")) {
      FrameNetSentence sentence;
      sentence.id = xml.int_attribute(sn, "ID");
      const auto text_node = sn.child("text");
      if (!text_node) fail(xml.where(sn), ": <sentence ID=\"", sentence.id, "\"> has no <text>");
      sentence.text = text_node.text().get();
      const auto offsets = detail::char_to_byte(sentence.text);
      const std::size_t n_chars = offsets.size() - 1;
      auto to_span = [&](const pugi::xml_node& label) {
        const int start = xml.int_attribute(label, "start"), end = xml.int_attribute(label, "end");
        if (start < 0 || end < start - 1 || static_cast<std::size_t>(end) >= n_chars)
          fail(xml.where(label), ": label '", label.attribute("name").value(), "' [", start, ", ", end,
               "] does not fit sentence ", sentence.id, " (", n_chars, " characters)");
        return Span{offsets[static_cast<std::size_t>(start)], offsets[static_cast<std::size_t>(end) + 1]};
      };
      for (auto as : sn.children("annotationSet")) {
        FrameAnnotationSet set;
        bool has_target = false;
        for (auto layer : as.children("layer")) {
          const std::string_view name = layer.attribute("name").value();
          if (name == "Target") {
            for (auto label : layer.children("label")) {
              set.target.push_back(to_span(label));
              has_target = true;
            }
          } else if (name == "FE") {
            const int rank = layer.attribute("rank").as_int(1);
            for (auto label : layer.children("label")) {
              FrameElementSpan e;
              e.name = label.attribute("name").value();
              e.fe_id = label.attribute("feID").as_int();
              e.layer_rank = rank;
              e.null_instantiation = label.attribute("itype").value();
              if (e.null_instantiation.empty()) e.span = to_span(label);
              set.elements.push_back(std::move(e));
            }
          }
        }
        if (!has_target) continue;
        set.id = xml.int_attribute(as, "ID");
        set.status = as.attribute("status").value();
        std::sort(set.target.begin(), set.target.end(),
                  [](const Span& a, const Span& b) { return a.begin < b.begin; });
        sentence.annotations.push_back(std::move(set));
      }
      lu.sentences.push_back(std::move(sentence));
    }
  }
  return lu;
}

/// A FrameNet release folder (holding frame/ and lu/): all frames in memory, lexical units read on demand.
///
/// @code
/// darkbert::FrameNet fn("/data/fndata-1.7");
/// const auto& frame = fn.frame("Emotion_directed");
/// @endcode
class FrameNet {
 public:
  /// Opens a release folder (frame/ and lu/); throws naming what is missing.
  explicit FrameNet(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    require(std::filesystem::is_directory(dir_ / "frame", ec) && std::filesystem::is_directory(dir_ / "lu", ec),
            dir_.string(), ": not a FrameNet release folder (needs frame/ and lu/ subfolders)");
    std::vector<std::filesystem::path> frame_files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "frame"))
      if (entry.path().extension() == ".xml") frame_files.push_back(entry.path());
    std::sort(frame_files.begin(), frame_files.end());
    for (const auto& f : frame_files) {
      auto frame = read_frame_file(f);
      auto name = frame.name;
      frames_.emplace(std::move(name), std::move(frame));
    }
    std::vector<std::pair<long, std::filesystem::path>> lus;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "lu")) {
      const auto stem = entry.path().stem().string();
      if (entry.path().extension() != ".xml" || stem.rfind("lu", 0) != 0) continue;
      long id = 0;
      auto [end, errc] = std::from_chars(stem.data() + 2, stem.data() + stem.size(), id);
      if (errc != std::errc() || end != stem.data() + stem.size()) continue;
      lus.emplace_back(id, entry.path());
    }
    std::sort(lus.begin(), lus.end());
    for (auto& [id, path] : lus) lu_files_.push_back(std::move(path));
  }

  /// The release folder.
  const std::filesystem::path& dir() const { return dir_; }
  /// Number of frame files.
  std::size_t frame_count() const { return frames_.size(); }
  /// Every frame, by name (read on first use).
  const std::map<std::string, FrameInfo>& frames() const { return frames_; }
  /// The frame called `name`, or null.
  const FrameInfo* find_frame(std::string_view name) const {
    auto it = frames_.find(std::string(name));
    return it == frames_.end() ? nullptr : &it->second;
  }
  /// The frame called `name`; throws if there is none.
  const FrameInfo& frame(std::string_view name) const {
    if (const auto* f = find_frame(name)) return *f;
    fail(dir_.string(), ": no frame file frame/", name, ".xml");
  }
  /// The frame a lexical unit belongs to; throws, naming the lexical unit's file, if its frame file is missing.
  const FrameInfo& frame_of(const LexicalUnit& lu) const {
    if (const auto* f = find_frame(lu.frame)) return *f;
    fail(lu.file.string(), ": lexical unit ", lu.name, " belongs to frame '", lu.frame, "' but ",
         (dir_ / "frame" / (lu.frame + ".xml")).string(), " does not exist");
  }
  /// `lu/lu<ID>.xml` files in increasing ID order.
  const std::vector<std::filesystem::path>& lexical_unit_files() const { return lu_files_; }

  /// Reads the lexical units one at a time (the release does not fit in memory at once) and calls `callback` on each.
  void for_each_lexical_unit(const std::function<void(const LexicalUnit&)>& callback) const {
    for (const auto& f : lu_files_) callback(read_lexical_unit_file(f));
  }

 private:
  std::filesystem::path dir_;
  std::map<std::string, FrameInfo> frames_;
  std::vector<std::filesystem::path> lu_files_;
};

/// The sample in the data root: framenet/sample/fndata-1.7 if present, else framenet/sample/fndata-1.5.
inline std::filesystem::path framenet_sample_dir(const DataRoot& root) {
  if (auto p = root.try_find("framenet/sample/fndata-1.7")) return *p;
  return root.find("framenet/sample/fndata-1.5", "FrameNet sample", framenet_hint);
}

/// A full release: an unpacked folder in the data root (framenet/fndata-1.7, framenet/framenet_v17 as NLTK
/// ships it, framenet/fndata-1.5), else an archive (framenet/fndata-1.7.tar.xz, then
/// framenet/fndata-1.5-lu-frame.tar.xz) unpacked on first use into `<cache>/framenet/<archive stem>/`.
inline std::filesystem::path framenet_release_dir(const DataRoot& root, std::ostream* log = &std::clog) {
  for (const char* rel : {"framenet/fndata-1.7", "framenet/framenet_v17", "framenet/fndata-1.5"})
    if (auto p = root.try_find(rel)) {
      std::error_code ec;
      if (std::filesystem::is_directory(*p / "lu", ec)) return *p;
    }
  for (const char* rel : {"framenet/fndata-1.7.tar.xz", "framenet/fndata-1.5-lu-frame.tar.xz"}) {
    auto archive = root.try_find(rel);
    if (!archive) continue;
    std::string stem = archive->filename().string();
    stem = stem.substr(0, stem.size() - std::string_view(".tar.xz").size());
    const auto unpacked = extract_once(*archive, root.cache_dir() / "framenet" / stem, log);
    for (const auto& entry : std::filesystem::directory_iterator(unpacked)) {
      std::error_code ec;
      if (entry.is_directory(ec) && std::filesystem::is_directory(entry.path() / "lu", ec)) return entry.path();
    }
    fail(unpacked.string(), ": unpacked ", archive->string(), " but found no release folder with lu/ in it");
  }
  fail(root.not_found_message("framenet/fndata-1.7.tar.xz", "FrameNet full release (folder or archive)", framenet_hint));
}

// ---------------------------------------------------------------- the paper's sentence selection

/// Parameters of select_framenet_examples. Defaults follow the paper (Kovaleva et al. 2019, sec. 4.2):
/// sentences of at most 12 tokens, at most 3 core frame elements, and every target-element link at least
/// 2 tokens long. max_element_tokens reproduces the other reading of the paper's "frame elements of 3 tokens
/// or less" (each core element at most N tokens long); 0 disables it.
struct FrameNetSelectionOptions {
  std::size_t max_tokens = 12;         ///< sentence length in whitespace tokens
  std::size_t min_core_elements = 1;   ///< need at least one link
  std::size_t max_core_elements = 3;   ///< overt core elements in the annotation set (0 = no limit)
  std::size_t max_element_tokens = 0;  ///< length limit of each core element in tokens (0 = no limit)
  std::size_t min_distance = 2;        ///< token distance target <-> every core element (1 = adjacent)
};

/// A target-element link of a selected sentence.
struct FrameNetLink {
  std::string element;              ///< frame-element name
  Span span;                        ///< bytes of the text
  std::vector<std::size_t> tokens;  ///< indices into FrameNetExample::tokens
  std::size_t distance = 0;         ///< min |i - j| over target token i and element token j (0 = overlap)
};

/// One selected sentence with its target and core frame elements as byte spans (the §3.2 data).
struct FrameNetExample {
  int lu_id = 0;  ///<  ID of the lexical unit
  /// @{
  /// names of the lexical unit and its frame
  std::string lu_name, frame;
  /// @}
  /// @{
  /// FrameNet IDs of the sentence and the annotation set
  int sentence_id = 0, annotation_id = 0;
  /// @}
  std::string text;  ///<  the sentence, UTF-8
  std::vector<Span> tokens;                 ///< whitespace tokens, bytes of text
  std::vector<std::size_t> target_tokens;   ///< token indices of the target (may be discontinuous)
  std::vector<Span> target;                 ///< target byte spans
  std::vector<FrameNetLink> core_elements;  ///< overt core elements of FE layer rank 1
};

/// Whitespace tokens of a text (FrameNet exemplar text is already tokenized with spaces).
inline std::vector<Span> whitespace_tokens(std::string_view text) {
  std::vector<Span> out;
  std::size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    if (i == text.size()) break;
    std::size_t j = i;
    while (j < text.size() && !space(text[j])) ++j;
    out.push_back({i, j});
    i = j;
  }
  return out;
}

namespace detail {

inline std::vector<std::size_t> tokens_overlapping(const std::vector<Span>& tokens, Span span) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < tokens.size(); ++k)
    if (tokens[k].begin < span.end && span.begin < tokens[k].end) out.push_back(k);
  return out;
}

inline std::size_t token_distance(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  std::size_t best = static_cast<std::size_t>(-1);
  for (auto i : a)
    for (auto j : b) best = std::min(best, i > j ? i - j : j - i);
  return best;
}

}  // namespace detail

/// Applies the selection to one annotation set; nullopt when it does not qualify. Rules, in order:
/// text has at most max_tokens whitespace tokens; the target covers at least one token; the overt core
/// elements (coreType Core or Core-Unexpressed in the frame file, FE layer rank 1, each covering at least
/// one token) number min_core_elements..max_core_elements; each is at most max_element_tokens long (if set)
/// and at least min_distance tokens from the target.
inline std::optional<FrameNetExample> select_framenet_example(const LexicalUnit& lu, const FrameInfo& frame,
                                                              const FrameNetSentence& sentence,
                                                              const FrameAnnotationSet& set,
                                                              const FrameNetSelectionOptions& options = {}) {
  FrameNetExample ex;
  ex.tokens = whitespace_tokens(sentence.text);
  if (ex.tokens.empty() || ex.tokens.size() > options.max_tokens) return std::nullopt;
  std::set<std::size_t> target;
  for (const auto& span : set.target)
    for (auto k : detail::tokens_overlapping(ex.tokens, span)) target.insert(k);
  if (target.empty()) return std::nullopt;
  ex.target_tokens.assign(target.begin(), target.end());
  ex.target = set.target;
  for (const auto& e : set.elements) {
    if (!e.overt() || e.layer_rank != 1) continue;
    const auto* info = frame.element(e.name);
    if (info == nullptr || !info->is_core()) continue;
    FrameNetLink link;
    link.element = e.name;
    link.span = e.span;
    link.tokens = detail::tokens_overlapping(ex.tokens, e.span);
    if (link.tokens.empty()) return std::nullopt;
    if (options.max_element_tokens != 0 && link.tokens.size() > options.max_element_tokens) return std::nullopt;
    link.distance = detail::token_distance(ex.target_tokens, link.tokens);
    if (link.distance < options.min_distance) return std::nullopt;
    ex.core_elements.push_back(std::move(link));
  }
  if (ex.core_elements.size() < options.min_core_elements) return std::nullopt;
  if (options.max_core_elements != 0 && ex.core_elements.size() > options.max_core_elements) return std::nullopt;
  ex.lu_id = lu.id;
  ex.lu_name = lu.name;
  ex.frame = lu.frame;
  ex.sentence_id = sentence.id;
  ex.annotation_id = set.id;
  ex.text = sentence.text;
  return ex;
}

/// Runs the selection over every lexical unit of a release (one example per qualifying annotation set), in
/// lexical-unit ID order. `progress` (may be null) gets a line every 1000 lexical units.
inline std::vector<FrameNetExample> select_framenet_examples(const FrameNet& fn,
                                                             const FrameNetSelectionOptions& options = {},
                                                             std::ostream* progress = nullptr) {
  std::vector<FrameNetExample> out;
  std::size_t done = 0;
  const std::size_t total = fn.lexical_unit_files().size();
  fn.for_each_lexical_unit([&](const LexicalUnit& lu) {
    const FrameInfo& frame = fn.frame_of(lu);
    for (const auto& s : lu.sentences)
      for (const auto& a : s.annotations)
        if (auto ex = select_framenet_example(lu, frame, s, a, options)) out.push_back(std::move(*ex));
    if (progress != nullptr && (++done % 1000 == 0 || done == total))
      *progress << "framenet: " << done << "/" << total << " lexical units, " << out.size() << " selected" << std::endl;
  });
  return out;
}

}  // namespace darkbert
