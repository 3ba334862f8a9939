// darkbert's x·Wᵀ kernels, AVX-512 and AVX2 + FMA, beside OpenBLAS (split across the same OpenMP pool) on
// the four Linear shapes of a BERT-base layer, at batch 1 and batch 8 (128 and 1024 token rows), the
// study models' layers (hidden 128, FFN 512) and the mini models', each with its bias epilogue, and a
// language-model head. This benchmark is the measurement behind xwt_kernel_chosen (core/xwt_gemm.hpp).
// OpenBLAS runs the kernel set it loaded (the report's openblas_core): SkylakeX on an AVX-512 CPU after
// the restart of bench_main.hpp, Haswell under DARKBERT_KERNEL=avx2 with OPENBLAS_CORETYPE=Haswell — the
// like-for-like comparison for the AVX2 kernel:
//   OPENBLAS_CORETYPE=Haswell DARKBERT_KERNEL=avx2 bench_xwt_gemm --benchmark_filter='OpenBLAS|Avx2'
// The kernels are called directly, whatever path DARKBERT_KERNEL picks; a CPU without one skips it.
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
  // The study models' layers (hidden 128, FFN 512) at a training batch of 64 x 128 tokens.
  for (auto [in, out] : {std::pair<Index, Index>{128, 384}, {128, 128}, {128, 512}, {512, 128}}) b->Args({8192, in, out});
  // ... and at the pretraining batch of 16 x 128 tokens.
  for (auto [in, out] : {std::pair<Index, Index>{128, 384}, {128, 128}, {128, 512}, {512, 128}}) b->Args({2048, in, out});
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

void BM_Linear_DarkbertRowBlocks(benchmark::State& state) {
  if (!darkbert::cpu_has_avx512()) return state.SkipWithError("this CPU has no AVX-512");
  Problem p(state);
  auto epilogue = p.epilogue();
  for (auto _ : state)
    darkbert::detail::xwt_gemm_row_blocks<darkbert::detail::avx512::Kernel>(p.x.data(), p.rows, p.in, p.w.data(), p.out,
                                                                            p.y.data(), p.scratch, epilogue);
  p.report(state);
}
BENCHMARK(BM_Linear_DarkbertRowBlocks)->Apply(shapes);
#endif

#if DARKBERT_HAS_AVX2_KERNEL
void BM_Linear_DarkbertAvx2(benchmark::State& state) {
  if (!darkbert::cpu_has_avx2()) return state.SkipWithError("this CPU has no AVX2 + FMA");
  Problem p(state);
  auto epilogue = p.epilogue();
  for (auto _ : state)
    darkbert::detail::xwt_gemm_avx2(p.x.data(), p.rows, p.in, p.w.data(), p.out, p.y.data(), p.scratch, epilogue);
  p.report(state);
}
BENCHMARK(BM_Linear_DarkbertAvx2)->Apply(shapes);

void BM_Linear_DarkbertAvx2RowBlocks(benchmark::State& state) {
  if (!darkbert::cpu_has_avx2()) return state.SkipWithError("this CPU has no AVX2 + FMA");
  Problem p(state);
  auto epilogue = p.epilogue();
  for (auto _ : state)
    darkbert::detail::xwt_gemm_row_blocks<darkbert::detail::avx2::Kernel>(p.x.data(), p.rows, p.in, p.w.data(), p.out,
                                                                          p.y.data(), p.scratch, epilogue);
  p.report(state);
}
BENCHMARK(BM_Linear_DarkbertAvx2RowBlocks)->Apply(shapes);
#endif

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "darkbert's x·Wᵀ kernels (AVX-512, AVX2) beside OpenBLAS on BERT-base and study-model Linear shapes",
                               "bench_xwt_gemm --benchmark_filter=rows:128");
}
