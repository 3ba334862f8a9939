// darkbert finetune --model DIR --task TASK --out DIR [--init pretrained|random] [--freeze-encoder] [--seed N]
//                   [--epochs 3] [--lr 2e-5] [--batch 32] [--max-train N] [--max-eval N] [--max-length 128]
//                   [--random-batches] [--tokenizer DIR] [--quiet]
//
// Fine-tunes a checkpoint on a GLUE task from the data root and scores it on the task's evaluation split
// after every epoch. The three settings of the paper's Table 1:
//   --init pretrained                   pretrained encoder + new classifier, everything trained (default)
//   --init random                       the same architecture from random weights
//   --init pretrained --freeze-encoder  pretrained encoder frozen, only the task heads trained
// Writes the fine-tuned model as a Hugging Face folder (config.json, model.safetensors, tokenizer files)
// and metrics.json (scores per epoch, training loss, wall time, the majority-class rate) to --out, and
// ends with one line: task=... <metric>=... majority=... seconds=...

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem
#include <memory>      // std::make_shared
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "finetune_run.hpp"

namespace darkbert::cli {

inline void run_finetune_command(const FinetuneOptions& o) {
  const nlohmann::json metrics = fine_tune_and_score(o, o.out);
  write_file_atomically(o.out / "metrics.json", metrics.dump(2) + "\n");
  std::printf("task=%s", metrics["task"].get<std::string>().c_str());
  for (const auto& [name, value] : metrics["scores"].items()) std::printf(" %s=%.4f", name.c_str(), value.get<double>());
  std::printf(" majority=%.4f train_loss=%.4f seconds=%.1f examples_per_s=%.1f\n", metrics["majority_rate"].get<double>(),
              metrics["train_loss"].back().get<double>(), metrics["seconds"].get<double>(),
              metrics["examples_per_second"].get<double>());
}

void add_finetune_command(CLI::App& app) {
  auto o = std::make_shared<FinetuneOptions>();
  auto* cmd = app.add_subcommand("finetune", "Fine-tune a checkpoint on a GLUE task and score it after every epoch\n"
                                             "  e.g. darkbert finetune --model mini-bert --task SST-2 --out sst2-run");
  add_model_option(cmd, o->model);
  cmd->add_option("--task", o->task, "GLUE task: MRPC, STS-B, SST-2, RTE, QNLI (QQP, MNLI when present)")->required();
  cmd->add_option("--out", o->out, "Write the fine-tuned checkpoint and metrics.json here")->required();
  cmd->add_option("--init", o->init, "pretrained: the checkpoint's weights; random: the same shape from random weights")
      ->check(CLI::IsMember({"pretrained", "random"}))->capture_default_str();
  cmd->add_flag("--freeze-encoder", o->freeze_encoder, "Train only the task heads (pooler and classifier)");
  cmd->add_option("--seed", o->seed, "Seed of the classifier's initialisation, example order and dropout")->capture_default_str();
  add_fine_tuning_recipe_options(cmd, *o);
  cmd->callback([o] {
    o->model = resolve_model(o->model);
    run_finetune_command(*o);
  });
}

}  // namespace darkbert::cli
