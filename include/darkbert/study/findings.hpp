#pragma once
/// @file
/// The findings report of `darkbert reproduce`, written from the result files alone: the per-seed unit
/// folders are aggregated (Table 1, §3.3 and §3.6 over seeds; Figure 2 and Figure 7 over tasks), and every
/// claim of the paper is restated with the paper's number, darkbert's number and a verdict whose rule is
/// written beside it. Every number goes through the report's registry (study/report.hpp), so summary.json
/// holds each one the report states.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto plan = darkbert::study::plan_study(root, options);
/// darkbert::study::run_units(plan.units, options.out / "units", plan.run.fingerprint);
/// darkbert::study::write_findings(root, plan.run);    // report.md, report.html, summary.json, results/
/// @endcode
///
/// Verdict rules (the same for every run; a reader can recompute them from summary.json):
/// - a claim made for every task is *reproduced* when it holds on every task studied, *partly* when on
///   some, *not reproduced* when on none;
/// - a comparison of two fine-tuning settings holds on a task when the means differ in the paper's
///   direction by more than the larger of the two standard deviations over seeds;
/// - a claim that needs data or a model this run does not have is *not testable here*.

#include <algorithm>   // std::max_element, std::sort
#include <cmath>       // std::isnan, std::max
#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <optional>    // std::optional
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/detail/text_file.hpp"  // read_text_file (the other study's summary)
#include "darkbert/core/error.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/model/config.hpp"
#include "darkbert/study/across_seeds.hpp"
#include "darkbert/study/attention_patterns.hpp"
#include "darkbert/study/disable_heads.hpp"
#include "darkbert/study/finetune_change.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/study/framenet_heads.hpp"
#include "darkbert/study/linguistic_features.hpp"
#include "darkbert/study/report.hpp"
#include "darkbert/study/study_plan.hpp"
#include "darkbert/study/token_relations.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

