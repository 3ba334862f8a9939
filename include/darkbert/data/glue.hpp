#pragma once
/// @file
/// The seven GLUE tasks of "Revealing the Dark Secrets of BERT": MRPC, STS-B, SST-2, QQP, RTE, QNLI, MNLI.
/// Reads the official GLUE TSV files (as written by GLUE's download_glue_data.py) and the Hugging Face export
/// of RTE in glue/RTE-hf; columns are found by header name, so the column order may vary between copies.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto dev = darkbert::load_glue(root, darkbert::GlueTask::mrpc, "dev");
/// for (const auto& ex : dev.examples) use(ex.text_a, ex.text_b, ex.label);
/// auto ft = darkbert::load_glue_finetune(root, darkbert::GlueTask::qnli, {.max_train = 3000, .max_eval = 500});
/// @endcode
///
/// Layouts and labels (label index = position in GlueTaskInfo::labels, the order of the original BERT
/// run_classifier processors):
/// @code
/// MRPC   Quality, #1 ID, #2 ID, #1 String, #2 String          labels "0","1" (1 = paraphrase)
/// STS-B  index, genre, ..., sentence1, sentence2, score       score in [0, 5] (regression)
/// SST-2  sentence, label                                      labels "0","1" (1 = positive); single text
/// QQP    id, qid1, qid2, question1, question2, is_duplicate   labels "0","1" (1 = duplicate)
/// RTE    index, sentence1, sentence2, label                   labels entailment, not_entailment
/// RTE-hf sentence1, sentence2, label (0/1), idx; CSV quoting  0 = entailment, 1 = not_entailment
/// QNLI   index, question, sentence, label                     labels entailment, not_entailment
/// MNLI   ..., sentence1, sentence2, ..., gold_label           labels contradiction, entailment, neutral
/// @endcode
/// Metrics (GLUE's): MRPC and QQP accuracy + F1 of class 1; STS-B Pearson + Spearman; the rest accuracy.
///
/// Files: `glue/<folder>/<split>.tsv` with folder MRPC, STS-B, SST-2, QQP, RTE (else RTE-hf), QNLI, MNLI and
/// split train / dev (MNLI: train / dev_matched / dev_mismatched). Texts are kept byte for byte (SST-2's
/// trailing space included).

#include <algorithm>    // std::sort, std::min, std::max
#include <array>        // std::array
#include <cctype>       // std::tolower
#include <charconv>     // std::from_chars
#include <cmath>        // std::isfinite, std::ceil
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t (seeds)
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream (header peek)
#include <optional>     // std::optional
#include <sstream>      // std::ostringstream (error messages)
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/seeded_shuffle.hpp"
#include "darkbert/data/tsv.hpp"

