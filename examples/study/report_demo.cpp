// A findings report on synthetic numbers, built the way `darkbert reproduce` builds the real one
// (study/report.hpp): figures from the viz headers (a layer x head heatmap, one attention map with its
// tokens, a training curve), a per-head matrix as CSV/JSON/.npy, a table, the paper's claims with verdicts,
// every number registered — then checked with check_report(). No model runs; the numbers come from --seed
// and the report says so.
//
//   darkbert_report_demo --out /tmp/report_demo        # then open /tmp/report_demo/report.html
//
// Prints where the report went and every problem check_report() finds (exit 1 if any).

#include <CLI/CLI.hpp>  // CLI::App

#include <algorithm>   // std::sort, std::min
#include <cmath>       // std::exp
#include <cstdint>     // std::uint64_t, std::int64_t
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::path, create_directories
#include <iostream>    // std::cout, std::cerr
#include <random>      // std::mt19937_64, std::normal_distribution
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "darkbert/analysis/results.hpp"  // make_head_matrix, write_table
#include "darkbert/study/report.hpp"
#include "darkbert/viz/heatmap.hpp"
#include "darkbert/viz/line_chart.hpp"

int main(int argc, char** argv) {
  CLI::App app{"A findings report on synthetic numbers: Markdown, a self-contained HTML page and summary.json, "
               "with figures, a table and verdicts, checked like the real one"};
  app.footer("Example: darkbert_report_demo --out /tmp/report_demo");
  std::string out;
  std::uint64_t seed = 1;
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--seed", seed, "seed of the synthetic numbers")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  namespace study = darkbert::study;
  try {
    // Synthetic per-head cosine similarity before/after fine-tuning [6 layers, 8 heads]: later layers
    // change more, plus noise.
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.03);
    const int layers = 6, heads = 8;
    auto cosine = darkbert::make_head_matrix<double>("cosine", layers, heads);
    std::vector<std::pair<double, int>> layer_means;
    for (int l = 0; l < layers; ++l) {
      double sum = 0;
      for (int h = 0; h < heads; ++h) sum += cosine(l, h) = std::min(1.0, 0.97 - 0.05 * l * l / 5.0 + noise(rng));
      layer_means.push_back({sum / heads, l});
    }
    std::sort(layer_means.begin(), layer_means.end());  // most changed (lowest cosine) first
    darkbert::write_table(cosine, out);

    darkbert::HeatmapOptions grid;
    grid.title = "Cosine similarity before and after fine-tuning (synthetic)";
    grid.x = {"head", {}, 1};
    grid.y = {"layer", {}, 1};
    grid.value_label = "cosine similarity";
    std::filesystem::create_directories(std::filesystem::path(out) / "figures");
    for (const char* file : {"figures/cosine.png", "figures/cosine.svg"})
      darkbert::write_heatmap(std::filesystem::path(out) / file, layers, heads, cosine.values.data(), grid);
    const std::vector<std::string> tokens = {"[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"};
    std::vector<double> map(tokens.size() * tokens.size());  // [query, key]: half on [SEP], half on itself
    for (std::size_t q = 0; q < tokens.size(); ++q) {
      map[q * tokens.size() + q] += 0.5;
      map[q * tokens.size() + tokens.size() - 1] += 0.5;
    }
    darkbert::HeatmapOptions attention;
    attention.title = "A vertical + diagonal head (synthetic)";
    attention.x = {"key", tokens};
    attention.y = {"query", tokens};
    attention.value_label = "attention weight";
    for (const char* file : {"figures/attention.png", "figures/attention.svg"})
      darkbert::write_heatmap(std::filesystem::path(out) / file, static_cast<darkbert::Index>(tokens.size()),
                              static_cast<darkbert::Index>(tokens.size()), map.data(), attention);
    std::vector<double> steps, accuracy;
    for (int s = 0; s <= 20; ++s) steps.push_back(s * 100), accuracy.push_back(0.8 - 0.5 * std::exp(-s / 5.0) + noise(rng) / 3);
    for (const char* file : {"figures/curve.png", "figures/curve.svg"})
      darkbert::write_line_chart(std::filesystem::path(out) / file, {{"dev accuracy", steps, accuracy}},
                                 {.title = "Fine-tuning (synthetic)", .x_label = "step", .y_label = "accuracy"});

    // The report: every number through the registry.
    study::Report r("Revealing the Dark Secrets of BERT: a demonstration report");
    const std::string layer_count = r.count("sizes.model.layers", layers);
    r.paragraph("**These numbers are synthetic** (seed " + r.count("sizes.seed", static_cast<std::int64_t>(seed)) +
                "): this page shows what `darkbert reproduce` writes, not what it finds.");
    auto& patterns = r.section("§3.1 Attention patterns");
    patterns.paragraph("A head that sends " + r.percent("fig1.example.sep_share", 0.5, 0) +
                       " of every token's attention to [SEP] and the rest to the token itself.");
    patterns.figure({.png = "figures/attention.png", .svg = "figures/attention.svg",
                     .caption = "Figure 1: one head's map over an example's tokens."});
    auto& change = r.section("§3.3 Change after fine-tuning");
    change.figure({.png = "figures/cosine.png", .svg = "figures/cosine.svg",
                   .caption = "Figure 5: per-head cosine similarity of the maps before and after fine-tuning."});
    change.figure({.png = "figures/curve.png", .svg = "figures/curve.svg", .caption = "Dev accuracy while fine-tuning."});
    const std::string first = r.count("fig5.most_changed.0.layer", layer_means[0].second + 1);
    const std::string second = r.count("fig5.most_changed.1.layer", layer_means[1].second + 1);
    change.table({.header = {"layer", "mean cosine"},
                  .rows = {{first, r.number("fig5.most_changed.0.mean_cosine", layer_means[0].first, 3)},
                           {second, r.number("fig5.most_changed.1.mean_cosine", layer_means[1].first, 3)}},
                  .caption = "The two layers that change most (lowest mean cosine)."});
    const bool last_two = (layer_means[0].second >= layers - 2) && (layer_means[1].second >= layers - 2);
    change.claim({.claim = "The last two layers change most after fine-tuning.",
                  .paper = "layers " + r.count("paper.fig5.last_layers.0", 11) + " and " + r.count("paper.fig5.last_layers.1", 12) +
                           " of " + r.count("paper.model.layers", 12),
                  .darkbert = "layers " + first + " and " + second + " of " + layer_count,
                  .verdict = last_two ? study::Verdict::reproduced : study::Verdict::partly,
                  .reason = last_two ? "The two lowest mean cosines are the last two layers'."
                                     : "One of the two most-changed layers is not among the last two."});
    change.claim({.claim = "Fine-tuning changes some heads little.", .paper = "not quantified",
                  .darkbert = "not measured here", .verdict = study::Verdict::not_testable,
                  .reason = "A demonstration has no fine-tuned model."});
    change.file("cosine.csv", "the matrix of Figure 5, one row per layer");
    change.file("cosine.npy", "the same, [layers, heads]");
    r.section("Sizes").list({"model: " + layer_count + " layers, " +
                             r.count("sizes.model.heads", heads) + " heads per layer"});
    r.meta("demo", {{"seed", seed}, {"synthetic", true}});
    r.write(out);

    std::cout << "wrote " << (std::filesystem::path(out) / "report.html").string() << ", report.md and summary.json\n";
    const auto problems = study::check_report(out);
    for (const auto& p : problems) std::cerr << p.message << "\n";
    std::cout << "check_report: " << problems.size() << " problems\n";
    return problems.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
