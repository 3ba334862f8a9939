// darkbert sweep --model DIR --task TASK [--max-examples N] [--out DIR] [--naive] [--batch-size 16]
//                [--max-length 128] [--policy uniform|zero] [--tokenizer DIR] [--quiet]
// darkbert sweep ... --shard K/N|auto --out SHARD_DIR        one range of the ablations (sweep_shard.json)
// darkbert sweep ... --merge SHARD_DIR... --out DIR          the shards checked and merged: the single run's files
// mpirun -np N darkbert sweep ... --shard mpi --out DIR       rank r runs shard r+1 of N, rank 0 merges into DIR
//
// The paper's §3.6 experiment on one GLUE task: evaluate the task metric of a fine-tuned classifier
// with no ablation, with each head disabled, and with each layer disabled, on the task's evaluation
// split from the data root. Prints the baseline, the score of every head and layer ablation and the wall
// time of the prefix-cached sweep; with --naive also runs the naive sweep and prints the ratio. With
// --out, writes head_scores / layer_scores as CSV, JSON and .npy, summary.json (= disable_heads.json), and
// a heatmap of the change against the baseline (head_scores_delta.png and .svg). The sweep and its result
// are study/disable_heads.hpp's, the code of the §3.6 example and `darkbert reproduce`; this command
// keeps its own data slice (the first N evaluation rows). Split over N processes (study/sweep_shards.hpp),
// each shard runs a range of the ablations and the merge writes what a single run writes.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem::path
#include <optional>    // std::optional
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "mpi_shards.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/study/disable_heads.hpp"
#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/sweep_shards.hpp"
#include "darkbert/study/work_units.hpp"
#include "darkbert/train/labelled_texts.hpp"