namespace darkbert {

/// The GLUE tasks darkbert reads.
enum class GlueTask { mrpc, stsb, sst2, qqp, rte, qnli, mnli };
/// The metrics GLUE reports.
enum class GlueMetric { accuracy, f1, pearson, spearman };

/// Every GlueTask, in GLUE's order.
inline constexpr std::array<GlueTask, 7> all_glue_tasks = {GlueTask::mrpc, GlueTask::stsb, GlueTask::sst2,
                                                           GlueTask::qqp,  GlueTask::rte,  GlueTask::qnli,
                                                           GlueTask::mnli};

/// What darkbert knows about a task: name, folders, labels and metrics.
struct GlueTaskInfo {
  GlueTask task;  ///<  the task
  std::string_view name;                 ///< "MRPC", "STS-B", ...
  std::vector<std::string_view> folders; ///< folders under glue/, tried in order
  bool pair = true;                      ///< two texts per example
  bool regression = false;               ///< STS-B: a score instead of a class
  std::vector<std::string_view> labels;  ///< class names; label index = position
  std::vector<GlueMetric> metrics;       ///< GLUE's metrics for the task
  std::vector<std::string_view> splits;  ///< labelled splits of the official release
  std::string_view url;                  ///< official download
};

/// `glue_task_info(GlueTask::mrpc).name` is "MRPC".
inline const GlueTaskInfo& glue_task_info(GlueTask task) {
  static const std::array<GlueTaskInfo, 7> infos = {{
      {GlueTask::mrpc, "MRPC", {"MRPC"}, true, false, {"0", "1"}, {GlueMetric::accuracy, GlueMetric::f1},
       {"train", "dev"}, "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_train.txt"},
      {GlueTask::stsb, "STS-B", {"STS-B"}, true, true, {}, {GlueMetric::pearson, GlueMetric::spearman},
       {"train", "dev"}, "https://dl.fbaipublicfiles.com/glue/data/STS-B.zip"},
      {GlueTask::sst2, "SST-2", {"SST-2"}, false, false, {"0", "1"}, {GlueMetric::accuracy}, {"train", "dev"},
       "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"},
      {GlueTask::qqp, "QQP", {"QQP"}, true, false, {"0", "1"}, {GlueMetric::accuracy, GlueMetric::f1},
       {"train", "dev"}, "https://dl.fbaipublicfiles.com/glue/data/QQP-clean.zip"},
      {GlueTask::rte, "RTE", {"RTE", "RTE-hf"}, true, false, {"entailment", "not_entailment"},
       {GlueMetric::accuracy}, {"train", "dev"}, "https://dl.fbaipublicfiles.com/glue/data/RTE.zip"},
      {GlueTask::qnli, "QNLI", {"QNLI"}, true, false, {"entailment", "not_entailment"}, {GlueMetric::accuracy},
       {"train", "dev"}, "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip"},
      {GlueTask::mnli, "MNLI", {"MNLI"}, true, false, {"contradiction", "entailment", "neutral"},
       {GlueMetric::accuracy}, {"train", "dev_matched", "dev_mismatched"},
       "https://dl.fbaipublicfiles.com/glue/data/MNLI.zip"},
  }};
  return infos[static_cast<std::size_t>(task)];
}

/// "accuracy", "f1", "pearson" or "spearman".
inline std::string_view to_string(GlueMetric metric) {
  switch (metric) {
    case GlueMetric::accuracy: return "accuracy";
    case GlueMetric::f1: return "f1";
    case GlueMetric::pearson: return "pearson";
    case GlueMetric::spearman: return "spearman";
  }
  return "?";
}

/// "MRPC", "mrpc", "STS-B", "stsb", "sts-b", "SST-2", "sst2", ... (case and '-' / '_' insensitive).
inline GlueTask parse_glue_task(std::string_view name) {
  std::string key;
  for (char c : name)
    if (c != '-' && c != '_') key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (GlueTask t : all_glue_tasks) {
    std::string candidate;
    for (char c : glue_task_info(t).name)
      if (c != '-') candidate.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (candidate == key) return t;
  }
  fail("unknown GLUE task '", name, "' (expected one of MRPC, STS-B, SST-2, QQP, RTE, QNLI, MNLI)");
}

/// One labelled example of a GLUE task.
struct GlueExample {
  std::string id;         ///< the file's own id (index / pairID / "#1 ID-#2 ID" / idx)
  std::string text_a;  ///<  the first (or only) text
  std::string text_b;     ///< empty for single-text tasks (SST-2)
  int label = -1;         ///< class index into GlueTaskInfo::labels; -1 for STS-B
  double score = 0.0;     ///< STS-B similarity in [0, 5]; 0 for classification tasks
  std::size_t line = 0;   ///< 1-based line in the file
};

/// One split of a GLUE task as read from its file.
/// @code
/// darkbert::GlueData dev = darkbert::load_glue(darkbert::DataRoot::from_environment(), darkbert::GlueTask::mrpc, "dev");
/// @endcode
struct GlueData {
  GlueTask task = GlueTask::mrpc;  ///<  which task
  std::string split;             ///< "train", "dev", "dev_matched", ... or "dev[train part]" after a split
  std::filesystem::path file;  ///<  the file it was read from
  std::string layout;            ///< "glue" or "hf" (RTE-hf)
  std::vector<GlueExample> examples;  ///<  in file order
  std::size_t skipped = 0;       ///< MNLI rows with gold_label "-" (only in the original MultiNLI files)
};

/// Options of the GLUE readers.
struct GlueReadOptions {
  std::size_t max_rows = 0;  ///< keep the first max_rows examples in file order (0 = all)
};

namespace detail {

struct GlueLayout {
  std::string_view name;
  std::vector<std::string_view> id_columns;  ///< joined with '-'
  std::string_view text_a, text_b, label;    ///< text_b empty for single-text tasks
  enum class LabelKind { name, index, score } label_kind;
  Quoting quoting;
};

inline std::vector<GlueLayout> glue_layouts(GlueTask task) {
  using K = GlueLayout::LabelKind;
  switch (task) {
    case GlueTask::mrpc: return {{"glue", {"#1 ID", "#2 ID"}, "#1 String", "#2 String", "Quality", K::name, Quoting::none}};
    case GlueTask::stsb: return {{"glue", {"index"}, "sentence1", "sentence2", "score", K::score, Quoting::none}};
    case GlueTask::sst2: return {{"glue", {}, "sentence", "", "label", K::name, Quoting::none}};
    case GlueTask::qqp: return {{"glue", {"id"}, "question1", "question2", "is_duplicate", K::name, Quoting::none}};
    case GlueTask::rte:
      return {{"glue", {"index"}, "sentence1", "sentence2", "label", K::name, Quoting::none},
              {"hf", {"idx"}, "sentence1", "sentence2", "label", K::index, Quoting::csv}};
    case GlueTask::qnli: return {{"glue", {"index"}, "question", "sentence", "label", K::name, Quoting::none}};
    case GlueTask::mnli: return {{"glue", {"pairID"}, "sentence1", "sentence2", "gold_label", K::name, Quoting::none}};
  }
  return {};
}

/// The header line of a TSV file split on tabs (BOM dropped), to pick a layout before parsing the rest.
inline std::vector<std::string> peek_header(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), file.string(), ": cannot open for reading");
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::string_view view(line);
  strip_bom(view);
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    auto tab = view.find('\t', start);
    fields.emplace_back(view.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return fields;
}

inline bool header_has(const std::vector<std::string>& header, std::string_view name) {
  for (const auto& h : header)
    if (h == name) return true;
  return false;
}

inline double parse_score(std::string_view text, const std::filesystem::path& file, std::size_t line) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(value))
    fail(file.string(), ":", line, ": score '", text, "' is not a number");
  if (value < 0.0 || value > 5.0) fail(file.string(), ":", line, ": score ", value, " is outside [0, 5]");
  return value;
}

}  // namespace detail

