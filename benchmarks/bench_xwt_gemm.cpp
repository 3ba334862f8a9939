// darkbert's AVX-512 x·Wᵀ kernel beside OpenBLAS (SkylakeX kernels, split across the same OpenMP pool) on
// the four Linear shapes of a BERT-base layer, at batch 1 and batch 8 (128 and 1024 token rows), each
// with its bias epilogue, and a language-model head. xwt_gemm picks the kernel except for the 3072-deep product at 1024 rows, where
// OpenBLAS wins; this benchmark is the measurement behind that choice (core/xwt_gemm.hpp).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "darkbert/core/xwt_gemm.hpp"
#include "darkbert/kernels/activation.hpp"
#include "bench_main.hpp"

namespace {
using darkbert::Index;

struct Problem {
  Index rows, in, out;
  std::vector<float, darkbert::AlignedAllocator<float>> x, w, y, bias;
  darkbert::XwtScratch scratch;

  explicit Problem(const benchmark::State& state)
      : rows(state.range(0)), in(state.range(1)), out(state.range(2)), x(rows * in), w(out * in), y(rows * out),
        bias(out) {
    std::mt19937_64 rng(5);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (auto* v : {&x, &w, &bias})
      for (auto& e : *v) e = normal(rng);
  }
  auto epilogue() {
    return [this](float* part, Index first, Index n) {
      darkbert::kernels::bias_epilogue(part, bias.data() + first, n, darkbert::Activation::none);
    };
  }
  void report(benchmark::State& state) const {
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * double(rows * in * out) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
};

void shapes(benchmark::internal::Benchmark* b) {
  for (Index rows : {128, 1024})
    for (auto [in, out] : {std::pair<Index, Index>{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}})
      b->Args({rows, in, out});
  // The mini models' layers (4 x 256, FFN 1024) at a training batch of 32 x 128 tokens.
  for (auto [in, out] : {std::pair<Index, Index>{256, 768}, {256, 256}, {256, 1024}, {1024, 256}}) b->Args({4096, in, out});
  // A language-model head (GPT-2's 50,257 tokens) on 1024 rows at the mini models' widths: a shallow
  // product with a 200 MB output, where writing y costs as much as the multiply-adds.
  for (Index in : {128, 256}) b->Args({1024, in, 50257});
  b->ArgNames({"rows", "in", "out"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

void BM_Linear_OpenBLAS(benchmark::State& state) {
  Problem p(state);
  auto epilogue = p.epilogue();
  for (auto _ : state)
    darkbert::detail::xwt_gemm_blas<float>(p.x.data(), p.rows, p.in, p.w.data(), p.out, p.y.data(), epilogue);
  p.report(state);
}
BENCHMARK(BM_Linear_OpenBLAS)->Apply(shapes);

#if DARKBERT_HAS_AVX512_KERNEL
void BM_Linear_DarkbertKernel(benchmark::State& state) {
  if (!darkbert::cpu_has_avx512()) return state.SkipWithError("this CPU has no AVX-512");
  Problem p(state);
  auto epilogue = p.epilogue();
  for (auto _ : state)
    darkbert::detail::xwt_gemm_avx512(p.x.data(), p.rows, p.in, p.w.data(), p.out, p.y.data(), p.scratch, epilogue);
  p.report(state);
}
BENCHMARK(BM_Linear_DarkbertKernel)->Apply(shapes);
#endif

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "darkbert's AVX-512 x·Wᵀ kernel beside OpenBLAS on BERT-base Linear shapes",
                               "bench_xwt_gemm --benchmark_filter=rows:128");
}
