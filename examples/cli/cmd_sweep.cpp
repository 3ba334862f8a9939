// darkbert sweep --model DIR --task TASK [--max-examples N] [--out DIR] [--naive] [--batch-size 16]
//                [--max-length 128] [--policy uniform|zero] [--tokenizer DIR] [--quiet]
//
// The paper's §3.6 experiment on one GLUE task: evaluate the task metric of a fine-tuned classifier
// with no ablation, with each head disabled, and with each layer disabled, on the task's evaluation
// split from the data root. Prints the baseline, the score of every head and layer ablation and the wall
// time of the prefix-cached sweep; with --naive also runs the naive sweep and prints the ratio. With
// --out, writes head_scores / layer_scores as CSV, JSON and .npy, summary.json, and a heatmap of the
// change against the baseline (head_scores_delta.png).

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/analysis/ablation_sweep.hpp"
#include "darkbert/analysis/results.hpp"
#include "darkbert/analysis/predictions.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/train/labelled_texts.hpp"
#include "darkbert/viz/heatmap.hpp"

namespace darkbert::cli {

struct SweepOptions {
  std::filesystem::path model, tokenizer, out;
  std::string task, policy = "uniform";
  std::size_t max_examples = 0;
  std::size_t batch_size = 16;
  std::size_t max_length = 128;
  bool naive = false, quiet = false;
};

inline void print_sweep(const SweepResult& r, const std::string& metric) {
  std::printf("baseline %s = %.4f\nhead ablations (rows = layers, columns = heads):\n", metric.c_str(), r.baseline);
  for (Index l = 0; l < r.head_scores.rows(); ++l) {
    std::printf("  layer %2ld:", static_cast<long>(l));
    for (Index h = 0; h < r.head_scores.cols(); ++h) std::printf(" %.4f", r.head_scores(l, h));
    std::printf("\n");
  }
  std::printf("layer ablations:");
  for (double s : r.layer_scores) std::printf(" %.4f", s);
  std::printf("\n");
}

inline void write_sweep(const SweepOptions& o, const SweepResult& r, const std::string& metric,
                        const nlohmann::json& summary) {
  std::filesystem::create_directories(o.out);
  const Index layers = r.head_scores.rows(), heads = r.head_scores.cols();
  auto head_table = make_head_matrix<double>("head_scores", layers, heads);
  for (Index l = 0; l < layers; ++l)
    for (Index h = 0; h < heads; ++h) head_table(l, h) = r.head_scores(l, h);
  write_table(head_table, o.out);
  auto layer_table = make_table<double>("layer_scores", "layer", darkbert::detail::index_names(layers), "metric", {metric});
  for (Index l = 0; l < layers; ++l) layer_table(l, 0) = r.layer_scores[static_cast<std::size_t>(l)];
  write_table(layer_table, o.out);
  HeatmapOptions figure;
  figure.title = "Change in " + metric + " when one head is disabled (" + o.policy + ")";
  figure.x = {"head", {}, 0};
  figure.y = {"layer", {}, 0};
  figure.value_label = metric + " - baseline";
  figure.map = Colormap::coolwarm();
  write_heatmap(o.out / "head_scores_delta.png", r.head_scores.array() - r.baseline, figure);
  write_file_atomically(o.out / "summary.json", summary.dump(2) + "\n");
}

inline void run_sweep_command(const SweepOptions& o) {
  const auto model = Transformer<float>::load(o.model);
  const auto tokenizer = Tokenizer::from_directory(o.tokenizer.empty() ? o.model : o.tokenizer);
  const GlueTask task = parse_glue_task(o.task);
  const auto& info = glue_task_info(task);
  const auto& classifier = model.params().task_heads.classifier;
  if (!classifier) fail(o.model.string(), ": the model has no sequence classification head; sweep needs a fine-tuned classifier");
  const Index outputs = classifier->out.out();
  const Index expected = info.regression ? 1 : static_cast<Index>(info.labels.size());
  if (outputs != expected)
    fail(o.model.string(), ": the classifier has ", outputs, " outputs but ", info.name, " needs ", expected,
         info.regression ? " (regression)" : " labels");
  const auto data = load_glue_finetune(DataRoot::from_environment(), task, {.max_eval = o.max_examples});
  const auto texts = encode_glue(tokenizer, data.eval, task, o.max_length);
  const auto batches = sequential_batches(texts, o.batch_size, tokenizer.pad_id(), token_types_for(model.config()));
  const std::string provenance = data.provenance + "; evaluated on " + data.eval.split + " (" +
                                 std::to_string(texts.size()) + " rows)";
  const std::string metric(to_string(info.metrics.front()));
  std::printf("%s: %s\nmodel %s (%d layers x %d heads), %zu examples in %zu batches, metric %s, policy %s\n",
              std::string(info.name).c_str(), provenance.c_str(), o.model.string().c_str(), model.config().num_layers,
              model.config().num_heads, texts.size(), batches.size(), metric.c_str(), o.policy.c_str());

  AblationSweep<float> sweep(model, batches, texts.labels, glue_metric_function(info.metrics.front()),
                             o.policy == "zero" ? zero_policy<float>() : uniform_policy<float>());
  sweep.set_show_progress(!o.quiet);
  const SweepResult cached = sweep.run();
  print_sweep(cached, metric);
  nlohmann::json summary = {{"task", info.name},       {"metric", metric},          {"policy", o.policy},
                            {"examples", texts.size()}, {"data", provenance}, {"baseline", cached.baseline},
                            {"prefix_cached_seconds", cached.seconds},
                            {"prefix_cached_block_evaluations", cached.block_evaluations}};
  std::printf("prefix-cached sweep: %.2f s (%ld transformer blocks)\n", cached.seconds, cached.block_evaluations);
  if (o.naive) {
    const SweepResult naive = sweep.run_naive();
    const bool same = naive.head_scores == cached.head_scores && naive.layer_scores == cached.layer_scores &&
                      naive.baseline == cached.baseline;
    std::printf("naive sweep:         %.2f s (%ld transformer blocks)\nspeed-up of the prefix cache: %.2fx "
                "(work ratio %.2fx); scores %s\n",
                naive.seconds, naive.block_evaluations, naive.seconds / cached.seconds,
                double(naive.block_evaluations) / double(cached.block_evaluations),
                same ? "identical" : "DIFFER (bug!)");
    summary["naive_seconds"] = naive.seconds;
    summary["naive_block_evaluations"] = naive.block_evaluations;
    summary["speedup"] = naive.seconds / cached.seconds;
    summary["naive_scores_identical"] = same;
    if (!same) fail("the prefix-cached and naive sweeps disagree");
  }
  if (!o.out.empty()) {
    write_sweep(o, cached, metric, summary);
    std::printf("wrote %s/{head_scores,layer_scores}.{csv,json,npy}, head_scores_delta.png, summary.json\n",
                o.out.string().c_str());
  }
}

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "Disable every head and every layer in turn and score a GLUE task");
  cmd->footer("Example: darkbert sweep --model bert-base-mrpc/ --task mrpc --max-examples 200 --out sweep-mrpc");
  cmd->add_option("--model", o->model, "Fine-tuned sequence classifier (checkpoint folder)")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--task", o->task, "GLUE task: MRPC, STS-B, SST-2, QQP, RTE, QNLI, MNLI")->required();
  cmd->add_option("--tokenizer", o->tokenizer, "Tokenizer folder (default: the model folder)")->check(CLI::ExistingDirectory);
  cmd->add_option("--max-examples", o->max_examples, "Evaluate on at most N examples (0 = all)")->capture_default_str();
  cmd->add_option("--batch-size", o->batch_size, "Examples per forward pass")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-length", o->max_length, "Truncate inputs to this many tokens")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--policy", o->policy, "How a disabled head attends: uniform (the paper) or zero")
      ->check(CLI::IsMember({"uniform", "zero"}))->capture_default_str();
  cmd->add_option("--out", o->out, "Write tables (CSV, JSON, .npy), a heatmap and summary.json here");
  cmd->add_flag("--naive", o->naive, "Also run the naive sweep (no prefix cache) and print the speed-up");
  cmd->add_flag("--quiet", o->quiet, "No progress bar");
  cmd->callback([o] { run_sweep_command(*o); });
}

}  // namespace darkbert::cli
