// The ablation sweep's prefix cache, measured against a naive re-run: a full 12 x 12 head sweep plus the
// 12 layer ablations on a 12-layer, 12-head classifier (hidden 192, FFN 768, random seeded weights) over
// 8 examples of 64 tokens. The saving depends on the number of layers, not on the width. The block counts give the work ratio; the times give the measured saving.
#include <benchmark/benchmark.h>

#include <random>  // std::mt19937_64

#include "darkbert/analysis/ablation_sweep.hpp"
#include "bench_main.hpp"

namespace {

struct SweepSetup {
  darkbert::Transformer<float> model;
  std::vector<darkbert::Batch> batches;
  std::vector<double> labels;
};

const SweepSetup& setup() {
  static const SweepSetup s = [] {
    const auto c = darkbert::ModelConfig::bert_shape(12, 192, 12, 768);  // 12 x 12 heads, narrow
    SweepSetup out{darkbert::Transformer<float>::random(c, {.pooler = true, .classifier_labels = 2}, 0), {}, {}};
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<int> token(1000, 30000);
    for (int k = 0; k < 1; ++k) {
      std::vector<std::vector<int>> rows(8, std::vector<int>(64));
      for (auto& row : rows)
        for (auto& t : row) t = token(rng);
      out.batches.push_back(darkbert::Batch::from_rows(rows));
    }
    for (int i = 0; i < 8; ++i) out.labels.push_back(static_cast<double>(rng() % 2));
    return out;
  }();
  return s;
}

double accuracy(const std::vector<double>& p, const std::vector<double>& y) {
  double hits = 0;
  for (std::size_t i = 0; i < p.size(); ++i) hits += p[i] == y[i];
  return hits / static_cast<double>(p.size());
}

void run(benchmark::State& state, bool cached) {
  const auto& s = setup();
  darkbert::AblationSweep<float> sweep(s.model, s.batches, s.labels, accuracy);
  sweep.set_show_progress(false);
  darkbert::SweepResult r;
  for (auto _ : state) r = cached ? sweep.run() : sweep.run_naive();
  state.counters["block_evaluations"] = static_cast<double>(r.block_evaluations);
}

void BM_SweepNaive(benchmark::State& state) { run(state, false); }
void BM_SweepPrefixCached(benchmark::State& state) { run(state, true); }
BENCHMARK(BM_SweepNaive)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1)->Repetitions(2);
BENCHMARK(BM_SweepPrefixCached)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1)->Repetitions(2);

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "the ablation sweep with its prefix cache against a naive re-run",
                               "bench_sweep --benchmark_min_time=1");
}
