// Training end to end on small random models: the whole model's gradient against finite differences with
// dropout on and a head disabled (the fixtures have dropout off), bit-identical reruns, the schedule,
// weight decay only on matrices, an arena that stops growing, and a loss that falls.
#include <doctest/doctest.h>

#include <cmath>   // std::abs
#include <random>  // std::mt19937_64
#include <vector>  // std::vector

#include "darkbert/train/optimizer.hpp"
#include "darkbert/train/task_loss.hpp"
#include "test_support.hpp"

namespace {

using darkbert::Index;

darkbert::ModelConfig tiny_config(darkbert::Family family, const char* architecture) {
  darkbert::ModelConfig c = darkbert::ModelConfig::bert_shape(2, 8, 2, 12, 23, 16);
  c.architecture = architecture;
  c.labels = {"a", "b", "c"};
  if (family == darkbert::Family::gpt2) {
    c.family = family;
    c.type_vocab_size = 0;
    c.pre_layer_norm = c.causal = true;
    c.activation = darkbert::Activation::gelu_tanh;
    c.layer_norm_eps = 1e-5;
    c.pad_token_id = 22;
  }
  c.hidden_dropout = c.embedding_dropout = 0.2;
  c.attention_dropout = 0.25;
  c.classifier_dropout = family == darkbert::Family::gpt2 ? 0 : 0.3;
  return c;
}

darkbert::Batch tiny_batch(int pad) {
  return darkbert::Batch::from_rows({{1, 5, 7, 9, 2, 3}, {4, 6, 8, 2}, {3, 11, 13}}, pad);
}

template <class T>
struct Step {
  darkbert::autodiff::Tape<T> tape;
  darkbert::ForwardResult<T> out;
  darkbert::LossTargets<T> targets;
};

// Loss of one training forward (dropout stream fixed by seed and step), optionally with backward.
template <class T>
T loss_of(const darkbert::Transformer<T>& model, const darkbert::Batch& batch, const darkbert::TaskLabels& labels,
          darkbert::TransformerParams<T>& grads, const darkbert::MaskingPolicies<T>* policies, bool backward) {
  Step<T> s;
  const darkbert::TrainingPass<T> pass{.tape = &s.tape, .gradients = &grads, .seed = 11, .step = 3};
  model.forward_into(batch, {.policies = policies, .training = &pass}, s.out);
  auto loss = darkbert::task_loss(s.tape, model, batch, s.out, labels, s.targets);
  if (backward) s.tape.backward(loss);
  return loss.value()[0];
}

}  // namespace

TEST_CASE("the whole model's gradient with dropout on and a disabled head matches finite differences") {
  for (auto [family, architecture] : {std::pair{darkbert::Family::bert, "BertForSequenceClassification"},
                                      std::pair{darkbert::Family::gpt2, "GPT2ForSequenceClassification"}}) {
    const std::string architecture_name = architecture;
    CAPTURE(architecture_name);
    const auto config = tiny_config(family, architecture);
    auto model = darkbert::Transformer<double>::random(config, darkbert::TaskHeads::for_architecture(config), 5);
    // Larger weights than the N(0, 0.02) default, so attention is far from uniform.
    for (const auto& slot : darkbert::parameter_slots(model.params(), config)) {
      const Index n = slot.elements();
      for (Index i = 0; i < n; ++i) slot.data[i] = slot.data[i] * 20 + (slot.shape.size() == 1 ? 0.1 * std::sin(double(i)) : 0);
    }
    const auto batch = tiny_batch(config.pad_token_id);
    const darkbert::TaskLabels labels{.classes = {2, 0, 1}};
    darkbert::MaskingPolicies<double> policies;
    policies.add(darkbert::uniform_policy<double>(), {{0, 1}});
    auto grads = model.zero_gradients();
    loss_of(model, batch, labels, grads, &policies, true);
    auto scratch = model.zero_gradients();
    const auto analytic = darkbert::parameter_slots(grads, config);
    const auto params = darkbert::parameter_slots(model.params(), config);
    double worst = 0;
    int checked = 0;
    std::mt19937_64 rng(3);
    for (std::size_t k = 0; k < params.size(); ++k) {
      const Index n = params[k].elements();
      for (int sample = 0; sample < 3; ++sample) {
        const Index i = static_cast<Index>(rng() % static_cast<std::uint64_t>(n));
        const double keep = params[k].data[i], h = 1e-6;
        params[k].data[i] = keep + h;
        const double up = loss_of(model, batch, labels, scratch, &policies, false);
        params[k].data[i] = keep - h;
        const double down = loss_of(model, batch, labels, scratch, &policies, false);
        params[k].data[i] = keep;
        const double numeric = (up - down) / (2 * h);
        const double error = std::abs(analytic[k].data[i] - numeric) / (1 + std::abs(numeric));
        if (error > worst) worst = error;
        CHECK_MESSAGE(error < 1e-6, params[k].name << "[" << i << "]: " << analytic[k].data[i] << " vs " << numeric);
        ++checked;
      }
    }
    MESSAGE(std::string(architecture) << ": " << checked << " parameter elements, worst relative error " << worst);
  }
}

