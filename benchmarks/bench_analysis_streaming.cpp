// Streaming analysis: memory must not depend on the number of examples, and folding an example must not allocate.
//
//   BM_StreamingAnalysis/<examples>  folds seeded random attention maps (4 layers x 4 heads, L = 32, random valid
//                                    length, the first example full length) through every accumulator.
//     counters: acc_bytes           heap bytes held by all accumulators at the end
//               rss_growth_KiB      growth of the process's peak RSS during the run (getrusage)
//               allocs_per_example  heap allocations per example after the first (operator new is counted here;
//                                   the first example sizes every scratch buffer and sees every label)
//   BM_<metric>_BertBase             one example of BERT-base-sized maps (12 x 12 x 128 x 128 float, n = 128)
//
//   build/benchmarks/bench_analysis_streaming --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <sys/resource.h>  // getrusage

#include <atomic>   // std::atomic
#include <cstdlib>  // std::malloc, std::free
#include <new>      // operator new / delete, std::bad_alloc
#include <random>   // std::mt19937_64
#include <span>     // std::span
#include <vector>   // std::vector

#include "bench_main.hpp"
#include "darkbert/analysis/all.hpp"

// ---------------------------------------------------------------- counting allocator (this executable only)
namespace {
std::atomic<long> g_allocations{0};
}
// GCC 12 flags free() on memory from the (replaced) operator new; here both sides are ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace darkbert;

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::vector<TokenClass> feature_classes() {
  return {token_class::sep_token(), token_class::cls_token(), token_class::upos("NOUN"), token_class::upos("VERB"),
          token_class::subject()};
}
std::vector<TokenClass> cls_categories() {
  return {token_class::cls_token(), token_class::sep_token(), token_class::punctuation(), token_class::upos("NOUN")};
}

struct Analysis {
  Analysis(Index l, Index h) : layers(l), heads(h) {}
  Index layers, heads;
  CosineSimilarityAccumulator<float> cosine{layers, heads};
  TokenClassAttention<float> features{layers, heads, feature_classes()};
  LinkAttentionAccumulator<float> links{layers, heads};
  ClassToClassAttention<float> verb_subject{layers, heads, token_class::upos("VERB"), token_class::subject()};
  QueryCategoryAttention<float> cls{layers, heads, token_class::cls_token(), cls_categories()};
  HeadSummaryAccumulator<float> summary{layers, heads};
  HeadDistanceAccumulator<float> js{layers, heads};
  ConfusionMatrix confusion;
  PearsonAccumulator<float> pearson;

  std::size_t memory_bytes() const {
    return cosine.memory_bytes() + features.memory_bytes() + links.memory_bytes() + verb_subject.memory_bytes() +
           cls.memory_bytes() + summary.memory_bytes() + js.memory_bytes() + confusion.memory_bytes();
  }
};

