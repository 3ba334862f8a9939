// §3.4 of "Revealing the Dark Secrets of BERT" (Kovaleva et al., 2019), attention to linguistic features.
//
// Annotate a task's evaluation examples (POS, subjects, objects, negation); run the pretrained and the
// fine-tuned model on them; for every head measure the attention each feature receives — [CLS], [SEP],
// punctuation, nouns, verbs, pronouns, subjects, objects, negation — summed over the queries, divided by
// the length, the maximum over the feature's tokens, averaged over the examples that have the feature.
// Compare the two models head by head (the paper's Figure 6) and follow [CLS] and [SEP] through the layers.
// The method is in include/darkbert/study/linguistic_features.hpp.
//
//   darkbert_linguistic_features --model DIR [--tokenizer DIR] [--finetuned DIR] [--task MRPC] [--out DIR]
//                                [--max-examples N] [--seed S] [--max-length 128]
//
// Without --finetuned only the given model's grids are written. Writes into --out/<task>:
// linguistic_features.json (every number), the grids as CSV/JSON/.npy, and the figures (PNG and SVG).

#include <CLI/CLI.hpp>

#include <cmath>       // std::isnan
#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::printf
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path
#include <iostream>    // std::cerr
#include <optional>    // std::optional
#include <string>      // std::string

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/data/annotator.hpp"
#include "darkbert/study/linguistic_features.hpp"
#include "darkbert/train/default_models.hpp"

int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);
  namespace study = darkbert::study;
  CLI::App app{"§3.4 attention to linguistic features: [CLS], [SEP], punctuation, POS, subjects, objects, negation"};
  std::string arch = "bert";
  std::string model_dir, tokenizer_dir, finetuned_dir, task_name = "MRPC", out = "linguistic_features";
  std::size_t max_examples = 1000, max_length = 128;
  std::uint64_t seed = 1;
  app.add_option("--model", model_dir, "the pretrained Hugging Face folder (with tokenizer files); default: the "
                                       "study's default BERT, pretrained on first use");
  app.add_option("--tokenizer", tokenizer_dir, "the tokenizer folder, when it is not the model folder");
  app.add_option("--finetuned", finetuned_dir, "the same model fine-tuned on --task (optional)");
  app.add_option("--task", task_name, "GLUE task whose evaluation examples are read")->capture_default_str();
  app.add_option("--out", out, "where to write (a folder per task inside)")->capture_default_str();
  app.add_option("--max-examples", max_examples, "at most N examples, a seeded sample (0 = all)")->capture_default_str();
  app.add_option("--seed", seed, "seed of that sample")->capture_default_str();
  app.add_option("--max-length", max_length, "tokens per example")->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (pretrained on first use)")
      ->check(CLI::IsMember({"bert", "gpt2"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    // The models and the annotated inputs.
    const auto root = darkbert::DataRoot::from_environment();
    const std::filesystem::path dir =
        model_dir.empty() ? darkbert::default_model(root, arch) : std::filesystem::path(model_dir);
    const auto pretrained = darkbert::Transformer<float>::load(dir);
    std::optional<darkbert::Transformer<float>> finetuned;
    if (!finetuned_dir.empty()) finetuned.emplace(darkbert::Transformer<float>::load(finetuned_dir));
    const auto tokenizer =
        darkbert::Tokenizer::from_directory(tokenizer_dir.empty() ? dir : std::filesystem::path(tokenizer_dir));
    const auto annotator = darkbert::default_annotator(root);
    const auto task = darkbert::parse_glue_task(task_name);
    const auto inputs = study::load_task_inputs(root, task, tokenizer, pretrained.config(),
                                                {.max_examples = max_examples, .seed = seed, .max_length = max_length,
                                                 .annotator = &annotator});
    std::printf("%s\n", inputs.provenance.c_str());

    // The measure, both models on the same examples.
    const auto r = study::run_linguistic_features(pretrained, finetuned ? &*finetuned : nullptr, inputs,
                                                  {.pretrained_model = dir.string(), .finetuned_model = finetuned_dir});

    // Results and figures.
    const auto folder = std::filesystem::path(out) / r.task;
    r.save(folder);
    study::write_linguistic_feature_figures(r, folder);

    auto best = [](const darkbert::HeadMatrix<double>& m) {
      darkbert::Index bl = 0, bh = 0;
      for (darkbert::Index l = 0; l < m.rows(); ++l)
        for (darkbert::Index h = 0; h < m.cols(); ++h)
          if (!std::isnan(m(l, h)) && (std::isnan(m(bl, bh)) || m(l, h) > m(bl, bh))) bl = l, bh = h;
      return std::string(std::to_string(bl) + ":" + std::to_string(bh) + " " + std::to_string(m(bl, bh)));
    };
    std::printf("feature        examples  best head pretrained%s\n", r.has_finetuned() ? "   best head fine-tuned" : "");
    for (std::size_t f = 0; f < r.features.size(); ++f)
      std::printf("%-14s %8zu  %s%s%s\n", r.features[f].c_str(), r.examples_with[f], best(r.pretrained[f]).c_str(),
                  r.has_finetuned() ? "   " : "", r.has_finetuned() ? best(r.finetuned[f]).c_str() : "");
    const auto trend = r.summary()["layer_trend"];
    for (const auto& [name, value] : trend.items())
      if (value.contains("slope_per_layer") && !value.contains("per_layer"))
        std::printf("%s: slope per layer %s\n", name.c_str(), value["slope_per_layer"].dump().c_str());
    std::printf("wrote %s\n", folder.c_str());
  } catch (const std::exception& e) {
    std::cerr << "darkbert_linguistic_features: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