/// Reads one GLUE TSV file of `task`; the layout is chosen from its header. Errors name file and line
/// (wrong number of fields, unknown label, bad score, header of no known layout).
inline GlueData read_glue_file(GlueTask task, const std::filesystem::path& file, const GlueReadOptions& options = {}) {
  const auto& info = glue_task_info(task);
  const auto header = detail::peek_header(file);
  const detail::GlueLayout* layout = nullptr;
  const auto layouts = detail::glue_layouts(task);
  for (const auto& l : layouts) {
    bool ok = detail::header_has(header, l.text_a) && detail::header_has(header, l.label) &&
              (l.text_b.empty() || detail::header_has(header, l.text_b));
    for (auto id : l.id_columns) ok = ok && detail::header_has(header, id);
    if (ok) {
      layout = &l;
      break;
    }
  }
  if (layout == nullptr) {
    std::ostringstream have, want;
    for (std::size_t i = 0; i < header.size(); ++i) have << (i ? ", '" : "'") << header[i] << "'";
    for (std::size_t k = 0; k < layouts.size(); ++k) {
      const auto& l = layouts[k];
      want << (k ? " or " : "") << "'" << l.text_a << "'";
      if (!l.text_b.empty()) want << ", '" << l.text_b << "'";
      want << ", '" << l.label << "'";
    }
    fail(file.string(), ":1: header of no known GLUE ", info.name, " layout (columns: ", have.str(), "; expected ",
         want.str(), ")");
  }

  TsvOptions tsv;
  tsv.quoting = layout->quoting;
  const auto table = read_tsv(file, tsv);
  const std::size_t a = table.column(layout->text_a);
  const std::size_t b = layout->text_b.empty() ? 0 : table.column(layout->text_b);
  const std::size_t lab = table.column(layout->label);
  std::vector<std::size_t> ids;
  for (auto id : layout->id_columns) ids.push_back(table.column(id));

  GlueData data;
  data.task = task;
  data.file = file;
  data.layout = std::string(layout->name);
  for (const auto& row : table.rows) {
    if (options.max_rows != 0 && data.examples.size() == options.max_rows) break;
    GlueExample ex;
    ex.line = row.line;
    for (std::size_t k = 0; k < ids.size(); ++k) ex.id += (k ? "-" : "") + row.fields[ids[k]];
    if (ids.empty()) ex.id = std::to_string(data.examples.size() + data.skipped);
    ex.text_a = row.fields[a];
    if (!layout->text_b.empty()) ex.text_b = row.fields[b];
    const std::string& label = row.fields[lab];
    switch (layout->label_kind) {
      case detail::GlueLayout::LabelKind::score:
        ex.score = detail::parse_score(label, file, row.line);
        break;
      case detail::GlueLayout::LabelKind::name: {
        if (task == GlueTask::mnli && label == "-") {  // no annotator consensus (original MultiNLI only)
          ++data.skipped;
          continue;
        }
        for (std::size_t k = 0; k < info.labels.size(); ++k)
          if (info.labels[k] == label) ex.label = static_cast<int>(k);
        if (ex.label < 0) {
          std::string known;
          for (auto l : info.labels) known += (known.empty() ? "'" : ", '") + std::string(l) + "'";
          fail(file.string(), ":", row.line, ": label '", label, "' is not a ", info.name, " label (", known, ")");
        }
        break;
      }
      case detail::GlueLayout::LabelKind::index: {
        int value = -1;
        auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), value);
        if (ec != std::errc() || end != label.data() + label.size() || value < 0 ||
            value >= static_cast<int>(info.labels.size()))
          fail(file.string(), ":", row.line, ": label '", label, "' is not a ", info.name, " label index (0..",
               info.labels.size() - 1, ")");
        ex.label = value;
        break;
      }
    }
    data.examples.push_back(std::move(ex));
  }
  return data;
}

