// darkbert bench forward [--layers 12 --hidden 768 --heads 12 --ff 3072 --seq 128 --batch 8 --reps 5
//                         --threads N] [--no-attentions] [--hooks noop] [--dtype float32|float64]
//                         [--kernel auto|avx512|avx2|blas]
//
// Times the forward pass of a randomly initialised BERT-shaped encoder (seeded) and prints one line:
//   ms_per_batch=… ms_per_seq=… gflops=… peak_rss_mb=… median_ms_per_batch=… blas_core=… kernel=…
// (best of --reps after one warm-up; GFLOP/s from the best time).
//
// --kernel forces the kernel path as DARKBERT_KERNEL does (core/kernel_dispatch.hpp; the option wins over
// the variable). OpenBLAS's kernel set was fixed when the program loaded (blas_core=…): to time the avx2
// path as a CPU without AVX-512 runs it, start with OPENBLAS_CORETYPE=Haswell DARKBERT_KERNEL=avx2.
//
// darkbert bench train-step [same shape options; --batch 8 by default] [--no-dropout]
//
// Times one training step of a BERT sequence classifier (random weights, random tokens, no padding,
// dropout on): forward, cross-entropy, backward, AdamW. Prints one line:
//   ms_per_step=… median_ms=… tokens_per_s=… gflops=… peak_rss_mb=…
// (GFLOP/s counts 3× the forward's products, the convention of ../shared/notes/performance.md.)

#include <CLI/CLI.hpp>

#include <algorithm>  // std::sort
#include <chrono>     // std::chrono::steady_clock
#include <cstdio>     // std::printf, std::fprintf
#include <cstdlib>    // setenv
#include <fstream>    // std::ifstream
#include <limits>     // std::numeric_limits
#include <random>     // std::mt19937_64
#include <vector>     // std::vector

#include "commands.hpp"
#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/core/kernel_dispatch.hpp"  // kernel_path, kernel_path_name
#include "darkbert/core/threads.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/train/optimizer.hpp"
#include "darkbert/train/training_step.hpp"

namespace darkbert::cli {

struct BenchForwardOptions {
  int layers = 12, hidden = 768, heads = 12, ff = 3072, seq = 128, batch = 8, reps = 5, threads = 0;
  bool no_attentions = false;
  std::string hooks = "none";
  std::string dtype = "float32";
  std::uint64_t seed = 0;
  bool no_dropout = false;
  int batch_slices = 1;  // train-step: the batch as this many slices side by side (TrainingStep)
  std::string kernel;  // empty: DARKBERT_KERNEL decides
};

// Applies --kernel before the first product asks for the path (it is fixed on first use), and says when
// an avx2 timing would use OpenBLAS's AVX-512 kernels for the BLAS calls.
inline void apply_kernel_option(const BenchForwardOptions& o) {
  if (!o.kernel.empty()) ::setenv("DARKBERT_KERNEL", o.kernel.c_str(), 1);
  if (kernel_path() == KernelPath::avx2 && is_avx512_core(blas_core_name()))
    std::fprintf(stderr, "note: OpenBLAS runs its %s kernels here; for the BLAS of a CPU without AVX-512, run with "
                 "OPENBLAS_CORETYPE=Haswell DARKBERT_KERNEL=avx2\n", blas_core_name().c_str());
}

// FLOPs of one sequence through the encoder: projections, FFN, and the two attention products.
inline double forward_flops_per_sequence(double L, double H, double I, double layers) {
  return layers * (8 * L * H * H + 4 * L * H * I + 4 * L * L * H);
}

// Peak resident memory of this process in MiB, from /proc/self/status (VmHWM). getrusage's ru_maxrss is
// not used: Linux carries it over fork + exec, so a child started by a large parent reports the parent's.
inline double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0.0;
}

// A batch of random tokens (ids >= 1000, no padding) of the benchmark's shape.
inline Batch random_batch(const BenchForwardOptions& o, int vocab) {
  std::mt19937_64 rng(o.seed + 1);
  std::uniform_int_distribution<int> token(1000, vocab - 1);
  Batch batch;
  batch.batch_size = o.batch;
  batch.length = o.seq;
  for (int i = 0; i < o.batch * o.seq; ++i) batch.input_ids.push_back(token(rng));
  batch.attention_mask.assign(batch.input_ids.size(), 1);
  return batch;
}

