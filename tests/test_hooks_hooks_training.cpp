// Hooks in a training pass (hooks/hooks.hpp): backward hooks see ∂loss/∂tensor at every hook point, and
// forward hooks that change their tensor are part of the graph through their gradient rule. The arbiter is
// the loss itself: a forward hook adds ±ε to one element of the hooked tensor and the central difference
// of the loss must equal the gradient the backward hook saw there (float64, tiny golden checkpoints).
#include <doctest/doctest.h>

#include <algorithm>  // std::max_element
#include <cmath>      // std::abs
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/hooks/hooks.hpp"
#include "darkbert/train/case_labels.hpp"
#include "darkbert/train/task_loss.hpp"
#include "test_support.hpp"

namespace {

using darkbert::HookContext;
using darkbert::HookGradient;
using darkbert::HookPoint;
using darkbert::HookRegistry;
using T = double;

// The loss of the first labelled case of a golden cases file, with whatever hooks are registered.
struct LossProbe {
  darkbert::CaseFile file;
  const darkbert::Case* labelled = nullptr;
  darkbert::Transformer<T> model;
  darkbert::TaskLabels labels;

  explicit LossProbe(const std::string& cases)
      : file(darkbert::CaseFile::read(darkbert::test::golden_dir() / "cases" / cases)),
        model(darkbert::Transformer<T>::load(file.model_dir)) {
    for (const auto& c : file.cases)
      if (!labelled && darkbert::case_file_field(file, c, "grads_file")) labelled = &c;
    REQUIRE(labelled);
    labels = darkbert::case_labels(file, *labelled);
  }

  // Loss of a training forward (dropout off); runs the backward (and so the backward hooks) if asked.
  double loss(const HookRegistry<T>& hooks, bool backward = false) const {
    darkbert::autodiff::Tape<T> tape;
    auto grads = model.zero_gradients();
    const darkbert::TrainingPass<T> pass{.tape = &tape, .gradients = &grads, .dropout = false};
    darkbert::ForwardResult<T> result;
    model.forward_into(labelled->batch, {.hooks = &hooks, .training = &pass}, result);
    darkbert::LossTargets<T> targets;
    const auto l = darkbert::task_loss(tape, model, labelled->batch, result, labels, targets);
    if (backward) tape.backward(l);
    return l.value()[0];
  }

  // The gradient at hook `name`, as a backward hook sees it (row-major over the hook's view).
  std::vector<T> gradient_at(HookRegistry<T>& hooks, const std::string& name) const {
    std::vector<T> g;
    auto h = hooks.add_backward({.pattern = name}, [&](HookContext<T>& ctx) {
      CHECK(ctx.gradient);
      HookRegistry<T>::for_each_element(ctx.tensor, [&](T& x) { g.push_back(x); });
    });
    loss(hooks, true);
    return g;
  }

  // Central difference of the loss in element `k` of the tensor at hook `name`.
  double finite_difference(HookRegistry<T>& hooks, const std::string& name, std::size_t k) const {
    constexpr double eps = 1e-5;
    double sign = 1;
    auto nudge = hooks.add({.pattern = name, .gradient = HookGradient::pass_through}, [&](HookContext<T>& ctx) {
      std::size_t i = 0;
      HookRegistry<T>::for_each_element(ctx.tensor, [&](T& x) {
        if (i++ == k) x += sign * eps;
      });
    });
    const double up = loss(hooks);
    sign = -1;
    const double down = loss(hooks);
    return (up - down) / (2 * eps);
  }
};

// The elements a check looks at: the largest |gradient| and two fixed positions.
std::vector<std::size_t> probe_elements(const std::vector<T>& g) {
  const auto largest = static_cast<std::size_t>(
      std::max_element(g.begin(), g.end(), [](T a, T b) { return std::abs(a) < std::abs(b); }) - g.begin());
  return {largest, g.size() / 3, (2 * g.size()) / 3};
}

void check_gradient_matches_loss(const LossProbe& probe, HookRegistry<T>& hooks, const std::string& name) {
  const auto g = probe.gradient_at(hooks, name);
  REQUIRE_MESSAGE(!g.empty(), name << ": the backward hook did not fire");
  for (const auto k : probe_elements(g)) {
    const double fd = probe.finite_difference(hooks, name, k);
    CHECK_MESSAGE(std::abs(fd - g[k]) <= 1e-6 * (1 + std::abs(g[k])),
                  name << "[" << k << "]: backward hook saw " << g[k] << ", the loss changes at " << fd);
  }
}

// Every hook point of a model: embed, each per-layer point of layer `layer`, and GPT-2's ln_final.
std::vector<std::string> hook_names(const darkbert::Transformer<T>& model, int layer) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < darkbert::hook_point_count; ++i) {
    const auto p = static_cast<HookPoint>(i);
    if (p == HookPoint::ln_final && !model.config().pre_layer_norm) continue;
    names.push_back(darkbert::hook_name(p, darkbert::is_per_layer(p) ? layer : -1));
  }
  return names;
}

}  // namespace

