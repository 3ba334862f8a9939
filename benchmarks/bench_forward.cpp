// BERT-base-shaped forward (hidden 768, 12 layers, 12 heads, FFN 3072, L = 128, random seeded weights),
// all attention maps kept, at batch 1 and 8; then one benchmark per stage of a layer so a regression
// points at its stage. FLOP rates are reported as counters (22.35 GFLOP per sequence for the forward).
#include <benchmark/benchmark.h>

#include <random>  // std::mt19937_64

#include "darkbert/core/threads.hpp"
#include "darkbert/model/transformer.hpp"
#include "bench_main.hpp"

namespace {

using darkbert::Index;
constexpr Index kLength = 128;

darkbert::ModelConfig bert_base() { return darkbert::ModelConfig::bert_shape(12, 768, 12, 3072); }

const darkbert::Transformer<float>& model() {
  static const auto m = darkbert::Transformer<float>::random(bert_base(), {}, 0);
  return m;
}

darkbert::Batch random_batch(Index batch) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> token(1000, 30000);
  darkbert::Batch b;
  b.batch_size = batch;
  b.length = kLength;
  for (Index i = 0; i < batch * kLength; ++i) b.input_ids.push_back(token(rng));
  return b;
}

double flops_per_sequence(const darkbert::ModelConfig& c, double L) {
  const double H = c.hidden_size, I = c.intermediate_size;
  return c.num_layers * (8 * L * H * H + 4 * L * H * I + 4 * L * L * H);
}

void BM_Forward(benchmark::State& state) {
  const auto batch = random_batch(state.range(0));
  darkbert::ForwardResult<float> result;
  model().forward_into(batch, {}, result);  // builds the model and sizes the buffers outside the timing
  for (auto _ : state) model().forward_into(batch, {}, result);
  const double flops = flops_per_sequence(model().config(), kLength) * static_cast<double>(batch.batch_size);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sequences"] = static_cast<double>(batch.batch_size);  // time per sequence = Time / sequences
}
BENCHMARK(BM_Forward)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// ---- stages of one layer at batch 1 and 8 (N = 128 and 1024 tokens)
struct Stage {
  explicit Stage(Index batch) : B(batch), N(batch * kLength) { attention.prepare(shape, darkbert::num_threads()); }
  Index B, L = kLength, N, H = 768, I = 3072, heads = 12, d = 64;
  darkbert::kernels::AttentionShape shape{B, L, heads, d, false};
  darkbert::Matrix<float> x = darkbert::Matrix<float>::Random(N, H), qkv = darkbert::Matrix<float>::Random(N, 3 * H);
  darkbert::Matrix<float> ctx = darkbert::Matrix<float>::Zero(N, H), out = darkbert::Matrix<float>::Zero(N, H);
  darkbert::Matrix<float> mlp = darkbert::Matrix<float>::Zero(N, I);
  std::vector<float> maps = std::vector<float>(static_cast<std::size_t>(B * heads * L * L));
  std::vector<int> mask = std::vector<int>(static_cast<std::size_t>(N), 1);
  const darkbert::BlockParams<float>& block = model().params().blocks[0];
  darkbert::XwtScratch scratch;
  darkbert::kernels::AttentionScratch attention;
};

void BM_Stage_Embeddings(benchmark::State& state) {
  const auto batch = random_batch(state.range(0));
  darkbert::Matrix<float> out(batch.tokens(), model().config().hidden_size);
  for (auto _ : state) model().embed(batch, out.data());
}
BENCHMARK(BM_Stage_Embeddings)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage_QKV(benchmark::State& state) {
  Stage s(state.range(0));
  for (auto _ : state) darkbert::linear_forward<float>(s.x.data(), s.N, s.block.qkv, s.qkv.data(), darkbert::Activation::none, s.scratch);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * s.N * s.H * 3 * s.H * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Stage_QKV)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage_ScoresSoftmax(benchmark::State& state) {
  Stage s(state.range(0));
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic)
    for (Index p = 0; p < s.B * s.heads; ++p) {
      darkbert::kernels::attention_scores(s.qkv.data(), s.mask.data(), s.maps.data(), s.shape, p / s.heads, p % s.heads, 0.125f, s.attention);
      darkbert::kernels::attention_softmax(s.maps.data(), s.shape, p / s.heads, p % s.heads);
    }
  }
}
BENCHMARK(BM_Stage_ScoresSoftmax)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage_Context(benchmark::State& state) {
  Stage s(state.range(0));
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic)
    for (Index p = 0; p < s.B * s.heads; ++p)
      darkbert::kernels::attention_context(s.qkv.data(), s.maps.data(), s.ctx.data(), s.shape, p / s.heads, p % s.heads, s.attention);
  }
}
BENCHMARK(BM_Stage_Context)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage_OutputLayerNorm(benchmark::State& state) {
  Stage s(state.range(0));
  for (auto _ : state) {
    darkbert::linear_forward<float>(s.ctx.data(), s.N, s.block.attn_out, s.out.data(), darkbert::Activation::none, s.scratch);
    darkbert::add_layer_norm_forward<float>(s.out.data(), s.x.data(), nullptr, s.out.data(), s.N, s.H, s.block.attn_norm, 1e-12);
  }
}
BENCHMARK(BM_Stage_OutputLayerNorm)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage_FFN(benchmark::State& state) {
  Stage s(state.range(0));
  for (auto _ : state) {
    darkbert::linear_forward<float>(s.x.data(), s.N, s.block.mlp_in, s.mlp.data(), darkbert::Activation::gelu_erf, s.scratch);
    darkbert::linear_forward<float>(s.mlp.data(), s.N, s.block.mlp_out, s.out.data(), darkbert::Activation::none, s.scratch);
    darkbert::add_layer_norm_forward<float>(s.out.data(), s.x.data(), nullptr, s.out.data(), s.N, s.H, s.block.mlp_norm, 1e-12);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * s.N * s.H * s.I * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Stage_FFN)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "BERT-base forward at batch 1 and 8, then each stage of one layer",
                               "bench_forward --benchmark_filter=Forward --benchmark_repetitions=3");
}
