// §3.2 of "Revealing the Dark Secrets of BERT" (Kovaleva et al., 2019), relation-specific heads.
//
// Select short annotated FrameNet sentences as the paper's released code does; run the model on each; for
// every head take the largest attention from the frame-evoking target to its core frame elements; average
// over the sentences and single out the heads above the 99th percentile. Draw the layer x head scores and
// the full maps of the top heads on "He was becoming agitated" (the paper's Figure 3). The method and its
// differences from the paper's code are in include/darkbert/study/framenet_heads.hpp.
//
//   darkbert_framenet_heads --model DIR [--tokenizer DIR] [--out DIR] [--max-examples N] [--seed S]
//                           [--framenet auto|full|sample] [--framenet-dir DIR] [--percentile 99]
//
// Writes into --out: framenet_heads.json (every number), framenet_max_attention.{csv,json,npy},
// framenet_figure_maps.npy, selection_paper_code.jsonl, and the figures (PNG and SVG).

#include <CLI/CLI.hpp>

#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::printf
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path
#include <iostream>    // std::cerr
#include <string>      // std::string

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/study/framenet_heads.hpp"
#include "darkbert/train/default_models.hpp"

int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);
  namespace study = darkbert::study;
  CLI::App app{"§3.2 relation-specific heads: attention from FrameNet targets to their core frame elements"};
  std::string arch = "bert";
  std::string model_dir, tokenizer_dir, out = "framenet_heads", source = "auto", framenet_dir;
  std::size_t max_examples = 0;
  std::uint64_t seed = 1;
  double percentile = 99;
  app.add_option("--model", model_dir, "a Hugging Face BERT-family (or GPT-2) folder with its tokenizer files; "
                                       "default: the study's default BERT, pretrained on first use");
  app.add_option("--tokenizer", tokenizer_dir, "the tokenizer folder, when it is not the model folder");
  app.add_option("--out", out, "where to write results and figures")->capture_default_str();
  app.add_option("--max-examples", max_examples, "score at most N selected sentences, a seeded sample (0 = all)")
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of that sample")->capture_default_str();
  app.add_option("--framenet", source, "auto: the full release when the data root has one, else the 200-LU sample")
      ->check(CLI::IsMember({"auto", "full", "sample"}))
      ->capture_default_str();
  app.add_option("--framenet-dir", framenet_dir, "a FrameNet release folder (frame/ and lu/) instead");
  app.add_option("--percentile", percentile, "heads above this percentile of the scores are the top heads")
      ->capture_default_str();
  app.add_option("--arch", arch, "without --model: the default model of bert or gpt2 (pretrained on first use)")
      ->check(CLI::IsMember({"bert", "gpt2"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    // The model.
    const auto root = darkbert::DataRoot::from_environment();
    const std::filesystem::path dir =
        model_dir.empty() ? darkbert::default_model(root, arch) : std::filesystem::path(model_dir);
    const auto model = darkbert::Transformer<float>::load(dir);
    const auto tokenizer =
        darkbert::Tokenizer::from_directory(tokenizer_dir.empty() ? dir : std::filesystem::path(tokenizer_dir));

    // The sentences: both selections over one pass of the release.
    study::FrameNetRelease release;
    if (!framenet_dir.empty()) {
      release.dir = framenet_dir;
    } else {
      const auto which = source == "full" ? study::FrameNetSource::full_release
                         : source == "sample" ? study::FrameNetSource::sample : study::FrameNetSource::automatic;
      release = study::locate_framenet(root, which, &std::cerr);
    }
    const darkbert::FrameNet framenet(release.dir);
    const auto selections = study::select_framenet_sentences(framenet, release, {}, &std::cerr);
    std::printf("%s\n", selections.release.describe().c_str());
    std::printf("selected, the paper's code (FEcoreSet cores): %zu sentences (%zu lexical units); paper: 473 on 1.7\n",
                selections.paper_count.annotation_sets, selections.paper_count.lexical_units);
    std::printf("selected, the same rules with coreType cores: %zu\n", selections.paper_core_type_count.annotation_sets);
    std::printf("selected, darkbert's earlier selection:       %zu\n", selections.darkbert_count.annotation_sets);

    // The measure: per head, the mean over sentences of the largest target -> core-element weight.
    const auto result = study::run_framenet_heads(
        model, tokenizer, selections,
        {.max_sentences = max_examples, .seed = seed, .percentile = percentile, .model = dir.string()});

    // Results and figures.
    result.save(out);
    study::write_framenet_figures(result, out);
    study::write_framenet_selection(selections.paper, std::filesystem::path(out) / "selection_paper_code.jsonl");

    std::printf("scored %zu sentences (%zu without a visible pair); %g-th percentile of %ld heads: %.4f\n",
                result.scored, result.skipped, result.q, static_cast<long>(result.scores.values.size()),
                result.threshold);
    for (const auto& h : result.top)
      std::printf("  head %ld:%ld (layer:head, from 0)  mean max attention %.4f\n", static_cast<long>(h.layer),
                  static_cast<long>(h.head), h.value);
    std::printf("figure sentence: \"%s\" (%s)\nwrote %s\n", result.figure.sentence.c_str(),
                result.figure.source.c_str(), out.c_str());
  } catch (const std::exception& e) {
    std::cerr << "darkbert_framenet_heads: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
