// §3.1 of "Revealing the Dark Secrets of BERT": which attention patterns the heads show. Every head's
// attention map on every evaluation example of a task is classified as vertical, diagonal, vertical +
// diagonal, block or heterogeneous by two classifiers: transparent rules on per-map summaries
// (study/pattern_rules.hpp, thresholds documented there) and the paper's CNN (study/pattern_cnn.hpp),
// trained on labelled maps — seeded synthetic prototypes unless --labelled gives a hand-labelled folder —
// and scored on held-out labelled maps. Writes per-head class shares, the task's class proportions (the
// paper's Figure 2), the two classifiers' agreement and example maps of each class. With --scheme replication
// the classes are the GPT-2 replication's (diagonal, block, overall, majority in sentence 1), classified by
// their rules and by the replication's CNN (eight stride-2 convolutions with batch normalisation).
//
//   darkbert_attention_patterns --model runs/s1/final --task MRPC --max-examples 100 --out out/patterns
//   darkbert_attention_patterns --model my-bert --labelled my-labels/   # maps.npy + labels.csv (pattern_cnn.hpp)
//   darkbert_attention_patterns --model my-gpt2 --scheme replication --task RTE

#include "darkbert/study/attention_patterns.hpp"

#include <CLI/CLI.hpp>  // CLI::App
#include <algorithm>    // std::min
#include <chrono>       // std::chrono::steady_clock
#include <cstdint>      // std::uint64_t
#include <cstdio>       // std::printf
#include <exception>    // std::exception
#include <filesystem>   // std::filesystem::path
#include <iostream>     // std::cerr
#include <string>       // std::string

#include "darkbert/data/root.hpp"
#include "darkbert/train/default_models.hpp"

int main(int argc, char** argv) {
  namespace study = darkbert::study;
  CLI::App app{
      "Attention patterns (Kovaleva et al. 2019, section 3.1): every head's map on a task's examples "
      "classified as vertical, diagonal, vertical + diagonal, block or heterogeneous, by rules and by the "
      "paper's CNN"};
  std::string arch;
  std::string model_dir, task_name = "MRPC", out = "attention_patterns", labelled, scheme = "paper";
  std::size_t max_examples = 1000;
  std::uint64_t seed = 1;
  bool quick = false;
  app.add_option("--model", model_dir,
                 "a Hugging Face BERT-family or GPT-2 folder (default: the study model — GPT-2 with "
                 "--scheme replication — pretrained on first use and cached)");
  app.add_option("--task", task_name, "GLUE task whose evaluation examples are read")->capture_default_str();
  app.add_option("--out", out, "output folder")->capture_default_str();
  app.add_option("--max-examples", max_examples,
                 "at most this many examples, a seeded sample (0 = all; the paper "
                 "used at most 1000 per dev set)")
      ->capture_default_str();
  app.add_option("--seed", seed, "the example sample, the prototypes, the CNN's weights and training order")
      ->capture_default_str();
  app.add_option("--labelled", labelled,
                 "train and score the CNN on this labelled-map folder (maps.npy [N, S, S], "
                 "labels.csv 'index,class') instead of synthetic prototypes");
  app.add_flag("--quick", quick, "a small prototype set (100 per class instead of 300)");
  app.add_option("--scheme", scheme,
                 "the classes and CNN: 'paper' (five classes, the paper's CNN) or 'replication' (the GPT-2 "
                 "replication's four classes and its batch-normalised CNN)")
      ->check(CLI::IsMember({"paper", "replication"}))
      ->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (default: gpt2 for the "
                                 "replication's scheme, else bert)")
      ->check(CLI::IsMember({"bert", "gpt2"}));
  CLI11_PARSE(app, argc, argv);

  try {
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    const auto root = darkbert::DataRoot::from_environment();

    // The model as it is, and the task's evaluation examples.
    const std::filesystem::path dir =
        model_dir.empty() ? darkbert::default_model(root, !arch.empty() ? arch : scheme == "replication" ? "gpt2" : "bert")
                          : std::filesystem::path(model_dir);
    const auto model = darkbert::Transformer<float>::load(dir);
    const auto tokenizer = darkbert::Tokenizer::from_directory(dir);
    const auto& c = model.config();
    const std::size_t max_length = std::min<std::size_t>(128, static_cast<std::size_t>(c.max_sequence_length()));
    const auto inputs = study::load_task_inputs(root, darkbert::parse_glue_task(task_name), tokenizer, c,
                                                {.max_examples = max_examples, .seed = seed, .max_length = max_length});
    std::printf("model: %s (%ld layers x %ld heads%s)\ninputs: %s, at most %zu tokens\n", dir.c_str(),
                static_cast<long>(c.num_layers), static_cast<long>(c.num_heads), c.causal ? ", causal" : "",
                inputs.provenance.c_str(), max_length);

    // The two classifiers: the rules, and the CNN trained on labelled maps and scored on held-out ones.
    const auto classes = study::parse_pattern_classes(scheme);
    auto options =
        quick ? study::PatternClassifierOptions::quick(classes) : study::PatternClassifierOptions::of(classes);
    options.seed = seed;
    options.labelled = labelled;
    const auto classifiers = study::train_pattern_classifiers(c.causal, options);
    const auto& e = classifiers.evaluation;
    std::printf("CNN trained on %s (%.1f s)\n  held out: %s\n  macro F1 %.3f, accuracy %.3f; F1 per class:",
                e.training_set.c_str(), seconds(), e.held_out_set.c_str(), e.cnn.macro_f1, e.cnn.accuracy);
    for (int k = 0; k < classifiers.scheme.size(); ++k)
      std::printf(" %s %.3f", classifiers.scheme.names[static_cast<std::size_t>(k)].c_str(),
                  e.cnn.f1[static_cast<std::size_t>(k)]);
    if (e.rules && e.agreement)
      std::printf("\n  rules on the same maps: macro F1 %.3f; rules and CNN agree on %.1f%% (kappa %.3f)",
                  e.rules->macro_f1, 100 * e.agreement->share, e.agreement->kappa);
    std::printf("\n");

    // Every head on every example, both classifiers; per head the share of each class, per task the
    // proportions over all (head, example) maps.
    const auto result = study::attention_patterns(model, inputs, classifiers, {.model = dir.string()});
    result.save(out);
    classifiers.cnn.save(std::filesystem::path(out) / "cnn");

    const auto cnn = result.proportions(study::PatternClassifier::cnn);
    const auto rules = result.proportions(study::PatternClassifier::rules);
    const auto heads_cnn = result.majority_heads(study::PatternClassifier::cnn);
    const auto heads_rules = result.majority_heads(study::PatternClassifier::rules);
    std::printf("%s, %zu examples x %ld heads: share of maps (heads with this majority class)\n", result.task.c_str(),
                result.examples, static_cast<long>(result.layers * result.heads));
    std::printf("  %-22s %16s %16s\n", "class", "CNN", "rules");
    for (int k = 0; k < result.scheme.size(); ++k) {
      const auto i = static_cast<std::size_t>(k);
      std::printf("  %-22s %8.3f (%4zu) %8.3f (%4zu)\n", result.scheme.labels[i].c_str(), cnn[i], heads_cnn[i],
                  rules[i], heads_rules[i]);
    }
    const auto agreement = result.classifier_agreement();
    std::printf("rules and CNN agree on %.1f%% of the maps (kappa %.3f)\nwrote %s (%.1f s)\n", 100 * agreement.share,
                agreement.kappa, out.c_str(), seconds());
  } catch (const std::exception& ex) {
    std::cerr << "darkbert_attention_patterns: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