namespace detail {

// "reproduced" when it holds on every one of n tasks, "partly" on some, "not reproduced" on none.
inline Verdict verdict_over_tasks(std::size_t holds, std::size_t n) {
  if (n == 0) return Verdict::not_testable;
  if (holds == n) return Verdict::reproduced;
  return holds > 0 ? Verdict::partly : Verdict::not_reproduced;
}

// A head "has a vertical stripe" where the sentences meet when the separator takes at least this share of the
// attention of the queries that can see it: a quarter of every row, the rule classifier's `mix` threshold
// (study/pattern_rules.hpp), at which a column is plainly visible on a map.
inline constexpr double boundary_stripe = 0.25;

struct BoundaryStripes {
  double strongest = 0;  // the largest separator share over heads
  std::string head;      // "layer:head" of it
  std::size_t heads = 0; // heads at boundary_stripe or more
};

// The separator stripes of one task's §3.4 result (fine-tuned grid when measured, else pretrained), read
// per query that can see the separator: separator_per_visible_query() on a causal model, [SEP] on a
// bidirectional one (every query sees it, so the two measures agree). Empty when the result has neither, or
// no example has a separator.
inline std::optional<BoundaryStripes> boundary_stripes(const LinguisticFeaturesResult& f) {
  std::optional<std::size_t> k;
  for (std::size_t i = 0; i < f.features.size(); ++i)
    if (f.features[i] == (f.causal ? separator_per_visible_query_name : std::string_view("[SEP]"))) k = i;
  if (!k || f.examples_with[*k] == 0) return std::nullopt;
  const auto& grid = f.has_finetuned() ? f.finetuned[*k] : f.pretrained[*k];
  BoundaryStripes b;
  for (Index l = 0; l < grid.rows(); ++l)
    for (Index h = 0; h < grid.cols(); ++h) {
      const double v = grid(l, h);
      if (std::isnan(v)) continue;
      b.heads += v >= boundary_stripe;
      if (b.head.empty() || v > b.strongest) b.strongest = v, b.head = std::to_string(l) + ":" + std::to_string(h);
    }
  return b;
}

// A missing task's error in two parts, without the list of folders searched: what is missing, and how to
// get it ("darkbert data: GLUE QQP dev ... not found (...). Looked in: ... How to get it: ...").
inline std::string absence_in_brief(const std::string& reason) {
  auto trim = [](std::string t) {
    for (char& c : t)
      if (c == '\n' || c == '`') c = ' ';
    const auto b = t.find_first_not_of(' '), e = t.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  const auto looked = reason.find("Looked in:"), how = reason.find("How to get it:");
  std::string brief = "`" + trim(reason.substr(0, looked)) + "`";
  if (how != std::string::npos) brief += " How to get it: `" + trim(reason.substr(how + 14)) + "`";
  return brief;
}

inline std::string head_name(Index layer, Index head) {
  return "L" + std::to_string(layer) + "H" + std::to_string(head);
}

// Key segments must be plain: "STS-B" -> "STS_B".
inline std::string key_of(std::string s) {
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return s;
}

inline std::string rel(const std::filesystem::path& out, const std::filesystem::path& p) {
  return std::filesystem::relative(p, out).generic_string();
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

// One classifier scheme's Figure 2 from the `dir`/<task> pattern results: the table (numbers under
// `key`.<task>.<rules|cnn>.<class>), both stacked-bar figures (`stem`_rules, `stem`_cnn) and their captions.
struct PatternClassShares {
  PatternScheme scheme = paper_pattern_scheme();
  std::optional<AttentionPatternResult> first;                          // the first task's result
  std::vector<std::pair<std::string, std::vector<double>>> rule_props;  // per task
};
inline PatternClassShares write_pattern_classes(Report& r, Section& s, const std::filesystem::path& dir,
                                                const std::vector<std::string>& tasks, const std::filesystem::path& results,
                                                const std::string& key, const std::string& stem, const std::string& figure,
                                                const std::string& caption) {
  PatternClassShares out;
  std::vector<std::pair<std::string, std::vector<double>>> cnn_props;
  for (const auto& task : tasks) {
    const auto p = AttentionPatternResult::load(dir / task);
    if (!out.first) out.first = p;
    out.scheme = p.scheme;
    cnn_props.emplace_back(task, p.proportions(PatternClassifier::cnn));
    out.rule_props.emplace_back(task, p.proportions(PatternClassifier::rules));
  }
  const auto& scheme = out.scheme;
  ReportTable t{.header = {"task", "classifier"}, .caption = caption};
  for (const auto& l : scheme.labels) t.header.push_back(l);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    for (const auto c : {PatternClassifier::rules, PatternClassifier::cnn}) {
      const std::string who = c == PatternClassifier::cnn ? "cnn" : "rules";
      std::vector<std::string> row = {tasks[i], c == PatternClassifier::cnn ? "CNN" : "rules"};
      const auto& props = c == PatternClassifier::cnn ? cnn_props[i].second : out.rule_props[i].second;
      for (int k = 0; k < scheme.size(); ++k)
        row.push_back(r.percent(key + "." + key_of(tasks[i]) + "." + who + "." + scheme.names[static_cast<std::size_t>(k)],
                                props[static_cast<std::size_t>(k)], 1));
      t.rows.push_back(row);
    }
  s.table(t);
  for (const char* ext : {".png", ".svg"}) {
    write_class_proportions_figure(results / (stem + "_rules" + ext), out.rule_props, scheme, "Attention pattern classes per task (rules)");
    write_class_proportions_figure(results / (stem + "_cnn" + ext), cnn_props, scheme, "Attention pattern classes per task (CNN)");
  }
  s.figure({.png = "results/" + stem + "_rules.png", .svg = "results/" + stem + "_rules.svg",
            .caption = figure + " (rule classifier): class proportions per task."});
  s.figure({.png = "results/" + stem + "_cnn.png", .svg = "results/" + stem + "_cnn.svg",
            .caption = figure + " (CNN trained on synthetic prototypes): class proportions per task."});
  return out;
}

// A summary's number at a dotted path, or null.
inline const nlohmann::json* number_at(const nlohmann::json& numbers, const std::string& path) {
  const nlohmann::json* node = &numbers;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const auto end = std::min(path.find('.', begin), path.size());
    const auto key = path.substr(begin, end - begin);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    begin = end + 1;
  }
  return node;
}

// "mean ± sd" of a mean_sd node (key.mean, key.sd) at `decimals`, "—" when the node is absent.
inline std::string mean_sd_at(const nlohmann::json& numbers, const std::string& key, int decimals) {
  const auto* mean = number_at(numbers, key + ".mean");
  if (mean == nullptr || !mean->is_number()) return "\u2014";
  std::string text = report::format_fixed(mean->get<double>(), decimals);
  if (const auto* sd = number_at(numbers, key + ".sd"); sd != nullptr && sd->is_number())
    text += " \xC2\xB1 " + report::format_fixed(sd->get<double>(), decimals);
  return text;
}

// A number at `key` as text ("—" when absent): fixed `decimals`, or a percentage of a fraction.
inline std::string number_text_at(const nlohmann::json& numbers, const std::string& key, int decimals, bool percent = false) {
  const auto* v = number_at(numbers, key);
  if (v == nullptr || !v->is_number()) return "\u2014";
  return percent ? report::format_fixed(100.0 * v->get<double>(), decimals) + "%" : report::format_fixed(v->get<double>(), decimals);
}

// The BERT and GPT-2 studies side by side: every claim of both reports with both verdicts, and per task the
// numbers the replication compared (Table 1, the heterogeneous or "overall" share, the layers that change
// most, the best and worst ablations). The other study's numbers are quoted under `<arch>.` in this summary.
inline void write_side_by_side(Report& r, const std::string& this_arch, const std::filesystem::path& companion,
                               const std::string& link, const std::vector<std::string>& tasks) {
  const std::string companion_arch = this_arch == "bert" ? "gpt2" : "bert";
  const auto summary_file = companion / "summary.json";
  nlohmann::json other;
  try {
    other = nlohmann::json::parse(darkbert::detail::read_text_file(summary_file, "study summary"));
  } catch (const nlohmann::json::exception& e) {
    fail(summary_file.string(), ": ", e.what());
  }
  require(other.contains("numbers") && other.contains("claims"), summary_file.string(),
          ": not a study summary (no \"numbers\" or \"claims\"; rerun that study to rewrite it)");
  const nlohmann::json mine = r.summary();
  const auto& ours = mine.at("numbers");
  auto theirs = other.at("numbers");
  theirs.erase(this_arch);  // the numbers it quotes from this study
  r.numbers_from(companion_arch, theirs);
  const bool bert_first = this_arch == "bert";
  const auto& bert = bert_first ? ours : theirs;
  const auto& gpt2 = bert_first ? theirs : ours;
  auto& s = r.section("BERT and GPT-2 side by side");
  s.paragraph(std::string("The same study on ") + (bert_first ? "GPT-2, read as the GPT-2 replication read it" : "BERT") +
              " (its full report: `" + link + "/report.md`). Each claim of the paper, and of the replication, with both models' numbers and verdicts.");
  std::map<std::string, const nlohmann::json*> gpt2_claims, bert_claims;
  const auto& bert_list = (bert_first ? mine : other).at("claims");
  const auto& gpt2_list = (bert_first ? other : mine).at("claims");
  for (const auto& c : gpt2_list) gpt2_claims[c.at("claim").get<std::string>()] = &c;
  for (const auto& c : bert_list) bert_claims[c.at("claim").get<std::string>()] = &c;
  ReportTable claims{.header = {"claim", "paper / replication", "BERT", "verdict", "GPT-2", "verdict"},
                     .caption = "Claims and verdicts of both studies (the rules are in each study's report)."};
  auto row = [&](const nlohmann::json& c, const nlohmann::json* b, const nlohmann::json* g) {
    auto field = [](const nlohmann::json* x, const char* k) { return x ? x->at(k).get<std::string>() : std::string("\u2014"); };
    claims.rows.push_back({c.at("claim").get<std::string>(), c.at("paper").get<std::string>(), field(b, "darkbert"),
                           b ? "**" + field(b, "verdict") + "**" : "\u2014", field(g, "darkbert"),
                           g ? "**" + field(g, "verdict") + "**" : "\u2014"});
  };
  for (const auto& c : bert_list) {
    const auto it = gpt2_claims.find(c.at("claim").get<std::string>());
    row(c, &c, it == gpt2_claims.end() ? nullptr : it->second);
  }
  for (const auto& c : gpt2_list)
    if (!bert_claims.count(c.at("claim").get<std::string>())) row(c, nullptr, &c);
  s.table(claims);

  ReportTable t{.header = {"task", "metric", "pretrained + fine-tuned: BERT", "GPT-2", "random init: BERT", "GPT-2",
                           "frozen encoder: BERT", "GPT-2", "heterogeneous: BERT", "overall: GPT-2",
                           "most changed layers: BERT", "GPT-2", "best head: BERT", "GPT-2", "worst head: BERT", "GPT-2",
                           "best layer: BERT", "GPT-2", "worst layer: BERT", "GPT-2"},
                .caption = "Per task: Table 1 in % (mean \xC2\xB1 sd over seeds); the rule classifier's heterogeneous share (BERT, "
                           "the paper's classes) and 'overall' share (GPT-2, the replication's classes); the two layers whose "
                           "maps change most (from zero); changes in points when a head or layer is disabled."};
  auto layers = [](const nlohmann::json& n, const std::string& task) {
    const auto* a = number_at(n, "change." + task + ".rank0");
    const auto* b = number_at(n, "change." + task + ".rank1");
    if (a == nullptr) return std::string("\u2014");
    return report::format_fixed(a->get<double>(), 0) + (b ? ", " + report::format_fixed(b->get<double>(), 0) : std::string());
  };
  for (const auto& task : tasks) {
    const std::string k = key_of(task);
    const auto* metrics = number_at(bert, "table1." + k);
    std::vector<std::string> names;
    if (metrics != nullptr && metrics->is_object())
      for (const auto& [name, _] : metrics->items()) names.push_back(name);
    if (names.empty()) names.push_back("\u2014");
    for (std::size_t m = 0; m < names.size(); ++m) {
      const std::string tk = "table1." + k + "." + names[m] + ".";
      std::vector<std::string> cells = {task, names[m]};
      for (const char* setting : {"pretrained", "random", "frozen"}) {
        cells.push_back(mean_sd_at(bert, tk + setting, 1));
        cells.push_back(mean_sd_at(gpt2, tk + setting, 1));
      }
      if (m == 0) {
        cells.push_back(number_text_at(bert, "patterns." + k + ".rules.heterogeneous", 1, true));
        cells.push_back(number_text_at(gpt2, "patterns_replication." + k + ".rules.overall", 1, true));
        cells.push_back(layers(bert, k));
        cells.push_back(layers(gpt2, k));
        for (const char* a : {"best_head", "worst_head", "best_layer", "worst_layer"}) {
          cells.push_back(mean_sd_at(bert, "disable." + k + "." + a, 2));
          cells.push_back(mean_sd_at(gpt2, "disable." + k + "." + a, 2));
        }
      } else {
        cells.resize(t.header.size(), "");
      }
      t.rows.push_back(cells);
    }
  }
  s.table(t);
}

}  // namespace detail

/// Aggregates the unit folders of `run` and writes report.md, report.html and summary.json into run.out
/// (aggregates and overview figures into run.out/results).
inline void write_findings(const DataRoot& root, const StudyRun& run) {
  namespace fs = std::filesystem;
  (void)root;
  const fs::path out = run.out, units = out / "units", results = out / "results";
  fs::create_directories(results);
  const auto config = ModelConfig::from_json_file(run.model / "config.json");
  const Index layers = config.num_layers, heads = config.num_heads;
  std::vector<std::string> tasks;
  for (GlueTask t : run.tasks) tasks.push_back(std::string(glue_task_info(t).name));
  const std::size_t n_tasks = tasks.size();

  Report r(run.causal ? "Revealing the Dark Secrets of BERT, on GPT-2: the replication finished by darkbert"
                       : "Revealing the Dark Secrets of BERT, reproduced by darkbert");
  r.meta("model", {{"folder", run.model.string()}, {"description", run.model_description}, {"layers", layers},
                   {"heads", heads}, {"hidden", config.hidden_size}});
  r.meta("fingerprint", run.fingerprint);
  r.meta("absent_tasks", nlohmann::json::array());
  for (const auto& a : run.absent) r.meta("absent." + detail::key_of(a.task), a.reason);

  // ------------------------------------------------------------------ what was run
  double unit_seconds_total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(units))
    if (entry.path().filename() == "unit.json") unit_seconds_total += study::unit_seconds(entry.path().parent_path());
  {
    auto& s = r.section("What was run");
    s.paragraph("Model: " + run.model_description + ", " + r.count("model.layers", layers) + " layers x " +
                r.count("model.heads_per_layer", heads) + " heads (" + r.count("model.heads", layers * heads) +
                " heads in all; BERT-base has " + r.count("paper.model.heads", 144) + "), hidden size " + r.count("model.hidden", config.hidden_size) + ".");
    const fs::path run_json = run.model / "run.json";
    if (fs::exists(run_json) && fs::exists(run.model / "eval.csv")) {
      s.paragraph(std::string("It was pretrained by darkbert from scratch on the corpus in `../shared/data/corpus` (") +
                  (run.causal ? "causal LM" : "masked LM + NSP") + "; its recipe is `run.json` in the model folder, its log `eval.csv`). BERT-base was pretrained on " +
                  r.number("paper.model.pretraining_billion_words", 3.3, 1) + " billion words for " +
                  r.count("paper.model.pretraining_epochs", 40) +
                  " epochs; a model this small, pretrained for minutes, is the main difference from the paper.");
    }
    if (run.causal)
      s.paragraph("A causal model (GPT-2), read as the GPT-2 replication read it: `<|endoftext|>` prepended as BOS and "
                  "`<|endoftext|>` between the two sentences of a pair, no [CLS] or [SEP]. The paper's token categories map "
                  "to their GPT-2 counterparts: [CLS] is the BOS `<|endoftext|>`, [SEP] the separating `<|endoftext|>` "
                  "(single-sentence tasks have none), Figure 7's [CLS] query the last token (what GPT-2's classifier "
                  "reads); punctuation, nouns, verbs, pronouns, subjects, objects and negation are the BPE pieces of the "
                  "annotator's words (each piece takes its word's labels through the byte offsets). Every measure keeps to "
                  "the visible keys (the lower triangle), and a disabled head attends 1/(t+1) over the visible prefix.");
    std::vector<std::string> items;
    items.push_back("Tasks: " + detail::join(tasks, ", ") + "; fine-tuning seeds " + r.count("run.first_seed", 1) + " to " + r.count("run.seeds", run.seeds) +
                    " in each of the four Table 1 settings; " + r.count("run.epochs", run.sizes.epochs) +
                    " epochs, batch " + r.count("run.batch", 32) + ", peak learning rate " + r.number("run.learning_rate", run.learning_rate, 4) + ".");
    items.push_back("Caps: at most " + r.count("run.max_train", static_cast<std::int64_t>(run.sizes.max_train)) +
                    " training examples per task (the first ones of the train split), " +
                    r.count("run.eval_examples", static_cast<std::int64_t>(run.sizes.eval_examples)) +
                    " evaluation examples scored (Table 1, §3.6), " +
                    r.count("run.analysis_examples", static_cast<std::int64_t>(run.sizes.analysis_examples)) +
                    " evaluation examples whose maps are analysed (§3.1, §3.3-§3.5; the paper used up to " +
                    r.count("paper.run.analysis_examples", 1000) + "), " +
                    r.count("run.framenet_sentences", static_cast<std::int64_t>(run.sizes.framenet_sentences)) +
                    " FrameNet sentences at most.");
    for (const auto& a : run.absent)
      items.push_back(a.task + " is absent: " + detail::absence_in_brief(a.reason));
    items.push_back("Compute: the units took " + r.number("run.unit_seconds", unit_seconds_total, 0) +
                    " s in all; this invocation ran " + r.count("run.units_ran", static_cast<std::int64_t>(run.units.ran)) +
                    " units and found " + r.count("run.units_resumed", static_cast<std::int64_t>(run.units.resumed)) +
                    " done.");
    if (run.quick)
      items.push_back("This is a --quick run: tiny sizes that check every step. Its numbers say nothing about the paper.");
    s.list(items);
  }

