#pragma once
// One fine-tuning run of `darkbert finetune`, shared with `darkbert finetune-table`: the options both take,
// and the run itself, which is study/finetune_table.hpp's fine_tune_and_score.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem
#include <string>      // std::string

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/study/finetune_table.hpp"

namespace darkbert::cli {

struct FinetuneOptions {
  std::filesystem::path model, tokenizer, out;
  std::string task, init = "pretrained";
  bool freeze_encoder = false, quiet = false, random_batches = false;
  std::uint64_t seed = 1;
  int epochs = 3;
  double lr = 2e-5;
  std::size_t batch = 32, max_train = 0, max_eval = 0, max_length = 128;

  study::FineTuneRecipe recipe() const {
    return {.epochs = epochs, .batch_size = batch, .learning_rate = lr, .max_train = max_train, .max_eval = max_eval,
            .max_length = max_length, .group_by_length = !random_batches};
  }
  std::filesystem::path tokenizer_dir() const { return tokenizer.empty() ? model : tokenizer; }
};

// The options `finetune` and `finetune-table` share: the recipe and the data slice.
inline void add_fine_tuning_recipe_options(CLI::App* cmd, FinetuneOptions& o) {
  cmd->add_option("--tokenizer", o.tokenizer, "Tokenizer folder (default: the model folder)")->check(CLI::ExistingDirectory);
  cmd->add_option("--epochs", o.epochs, "Passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lr", o.lr, "Peak learning rate (10% linear warm-up, then linear decay)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batch", o.batch, "Examples per step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-train", o.max_train, "Train on the first N examples (0 = all)")->capture_default_str();
  cmd->add_option("--max-eval", o.max_eval, "Evaluate on the first N examples (0 = all)")->capture_default_str();
  cmd->add_option("--max-length", o.max_length, "Truncate inputs to this many tokens")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--random-batches", o.random_batches,
                "Batches of randomly drawn examples, as run_classifier's (default: grouped by length, less padding)");
  cmd->add_flag("--quiet", o.quiet, "No progress bar");
}

// Fine-tunes `o.model` on `o.task` as `o` says and returns the run's metrics (scores after every epoch, the
// last epoch's under "scores", training loss, wall time, majority-class rate). When `save_to` is not empty,
// the fine-tuned checkpoint and its tokenizer files are written there.
inline nlohmann::json fine_tune_and_score(const FinetuneOptions& o, const std::filesystem::path& save_to) {
  const GlueTask task = parse_glue_task(o.task);
  const auto tokenizer = Tokenizer::from_directory(o.tokenizer_dir());
  const auto recipe = o.recipe();
  const auto data = study::load_fine_tune_data(DataRoot::from_environment(), task, tokenizer, recipe);
  const auto checkpoint = Transformer<float>::load(o.model);
  const study::FineTuneSpec spec{.random_weights = o.init == "random", .train_encoder = !o.freeze_encoder};
  const auto run = study::fine_tune_and_score(checkpoint, tokenizer, data, spec, o.seed, recipe,
                                              {.save_to = save_to, .tokenizer_dir = o.tokenizer_dir(),
                                               .model_label = o.model.string(), .show_progress = !o.quiet,
                                               .log = [](const std::string& line) { std::printf("%s\n", line.c_str()); }});
  return run.to_json();
}

}  // namespace darkbert::cli
