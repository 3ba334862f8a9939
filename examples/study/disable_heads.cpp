// §3.6 of "Revealing the Dark Secrets of BERT": what happens to a fine-tuned model when a head, or a whole
// layer, is disabled?
//
// A disabled head attends uniformly to the tokens it may see (1/n), so its learned pattern is gone but the
// information it passes on stays. Each fine-tuned model (one per fine-tuning seed) is scored on the task's
// evaluation examples with nothing disabled, with every single head disabled and with every whole layer
// disabled (the prefix-cached sweep: an ablation at layer l resumes from the cached states entering l).
// Across seeds: the mean change of each head and layer and its sd (Figures 8 and 9), the share of heads
// whose removal helps, the mean effect of disabling a random head, the best and worst ablations. The
// paper (one seed, BERT-base): one head's removal gains from 0.1 points (STS-B) to 1.2 (MRPC); disabling a
// random head helps on average on MRPC and RTE; disabling layer 5 (from 1) gains 3.2 points on RTE and
// loses 0.2 on QNLI and MNLI.
//
//   darkbert_disable_heads --model FT_SEED1 --model FT_SEED2 --model FT_SEED3 --task RTE --out out
//
// Writes <out>/<TASK>/seed-<k>/ (one per model), <out>/<TASK>/ (the aggregate over the seed folders there,
// with head_change.png/.svg and layer_change.png/.svg) and the combined figures over every task in <out>.

#include <CLI/CLI.hpp>  // CLI::App

#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::printf
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/disable_heads.hpp"
#include "darkbert/train/default_models.hpp"

namespace study = darkbert::study;

int main(int argc, char** argv) {
  CLI::App app{"Section 3.6: the task score with each head and each layer disabled, over fine-tuning seeds "
               "(Figures 8 and 9)"};
  std::string arch = "bert";
  std::vector<std::filesystem::path> models;
  std::filesystem::path out = "disable_heads";
  std::string task_name = "MRPC";
  std::size_t max_examples = 0;
  std::uint64_t seed = 1;
  study::DisableHeadsOptions options;
  app.add_option("--model", models, "Fine-tuned classifier folder; repeat once per fine-tuning seed (its metrics.json "
                                    "names the seed, else its place here from 1; default: the study model, which "
                                    "has no classifier)");
  app.add_option("--task", task_name, "GLUE task the models were fine-tuned on")->capture_default_str();
  app.add_option("--out", out, "Output folder")->capture_default_str();
  app.add_option("--max-examples", max_examples, "Score on at most N evaluation examples (0 = all)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the evaluation-example sample")->capture_default_str();
  app.add_option("--policy", options.policy, "How a disabled head attends: uniform (the paper) or zero")
      ->check(CLI::IsMember({"uniform", "zero"}))->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (pretrained on first use)")
      ->check(CLI::IsMember({"bert", "gpt2"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const auto root = darkbert::DataRoot::from_environment();
    if (models.empty()) models.push_back(darkbert::default_model(root, arch));
    const auto task = darkbert::parse_glue_task(task_name);
    const auto dir = study::task_dir(out, task);
    options.show_progress = true;

    // Each fine-tuned model, on the same evaluation examples: baseline, every head, every layer.
    for (std::size_t i = 0; i < models.size(); ++i) {
      const auto model = darkbert::Transformer<float>::load(models[i]);
      const auto tokenizer = darkbert::Tokenizer::from_directory(models[i]);
      const auto inputs = study::load_task_inputs(root, task, tokenizer, model.config(),
                                                  {.max_examples = max_examples, .seed = seed});
      options.seed = study::fine_tuning_seed(models[i], i + 1);
      options.model = models[i].string();
      const auto r = study::disable_heads(model, inputs, options);
      r.save(study::seed_dir(dir, r.seed));
      std::printf("seed %llu: %s, baseline %s %.4f; heads whose removal helps %.0f%%; a random head %+.4f; "
                  "%.1f s for %ld blocks\n",
                  static_cast<unsigned long long>(r.seed), inputs.provenance.c_str(), r.metric.c_str(), r.baseline,
                  100 * r.share_helping(), r.random_head_effect(), r.seconds, r.block_evaluations);
    }

    // Across seeds (every seed folder of the task), then every task in the output folder side by side.
    const auto across = study::aggregate_disable_heads(dir);
    across.save(dir);
    const auto s = across.summary();
    std::printf("%s over %zu seeds (%s, change in points):\n  best head %s, worst head %s\n  best layer %s, worst layer %s\n"
                "  heads whose removal helps: %s; a random head: %s points; best single-head gain: %s points\n",
                across.task.c_str(), across.seeds.size(), across.metric.c_str(), s["best_head"].dump().c_str(),
                s["worst_head"].dump().c_str(), s["best_layer"].dump().c_str(), s["worst_layer"].dump().c_str(),
                s["share_of_heads_helping"].dump().c_str(), s["random_head_effect_points"].dump().c_str(),
                s["best_single_head_gain_points"].dump().c_str());
    std::vector<study::DisableHeadsAggregate> tasks;
    for (auto t : darkbert::all_glue_tasks)
      if (std::filesystem::exists(study::task_dir(out, t) / "disable_heads.json"))
        tasks.push_back(study::DisableHeadsAggregate::load(study::task_dir(out, t)));
    study::write_disable_heads_overview(out, tasks);
    std::printf("wrote %s (%zu task(s) in the combined figures)\n", out.string().c_str(), tasks.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