/// Relative path of a split's file under the data root, e.g. "glue/RTE-hf/dev.tsv"; nullopt if absent.
inline std::optional<std::filesystem::path> find_glue_file(const DataRoot& root, GlueTask task, std::string_view split) {
  for (auto folder : glue_task_info(task).folders)
    if (auto p = root.try_find("glue/" + std::string(folder) + "/" + std::string(split) + ".tsv")) return p;
  return std::nullopt;
}

/// Loads one labelled split ("train", "dev"; MNLI "train", "dev_matched", "dev_mismatched").
/// A missing file throws a message naming the task, every place looked and where to download it.
inline GlueData load_glue(const DataRoot& root, GlueTask task, std::string_view split,
                          const GlueReadOptions& options = {}) {
  const auto& info = glue_task_info(task);
  bool known = false;
  for (auto s : info.splits) known = known || s == split;
  if (!known) {
    std::string list;
    for (auto s : info.splits) list += (list.empty() ? "" : ", ") + std::string(s);
    fail("GLUE ", info.name, ": no split '", split, "' (labelled splits: ", list, ")");
  }
  if (auto file = find_glue_file(root, task, split)) {
    auto data = read_glue_file(task, *file, options);
    data.split = std::string(split);
    return data;
  }
  const std::string relative = "glue/" + std::string(info.folders.front()) + "/" + std::string(split) + ".tsv";
  std::string what = "GLUE " + std::string(info.name) + " " + std::string(split);
  if (task == GlueTask::qqp || task == GlueTask::mnli)
    what += " (QQP and MNLI are not part of ../shared/data: no complete official-layout copy was available)";
  fail(root.not_found_message(relative, what, std::string(glue_hint) + "; " + std::string(info.name) + ": " +
                                                  std::string(info.url)));
}

/// Reads glue/MRPC/dev_ids.tsv (no header; "#1 ID<TAB>#2 ID" per line): the pairs GLUE moved to dev.
inline std::vector<std::pair<std::string, std::string>> read_mrpc_dev_ids(const std::filesystem::path& file) {
  TsvOptions options;
  options.has_header = false;
  const auto table = read_tsv(file, options);
  std::vector<std::pair<std::string, std::string>> ids;
  for (const auto& row : table.rows) {
    if (row.fields.size() != 2)
      fail(file.string(), ":", row.line, ": expected 2 tab-separated ids, got ", row.fields.size(), " fields");
    ids.emplace_back(row.fields[0], row.fields[1]);
  }
  return ids;
}

