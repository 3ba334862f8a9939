#pragma once
// One fine-tuning run of `darkbert finetune`, shared with `darkbert finetune-table`: fine-tune a checkpoint
// on a GLUE task, score it after every epoch, and return what metrics.json holds.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf, std::fprintf
#include <filesystem>  // std::filesystem
#include <string>      // std::string

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/analysis/predictions.hpp"
#include "darkbert/train/fine_tune.hpp"

namespace darkbert::cli {

struct FinetuneOptions {
  std::filesystem::path model, tokenizer, out;
  std::string task, init = "pretrained";
  bool freeze_encoder = false, quiet = false;
  std::uint64_t seed = 1;
  int epochs = 3;
  double lr = 2e-5;
  std::size_t batch = 32, max_train = 0, max_eval = 0, max_length = 128;
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
  cmd->add_flag("--quiet", o.quiet, "No progress bar");
}

// The config of the checkpoint as a sequence classifier for `task` (the Hugging Face architecture name
// of its family, the task's labels, GPT-2's padding token).
inline ModelConfig classifier_config(ModelConfig c, const GlueTaskInfo& info, const Tokenizer& tokenizer) {
  static const char* names[] = {"BertForSequenceClassification", "RobertaForSequenceClassification",
                                "DistilBertForSequenceClassification", "GPT2ForSequenceClassification"};
  c.architecture = names[static_cast<int>(c.family)];
  c.labels.clear();
  if (info.regression) {
    c.labels = {"LABEL_0"};
    c.problem_type = "regression";
  } else {
    for (auto l : info.labels) c.labels.emplace_back(l);
    c.problem_type = "single_label_classification";
  }
  // GPT-2 has no padding token; as Hugging Face's recipe, pad with <|endoftext|> and read each row's last
  // token that is not it.
  if (c.family == Family::gpt2 && c.pad_token_id < 0) c.pad_token_id = tokenizer.pad_id();
  return c;
}

// Fine-tunes `o.model` on `o.task` as `o` says and returns the run's metrics (scores after every epoch, the
// last epoch's under "scores", training loss, wall time, majority-class rate). When `save_to` is not empty,
// the fine-tuned checkpoint and its tokenizer files are written there.
inline nlohmann::json fine_tune_and_score(const FinetuneOptions& o, const std::filesystem::path& save_to) {
  const GlueTask task = parse_glue_task(o.task);
  const auto& info = glue_task_info(task);
  const auto tokenizer_dir = o.tokenizer.empty() ? o.model : o.tokenizer;
  const auto tokenizer = Tokenizer::from_directory(tokenizer_dir);
  const auto data = load_glue_finetune(DataRoot::from_environment(), task, {.max_train = o.max_train, .max_eval = o.max_eval});
  const auto train = encode_glue(tokenizer, data.train, task, o.max_length);
  const auto dev = encode_glue(tokenizer, data.eval, task, o.max_length);

  const auto checkpoint = Transformer<float>::load(o.model);
  const auto config = classifier_config(checkpoint.config(), info, tokenizer);
  const auto heads = TaskHeads::for_architecture(config);
  auto model = o.init == "random" ? Transformer<float>::random(config, heads, o.seed)
                                  : checkpoint.with_task_heads(config, heads, o.seed);
  const FineTuneOptions options{.epochs = o.epochs, .batch_size = o.batch, .learning_rate = o.lr,
                                .train_encoder = !o.freeze_encoder, .seed = o.seed, .show_progress = !o.quiet};
  std::printf("%s: %s; %zu training and %zu evaluation examples\nmodel %s (%s, %d layers x %d heads, init %s%s), "
              "%d epochs, batch %zu, lr %g, seed %llu\n",
              std::string(info.name).c_str(), data.provenance.c_str(), train.size(), dev.size(), o.model.string().c_str(),
              family_name(config.family), config.num_layers, config.num_heads, o.init.c_str(),
              o.freeze_encoder ? ", encoder frozen" : "", o.epochs, o.batch, o.lr,
              static_cast<unsigned long long>(o.seed));

  nlohmann::json epochs = nlohmann::json::array();
  const int pad = tokenizer.pad_id();
  auto evaluate = [&](int epoch) {
    const auto predictions = predict(model, dev, pad);
    nlohmann::json scores;
    for (auto metric : info.metrics) scores[std::string(to_string(metric))] = glue_metric_function(metric)(predictions, dev.labels);
    epochs.push_back({{"epoch", epoch + 1}, {"scores", scores}});
    std::fprintf(stderr, "\nepoch %d: %s\n", epoch + 1, scores.dump().c_str());
  };
  const auto history = fine_tune(model, train, pad, options, evaluate);

  if (!save_to.empty()) {
    std::filesystem::create_directories(save_to);
    model.save(save_to);
    copy_tokenizer_files(tokenizer_dir, save_to);
  }
  return nlohmann::json{
      {"task", info.name}, {"data", data.provenance}, {"model", o.model.string()}, {"init", o.init},
      {"freeze_encoder", o.freeze_encoder}, {"seed", o.seed}, {"epochs", o.epochs}, {"batch", o.batch},
      {"learning_rate", o.lr}, {"max_length", o.max_length}, {"train_examples", train.size()},
      {"eval_examples", dev.size()}, {"eval_split", data.eval.split}, {"majority_rate", dev.majority_rate()},
      {"scores", epochs.back()["scores"]}, {"per_epoch", epochs}, {"train_loss", history.epoch_loss},
      {"steps", history.steps}, {"seconds", history.seconds}, {"examples_per_second", history.examples_per_second}};
}

}  // namespace darkbert::cli