TEST_CASE("the disabled head passes no gradient to its query and key") {
  const auto config = tiny_config(darkbert::Family::bert, "BertForSequenceClassification");
  const auto model = darkbert::Transformer<double>::random(config, darkbert::TaskHeads::for_architecture(config), 6);
  darkbert::MaskingPolicies<double> policies;
  policies.add(darkbert::uniform_policy<double>(), {{1, 0}});
  auto grads = model.zero_gradients();
  loss_of(model, tiny_batch(0), {.classes = {1, 1, 0}}, grads, &policies, true);
  const auto& qkv = grads.blocks[1].qkv.weight;  // rows [0, 4) query of head 0, [8, 12) its key
  CHECK(qkv.block(0, 0, 4, 8).norm() == 0.0);
  CHECK(qkv.block(8, 0, 4, 8).norm() == 0.0);
  CHECK(qkv.block(4, 0, 4, 8).norm() > 0.0);   // head 1 learns
  CHECK(qkv.block(16, 0, 4, 8).norm() > 0.0);  // head 0's value still does
}

TEST_CASE("same seed, same machine: a training run is bit-identical; the arena stops growing") {
  const auto config = tiny_config(darkbert::Family::bert, "BertForSequenceClassification");
  auto run = [&](std::size_t* arena) {
    auto model = darkbert::Transformer<float>::random(config, darkbert::TaskHeads::for_architecture(config), 8);
    darkbert::AdamW<float> optimizer(model);
    auto grads = model.zero_gradients();
    const auto batch = tiny_batch(0);
    const darkbert::TaskLabels labels{.classes = {2, 0, 1}};
    Step<float> s;
    std::vector<float> losses;
    for (int step = 0; step < 5; ++step) {
      const darkbert::TrainingPass<float> pass{.tape = &s.tape, .gradients = &grads, .seed = 1, .step = std::uint64_t(step)};
      model.forward_into(batch, {.training = &pass}, s.out);
      auto loss = darkbert::task_loss(s.tape, model, batch, s.out, labels, s.targets);
      losses.push_back(loss.value()[0]);
      s.tape.backward(loss);
      optimizer.step(grads, 1e-3);
      optimizer.zero_grad(grads);
      if (step == 1) *arena = s.tape.arena_bytes();
    }
    CHECK(s.tape.arena_bytes() == *arena);
    std::vector<float> weights(model.params().blocks[0].qkv.weight.data(),
                               model.params().blocks[0].qkv.weight.data() + model.params().blocks[0].qkv.weight.size());
    return std::pair{losses, weights};
  };
  std::size_t a1 = 0, a2 = 0;
  const auto first = run(&a1), second = run(&a2);
  CHECK(first.first == second.first);
  CHECK(first.second == second.second);
}