/// How fine-tuning data is formed when a task's train split is absent (QNLI here; MNLI and QQP when only
/// their dev files are present). See load_glue_finetune.
struct GlueFinetuneOptions {
  std::size_t max_train = 0;       ///< cap on fine-tuning rows (0 = no cap); the replication used 3000
  std::size_t max_eval = 0;        ///< cap on evaluation rows (0 = no cap); the replication used 500
  std::uint64_t seed = 20190820;   ///< seed of the dev split (only used when train.tsv is absent)
  double eval_fraction = 0.2;      ///< share of dev held out for evaluation when train.tsv is absent
  std::string_view mnli_eval = "dev_matched";  ///< MNLI: evaluate on dev_matched or dev_mismatched
};

/// A fine-tuning split and an evaluation split of one task (see load_glue_finetune).
struct GlueFinetuneData {
  GlueData train;  ///<  examples to fine-tune on
  GlueData eval;  ///<  examples to evaluate on
  std::string provenance;  ///< one sentence saying where both parts came from (for logs and results)
};

/// Fine-tuning and evaluation sets for a task.
///  * train.tsv present: train = train.tsv, eval = dev.tsv (MNLI: options.mnli_eval).
///  * train.tsv absent, dev present (QNLI here): the dev rows are shuffled with seeded_permutation(n, seed);
///    the first ceil(eval_fraction * n) shuffled rows are the evaluation part, the rest the fine-tuning part;
///    each part is then put back into file order.
///  * neither present (QQP, MNLI here): the error of load_glue, saying the task is absent and how to get it.
/// Caps keep the first max_train / max_eval rows of each part in file order.
inline GlueFinetuneData load_glue_finetune(const DataRoot& root, GlueTask task, const GlueFinetuneOptions& options = {}) {
  const auto& info = glue_task_info(task);
  const std::string_view eval_split = task == GlueTask::mnli ? options.mnli_eval : std::string_view("dev");
  require(options.eval_fraction > 0.0 && options.eval_fraction < 1.0, "GLUE ", info.name,
          ": eval_fraction must lie in (0, 1), got ", options.eval_fraction);
  GlueFinetuneData out;
  auto cap = [](GlueData& d, std::size_t n) {
    if (n != 0 && d.examples.size() > n) d.examples.resize(n);
  };
  if (find_glue_file(root, task, "train")) {
    out.train = load_glue(root, task, "train", {options.max_train});
    out.eval = load_glue(root, task, eval_split, {options.max_eval});
    out.provenance = "train = " + out.train.file.string() + ", eval = " + out.eval.file.string();
    return out;
  }
  GlueData dev = load_glue(root, task, eval_split);
  const std::size_t n = dev.examples.size();
  require(n >= 2, dev.file.string(), ": needs at least 2 rows to split into fine-tuning and evaluation parts");
  const auto order = seeded_permutation(n, options.seed);
  std::size_t n_eval = static_cast<std::size_t>(std::ceil(options.eval_fraction * static_cast<double>(n)));
  n_eval = std::min(std::max<std::size_t>(n_eval, 1), n - 1);
  std::vector<std::size_t> eval_rows(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_eval));
  std::vector<std::size_t> train_rows(order.begin() + static_cast<std::ptrdiff_t>(n_eval), order.end());
  std::sort(eval_rows.begin(), eval_rows.end());
  std::sort(train_rows.begin(), train_rows.end());
  out.train = dev;
  out.eval = dev;
  out.train.examples.clear();
  out.eval.examples.clear();
  for (auto i : train_rows) out.train.examples.push_back(dev.examples[i]);
  for (auto i : eval_rows) out.eval.examples.push_back(dev.examples[i]);
  out.train.split = std::string(eval_split) + "[fine-tuning part]";
  out.eval.split = std::string(eval_split) + "[evaluation part]";
  cap(out.train, options.max_train);
  cap(out.eval, options.max_eval);
  out.provenance = std::string(info.name) + " has no train split here: " + dev.file.string() + " (" +
                   std::to_string(n) + " rows) split with seed " + std::to_string(options.seed) + " into " +
                   std::to_string(train_rows.size()) + " fine-tuning / " + std::to_string(n_eval) +
                   " evaluation rows (eval_fraction " + std::to_string(options.eval_fraction) + ")";
  return out;
}

}  // namespace darkbert
