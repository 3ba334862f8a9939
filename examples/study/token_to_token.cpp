// §3.5 of "Revealing the Dark Secrets of BERT" (Kovaleva et al., 2019), token-to-token attention.
//
// On each task's annotated evaluation examples: for every head, the attention from verbs to subjects and
// from pronouns to nouns; the heads above the 90th percentile are the relation's candidates, and each is
// checked against the diagonal heads (half or more of every row on the previous and next token). The
// verb -> subject pairs linked in UD EWT's gold trees are scored the same way. Then the [CLS] token of the
// last layer: how much of its attention each token category gets, task by task (the paper's Figure 7).
// The method is in include/darkbert/study/token_relations.hpp.
//
//   darkbert_token_to_token --model DIR [--tokenizer DIR] [--task MRPC,STS-B,SST-2,RTE,QNLI] [--out DIR]
//                           [--max-examples N] [--seed S] [--query auto|cls|first|last]
//
// Writes into --out/<task>: token_relations.json (every number), the grids as CSV/JSON/.npy and figures;
// into --out: the tasks x categories table and figure (cls_categories.*).

#include <CLI/CLI.hpp>

#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::printf
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path
#include <iostream>    // std::cerr
#include <sstream>     // std::stringstream (the task list)
#include <string>      // std::string, std::getline
#include <vector>      // std::vector

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/data/annotator.hpp"
#include "darkbert/study/token_relations.hpp"
#include "darkbert/train/default_models.hpp"

int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);
  namespace study = darkbert::study;
  CLI::App app{"§3.5 token-to-token attention: verb -> subject and pronoun -> noun heads, [CLS] by category"};
  std::string arch = "bert";
  std::string model_dir, tokenizer_dir, tasks = "MRPC,STS-B,SST-2,RTE,QNLI", out = "token_to_token";
  std::string query = "auto";
  std::size_t max_examples = 1000, max_length = 128, ud_sentences = 500;
  std::uint64_t seed = 1;
  study::TokenRelationsOptions options;
  app.add_option("--model", model_dir, "a Hugging Face folder (with tokenizer files), pretrained or fine-tuned; "
                                       "default: the study's default BERT, pretrained on first use");
  app.add_option("--tokenizer", tokenizer_dir, "the tokenizer folder, when it is not the model folder");
  app.add_option("--task", tasks, "GLUE tasks, comma-separated")->capture_default_str();
  app.add_option("--out", out, "where to write")->capture_default_str();
  app.add_option("--max-examples", max_examples, "examples per task, a seeded sample (0 = all)")->capture_default_str();
  app.add_option("--seed", seed, "seed of the samples")->capture_default_str();
  app.add_option("--max-length", max_length, "tokens per example")->capture_default_str();
  app.add_option("--ud-sentences", ud_sentences, "UD EWT dev sentences for the dependency-linked pairs (0 = none)")
      ->capture_default_str();
  app.add_option("--candidate-percentile", options.candidate_percentile, "candidates: heads above this percentile")
      ->capture_default_str();
  app.add_option("--diagonal-threshold", options.diagonal_threshold, "neighbour share that makes a head diagonal")
      ->capture_default_str();
  app.add_option("--query", query, "the token whose attention is split by category: auto = the one the classifier "
                                   "reads ([CLS]; the last token of a causal model, GPT-2)")
      ->check(CLI::IsMember({"auto", "cls", "first", "last"}))
      ->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (pretrained on first use)")
      ->check(CLI::IsMember({"bert", "gpt2"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const auto root = darkbert::DataRoot::from_environment();
    const std::filesystem::path dir =
        model_dir.empty() ? darkbert::default_model(root, arch) : std::filesystem::path(model_dir);
    const auto model = darkbert::Transformer<float>::load(dir);
    const auto tokenizer =
        darkbert::Tokenizer::from_directory(tokenizer_dir.empty() ? dir : std::filesystem::path(tokenizer_dir));
    const auto annotator = darkbert::default_annotator(root);
    options.model = dir.string();
    using Query = study::CategoryQuery::Position;
    if (query == "auto")
      options.query = study::CategoryQuery::for_model(model.config());
    else if (query == "first")
      options.query = {.position = Query::first_token, .name = "first token"};
    else if (query == "last")
      options.query = {.position = Query::last_token, .name = "last token"};
    std::optional<study::LinkedInputs> ud;
    if (ud_sentences > 0)
      ud = study::ud_verb_subject_inputs(root, tokenizer, model.config(),
                                         {.max_sentences = ud_sentences, .seed = seed, .max_length = max_length});

    std::vector<study::TokenRelationsResult> results;
    std::stringstream list(tasks);
    for (std::string name; std::getline(list, name, ',');) {
      // The task's annotated examples, the relations, the diagonal heads, [CLS] by category.
      const auto inputs = study::load_task_inputs(root, darkbert::parse_glue_task(name), tokenizer, model.config(),
                                                  {.max_examples = max_examples, .seed = seed,
                                                   .max_length = max_length, .annotator = &annotator});
      auto r = study::run_token_relations(model, inputs, options, ud ? &*ud : nullptr);
      const auto folder = std::filesystem::path(out) / r.task;
      r.save(folder);
      study::write_token_relation_figures(r, folder);

      std::printf("%s (%zu examples): %zu diagonal heads (%s)\n", r.task.c_str(), r.examples, r.diagonal.size(),
                  r.diagonal_source.c_str());
      for (const auto& rel : r.relations) {
        std::printf("  %s: %zu examples, %zu candidates above %.4f, %zu of them diagonal; Spearman with the "
                    "neighbour share %.3f\n",
                    rel.name.c_str(), rel.examples, rel.candidates.size(), rel.threshold, rel.diagonal_candidates(),
                    rel.spearman_with_neighbour_share);
        for (std::size_t k = 0; k < rel.candidates.size(); ++k)
          std::printf("    head %ld:%ld  %.4f%s\n", static_cast<long>(rel.candidates[k].layer),
                      static_cast<long>(rel.candidates[k].head), rel.candidates[k].value,
                      rel.diagonal[k] ? "  diagonal" : "");
      }
      std::printf("  %s in layer %ld attends most to: %s\n", r.query.c_str(), static_cast<long>(r.query_layer),
                  r.summary()["query"]["most_attended"].get<std::string>().c_str());
      results.push_back(std::move(r));
    }
    study::write_cls_category_figure(results, out);
    std::printf("wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::cerr << "darkbert_token_to_token: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