template <class T>
void bench_forward(const BenchForwardOptions& o) {
  set_num_threads(o.threads);
  const auto config = ModelConfig::bert_shape(o.layers, o.hidden, o.heads, o.ff, 30522, std::max(512, o.seq));
  const auto model = Transformer<T>::random(config, TaskHeads{}, o.seed);

  const Batch batch = random_batch(o, config.vocab_size);

  HookRegistry<T> registry;
  std::vector<HookHandle> handles;
  volatile double sink = 0;
  if (o.hooks == "noop")  // observe-only hook on every point: reads one element so it cannot be optimised away
    handles.push_back(registry.add({.pattern = "*hook_*"}, [&sink](HookContext<T>& ctx) { sink = sink + double(ctx.tensor(0)); }));
  ForwardOptions<T> options;
  options.keep_attentions = !o.no_attentions;
  options.hooks = o.hooks == "noop" ? &registry : nullptr;

  ForwardResult<T> out;
  model.forward_into(batch, options, out);  // warm-up; later calls reuse its buffers, as a study loop would
  std::vector<double> times;
  for (int r = 0; r < o.reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    model.forward_into(batch, options, out);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const double best = times.front(), median = times[times.size() / 2];
  const double flops = forward_flops_per_sequence(o.seq, o.hidden, o.ff, o.layers) * o.batch;
  std::printf("ms_per_batch=%.2f ms_per_seq=%.2f gflops=%.1f peak_rss_mb=%.1f median_ms_per_batch=%.2f blas_core=%s "
              "kernel=%s\n", best, best / o.batch, flops / (best * 1e6), peak_rss_mb(), median, blas_core_name().c_str(),
              kernel_path_name(kernel_path()));
}

template <class T>
void bench_train_step(const BenchForwardOptions& o) {
  set_num_threads(o.threads);
  auto config = ModelConfig::bert_shape(o.layers, o.hidden, o.heads, o.ff, 30522, std::max(512, o.seq));
  config.architecture = "BertForSequenceClassification";
  config.labels = {"0", "1"};
  auto model = Transformer<T>::random(config, TaskHeads::for_architecture(config), o.seed);
  const Batch batch = random_batch(o, config.vocab_size);
  TaskLabels labels;
  for (int b = 0; b < o.batch; ++b) labels.classes.push_back(b % 2);

  TrainingStep<T> training(model, o.batch_slices);
  AdamW<T> optimizer(model);
  auto step = [&](std::uint64_t s) {
    training.forward_backward(model, batch, labels, {.dropout = !o.no_dropout, .seed = o.seed, .step = s});
    optimizer.step(training.gradients(), 1e-5);
    optimizer.zero_grad(training.gradients());
  };
  step(0);  // warm-up: the tape's arena and every buffer reach their size here
  std::vector<double> times;
  for (int r = 0; r < o.reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    step(static_cast<std::uint64_t>(r + 1));
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const double best = times.front(), median = times[times.size() / 2];
  const double flops = 3 * forward_flops_per_sequence(o.seq, o.hidden, o.ff, o.layers) * o.batch;
  std::printf("ms_per_step=%.1f median_ms=%.1f tokens_per_s=%.0f gflops=%.1f peak_rss_mb=%.1f blas_core=%s kernel=%s\n",
              best, median, o.batch * o.seq / (best / 1000), flops / (best * 1e6), peak_rss_mb(), blas_core_name().c_str(),
              kernel_path_name(kernel_path()));
}

// The model shape, timing and type options both benchmarks take.
inline void add_shape_options(CLI::App* cmd, BenchForwardOptions& o) {
  cmd->add_option("--layers", o.layers, "Number of layers")->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "Hidden size")->capture_default_str();
  cmd->add_option("--heads", o.heads, "Attention heads")->capture_default_str();
  cmd->add_option("--ff", o.ff, "FFN (intermediate) size")->capture_default_str();
  cmd->add_option("--seq", o.seq, "Sequence length")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Batch size")->capture_default_str();
  cmd->add_option("--reps", o.reps, "Timed repetitions (after one warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o.threads, "Threads for OpenBLAS and OpenMP (0 = all cores)")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for weights, token ids and dropout")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Computation type")->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("--kernel", o.kernel, "Kernel path, as DARKBERT_KERNEL (default: that variable, else auto)")
      ->check(CLI::IsMember({"auto", "avx512", "avx2", "blas"}));
}

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->footer("Example: darkbert bench forward --batch 8 --seq 128");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchForwardOptions>();
  auto* fwd = bench->add_subcommand("forward", "Time the forward pass of a random BERT-shaped encoder");
  fwd->footer("Example: darkbert bench forward --batch 1 --reps 10 --hooks noop --kernel avx2");
  add_shape_options(fwd, *o);
  fwd->add_flag("--no-attentions", o->no_attentions, "Do not keep the attention maps");
  fwd->add_option("--hooks", o->hooks, "none, or noop: an observe-only hook on every hook point")
      ->check(CLI::IsMember({"none", "noop"}));
  fwd->callback([o] {
    if (o->hidden % o->heads != 0) fail("bench forward: --hidden ", o->hidden, " is not divisible by --heads ", o->heads);
    apply_kernel_option(*o);
    if (o->dtype == "float64") bench_forward<double>(*o);
    else bench_forward<float>(*o);
  });

  auto t = std::make_shared<BenchForwardOptions>();
  auto* train = bench->add_subcommand("train-step", "Time one training step (forward, backward, AdamW) of a BERT classifier");
  train->footer("Example: darkbert bench train-step --layers 4 --hidden 256 --heads 4 --ff 1024 --batch 32");
  add_shape_options(train, *t);
  train->add_flag("--no-dropout", t->no_dropout, "Train without dropout");
  train->add_option("--batch-slices", t->batch_slices, "Run the batch as N slices side by side, one per thread")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  train->callback([t] {
    if (t->hidden % t->heads != 0) fail("bench train-step: --hidden ", t->hidden, " is not divisible by --heads ", t->heads);
    apply_kernel_option(*t);
    if (t->dtype == "float64") bench_train_step<double>(*t);
    else bench_train_step<float>(*t);
  });
}

}  // namespace darkbert::cli
