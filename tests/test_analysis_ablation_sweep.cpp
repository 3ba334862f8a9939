// The ablation sweep: prefix-cached and naive runs agree exactly, and each score is what a direct
// forward with that ablation gives.
#include <doctest/doctest.h>

#include <cmath>   // std::isnan
#include <random>  // std::mt19937_64

#include <xtensor/xsort.hpp>

#include "darkbert/analysis/ablation_sweep.hpp"
#include "test_support.hpp"

namespace {

double sweep_accuracy(const std::vector<double>& p, const std::vector<double>& y) {
  double hits = 0;
  for (std::size_t i = 0; i < p.size(); ++i) hits += p[i] == y[i];
  return hits / static_cast<double>(p.size());
}

// Seeded random padded batches over a vocabulary of 99.
std::vector<darkbert::Batch> random_batches(int count, int batch_size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> token(1, 98), length(3, 12);
  std::vector<darkbert::Batch> batches;
  for (int k = 0; k < count; ++k) {
    std::vector<std::vector<int>> rows;
    for (int b = 0; b < batch_size; ++b) {
      std::vector<int> row(static_cast<std::size_t>(length(rng)));
      for (auto& t : row) t = token(rng);
      rows.push_back(row);
    }
    batches.push_back(darkbert::Batch::from_rows(rows));
  }
  return batches;
}

}  // namespace

TEST_CASE("prefix-cached sweep equals the naive sweep and direct forwards") {
  const auto model = darkbert::Transformer<double>::load(darkbert::test::golden_dir() / "models" / "bert_seqcls3");
  const auto batches = random_batches(3, 5, 7);
  std::vector<double> labels;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 15; ++i) labels.push_back(static_cast<double>(rng() % 3));
  darkbert::AblationSweep<double> sweep(model, batches, labels, sweep_accuracy);
  sweep.set_show_progress(false);
  sweep.add_head_set({{0, 1}, {1, 2}});
  const auto cached = sweep.run();
  const auto naive = sweep.run_naive();
  CHECK(cached.baseline == naive.baseline);
  CHECK(cached.head_scores == naive.head_scores);
  CHECK(cached.layer_scores == naive.layer_scores);
  CHECK(cached.set_scores == naive.set_scores);
  const int L = model.config().num_layers, H = model.config().num_heads;
  const long ablations = L * H + L + 1;
  CHECK(naive.block_evaluations == 3 * (ablations + 1) * L);
  CHECK(cached.block_evaluations < naive.block_evaluations);

  // Direct check of one head score and the set score.
  auto direct = [&](std::vector<darkbert::HeadRef> heads) {
    darkbert::MaskingPolicies<double> p;
    p.add(darkbert::uniform_policy<double>(), heads);
    std::vector<double> preds;
    for (const auto& b : batches) {
      const auto out = model.forward(b, {.policies = &p});
      for (std::size_t i = 0; i < out.sequence_logits.shape()[0]; ++i)
        preds.push_back(static_cast<double>(xt::argmax(xt::view(out.sequence_logits, i))()));
    }
    return sweep_accuracy(preds, labels);
  };
  CHECK(cached.head_scores(1, 3) == direct({{1, 3}}));
  CHECK(cached.layer_scores[0] == direct({{0, darkbert::all_heads}}));
  CHECK(cached.set_scores[0] == direct({{0, 1}, {1, 2}}));
  CHECK(cached.baseline == direct({}));  // an empty head list ablates nothing
}

TEST_CASE("a range of the ablations scores exactly what the whole sweep does there, NaN elsewhere") {
  const auto model = darkbert::Transformer<double>::load(darkbert::test::golden_dir() / "models" / "bert_seqcls3");
  const auto batches = random_batches(2, 4, 11);
  std::vector<double> labels = {0, 1, 2, 0, 1, 2, 0, 1};
  darkbert::AblationSweep<double> sweep(model, batches, labels, sweep_accuracy);
  sweep.set_show_progress(false);
  const auto whole = sweep.run();
  const int L = model.config().num_layers, H = model.config().num_heads;
  REQUIRE(sweep.ablation_count() == static_cast<std::size_t>(L * H + L));
  const auto blocks = sweep.ablation_blocks();
  CHECK(blocks.front() == L);
  CHECK(blocks[static_cast<std::size_t>(L * H)] == L);  // layer 0's ablation
  CHECK(blocks.back() == 1);
  const std::size_t begin = static_cast<std::size_t>(H) - 1, end = static_cast<std::size_t>(L * H) + 1;
  sweep.set_ablation_range(begin, end);
  const auto part = sweep.run();
  CHECK(part.baseline == whole.baseline);
  long ran = 0;
  for (std::size_t a = begin; a < end; ++a) ran += blocks[a];
  CHECK(part.block_evaluations == 2 * (L + ran));
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const auto a = static_cast<std::size_t>(l * H + h);
      if (a >= begin && a < end) CHECK(part.head_scores(l, h) == whole.head_scores(l, h));
      else CHECK(std::isnan(part.head_scores(l, h)));
    }
  CHECK(part.layer_scores[0] == whole.layer_scores[0]);
  for (int l = 1; l < L; ++l) CHECK(std::isnan(part.layer_scores[static_cast<std::size_t>(l)]));
  sweep.set_ablation_range(3, static_cast<std::size_t>(L * H + L) + 1);
  CHECK_THROWS_WITH_AS(sweep.run(), doctest::Contains("ablation range [3, "), darkbert::error);
}

TEST_CASE("the sweep refuses models without a classifier and mismatched labels") {
  const auto base = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / "bert_model");
  CHECK_THROWS_WITH_AS(darkbert::AblationSweep<float>(base, {}, {}, sweep_accuracy), doctest::Contains("no sequence classification head"),
                       darkbert::error);
  const auto cls = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / "bert_seqcls3");
  CHECK_THROWS_WITH_AS(darkbert::AblationSweep<float>(cls, random_batches(1, 2, 1), {0.0}, sweep_accuracy),
                       doctest::Contains("2 examples but 1 labels"), darkbert::error);
}