void BM_StreamingAnalysis(benchmark::State& state) {
  constexpr Index layers = 4, heads = 4, L = 32;
  const auto examples = static_cast<std::size_t>(state.range(0));
  double bytes = 0, rss_growth = 0, allocs_per_example = 0;
  for (auto _ : state) {
    const long rss_before = peak_rss_kib();
    Analysis analysis(layers, heads);
    std::mt19937_64 rng(2024);
    std::vector<float> a(static_cast<std::size_t>(layers * heads * L * L)), b(a.size());
    std::vector<TokenAnnotation> tokens(static_cast<std::size_t>(L));
    const char* upos[] = {"NOUN", "VERB", "PRON", "DET", "PUNCT"};
    const char* deprel[] = {"nsubj", "obj", "root", "det", "punct"};
    std::vector<TokenLink> link = {{{0}, {0}}};
    long allocations_after_first = 0;
    for (std::size_t e = 0; e < examples; ++e) {
      if (e == 1) allocations_after_first = g_allocations.load();
      const Index n = e == 0 ? L : 2 + static_cast<Index>(rng() % (L - 1));
      fill_random_attention<float>(a, layers, heads, L, n, e % 2 == 1, rng);
      fill_random_attention<float>(b, layers, heads, L, n, e % 2 == 1, rng);
      for (Index j = 0; j < n; ++j) {
        TokenAnnotation& t = tokens[static_cast<std::size_t>(j)];
        t.is_special = j == 0 || j == n - 1;
        t.token = j == 0 ? "[CLS]" : (j == n - 1 ? "[SEP]" : "w");
        t.upos = t.is_special ? "" : upos[rng() % 5];
        t.deprel = t.is_special ? "" : deprel[rng() % 5];
        t.segment = j < n / 2 ? 0 : 1;
      }
      const std::span<const TokenAnnotation> tok(tokens.data(), static_cast<std::size_t>(n));
      const auto va = AttentionView<float>::contiguous(a.data(), layers, heads, L, n, e % 2 == 1);
      const auto vb = AttentionView<float>::contiguous(b.data(), layers, heads, L, n, e % 2 == 1);
      link[0].from[0] = n - 1;
      link[0].to[0] = (n - 1) / 2;
      analysis.cosine.add(va, vb);
      analysis.features.add(va, tok);
      analysis.links.add(va, link);
      analysis.verb_subject.add(va, tok);
      analysis.cls.add(va, tok);
      analysis.summary.add(va, tok);
      analysis.js.add(va);
      if (e == 0) analysis.confusion.add(std::vector<int>{0, 1, 2}, std::vector<int>{2, 1, 0});  // every label seen
      analysis.confusion.add(static_cast<int>(rng() % 3), static_cast<int>(rng() % 3));
      analysis.pearson.add(static_cast<float>(rng() % 100), static_cast<float>(rng() % 100));
    }
    const long allocations = examples > 1 ? g_allocations.load() - allocations_after_first : 0;
    bytes = static_cast<double>(analysis.memory_bytes());
    rss_growth = static_cast<double>(peak_rss_kib() - rss_before);
    allocs_per_example = examples > 1 ? static_cast<double>(allocations) / static_cast<double>(examples - 1) : 0;
    benchmark::DoNotOptimize(analysis.cosine.result());
  }
  state.counters["acc_bytes"] = bytes;
  state.counters["rss_growth_KiB"] = rss_growth;
  state.counters["allocs_per_example"] = allocs_per_example;
  state.counters["examples_per_s"] =
      benchmark::Counter(static_cast<double>(examples), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StreamingAnalysis)->Arg(10)->Arg(1000)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- BERT-base-sized maps, one example per iteration
struct BertBase {
  static constexpr Index layers = 12, heads = 12, L = 128;
  std::vector<float> a, b;
  std::vector<TokenAnnotation> tokens;
  BertBase() : a(static_cast<std::size_t>(layers * heads * L * L)), b(a.size()), tokens(static_cast<std::size_t>(L)) {
    std::mt19937_64 rng(11);
    fill_random_attention<float>(a, layers, heads, L, L, false, rng);
    fill_random_attention<float>(b, layers, heads, L, L, false, rng);
    for (Index j = 0; j < L; ++j) {
      auto& t = tokens[static_cast<std::size_t>(j)];
      t.is_special = j == 0 || j == L - 1;
      t.token = j == 0 ? "[CLS]" : (j == L - 1 ? "[SEP]" : "w");
      t.upos = j % 3 == 0 ? "NOUN" : (j % 3 == 1 ? "VERB" : "DET");
      t.deprel = j % 5 == 0 ? "nsubj" : "";
      t.segment = j < L / 2 ? 0 : 1;
    }
  }
  AttentionView<float> view_a() const { return AttentionView<float>::contiguous(a.data(), layers, heads, L, L, false); }
  AttentionView<float> view_b() const { return AttentionView<float>::contiguous(b.data(), layers, heads, L, L, false); }
};
const BertBase& bert_base() {
  static const BertBase maps;
  return maps;
}

void BM_Cosine_BertBase(benchmark::State& state) {
  const auto& m = bert_base();
  CosineSimilarityAccumulator<float> acc(m.layers, m.heads);
  for (auto _ : state) acc.add(m.view_a(), m.view_b());
}
BENCHMARK(BM_Cosine_BertBase)->Unit(benchmark::kMillisecond);

void BM_TokenClasses_BertBase(benchmark::State& state) {
  const auto& m = bert_base();
  TokenClassAttention<float> acc(m.layers, m.heads, feature_classes());
  for (auto _ : state) acc.add(m.view_a(), m.tokens);
}
BENCHMARK(BM_TokenClasses_BertBase)->Unit(benchmark::kMillisecond);

void BM_HeadSummary_BertBase(benchmark::State& state) {
  const auto& m = bert_base();
  HeadSummaryAccumulator<float> acc(m.layers, m.heads);
  for (auto _ : state) acc.add(m.view_a(), m.tokens);
}
BENCHMARK(BM_HeadSummary_BertBase)->Unit(benchmark::kMillisecond);

void BM_ClassToClass_BertBase(benchmark::State& state) {
  const auto& m = bert_base();
  ClassToClassAttention<float> acc(m.layers, m.heads, token_class::upos("VERB"), token_class::subject());
  for (auto _ : state) acc.add(m.view_a(), m.tokens);
}
BENCHMARK(BM_ClassToClass_BertBase)->Unit(benchmark::kMillisecond);

void BM_JSDistance_BertBase(benchmark::State& state) {
  const auto& m = bert_base();
  HeadDistanceAccumulator<float> acc(m.layers, m.heads);
  for (auto _ : state) acc.add(m.view_a());
}
BENCHMARK(BM_JSDistance_BertBase)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  return darkbert::bench::main(argc, argv, "streaming attention accumulators: memory independent of the examples",
                               "bench_analysis_streaming --benchmark_filter=Streaming");
}
