// §3.3 of "Revealing the Dark Secrets of BERT": how much does fine-tuning change each head's attention?
//
// For every head, the cosine similarity between the flattened attention map of the pretrained model and
// that of the fine-tuned model on the same evaluation example, averaged over the task's examples
// (Figure 5); the layers ranked by how much they changed (mean 1 - cosine over their heads; the paper: the
// last two layers change most, on every task but QQP); each statistic over several fine-tuning seeds.
// With --table the example first fine-tunes the model itself in Table 1's four settings (pretrained +
// fine-tuned, random init + fine-tuned, frozen encoder + trained head, pretrained with an untrained head),
// one run per seed, and compares the pretrained model with the fine-tuned one of each seed.
//
//   darkbert_finetune_change --model PRETRAINED --finetuned FT_SEED1 FT_SEED2 FT_SEED3 --task MRPC --out out
//   darkbert_finetune_change --model PRETRAINED --table --task RTE --seeds 3 --lr 5e-4 --max-train 2000 --out out
//
// Writes <out>/<TASK>/seed-<k>/ (one per fine-tuned model), <out>/<TASK>/ (mean and sd over the seed
// folders there: tables, fine_tune_change.json, cosine.png/.svg), the combined figures over every task in
// <out> (fine_tune_change_tasks, layer_change_tasks), and with --table <out>/table/ (runs.csv, table.md,
// the fine-tuned checkpoints).

#include <CLI/CLI.hpp>  // CLI::App

#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::printf
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/finetune_change.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/train/default_models.hpp"

namespace study = darkbert::study;

int main(int argc, char** argv) {
  CLI::App app{"Section 3.3: per-head cosine similarity of attention before and after fine-tuning (Figure 5), "
               "and with --table the paper's Table 1 for one task"};
  std::string arch = "bert";
  std::filesystem::path model, out = "finetune_change";
  std::vector<std::filesystem::path> finetuned;
  std::string task_name = "MRPC";
  std::size_t max_examples = 0;
  std::uint64_t seed = 1;
  bool table = false;
  study::FineTuneTablePlan plan;
  app.add_option("--model", model, "Pretrained checkpoint folder (default: the study model, trained on first use)");
  app.add_option("--finetuned", finetuned, "Fine-tuned folders of --model, one per fine-tuning seed (its metrics.json "
                                              "names the seed, else its place here from 1)");
  app.add_option("--task", task_name, "GLUE task: MRPC, STS-B, SST-2, RTE, QNLI (QQP, MNLI when present)")->capture_default_str();
  app.add_option("--out", out, "Output folder")->capture_default_str();
  app.add_option("--max-examples", max_examples, "Compare on at most N evaluation examples (0 = all)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the evaluation-example sample")->capture_default_str();
  app.add_flag("--table", table, "Fine-tune --model first: Table 1's four settings, --seeds runs each");
  app.add_option("--seeds", plan.seeds, "With --table: fine-tuning seeds 1..N")->capture_default_str();
  app.add_option("--epochs", plan.recipe.epochs, "With --table: passes over the training set")->capture_default_str();
  app.add_option("--lr", plan.recipe.learning_rate, "With --table: peak learning rate")->capture_default_str();
  app.add_option("--batch", plan.recipe.batch_size, "With --table: examples per step")->capture_default_str();
  app.add_option("--max-train", plan.recipe.max_train, "With --table: the first N training examples (0 = all)")->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (pretrained on first use)")
      ->check(CLI::IsMember({"bert", "gpt2"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const auto root = darkbert::DataRoot::from_environment();
    if (model.empty()) model = darkbert::default_model(root, arch);
    const auto task = darkbert::parse_glue_task(task_name);
    darkbert::require(table || !finetuned.empty(), "give the fine-tuned models with --finetuned, or --table to train them");

    // Table 1: the task in four settings, several seeds; keep the fine-tuned models for the comparison.
    if (table) {
      plan.tasks = {task};
      plan.options = {.keep_checkpoint = true, .show_progress = true,
                      .log = [](const std::string& line) { std::printf("%s\n", line.c_str()); }};
      const auto t = study::run_fine_tune_table(root, model, model, out / "table", plan);
      std::printf("\n%s\n", t.markdown().c_str());
      for (int i = 0; i < plan.seeds; ++i)
        finetuned.push_back(study::fine_tuned_checkpoint_dir(out / "table", task, plan.first_seed + std::uint64_t(i)));
    }

    // The pretrained model and the task's evaluation examples.
    const auto pretrained = darkbert::Transformer<float>::load(model);
    const auto tokenizer = darkbert::Tokenizer::from_directory(model);
    const auto inputs = study::load_task_inputs(root, task, tokenizer, pretrained.config(),
                                                {.max_examples = max_examples, .seed = seed});
    std::printf("%s: %s\n", task_name.c_str(), inputs.provenance.c_str());

    // Per fine-tuned model: the per-head mean cosine similarity to the pretrained maps.
    const auto dir = study::task_dir(out, task);
    for (std::size_t i = 0; i < finetuned.size(); ++i) {
      const auto tuned = darkbert::Transformer<float>::load(finetuned[i]);
      const auto change = study::measure_fine_tune_change(
          pretrained, tuned, inputs, {.seed = study::fine_tuning_seed(finetuned[i], i + 1), .pretrained = model.string(), .finetuned = finetuned[i].string()});
      change.save(study::seed_dir(dir, change.seed));
      std::printf("seed %llu: layers by change %s\n", static_cast<unsigned long long>(change.seed),
                  change.summary()["layers_by_change"].dump().c_str());
    }

    // Across seeds (every seed folder of the task, e.g. also those another machine computed), and across tasks.
    const auto across = study::aggregate_fine_tune_change(dir);
    across.save(dir);
    const auto s = across.summary();
    std::printf("%s over %zu seeds: mean 1 - cosine per layer %s (sd %s)\nmost changed layers %s; last two change most: %s "
                "(paper: yes on every task but QQP)\n",
                across.task.c_str(), across.seeds.size(), s["layer_change_mean"].dump().c_str(),
                s["layer_change_sd"].dump().c_str(), s["most_changed_layers"].dump().c_str(),
                across.last_two_change_most() ? "yes" : "no");
    std::vector<study::FineTuneChangeAggregate> tasks;
    for (auto t : darkbert::all_glue_tasks)
      if (std::filesystem::exists(study::task_dir(out, t) / "fine_tune_change.json"))
        tasks.push_back(study::FineTuneChangeAggregate::load(study::task_dir(out, t)));
    study::write_fine_tune_change_overview(out, tasks);
    std::printf("wrote %s (%zu task(s) in the combined figures)\n", out.string().c_str(), tasks.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