TEST_CASE("backward hooks see the exact gradient of the loss at every hook point (BERT and GPT-2)") {
  for (const char* cases : {"bert_seqcls3.json", "gpt2_seqcls.json"}) {
    const LossProbe probe(cases);
    for (int layer = 0; layer < probe.model.config().num_layers; ++layer)
      for (const auto& name : hook_names(probe.model, layer)) {
        CAPTURE(cases);
        HookRegistry<T> hooks;
        check_gradient_matches_loss(probe, hooks, name);
      }
  }
}

TEST_CASE("modifying hooks are part of the graph through their gradient rule") {
  for (const char* cases : {"bert_seqcls3.json", "gpt2_seqcls.json"}) {
    CAPTURE(cases);
    const LossProbe probe(cases);
    const std::string upstream = "blocks.0.hook_resid_pre";  // gradients here pass through every rule below

    SUBCASE("stop: a zero-ablated head passes no gradient") {
      HookRegistry<T> hooks;
      // Registered before the ablation, so the backward reaches it after the rule (reverse order): it sees
      // the gradient of the head's z as computed, before the ablation replaced it.
      std::vector<T> z;
      auto look = hooks.add_backward({.pattern = "blocks.0.attn.hook_z", .heads = {1}}, [&](HookContext<T>& ctx) {
        HookRegistry<T>::for_each_element(ctx.tensor, [&](T& x) { z.push_back(x); });
      });
      auto ablate = hooks.add({.pattern = "blocks.0.attn.hook_z", .heads = {1}, .gradient = HookGradient::stop},
                              [](HookContext<T>& ctx) { HookRegistry<T>::for_each_element(ctx.tensor, [](T& x) { x = 0; }); });
      check_gradient_matches_loss(probe, hooks, upstream);
      z.clear();
      probe.loss(hooks, true);
      REQUIRE(!z.empty());
      CHECK(std::all_of(z.begin(), z.end(), [](T x) { return x == 0; }));
    }

    SUBCASE("pass_through + a backward hook: scaling the MLP hidden, and the pattern") {
      for (const std::string point : {"blocks.0.mlp.hook_post", "blocks.1.attn.hook_pattern"}) {
        CAPTURE(point);
        HookRegistry<T> hooks;
        auto scale = hooks.add({.pattern = point, .gradient = HookGradient::pass_through}, [](HookContext<T>& ctx) {
          HookRegistry<T>::for_each_element(ctx.tensor, [](T& x) { x *= 0.5; });
        });
        // Without the scaling's own backward the gradient is wrong: the check can fail.
        const auto wrong = probe.gradient_at(hooks, upstream);
        bool differs = false;
        for (const auto k : probe_elements(wrong))
          differs = differs || std::abs(probe.finite_difference(hooks, upstream, k) - wrong[k]) > 1e-6 * (1 + std::abs(wrong[k]));
        CHECK_MESSAGE(differs, point << ": pass_through alone should not be the derivative of a scaling");
        auto chain = hooks.add_backward({.pattern = point}, [](HookContext<T>& ctx) {
          HookRegistry<T>::for_each_element(ctx.tensor, [](T& x) { x *= 0.5; });
        });
        check_gradient_matches_loss(probe, hooks, upstream);
      }
    }
  }
}

TEST_CASE("a hook that changes its tensor in a training pass without a gradient rule is refused by name") {
  const LossProbe probe("bert_seqcls3.json");
  HookRegistry<T> hooks;
  auto change = hooks.add({.pattern = "blocks.1.hook_resid_mid"}, [](HookContext<T>& ctx) {
    HookRegistry<T>::for_each_element(ctx.tensor, [](T& x) { x *= 2; });
  });
  const auto message = darkbert::test::message_of([&] { probe.loss(hooks); });
  CHECK(message.find("blocks.1.hook_resid_mid") != std::string::npos);
  CHECK(message.find("gradient rule") != std::string::npos);
  // The same hook is fine outside training, and an observing hook is fine in training.
  CHECK_NOTHROW(probe.model.forward(probe.labelled->batch, {.hooks = &hooks}));
  change.reset();
  auto observe = hooks.add({.pattern = "blocks.1.hook_resid_mid"}, [](HookContext<T>&) {});
  CHECK_NOTHROW(probe.loss(hooks));
}