  // ------------------------------------------------------------------ Table 1
  const auto table = FineTuneTable::load(out / "table1");
  table.write_tables(results / "table1");
  const auto cells = table.cells();
  auto cell = [&](const std::string& task, const std::string& metric, const std::string& setting) -> const FineTuneCell* {
    for (const auto& c : cells)
      if (c.task == task && c.metric == metric && c.setting == setting) return &c;
    return nullptr;
  };
  std::size_t pretrain_helps = 0, random_beats_untrained = 0, table_tasks = 0;
  {
    auto& s = r.section("Table 1: fine-tuning from pretrained and from random weights");
    ReportTable t{.header = {"task", "metric", "pretrained + fine-tuned", "paper", "random init + fine-tuned", "paper",
                             "frozen encoder + trained head", "pretrained, not fine-tuned", "paper"},
                  .caption = "Dev scores in %, mean ± sd over fine-tuning seeds (the paper: BERT-base, one run)."};
    for (const auto& task : tasks) {
      bool counted = false;
      for (const auto& c : cells) {
        if (c.task != task || c.setting != "pretrained") continue;
        std::vector<std::string> row = {task, c.metric};
        const std::string base = "table1." + detail::key_of(task) + "." + c.metric + ".";
        for (const std::string setting : {"pretrained", "random", "frozen", "untrained"}) {
          const auto* x = cell(task, c.metric, setting);
          row.push_back(x ? r.mean_sd(base + setting, x->values_percent, 1) : "—");
          if (setting == "frozen") continue;
          row.push_back(x && x->paper_percent ? r.number("paper.table1." + detail::key_of(task) + "." + c.metric + "." + setting,
                                                         *x->paper_percent, 1)
                                              : "—");
        }
        t.rows.push_back(row);
        if (counted) continue;  // the verdict reads each task's first metric
        counted = true;
        const auto* pre = cell(task, c.metric, "pretrained");
        const auto* rnd = cell(task, c.metric, "random");
        const auto* unt = cell(task, c.metric, "untrained");
        if (pre && rnd) {
          ++table_tasks;
          const double margin = std::max(std::isnan(pre->percent.sd) ? 0.0 : pre->percent.sd,
                                         std::isnan(rnd->percent.sd) ? 0.0 : rnd->percent.sd);
          if (pre->percent.mean - rnd->percent.mean > margin) ++pretrain_helps;
          if (unt && pre->percent.mean - unt->percent.mean > margin) ++random_beats_untrained;
        }
      }
    }
    s.table(t);
    s.paragraph("Recipe: `" + table.recipe_sentence() + "`");
    s.claim({.claim = "Pretrained BERT fine-tuned beats the same architecture fine-tuned from random weights on every task.",
             .paper = "every task (e.g. MRPC accuracy " + r.number("paper.claims.table1_mrpc_pretrained", 82.3, 1) + " against " +
                      r.number("paper.claims.table1_mrpc_random", 68.3, 1) + ")",
             .darkbert = "on " + r.count("claims.table1.pretrain_helps", static_cast<std::int64_t>(pretrain_helps)) + " of " +
                         r.count("claims.table1.tasks", static_cast<std::int64_t>(table_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(pretrain_helps, table_tasks),
             .reason = "A task counts when the pretrained mean exceeds the random-init mean by more than the larger sd over seeds."});
    s.claim({.claim = "Fine-tuning improves on the pretrained model with an untrained head by a wide margin.",
             .paper = r.number("paper.claims.table1_gain_points", 35.9, 1) + " points on average",
             .darkbert = "fine-tuning wins on " + r.count("claims.table1.finetune_beats_untrained", static_cast<std::int64_t>(random_beats_untrained)) +
                         " of " + r.count("claims.table1.tasks_untrained", static_cast<std::int64_t>(table_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(random_beats_untrained, table_tasks),
             .reason = "Same rule: the fine-tuned mean exceeds the untrained-head mean by more than the larger sd."});
  }

  // ------------------------------------------------------------------ §3.1
  {
    auto& s = r.section("§3.1 Attention patterns");
    const auto classes = detail::write_pattern_classes(r, s, units / "patterns", tasks, results, "patterns", "figure2",
                                                       "Figure 2", "Share of all (head, example) maps in each class (Figure 2).");
    const auto& scheme = classes.scheme;
    const auto& first = classes.first;
    std::size_t in_range = 0;
    const int het = scheme.index_of("heterogeneous", "findings");
    for (const auto& props : classes.rule_props)
      if (const double h = props.second[static_cast<std::size_t>(het)]; h >= 0.32 && h <= 0.61) ++in_range;
    if (first) {
      const auto& ev = first->evaluation;
      s.paragraph("The CNN (eight 3x3 convolutions with ReLU on maps resampled to 32x32, a linear layer; trained with "
                  "darkbert's autodiff on `" + ev.training_set + "`) scores macro F1 " +
                  r.number("patterns.cnn.heldout_macro_f1", ev.cnn.macro_f1, 3) + " on " +
                  r.count("patterns.cnn.heldout_maps", static_cast<std::int64_t>(ev.cnn.maps)) + " held-out maps (`" +
                  ev.held_out_set + "`). The paper's CNN scored F1 " + r.number("paper.patterns.cnn_f1", 0.86, 2) +
                  " on about " + r.count("paper.patterns.labelled_maps", 400) + " hand-labelled maps, a set that is not public; `--labelled DIR` of "
                  "`darkbert_attention_patterns` takes such a set (maps.npy + labels.csv).");
      s.paragraph("Rules: `" + first->rules + "`");
    }
    s.claim({.claim = "A limited set of patterns repeats across heads; the heterogeneous class, the upper bound on heads that "
                      "may carry linguistic structure, holds a third (MRPC) to well over half (QQP) of the maps.",
             .paper = r.percent("paper.patterns.heterogeneous_low", 0.32, 0) + " to " + r.percent("paper.patterns.heterogeneous_high", 0.61, 0),
             .darkbert = "inside that range on " + r.count("claims.patterns.in_range", static_cast<std::int64_t>(in_range)) + " of " +
                         r.count("claims.patterns.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks (rule classifier; table above)",
             .verdict = detail::verdict_over_tasks(in_range, n_tasks),
             .reason = "The rule classifier's heterogeneous share per task is compared with the paper's range."});
    s.claim({.claim = "A CNN trained on hand-labelled maps classifies the patterns (the paper's F1 is above).",
             .paper = "hand-labelled maps",
             .darkbert = "synthetic prototypes only (no hand-labelled set here)",
             .verdict = Verdict::not_testable,
             .reason = "The paper's labelled maps are not available; F1 on synthetic prototypes measures the generator, not BERT."});
    if (run.causal && fs::exists(units / "patterns-replication")) {
      s.paragraph("The GPT-2 replication's own classes, defined in study/pattern_rules.hpp (replication_pattern_scheme): "
                  "diagonal, block, overall and majority in the first sentence (M1), with its CNN (eight stride-2 3x3 "
                  "convolutions with batch normalisation and ReLU, a linear layer).");
      const auto rep = detail::write_pattern_classes(r, s, units / "patterns-replication", tasks, results, "patterns_replication",
                                                     "figure2_replication", "The replication's Figure 1a",
                                                     "Share of all (head, example) maps in each of the replication's classes.");
      const int overall = rep.scheme.index_of("overall", "findings");
      std::size_t repeated = 0;
      for (const auto& props : rep.rule_props)
        if (1.0 - props.second[static_cast<std::size_t>(overall)] >= 1.0 / 3.0) ++repeated;
      if (rep.first) {
        const auto& ev = rep.first->evaluation;
        s.paragraph("The replication's CNN, trained on `" + ev.training_set + "`, scores macro F1 " +
                    r.number("patterns_replication.cnn.heldout_macro_f1", ev.cnn.macro_f1, 3) + " on " +
                    r.count("patterns_replication.cnn.heldout_maps", static_cast<std::int64_t>(ev.cnn.maps)) +
                    " held-out maps; the replication's scored F1 " + r.number("paper.replication.cnn_f1", 0.61, 2) + " on its " +
                    r.count("paper.replication.labelled_maps", 1294) + " hand-labelled maps. Rules: `" + rep.first->rules + "`");
      }
      s.claim({.claim = "GPT-2 (the replication): a limited set of patterns repeats across heads; its labelled maps were 15% diagonal, "
                        "9% block, 20% M1 and 54% overall.",
               .paper = r.percent("paper.replication.repeated_share", 0.44, 0) + " of labelled maps diagonal, block or M1",
               .darkbert = "diagonal, block or M1 hold at least a third of the maps on " +
                           r.count("claims.patterns_replication.repeated", static_cast<std::int64_t>(repeated)) + " of " +
                           r.count("claims.patterns_replication.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks (rules)",
               .verdict = detail::verdict_over_tasks(repeated, n_tasks),
               .reason = "A task counts when the rule classifier puts at least a third of the maps outside 'overall' (the replication's "
                         "labelled set: 44%)."});
      s.claim({.claim = "The replication's CNN classifies GPT-2's maps with F1 0.61.",
               .paper = "hand-labelled GPT-2 maps",
               .darkbert = "synthetic prototypes only (no hand-labelled set here)",
               .verdict = Verdict::not_testable,
               .reason = "The replication's labelled maps are not available; F1 on synthetic prototypes measures the generator."});
    }
  }

  // ------------------------------------------------------------------ §3.2
  {
    auto& s = r.section("§3.2 Relation-specific heads (FrameNet)");
    const auto f = FrameNetHeadsResult::load(units / "framenet");
    write_framenet_figures(f, results / "framenet");
    s.paragraph("FrameNet `" + f.release.version + "` (" + f.release.kind + "): the paper's released selection keeps " +
                r.count("framenet.paper_selection", static_cast<std::int64_t>(f.paper.annotation_sets)) +
                " annotated sentences (the paper: " + r.count("paper.framenet.selection", 473) +
                " on FrameNet `1.7`); darkbert's earlier selection keeps " +
                r.count("framenet.darkbert_selection", static_cast<std::int64_t>(f.darkbert.annotation_sets)) + ". " +
                r.count("framenet.scored", static_cast<std::int64_t>(f.scored)) + " sentences were scored.");
    std::vector<double> all;
    for (Index l = 0; l < f.scores.rows(); ++l)
      for (Index h = 0; h < f.scores.cols(); ++h) all.push_back(f.scores(l, h));
    std::sort(all.begin(), all.end());
    const double median = all.empty() ? 0.0 : all[all.size() / 2];
    std::vector<std::string> top;
    for (std::size_t i = 0; i < f.top.size(); ++i)
      top.push_back(detail::head_name(f.top[i].layer, f.top[i].head) + " (" +
                    r.number("framenet.top." + std::to_string(i), f.top[i].value, 3) + ")");
    s.paragraph("Heads above the 99th percentile (" + r.number("framenet.threshold", f.threshold, 3) + "): " +
                (top.empty() ? std::string("none") : detail::join(top, ", ")) + "; the median head scores " +
                r.number("framenet.median", median, 3) + ".");
    s.figure({.png = "results/framenet/framenet_heads.png", .svg = "results/framenet/framenet_heads.svg",
              .caption = "Figure 3: per head, the mean over sentences of the largest target -> core-element weight."});
    s.figure({.png = "results/framenet/framenet_example_all_heads.png", .svg = "results/framenet/framenet_example_all_heads.svg",
              .caption = "Every head's map on the paper's example sentence, He was becoming agitated."});
    const double best = f.top.empty() ? std::numeric_limits<double>::quiet_NaN() : f.top.front().value;
    const bool stands_out = !f.top.empty() && best >= 2 * median;
    s.claim({.claim = "Two heads of BERT-base attend from a frame's target to its core elements, above the 99th percentile.",
             .paper = r.number("paper.framenet.top_a", 0.201, 3) + " and " + r.number("paper.framenet.top_b", 0.209, 3),
             .darkbert = "best head " + r.number("claims.framenet.best", best, 3) + ", median " +
                         r.number("claims.framenet.median", median, 3),
             .verdict = f.top.empty() ? Verdict::not_reproduced : (stands_out ? Verdict::reproduced : Verdict::partly),
             .reason = "Reproduced when the top head scores at least twice the median head; partly when heads pass the "
                       "percentile without standing out that far."});
  }

  // ------------------------------------------------------------------ §3.3
  {
    auto& s = r.section("§3.3 Change in attention after fine-tuning");
    std::size_t last_two = 0, first_two_least = 0;
    ReportTable t{.header = {"task", "seeds", "most changed layers (mean change)", "last two change most"},
                  .caption = "Layers counted from zero; mean over seeds of each layer's mean change, one minus the cosine similarity."};
    for (const auto& task : tasks) {
      const auto a = aggregate_fine_tune_change(units / "change" / task);
      a.save(results / "change" / task);
      const auto ranked = a.layers_by_change();
      const auto change = a.layer_change_mean();
      std::vector<std::string> top;
      for (std::size_t i = 0; i < std::min<std::size_t>(3, ranked.size()); ++i)
        top.push_back("layer " + r.count("change." + detail::key_of(task) + ".rank" + std::to_string(i), ranked[i]) + " (" +
                      r.number("change." + detail::key_of(task) + ".layer" + std::to_string(ranked[i]),
                               change[static_cast<std::size_t>(ranked[i])], 3) + ")");
      const bool yes = a.last_two_change_most();
      last_two += yes;
      // The replication (GPT-2): every layer but the first two changes more than they do.
      if (ranked.size() > 2) {
        const auto low_a = ranked[ranked.size() - 1], low_b = ranked[ranked.size() - 2];
        first_two_least += (low_a == 0 && low_b == 1) || (low_a == 1 && low_b == 0);
      }
      t.rows.push_back({task, r.count("change." + detail::key_of(task) + ".seeds", static_cast<std::int64_t>(a.seeds.size())),
                        detail::join(top, ", "), yes ? "yes" : "no"});
      s.figure({.png = detail::rel(out, results / "change" / task / "cosine.png"),
                .svg = detail::rel(out, results / "change" / task / "cosine.svg"),
                .caption = "Figure 5, " + task + ": per-head cosine similarity of pretrained and fine-tuned maps (mean over seeds)."});
    }
    s.table(t);
    s.claim({.claim = "The last two layers change most after fine-tuning (every task but QQP).",
             .paper = "layers " + r.count("paper.change.layer_a", 11) + " and " + r.count("paper.change.layer_b", 12) + " of " + r.count("paper.change.layers", 12),
             .darkbert = "on " + r.count("claims.change.last_two", static_cast<std::int64_t>(last_two)) + " of " +
                         r.count("claims.change.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(last_two, n_tasks),
             .reason = "A task counts when the two layers with the largest mean change over seeds are the last two."});
    if (run.causal)
      s.claim({.claim = "GPT-2 (the replication): all layers but the first two change most after fine-tuning.",
               .paper = "layers " + r.count("paper.replication.change_from", 3) + " to " + r.count("paper.replication.change_to", 12) +
                        " of " + r.count("paper.replication.layers", 12) + " change most",
               .darkbert = "layers 0 and 1 change least on " +
                           r.count("claims.change.first_two_least", static_cast<std::int64_t>(first_two_least)) + " of " +
                           r.count("claims.change.tasks_first_two", static_cast<std::int64_t>(n_tasks)) + " tasks",
               .verdict = layers > 2 ? detail::verdict_over_tasks(first_two_least, n_tasks) : Verdict::not_testable,
               .reason = "A task counts when layers 0 and 1 (counted from zero) are the two with the smallest mean change over seeds; "
                         "not testable with two layers or fewer."});
  }

  // ------------------------------------------------------------------ §3.4
  {
    auto& s = r.section("§3.4 Attention to linguistic features");
    std::size_t special_dominates = 0, cls_then_sep = 0;
    // The replication's "no vertical pattern where the sentences separate", on the pair tasks: heads whose
    // separator takes at least boundary_stripe of the attention of every query that can see it.
    std::size_t pair_tasks = 0, tasks_with_stripe = 0;
    double strongest_stripe = 0;
    ReportTable t{.header = {"task", "strongest head on [CLS] or [SEP]", "strongest head on a linguistic feature",
                             "[SEP] - [CLS] slope over layers",
                             "separator stripe: strongest head; heads >= " +
                                 std::to_string(std::lround(100 * detail::boundary_stripe)) + "%"},
                  .caption = "Fine-tuned model; the paper's measure (attention received, summed over queries, / length); "
                             "the last column per query that can see the separator, pair tasks only."};
    for (const auto& task : tasks) {
      const auto f = LinguisticFeaturesResult::load(units / "features" / task);
      const auto& grids = f.has_finetuned() ? f.finetuned : f.pretrained;
      double special = 0, linguistic = 0;
      std::string linguistic_name;
      for (std::size_t k = 0; k < f.features.size(); ++k) {
        if (f.features[k] == separator_per_visible_query_name) continue;  // [SEP] again, read below
        double best = 0;
        for (Index l = 0; l < grids[k].rows(); ++l)
          for (Index h = 0; h < grids[k].cols(); ++h)
            if (!std::isnan(grids[k](l, h))) best = std::max(best, grids[k](l, h));
        if (f.features[k] == "[CLS]" || f.features[k] == "[SEP]") special = std::max(special, best);
        else if (best > linguistic) linguistic = best, linguistic_name = f.features[k];
      }
      special_dominates += special > linguistic;
      const auto trend = f.layer_trend();
      std::vector<double> diff;
      const Index cls_col = f.has_finetuned() ? 1 : 0, sep_col = f.has_finetuned() ? 3 : 1;
      for (Index l = 0; l < trend.rows(); ++l) diff.push_back(trend(l, sep_col) - trend(l, cls_col));
      double slope = 0;
      {
        const double n = static_cast<double>(diff.size());
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (std::size_t i = 0; i < diff.size(); ++i) {
          const double x = static_cast<double>(i);
          sx += x, sy += diff[i], sxx += x * x, sxy += x * diff[i];
        }
        if (n > 1) slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      }
      cls_then_sep += slope > 0;
      const std::string k = "features." + detail::key_of(task) + ".";
      std::string stripe_cell = "—";
      if (const auto stripe = detail::boundary_stripes(f); glue_task_info(parse_glue_task(task)).pair && stripe) {
        ++pair_tasks;
        tasks_with_stripe += stripe->heads > 0;
        strongest_stripe = std::max(strongest_stripe, stripe->strongest);
        stripe_cell = r.number(k + "boundary_max", stripe->strongest, 3) + " (" + stripe->head + "); " +
                      r.count(k + "boundary_heads", static_cast<std::int64_t>(stripe->heads)) +
                      (stripe->heads == 1 ? " head" : " heads");
      }
      t.rows.push_back({task, r.number(k + "special_max", special, 3),
                        linguistic_name + " " + r.number(k + "linguistic_max", linguistic, 3),
                        r.number(k + "sep_minus_cls_slope", slope, 4), stripe_cell});
      write_linguistic_feature_figures(f, results / "features" / task);
    }
    s.table(t);
    // The figures of write_linguistic_feature_figures, in reading order.
    const fs::path feature_dir = results / "features" / tasks.front();
    const std::string stem = "features_" + detail::file_stem(tasks.front());
    const std::pair<std::string, std::string> feature_figures[] = {
        {stem, "attention each token category receives, per layer and head, pretrained beside fine-tuned"},
        {stem + "_difference", "fine-tuned minus pretrained"},
        {stem + "_trend", "mean attention on [CLS] and on [SEP] by layer (the paper: [CLS] early, [SEP] later)"}};
    for (const auto& [name, what] : feature_figures)
      if (fs::exists(feature_dir / (name + ".png")))
        s.figure({.png = detail::rel(out, feature_dir / (name + ".png")),
                  .svg = fs::exists(feature_dir / (name + ".svg")) ? detail::rel(out, feature_dir / (name + ".svg")) : "",
                  .caption = "Figure 6, " + tasks.front() + ": " + what + "."});
    s.claim({.claim = "Vertical attention goes mostly to [CLS] and [SEP], not to linguistically meaningful tokens.",
             .paper = "[CLS]/[SEP] far above nouns, verbs, objects, negation",
             .darkbert = "special tokens lead on " + r.count("claims.features.special_dominates", static_cast<std::int64_t>(special_dominates)) +
                         " of " + r.count("claims.features.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(special_dominates, n_tasks),
             .reason = "A task counts when the strongest head on [CLS] or [SEP] exceeds the strongest head on any linguistic feature."});
    s.claim({.claim = "Early layers attend to [CLS], later layers to [SEP].",
             .paper = "on every task",
             .darkbert = "[SEP] - [CLS] rises with depth on " + r.count("claims.features.cls_then_sep", static_cast<std::int64_t>(cls_then_sep)) +
                         " of " + r.count("claims.features.tasks_trend", static_cast<std::int64_t>(n_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(cls_then_sep, n_tasks),
             .reason = "A task counts when the least-squares slope of ([SEP] - [CLS]) over layers is positive."});
    // One claim text in both studies, so that the side-by-side report puts BERT's half and GPT-2's on one row.
    const std::string stripe_rule = r.percent("claims.boundary.threshold", detail::boundary_stripe, 0);
    s.claim({.claim = "Where the two sentences meet, BERT has a vertical stripe and GPT-2 has none (the replication).",
             .paper = "GPT-2: no vertical map where the sentences separate; BERT: stripes on [SEP]",
             .darkbert = std::string(run.causal ? "GPT-2" : "BERT") + ": a head with >= " + stripe_rule + " on the separator on " +
                         r.count("claims.boundary.tasks_with_stripe", static_cast<std::int64_t>(tasks_with_stripe)) + " of " +
                         r.count("claims.boundary.pair_tasks", static_cast<std::int64_t>(pair_tasks)) + " pair tasks (strongest " +
                         r.number("claims.boundary.strongest", strongest_stripe, 2) + ")",
             .verdict = detail::verdict_over_tasks(run.causal ? pair_tasks - tasks_with_stripe : tasks_with_stripe, pair_tasks),
             .reason = "Per pair task, the fine-tuned model's heads: the attention the separator ([SEP]; GPT-2: the second "
                       "<|endoftext|>) receives, divided by the queries that can see it. A head has a stripe at " + stripe_rule +
                       " or more (a quarter of every row, the rules' 'mix' threshold: plainly visible on a map). BERT's half "
                       "holds on a task with such a head, GPT-2's on a task without one."});
  }

  // ------------------------------------------------------------------ §3.5
  {
    auto& s = r.section("§3.5 Token-to-token attention");
    std::vector<TokenRelationsResult> all;
    std::size_t candidates = 0, diagonal = 0, sep_first = 0;
    for (const auto& task : tasks) {
      all.push_back(TokenRelationsResult::load(units / "relations" / task));
      const auto& x = all.back();
      for (const auto& rel : x.relations) {
        candidates += rel.candidates.size();
        diagonal += rel.diagonal_candidates();
      }
      const auto means = x.query_layer_means();
      std::size_t best = 0;
      for (std::size_t c = 1; c < means.size(); ++c)
        if (means[c] > means[best]) best = c;
      if (!means.empty() && x.categories[best] == "[SEP]") ++sep_first;
    }
    write_cls_category_figure(all, results / "relations");
    const std::string figure7 = "results/relations/" + detail::file_stem(all.front().query) + "_categories";
    s.figure({.png = figure7 + ".png", .svg = figure7 + ".svg",
              .caption = "Figure 7: the last layer's " + all.front().query + " attention by token category, per task" +
                         (run.causal ? " (GPT-2: the last token, which its classifier reads)." : ".")});
    const double share = candidates ? static_cast<double>(diagonal) / static_cast<double>(candidates) : 0.0;
    s.claim({.claim = "Verb -> subject and pronoun -> noun head candidates coincide with diagonal (neighbour) heads.",
             .paper = "the candidates were diagonal heads",
             .darkbert = r.percent("claims.relations.diagonal_share", share, 0) + " of " +
                         r.count("claims.relations.candidates", static_cast<std::int64_t>(candidates)) +
                         " candidates (all tasks) are diagonal",
             .verdict = candidates == 0 ? Verdict::not_testable
                        : share >= 0.5  ? Verdict::reproduced
                        : share > 0     ? Verdict::partly
                                        : Verdict::not_reproduced,
             .reason = "Reproduced when at least half the candidate heads are diagonal (a neighbour share of at least half, as defined in token_relations.hpp)."});
    s.claim({.claim = "In the last layer, [CLS] attends most to [SEP] on most tasks (not on STS-B, RTE, QNLI).",
             .paper = "[SEP] first on most tasks",
             .darkbert = "[SEP] first on " + r.count("claims.relations.sep_first", static_cast<std::int64_t>(sep_first)) + " of " +
                         r.count("claims.relations.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks",
             .verdict = 2 * sep_first > n_tasks ? Verdict::reproduced : (sep_first > 0 ? Verdict::partly : Verdict::not_reproduced),
             .reason = "Reproduced when [SEP] is the category [CLS] attends most to on more than half the tasks."});
  }

  // ------------------------------------------------------------------ §3.6
  {
    auto& s = r.section("§3.6 Disabling heads and layers");
    std::vector<DisableHeadsAggregate> aggs;
    std::size_t head_helps = 0, layer_helps = 0;
    ReportTable t{.header = {"task", "metric", "baseline", "best head (change)", "worst head (change)", "best layer (change)",
                             "worst layer (change)", "heads that help", "random head"},
                  .caption = "Changes in percentage points, mean ± sd over fine-tuning seeds; layers and heads counted from zero."};
    for (const auto& task : tasks) {
      aggs.push_back(aggregate_disable_heads(units / "disable" / task));
      const auto& a = aggs.back();
      a.save(results / "disable" / task);
      const std::string k = "disable." + detail::key_of(task) + ".";
      auto pts = [](std::vector<double> v) {
        for (double& x : v) x *= 100;
        return v;
      };
      const auto bh = a.head_extreme(true), wh = a.head_extreme(false), bl = a.layer_extreme(true), wl = a.layer_extreme(false);
      // The best of 48+ ablations is positive by selection alone: it counts only when it stands clear of
      // its own spread over seeds (with one seed, when it is positive).
      auto clear_gain = [](const MeanSd& c) { return c.mean > 0 && !(c.mean <= c.sd); };
      head_helps += clear_gain(bh.change);
      layer_helps += clear_gain(bl.change);
      t.rows.push_back({task, a.metric, r.mean_sd(k + "baseline", pts(a.baselines), 1),
                        detail::head_name(bh.layer, bh.head) + " " + r.mean_sd(k + "best_head", pts(bh.per_seed), 2),
                        detail::head_name(wh.layer, wh.head) + " " + r.mean_sd(k + "worst_head", pts(wh.per_seed), 2),
                        "layer " + r.count(k + "best_layer_index", bl.layer) + " " + r.mean_sd(k + "best_layer", pts(bl.per_seed), 2),
                        "layer " + r.count(k + "worst_layer_index", wl.layer) + " " + r.mean_sd(k + "worst_layer", pts(wl.per_seed), 2),
                        r.mean_sd(k + "share_helping", pts(a.share_helping), 1) + "%",
                        r.mean_sd(k + "random_head", pts(a.random_head_effect), 2)});
      s.figure({.png = detail::rel(out, results / "disable" / task / "head_change.png"),
                .svg = detail::rel(out, results / "disable" / task / "head_change.svg"),
                .caption = "Figure 8, " + task + ": change of the metric with each head disabled (mean over seeds)."});
      s.figure({.png = detail::rel(out, results / "disable" / task / "layer_change.png"),
                .svg = detail::rel(out, results / "disable" / task / "layer_change.svg"),
                .caption = "Figure 9, " + task + ": change of the metric with each layer disabled."});
    }
    s.table(t);
    s.claim({.claim = "Disabling a single head improves the score on every task (the largest gains run from STS-B to MRPC).",
             .paper = r.number("paper.disable.gain_low", 0.1, 1) + " to " + r.number("paper.disable.gain_high", 1.2, 1) + " points",
             .darkbert = "a head whose removal helps by more than its sd over seeds on " +
                         r.count("claims.disable.head_helps", static_cast<std::int64_t>(head_helps)) + " of " +
                         r.count("claims.disable.tasks", static_cast<std::int64_t>(n_tasks)) + " tasks (table above)",
             .verdict = detail::verdict_over_tasks(head_helps, n_tasks),
             .reason = "A task counts when its best head's mean change over seeds is positive and larger than its sd (the best of many ablations is positive by selection alone; the random-head column is the reference)."});
    s.claim({.claim = "Disabling a whole layer can improve the score.",
             .paper = "RTE, layer " + r.count("paper.disable.rte_layer", 5) + ": +" + r.number("paper.disable.rte_layer_gain", 3.2, 1) + " points",
             .darkbert = "a layer whose removal helps by more than its sd over seeds on " +
                         r.count("claims.disable.layer_helps", static_cast<std::int64_t>(layer_helps)) + " of " +
                         r.count("claims.disable.tasks_layers", static_cast<std::int64_t>(n_tasks)) + " tasks",
             .verdict = detail::verdict_over_tasks(layer_helps, n_tasks),
             .reason = "A task counts when its best layer's mean change over seeds is positive and larger than its sd."});
  }

  if (!run.companion.empty() && fs::exists(run.companion / "summary.json"))
    detail::write_side_by_side(r, run.causal ? "gpt2" : "bert", run.companion,
                               detail::rel(out, run.companion), tasks);
  r.write(out);
}

}  // namespace darkbert::study