namespace darkbert::cli {

struct SweepOptions {
  std::filesystem::path model, tokenizer, out;
  std::string task, policy = "uniform";
  std::size_t max_examples = 0;
  std::size_t batch_size = 16;
  std::size_t max_length = 128;
  bool naive = false, quiet = false;
  std::string shard;                         // K/N, auto or mpi
  std::string shard_dir;                     // with mpi: each rank's shard folder
  std::vector<std::filesystem::path> merge;  // shard folders
};

// Everything a sweep's scores depend on: a shard of other options is refused by the merge.
inline nlohmann::json sweep_fingerprint(const SweepOptions& o) {
  auto absolute = [](const std::filesystem::path& p) { return std::filesystem::absolute(p).lexically_normal().string(); };
  return {{"sweep", 1}, {"model", absolute(o.model)}, {"model_digest", study::file_digest(o.model / "model.safetensors")},
          {"tokenizer", absolute(o.tokenizer.empty() ? o.model : o.tokenizer)}, {"task", std::string(glue_task_info(parse_glue_task(o.task)).name)},
          {"max_examples", o.max_examples}, {"batch_size", o.batch_size}, {"max_length", o.max_length}, {"policy", o.policy}};
}

// The files of a sweep: tables, heatmap, summary.json.
inline void write_sweep_files(const study::DisableHeadsResult& r, const std::filesystem::path& out) {
  r.save(out);
  study::write_head_change_figure(out / "head_scores_delta", r.head_change(),
                                  "Change in " + r.metric + " when one head is disabled (" + r.policy + ")", r.metric);
  write_file_atomically(out / "summary.json", r.summary().dump(2) + "\n");
  std::printf("wrote %s/{head_scores,layer_scores}.{csv,json,npy}, head_scores_delta.{png,svg}, disable_heads.json, "
              "summary.json\n",
              out.string().c_str());
}

inline void print_sweep(const study::DisableHeadsResult& r) {
  std::printf("baseline %s = %.4f\nhead ablations (rows = layers, columns = heads):\n", r.metric.c_str(), r.baseline);
  for (Index l = 0; l < r.layers(); ++l) {
    std::printf("  layer %2ld:", static_cast<long>(l));
    for (Index h = 0; h < r.heads(); ++h) std::printf(" %.4f", r.head_scores(l, h));
    std::printf("\n");
  }
  std::printf("layer ablations:");
  for (Index l = 0; l < r.layers(); ++l) std::printf(" %.4f", r.layer_scores(l, 0));
  std::printf("\n");
}

// The sweep, or with `shard` its part, written to `shard_out` as a shard; `say`: print what is swept.
inline void run_sweep(const SweepOptions& o, std::optional<study::ShardSpec> shard, const std::filesystem::path& shard_out, bool say) {
  const auto model = Transformer<float>::load(o.model);
  const auto tokenizer = Tokenizer::from_directory(o.tokenizer.empty() ? o.model : o.tokenizer);
  const GlueTask task = parse_glue_task(o.task);
  const auto& info = glue_task_info(task);
  study::require_task_classifier(model, task, o.model.string());
  const auto data = load_glue_finetune(DataRoot::from_environment(), task, {.max_eval = o.max_examples});
  const auto texts = encode_glue(tokenizer, data.eval, task, o.max_length);
  const std::size_t batches = (texts.size() + o.batch_size - 1) / o.batch_size;
  const std::string provenance = data.provenance + "; evaluated on " + data.eval.split + " (" +
                                 std::to_string(texts.size()) + " rows)";
  const std::string metric(to_string(info.metrics.front()));
  if (say)
    std::printf("%s: %s\nmodel %s (%d layers x %d heads), %zu examples in %zu batches, metric %s, policy %s\n",
                std::string(info.name).c_str(), provenance.c_str(), o.model.string().c_str(), model.config().num_layers,
                model.config().num_heads, texts.size(), batches, metric.c_str(), o.policy.c_str());

  const auto blocks = study::sweep_ablation_blocks(model.config().num_layers, model.config().num_heads);
  std::optional<std::pair<std::size_t, std::size_t>> range;
  if (shard) range = study::sweep_shard_range(blocks, *shard);
  const auto r = study::disable_heads(model, task, texts, tokenizer.pad_id(), provenance,
                                      {.policy = o.policy, .batch_size = o.batch_size, .show_progress = !o.quiet && say,
                                       .naive_check = o.naive, .model = o.model.string(), .ablations = range});
  if (shard) {
    study::write_sweep_shard(shard_out, r, sweep_fingerprint(o), *shard, *range,
                             static_cast<long>(batches) * model.config().num_layers);
    if (say)
      std::printf("shard %d/%d: ablations %zu to %zu of %zu, %.2f s\nwrote %s\n", shard->index, shard->count, range->first,
                  range->second, blocks.size(), r.seconds, (shard_out / "sweep_shard.json").string().c_str());
    return;
  }
  print_sweep(r);
  std::printf("prefix-cached sweep: %.2f s (%ld transformer blocks)\n", r.seconds, r.block_evaluations);
  if (o.naive) {
    const bool same = r.naive_identical.value_or(false);
    std::printf("naive sweep:         %.2f s (%ld transformer blocks)\nspeed-up of the prefix cache: %.2fx "
                "(work ratio %.2fx); scores %s\n",
                *r.naive_seconds, r.naive_block_evaluations, *r.naive_seconds / r.seconds,
                double(r.naive_block_evaluations) / double(r.block_evaluations), same ? "identical" : "DIFFER (bug!)");
    if (!same) fail("the prefix-cached and naive sweeps disagree");
  }
  if (!o.out.empty()) write_sweep_files(r, o.out);
}

// --merge: the shards checked against this sweep's options, then the single run's files.
inline void merge_sweep(const SweepOptions& o, const std::vector<std::filesystem::path>& shards) {
  const auto r = study::merge_sweep_shards(shards, sweep_fingerprint(o));
  std::printf("merged %zu shards: %ld transformer blocks, %.2f s in all\n", shards.size(), r.block_evaluations, r.seconds);
  print_sweep(r);
  write_sweep_files(r, o.out);
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
  cmd->add_option("--shard", o->shard, "Run only shard K of N of the ablations (K counted from 1, e.g. 2/3) and write "
                                       "sweep_shard.json into --out; 'auto': K and N from the Slurm job array; 'mpi': under "
                                       "mpirun, rank r runs shard r+1 of N and rank 0 merges into --out");
  cmd->add_option("--shard-dir", o->shard_dir, shard_dir_help);
  cmd->add_option("--merge", o->merge, "Merge these sweep shard folders (same options) into --out: the files of a single run")
      ->check(CLI::ExistingDirectory);
  cmd->callback([o] {
    require(o->shard.empty() || o->merge.empty(), "sweep: give --shard or --merge, not both");
    require((o->shard.empty() && o->merge.empty()) || !o->out.empty(), "sweep: --shard and --merge need --out");
    require(!o->naive || (o->shard.empty() && o->merge.empty()), "sweep: --naive compares whole sweeps; not with --shard or --merge");
    require(o->shard_dir.empty() || o->shard == "mpi", "sweep: --shard-dir is for --shard mpi");
    if (!o->merge.empty()) return merge_sweep(*o, o->merge);
    if (o->shard == "mpi") {
      run_over_mpi_ranks(
          o->out, o->shard_dir, "sweep_shard.json",
          [&](study::ShardSpec shard, const std::filesystem::path& dir) { run_sweep(*o, shard, dir, shard.index == 1); },
          [&](const std::vector<std::filesystem::path>& shards) { merge_sweep(*o, shards); });
      return;
    }
    std::optional<study::ShardSpec> shard;
    if (!o->shard.empty()) shard = o->shard == "auto" ? study::shard_from_slurm() : study::parse_shard_spec(o->shard);
    run_sweep(*o, shard, o->out, true);
  });
}

}  // namespace darkbert::cli
