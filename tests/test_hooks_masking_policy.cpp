// Masking policies: each changes the pattern exactly as specified, and they compose.
#include <doctest/doctest.h>

#include "darkbert/hooks/masking_policy.hpp"
#include "darkbert/model/transformer.hpp"
#include "test_support.hpp"

namespace {
using darkbert::test::golden_dir;
using darkbert::Index;

// Pattern of (layer, b, h) as a dense matrix.
template <class R>
darkbert::Matrix<double> map_of(const R& result, int layer, Index b, Index h) {
  const Index L = result.attentions.shape()[3];
  darkbert::Matrix<double> m(L, L);
  for (Index i = 0; i < L; ++i)
    for (Index j = 0; j < L; ++j) m(i, j) = result.attentions(layer, b, h, i, j);
  return m;
}
}  // namespace

TEST_CASE("uniform: 1/n over non-padding keys (encoder) and 1/(t+1) over the visible prefix (causal)") {
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}, {3, 4}});  // second row: 2 real tokens
  for (const char* name : {"bert_model", "gpt2_lm"}) {
    const auto model = darkbert::Transformer<double>::load(golden_dir() / "models" / name);
    darkbert::MaskingPolicies<double> p;
    p.add(darkbert::uniform_policy<double>(), {{1, 2}});
    const auto out = model.forward(batch, {.policies = &p});
    const bool causal = model.config().causal;
    const auto m = map_of(out, 1, 1, 2);
    for (Index i = 0; i < 4; ++i)
      for (Index j = 0; j < 4; ++j) {
        const double n = causal ? std::min<Index>(i, 1) + 1 : 2;  // real keys: 0 and 1
        const bool allowed = j < 2 && (!causal || j <= i);
        CHECK(m(i, j) == doctest::Approx(allowed ? 1 / n : 0.0));
      }
    // Other heads keep a genuine softmax pattern.
    CHECK(map_of(out, 1, 1, 1)(0, 0) != doctest::Approx(0.5));
  }
}

TEST_CASE("zero: the head contributes nothing to its context (Hugging Face head_mask = 0)") {
  const auto model = darkbert::Transformer<double>::load(golden_dir() / "models" / "bert_model");
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}});
  darkbert::MaskingPolicies<double> p;
  p.add(darkbert::zero_policy<double>(), {{0, 1}});
  darkbert::HookRegistry<double> hooks;
  double head1 = 0, head0 = 0;
  auto h = hooks.add({.pattern = "blocks.0.attn.hook_z"}, [&](auto& ctx) {
    for (Index t = 0; t < ctx.length; ++t)
      for (Index k = 0; k < ctx.tensor.shape[3]; ++k) {
        head1 += std::abs(ctx.tensor(0, t, 1, k));
        head0 += std::abs(ctx.tensor(0, t, 0, k));
      }
  });
  const auto out = model.forward(batch, {.hooks = &hooks, .policies = &p});
  CHECK(head1 == 0.0);
  CHECK(head0 > 0.0);
  CHECK(map_of(out, 0, 0, 1).isZero());
}

TEST_CASE("mean ablation: the reference mean, restricted to allowed keys and renormalised") {
  const auto model = darkbert::Transformer<double>::load(golden_dir() / "models" / "bert_model");
  const auto& c = model.config();
  const auto reference = darkbert::Batch::from_rows({{2, 5, 7, 9}, {3, 4, 8, 1}, {6, 6, 6}});
  const auto ref_out = model.forward(reference);
  auto means = std::make_shared<darkbert::MeanPatterns<double>>(c.num_layers, c.num_heads, 4);
  const Index L = reference.length, layer_stride = reference.batch_size * c.num_heads * L * L;
  for (Index b = 0; b < reference.batch_size; ++b)
    means->add(ref_out.attentions.data() + b * c.num_heads * L * L, L, reference.valid_length(b), layer_stride);
  // Hand check one entry: position (1, 2) of layer 2 head 3 is averaged over the three examples.
  const double expected_mean = (ref_out.attentions(2, 0, 3, 1, 2) + ref_out.attentions(2, 1, 3, 1, 2) +
                                ref_out.attentions(2, 2, 3, 1, 2)) / 3;
  CHECK(means->mean(2, 3, 1, 2) == doctest::Approx(expected_mean));
  // Position 3 exists only in the first two examples.
  CHECK(means->mean(2, 3, 3, 0) == doctest::Approx((ref_out.attentions(2, 0, 3, 3, 0) + ref_out.attentions(2, 1, 3, 3, 0)) / 2));

  darkbert::MaskingPolicies<double> p;
  p.add(darkbert::mean_policy<double>(means), {{2, 3}});
  const auto batch = darkbert::Batch::from_rows({{4, 4, 4}, {5}});  // padded second row
  const auto out = model.forward(batch, {.policies = &p});
  for (Index b = 0; b < 2; ++b) {
    const Index n = batch.valid_length(b);
    for (Index i = 0; i < 3; ++i) {
      double total = 0;
      for (Index j = 0; j < n; ++j) total += means->mean(2, 3, i, j);
      for (Index j = 0; j < 3; ++j)
        CHECK(out.attentions(2, b, 3, i, j) == doctest::Approx(j < n ? means->mean(2, 3, i, j) / total : 0.0));
    }
  }
}

TEST_CASE("custom policies and composition in order") {
  const auto model = darkbert::Transformer<double>::load(golden_dir() / "models" / "bert_model");
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}});
  darkbert::MaskingPolicies<double> p;
  // Attend only to the first token.
  p.add([](const darkbert::PatternSite<double>& s) {
    for (Index i = 0; i < s.length; ++i)
      for (Index j = 0; j < s.length; ++j) s.map[i * s.length + j] = j == 0 ? 1.0 : 0.0;
  }, {{0, darkbert::all_heads}});
  p.add(darkbert::uniform_policy<double>(), {{0, 2}});  // applied after: head 2 ends uniform
  const auto out = model.forward(batch, {.policies = &p});
  CHECK(map_of(out, 0, 0, 0)(3, 0) == 1.0);
  CHECK(map_of(out, 0, 0, 2)(3, 0) == doctest::Approx(0.25));
  CHECK(p.first_layer(3) == 0);
  darkbert::MaskingPolicies<double> bad;
  bad.add(darkbert::uniform_policy<double>(), {{7, 0}});
  CHECK_THROWS_WITH_AS(model.forward(batch, {.policies = &bad}), doctest::Contains("layer 7 out of range"), darkbert::error);
}