TEST_CASE("the linear schedule and weight decay only on matrices") {
  const darkbert::LinearSchedule s{.peak = 1.0, .warmup_steps = 10, .total_steps = 110};
  CHECK(s(0) == 0.0);
  CHECK(s(5) == doctest::Approx(0.5));
  CHECK(s(10) == doctest::Approx(1.0));
  CHECK(s(60) == doctest::Approx(0.5));
  CHECK(s(110) == 0.0);
  const auto config = tiny_config(darkbert::Family::bert, "BertForSequenceClassification");
  auto model = darkbert::Transformer<double>::random(config, darkbert::TaskHeads::for_architecture(config), 9);
  const auto bias_before = model.params().blocks[0].qkv.bias;
  const auto norm_before = model.params().blocks[0].attn_norm.weight;
  const auto weight_before = model.params().blocks[0].qkv.weight;
  darkbert::AdamW<double> optimizer(model, {.weight_decay = 0.5});
  auto grads = model.zero_gradients();  // zero gradients: only decay can move a parameter
  optimizer.step(grads, 0.1);
  CHECK(model.params().blocks[0].qkv.bias == bias_before);
  CHECK(model.params().blocks[0].attn_norm.weight == norm_before);
  CHECK(model.params().blocks[0].qkv.weight.isApprox(weight_before * 0.95));
}

TEST_CASE("a warm-up-stable-decay schedule holds the peak, then falls over its last steps; a longer decay is the linear one") {
  const darkbert::LinearSchedule linear{.peak = 1.0, .warmup_steps = 10, .total_steps = 110};
  const darkbert::LinearSchedule wsd{.peak = 1.0, .warmup_steps = 10, .total_steps = 110, .decay_steps = 40};
  CHECK(wsd(5) == linear(5));  // the same warm-up
  CHECK(wsd(10) == 1.0);
  CHECK(wsd(69) == 1.0);  // the plateau
  CHECK(wsd(70) == 1.0);  // the decay's first step still at peak: (110 - 70) / 40
  CHECK(wsd(90) == doctest::Approx(0.5));
  CHECK(wsd(109) == doctest::Approx(1.0 / 40));
  CHECK(wsd(110) == 0.0);
  CHECK(wsd(200) == 0.0);
  for (std::int64_t decay : {100, 101, 1000}) {  // as long as the steps after warm-up, or longer: the linear schedule, bit for bit
    const darkbert::LinearSchedule whole{.peak = 3e-3, .warmup_steps = 10, .total_steps = 110, .decay_steps = decay};
    const darkbert::LinearSchedule plain{.peak = 3e-3, .warmup_steps = 10, .total_steps = 110};
    for (std::int64_t step = 0; step <= 120; ++step) CHECK(whole(step) == plain(step));
  }
}

TEST_CASE("a few AdamW steps make a small classifier fit its batch") {
  for (auto [family, architecture] : {std::pair{darkbert::Family::bert, "BertForSequenceClassification"},
                                      std::pair{darkbert::Family::gpt2, "GPT2ForSequenceClassification"}}) {
    const std::string architecture_name = architecture;
    CAPTURE(architecture_name);
    auto config = tiny_config(family, architecture);
    auto model = darkbert::Transformer<float>::random(config, darkbert::TaskHeads::for_architecture(config), 10);
    // Tokens and rows this few leave N(0, 0.02) weights near a symmetric saddle for hundreds of steps.
    for (const auto& slot : darkbert::parameter_slots(model.params(), config)) {
      const Index n = slot.elements();
      if (slot.shape.size() == 2)
        for (Index i = 0; i < n; ++i) slot.data[i] *= 10;
    }
    darkbert::AdamW<float> optimizer(model, {.weight_decay = 0});
    auto grads = model.zero_gradients();
    const auto batch = tiny_batch(config.pad_token_id);
    const darkbert::TaskLabels labels{.classes = {2, 0, 1}};
    Step<float> s;
    float first = 0, last = 0;
    for (int step = 0; step < 300; ++step) {
      const darkbert::TrainingPass<float> pass{.tape = &s.tape, .gradients = &grads, .dropout = false};
      model.forward_into(batch, {.training = &pass}, s.out);
      auto loss = darkbert::task_loss(s.tape, model, batch, s.out, labels, s.targets);
      (step == 0 ? first : last) = loss.value()[0];
      s.tape.backward(loss);
      optimizer.step(grads, 2e-3);
      optimizer.zero_grad(grads);
    }
    MESSAGE(std::string(architecture) << ": loss " << first << " -> " << last);
    CHECK(last < 0.1 * first);
  }
}
