// The backward pass of one BERT-base layer (hidden 768, 12 heads, FFN 3072, L = 128) stage by stage, at
// batch 1 and 8, so that a regression in training points at its stage; then a whole training step of a
// 12-layer BERT-base classifier (forward + backward + AdamW, dropout on), and dropout alone, in place and
// into another buffer. FLOP rates are counters: each linear backward is two products (dX = dY·W and
// dW += dYᵀ·X) of the forward's size.
#include <benchmark/benchmark.h>

#include <omp.h>  // omp_get_thread_num

#include <algorithm>  // std::copy
#include <random>  // std::mt19937_64
#include <vector>  // std::vector

#include "darkbert/core/counter_rng.hpp"
#include "darkbert/core/threads.hpp"
#include "darkbert/kernels/dropout.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/train/optimizer.hpp"
#include "darkbert/train/training_step.hpp"
#include "bench_main.hpp"

namespace {

using darkbert::Index;
using darkbert::Matrix;
constexpr Index kLength = 128;

darkbert::ModelConfig bert_base() {
  auto c = darkbert::ModelConfig::bert_shape(12, 768, 12, 3072);
  c.architecture = "BertForSequenceClassification";
  c.labels = {"0", "1"};
  return c;
}

// One layer's parameters, their gradients, and activations / upstream gradients of N tokens.
struct Layer {
  explicit Layer(Index batch) : B(batch), N(batch * kLength) {
    for (auto* m : {&x, &dy, &dx, &qkv, &dqkv, &ctx, &pre, &mlp, &dmlp}) m->setRandom();
    for (float& p : maps) p = 1.0f / kLength;  // a valid (uniform) pattern
  }
  Index B, N, H = 768, I = 3072, heads = 12, d = 64;
  darkbert::kernels::AttentionShape shape{B, kLength, heads, d, false};
  darkbert::Transformer<float> model = darkbert::Transformer<float>::random(darkbert::ModelConfig::bert_shape(1, 768, 12, 3072), {}, 0);
  darkbert::TransformerParams<float> grads = model.zero_gradients();
  const darkbert::BlockParams<float>& block = model.params().blocks[0];
  darkbert::BlockParams<float>& grad = grads.blocks[0];
  Matrix<float> x{N, H}, dy{N, H}, dx{N, H}, qkv{N, 3 * H}, dqkv{N, 3 * H}, ctx{N, H}, pre{N, I}, mlp{N, I}, dmlp{N, I};
  std::vector<float> maps = std::vector<float>(static_cast<std::size_t>(B * heads * kLength * kLength));
  std::vector<float> mean = std::vector<float>(static_cast<std::size_t>(N)), rstd = std::vector<float>(static_cast<std::size_t>(N), 1.0f);
  std::vector<float> work = std::vector<float>(static_cast<std::size_t>(darkbert::num_threads() * 2 * kLength * kLength));
};

void linear_counter(benchmark::State& state, double rows, double in, double out) {
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * rows * in * out * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Backward_QKV(benchmark::State& state) {
  Layer s(state.range(0));
  for (auto _ : state) darkbert::linear_backward<float>(s.x.data(), s.dqkv.data(), s.N, s.block.qkv, &s.grad.qkv, s.dx.data());
  linear_counter(state, s.N, s.H, 3 * s.H);
}
BENCHMARK(BM_Backward_QKV)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Backward_Attention(benchmark::State& state) {
  Layer s(state.range(0));
  const Index pairs = s.B * s.heads;
  const darkbert::kernels::DropoutMask drop{0.1f, 7};
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic)
    for (Index p = 0; p < pairs; ++p)
      darkbert::kernels::attention_backward(s.qkv.data(), s.maps.data() + s.shape.map_offset(p / s.heads, p % s.heads), s.ctx.data(),
                                        s.dqkv.data(), s.shape, p / s.heads, p % s.heads, 0.125f, true, drop,
                                        s.shape.map_offset(p / s.heads, p % s.heads),
                                        s.work.data() + omp_get_thread_num() * 2 * kLength * kLength);
  }
  // dV, dP, dQ and dK: four [L, L, d] products per pair.
  state.counters["GFLOP/s"] = benchmark::Counter(8.0 * pairs * kLength * kLength * s.d * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Backward_Attention)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Backward_AttentionOutput(benchmark::State& state) {
  Layer s(state.range(0));
  for (auto _ : state) darkbert::linear_backward<float>(s.ctx.data(), s.dy.data(), s.N, s.block.attn_out, &s.grad.attn_out, s.dx.data());
  linear_counter(state, s.N, s.H, s.H);
}
BENCHMARK(BM_Backward_AttentionOutput)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Backward_LayerNorm(benchmark::State& state) {
  Layer s(state.range(0));
  const darkbert::kernels::NormStats<float> stats{s.mean.data(), s.rstd.data()};
  for (auto _ : state)
    darkbert::layer_norm_backward<float>(s.x.data(), stats, s.dy.data(), s.N, s.H, s.block.attn_norm, &s.grad.attn_norm, s.dx.data());
}
BENCHMARK(BM_Backward_LayerNorm)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Backward_FFN(benchmark::State& state) {
  Layer s(state.range(0));
  for (auto _ : state) {
    darkbert::linear_backward<float>(s.mlp.data(), s.dy.data(), s.N, s.block.mlp_out, &s.grad.mlp_out, s.dmlp.data());
    darkbert::kernels::activation_backward<float>(s.pre.data(), s.mlp.data(), s.dmlp.data(), s.N * s.I, darkbert::Activation::gelu_erf);
    darkbert::linear_backward<float>(s.x.data(), s.dmlp.data(), s.N, s.block.mlp_in, &s.grad.mlp_in, s.dx.data());
  }
  linear_counter(state, s.N, s.H, 2.0 * s.I);
}
BENCHMARK(BM_Backward_FFN)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// Attention-probability dropout on one layer's maps (batch x 12 heads x 128 x 128), once in the forward and
// again on the gradients in the backward: the kernel path's loop (DARKBERT_KERNEL) beside the scalar loop
// it replaced, in one run; items are elements.
void BM_Dropout(benchmark::State& state) {
  std::vector<float> maps(static_cast<std::size_t>(state.range(0) * 12 * kLength * kLength), 0.5f);
  const darkbert::kernels::DropoutMask mask{0.1f, darkbert::stream_key(0, 1, 2)};
  for (auto _ : state) {
    darkbert::kernels::dropout_apply(maps.data(), static_cast<Index>(maps.size()), 0, mask);
    benchmark::DoNotOptimize(maps.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(maps.size()));
}
BENCHMARK(BM_Dropout)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// A residual branch's gradient in the backward: the undropped gradient stays (the residual's share) and
// the dropped one goes into another buffer. Copy then drop in place, against dropout_apply(x, y, ...) in
// one pass. One block of the study GPT-2: 16 x 128 tokens x 128 wide.
void BM_DropoutBranch(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  const Index n = 16 * 128 * 128;
  std::vector<float> gradient(static_cast<std::size_t>(n), 0.5f), branch(static_cast<std::size_t>(n));
  const darkbert::kernels::DropoutMask mask{0.1f, darkbert::stream_key(0, 1, 2)};
  for (auto _ : state) {
    if (fused) {
      darkbert::kernels::dropout_apply(gradient.data(), branch.data(), n, 0, mask);
    } else {
      std::copy(gradient.begin(), gradient.end(), branch.begin());
      darkbert::kernels::dropout_apply(branch.data(), n, 0, mask);
    }
    benchmark::DoNotOptimize(branch.data());
  }
  state.SetLabel(fused ? "one pass" : "copy, then in place");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_DropoutBranch)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DropoutScalar(benchmark::State& state) {
  std::vector<float> maps(static_cast<std::size_t>(state.range(0) * 12 * kLength * kLength), 0.5f);
  const darkbert::kernels::DropoutMask mask{0.1f, darkbert::stream_key(0, 1, 2)};
  const float scale = 1.0f / (1.0f - mask.p);
  const auto n = static_cast<Index>(maps.size());
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < n; ++i) maps[i] = mask.keep(static_cast<std::uint64_t>(i)) ? maps[i] * scale : 0.0f;
    benchmark::DoNotOptimize(maps.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(maps.size()));
}
BENCHMARK(BM_DropoutScalar)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- a language-model head: GPT-2's 50,257 tokens on 1024 rows (a mini GPT-2's step at 32 x 32 tokens)
// of width 128. Arg 0: the product x·Eᵀ; 1: cross-entropy forward + backward; 2: the backward products.
void BM_LanguageModelHead(benchmark::State& state) {
  const Index rows = 1024, width = 128, vocab = 50257;
  Matrix<float> x(rows, width), embedding(vocab, width), logits(rows, vocab), dlogits(rows, vocab), dx(rows, width),
      dembedding(vocab, width);
  x.setRandom(), embedding.setRandom();
  embedding *= 0.02f;
  std::vector<int> labels(rows);
  std::mt19937_64 rng(2);
  for (auto& l : labels) l = static_cast<int>(rng() % vocab);
  std::vector<float> row_loss(rows), row_lse(rows);
  darkbert::XwtScratch scratch;
  darkbert::kernels::linear_forward_raw<float>(x.data(), rows, width, embedding.data(), nullptr, vocab, logits.data(),
                                           darkbert::Activation::none, scratch);
  const int stage = static_cast<int>(state.range(0));
  for (auto _ : state) {
    if (stage == 0)
      darkbert::kernels::linear_forward_raw<float>(x.data(), rows, width, embedding.data(), nullptr, vocab, logits.data(),
                                               darkbert::Activation::none, scratch);
    if (stage == 1) {
      dlogits.setZero();  // as the tape's fresh gradient buffer
      darkbert::kernels::cross_entropy_forward(logits.data(), labels.data(), rows, vocab, row_loss.data(), row_lse.data());
      darkbert::kernels::cross_entropy_backward(logits.data(), labels.data(), rows, vocab, 1.0f, dlogits.data(), row_lse.data());
    }
    if (stage == 2)
      darkbert::kernels::linear_backward_raw<float>(x.data(), logits.data(), rows, width, vocab, embedding.data(),
                                                dembedding.data(), nullptr, dx.data());
  }
  const double flops = 2.0 * rows * width * vocab * (stage == 2 ? 2 : 1);
  if (stage != 1) state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LanguageModelHead)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- the product floor of one study GPT-2 pretraining step (12 x 128 x 4, FFN 512, batch 16 x 128 tokens,
// a sampled softmax whose candidate set averages 3,774 columns at 4,096 draws over the recipe's batches):
// every matrix product of forward and backward at the shapes and with the kernels the step uses, and
// nothing else. Its time against the step's (`darkbert pretrain --arch gpt2 --recipe study`) is how much of
// the step is products; its rate is the floor's. The attention products are counted over whole maps,
// as the backward computes them (the forward skips a causal map's future, so it does less).
void BM_StudyGpt2StepProducts(benchmark::State& state) {
  const Index layers = 12, T = 16 * kLength, H = 128, I = 512, heads = 4, d = 32, maps = 16 * heads, columns = 3774;
  Matrix<float> x(T, I), dy(T, I), y(T, I), dx(T, I), w(I, I), dw(I, I), lm(columns, H), dlm(columns, H),
      logits(T, columns), dlogits(T, columns);
  for (auto* m : {&x, &dy, &w, &lm, &dlogits}) m->setRandom();
  using Map = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  // Per thread: q, k, v, c [L, d] and P, dP [L, L] of the map in hand.
  const Index per_thread = 4 * kLength * d + 2 * kLength * kLength;
  std::vector<float> buffers(static_cast<std::size_t>(darkbert::num_threads() * per_thread), 1.0f / kLength);
  darkbert::XwtScratch scratch;
  // (in, out) of each block's four linears: qkv, attention output, FFN in, FFN out
  const std::pair<Index, Index> linears[] = {{H, 3 * H}, {H, H}, {H, I}, {I, H}};
  auto forward = [&](Index in, Index out) {
    darkbert::kernels::linear_forward_raw<float>(x.data(), T, in, w.data(), nullptr, out, y.data(), darkbert::Activation::none, scratch);
  };
  auto backward = [&](Index in, Index out) {
    darkbert::kernels::linear_backward_raw<float>(x.data(), dy.data(), T, in, out, w.data(), dw.data(), nullptr, dx.data());
  };
  // The (sequence, head) maps shared out over the threads, as the step's attention kernels do.
  auto attention = [&](bool backward_pass) {
#pragma omp parallel for schedule(static)
    for (Index m = 0; m < maps; ++m) {
      float* b = buffers.data() + omp_get_thread_num() * per_thread;
      Map Q(b, kLength, d), K(b + kLength * d, kLength, d), V(b + 2 * kLength * d, kLength, d), C(b + 3 * kLength * d, kLength, d);
      Map P(b + 4 * kLength * d, kLength, kLength), dP(b + 4 * kLength * d + kLength * kLength, kLength, kLength);
      if (!backward_pass) {
        P.noalias() = Q * K.transpose();
        C.noalias() = P * V;
      } else {
        dP.noalias() = C * V.transpose();  // dP = dC Vᵀ
        V.noalias() = P.transpose() * C;   // dV = Pᵀ dC
        Q.noalias() = dP * K;              // dQ = dS K
        K.noalias() = dP.transpose() * Q;  // dK = dSᵀ Q
      }
    }
  };
  auto step = [&] {
    for (Index l = 0; l < layers; ++l) {
      for (auto [in, out] : linears) forward(in, out);
      attention(false);
    }
    darkbert::kernels::linear_forward_raw<float>(x.data(), T, H, lm.data(), nullptr, columns, logits.data(),
                                             darkbert::Activation::none, scratch);
    darkbert::kernels::linear_backward_raw<float>(x.data(), dlogits.data(), T, H, columns, lm.data(), dlm.data(), nullptr,
                                              dx.data());
    for (Index l = 0; l < layers; ++l) {
      for (auto [in, out] : linears) backward(in, out);
      attention(true);
    }
  };
  step();  // sizes the scratch outside the timing
  for (auto _ : state) step();
  double flops = 6.0 * T * H * columns + layers * maps * 6.0 * 2 * kLength * kLength * d;
  for (auto [in, out] : linears) flops += layers * 6.0 * T * in * out;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP"] = flops * 1e-9;
}
BENCHMARK(BM_StudyGpt2StepProducts)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// ---- a whole step of a BERT-base sequence classifier (what `darkbert bench train-step` times)
void BM_TrainStep(benchmark::State& state) {
  const Index B = state.range(0);
  const auto config = bert_base();
  auto model = darkbert::Transformer<float>::random(config, darkbert::TaskHeads::for_architecture(config), 1);
  std::mt19937_64 rng(1);
  darkbert::Batch batch;
  batch.batch_size = B;
  batch.length = kLength;
  for (Index i = 0; i < B * kLength; ++i) batch.input_ids.push_back(1000 + static_cast<int>(rng() % 29000));
  darkbert::TaskLabels labels;
  for (Index b = 0; b < B; ++b) labels.classes.push_back(static_cast<int>(b % 2));
  darkbert::TrainingStep<float> training(model);
  darkbert::AdamW<float> optimizer(model);
  std::uint64_t step = 0;
  auto train = [&] {
    training.forward_backward(model, batch, labels, {.seed = 3, .step = step++});
    optimizer.step(training.gradients(), 1e-5);
    optimizer.zero_grad(training.gradients());
  };
  train();  // sizes every buffer outside the timing
  for (auto _ : state) train();
  const double H = 768, I = 3072, L = kLength;
  const double forward = 12 * (8 * L * H * H + 4 * L * H * I + 4 * L * L * H) * static_cast<double>(B);
  state.counters["GFLOP/s"] = benchmark::Counter(3 * forward * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TrainStep)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "the backward pass of one BERT-base layer stage by stage, then a whole train step",
                               "bench_backward --benchmark_filter=TrainStep");
}
